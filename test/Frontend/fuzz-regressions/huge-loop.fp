layer l(u: [D]) -> [D] {
  config D = 8
  let a = 0
  for i in 0..100000000 {
    a = a + 1
  }
  return u
}
