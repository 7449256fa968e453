mixer m(p: [a], v: [b]) -> [b] { return "abc
