// The tape: every differentiable result holds a Node; a Node knows the nodes of its inputs.
// Each node has exactly one (differentiable) output, so an edge is just the producer node.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace sx {

struct Node {
  std::vector<std::shared_ptr<Node>> next;  // one per input; null where the input needs no grad
  uint64_t seq = 0;                         // creation order: later nodes run first
  std::vector<GradHook> pre_hooks;          // hooks of the non-leaf output tensor
  std::weak_ptr<TensorImpl> retained;       // output that asked for retain_grad()
  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Hands the input nodes to a per-thread list that the outermost destructor empties in a loop, so
  // that freeing a graph of any depth uses constant stack (see engine.cpp).
  virtual ~Node();
  // Maps the gradient of the output to gradients of the inputs (nullptr = no gradient).
  virtual TensorList apply(const Tensor& grad_out) = 0;
  virtual std::string name() const = 0;
  virtual void release() {}  // frees saved tensors once the graph is not retained
};

using BackwardFn = std::function<TensorList(const Tensor&)>;

// A node whose backward is a closure over saved tensors (the usual case).
struct FnNode : Node {
  const char* nm;
  BackwardFn fn;
  FnNode(const char* n, BackwardFn f) : nm(n), fn(std::move(f)) {}
  ~FnNode() override;  // the closure's saved tensors are freed iteratively too
  TensorList apply(const Tensor& g) override;
  std::string name() const override { return nm; }
  void release() override;
};

// Sink for leaves: adds the incoming gradient to `.grad`.
struct AccumulateGrad : Node {
  std::weak_ptr<TensorImpl> var;
  TensorList apply(const Tensor& g) override;
  std::string name() const override { return "AccumulateGrad"; }
};

// A tensor saved for backward together with its version and its storage at save time.
struct Saved {
  Tensor t;
  uint32_t version = 0;
  const Storage* storage = nullptr;
  Saved() = default;
  Saved(const Tensor& x) : t(x), version(x ? x->version() : 0), storage(x ? x->storage.get() : nullptr) {}
  const Tensor& get() const;  // throws if it was modified in place, or given new data (.data = ...), since
};

namespace grad_mode {
bool enabled();
void set(bool on);
}  // namespace grad_mode

// Turns grad mode off for a C++ scope.
struct NoGradGuard {
  bool prev = grad_mode::enabled();
  NoGradGuard() { grad_mode::set(false); }
  ~NoGradGuard() { grad_mode::set(prev); }
};

// True when grad mode is on and any input requires grad.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
// Records `out` as produced by `inputs` with the given backward; returns out.
Tensor record(const char* name, const TensorList& inputs, const Tensor& out, BackwardFn fn);
std::shared_ptr<Node> grad_edge(const Tensor& t);  // producer node or leaf accumulator

// Runs reverse mode from roots seeded with grads. With `inputs` given (autograd.grad), returns
// their gradients instead of accumulating into .grad.
TensorList run_backward(const TensorList& roots, const TensorList& grads, bool keep_graph,
                        bool create_graph, const TensorList& inputs, bool allow_unused);

}  // namespace sx
