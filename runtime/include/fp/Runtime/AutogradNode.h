//===- AutogradNode.h - Autograd nodes across LibTorch versions -*- C++ -*-===//
//
// LibTorch holds autograd nodes by std::shared_ptr up to 2.13 and by
// c10::intrusive_ptr from 2.14 on. The runtime's own backward node
// (CompiledLayer.cpp) and the gradient accumulators GradientReducer hooks
// are held through these two names, which follow the LibTorch at hand.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_AUTOGRADNODE_H
#define FP_RUNTIME_AUTOGRADNODE_H

#include <torch/csrc/autograd/function.h>

#include <memory>
#include <type_traits>
#include <utility>

namespace fp::rt {

/// An owning reference to an autograd node, as this LibTorch's edges hold
/// one.
using NodeRef = decltype(torch::autograd::Edge::function);

/// A new node of type `T` (derived from torch::autograd::Node), owned as
/// this LibTorch owns nodes: where that is a std::shared_ptr, with the
/// deleter that releases a long chain of nodes without deep recursion.
template <typename T, typename... Args> auto makeAutogradNode(Args &&...args) {
  if constexpr (std::is_same_v<NodeRef,
                               std::shared_ptr<torch::autograd::Node>>) {
    // deleteNode is found through T's base class, so the call compiles
    // where a LibTorch no longer declares it (this branch is not built).
    return std::shared_ptr<T>(new T(std::forward<Args>(args)...),
                              [](T *node) { deleteNode(node); });
  } else {
    return c10::make_intrusive<T>(std::forward<Args>(args)...);
  }
}

} // namespace fp::rt

#endif // FP_RUNTIME_AUTOGRADNODE_H
