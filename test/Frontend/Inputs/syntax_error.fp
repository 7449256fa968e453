// A syntax error in an imported file (../import-errors.test).
mixer broken(p: [m], v: [d]) -> [d] {
  let x = v $ v
  return x
}
