// RUN: fp- lt-enc @l
layer l( u:[D]) -> [D] {
  config D = fixed_point(f, 0.0)
}
