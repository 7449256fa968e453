layer l(u: [D]) -> [D] {
  config D = 8
  param w: [D, D, D, D, D, D, D, D, D, D] = zeros
  return u
}
