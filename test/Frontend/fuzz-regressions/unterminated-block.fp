layer l(u: [D]) -> [D] {
  config D = 8
  fn f(y: [D]) -> [D] {
    return y
