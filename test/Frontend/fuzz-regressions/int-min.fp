layer l(u: [D]) -> [D] {
  config D = -9223372036854775807 - 1
  let x = -D
  return u
}
