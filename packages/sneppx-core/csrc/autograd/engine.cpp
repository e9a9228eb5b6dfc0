// Reverse-mode engine: counts dependencies from the roots, then runs nodes in an order where a
// node runs only after every node that feeds it a gradient (highest sequence number first).
#include <atomic>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/modes.h"
#include "autograd/node.h"
#include "ops/ops.h"

namespace sx {

namespace {
thread_local bool g_grad_enabled = true;
std::atomic<uint64_t> g_next_seq{0};

// Graph teardown without recursion. Destroying a node drops its input nodes and, through the saved
// tensors of its closure, their producers: done by plain destructors, a chain of 300,000 ops nests
// 300,000 destructor frames and overflows the C stack. Instead a dying node moves what it owns into
// this per-thread list, and only the outermost destructor frees the list's entries, in a loop; the
// nodes they free in turn add to the list instead of recursing.
struct Graveyard {
  std::vector<std::shared_ptr<Node>> nodes;
  std::vector<BackwardFn> fns;
  bool draining = false;
  ~Graveyard() { alive = false; }
  static thread_local bool alive;  // false once this thread's list is gone (thread exit)
};
thread_local bool Graveyard::alive = true;
thread_local Graveyard g_grave;

void drain() {
  Graveyard& gy = g_grave;
  if (gy.draining) return;
  gy.draining = true;
  while (!gy.nodes.empty() || !gy.fns.empty()) {
    if (!gy.fns.empty()) {
      BackwardFn f = std::move(gy.fns.back());
      gy.fns.pop_back();
    } else {
      std::shared_ptr<Node> n = std::move(gy.nodes.back());
      gy.nodes.pop_back();
    }
  }
  gy.draining = false;
}
}  // namespace

Node::~Node() {
  if (!Graveyard::alive) return;  // thread exit: members are destroyed the plain way
  for (auto& n : next)
    if (n) g_grave.nodes.push_back(std::move(n));
  drain();
}

FnNode::~FnNode() {
  if (fn && Graveyard::alive) g_grave.fns.push_back(std::move(fn));  // ~Node empties the list
}

void FnNode::release() {
  if (!fn) return;
  if (!Graveyard::alive) {
    fn = nullptr;
    return;
  }
  g_grave.fns.push_back(std::move(fn));
  fn = nullptr;
  drain();
}

bool grad_mode::enabled() { return g_grad_enabled; }

namespace {
std::atomic<bool> g_anomaly{false}, g_anomaly_nan{true};

// Raises when a gradient returned by `node` holds NaN (anomaly mode with its NaN check).
void check_anomaly(const Node& node, const TensorList& grads) {
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    if (!g || !is_differentiable(g->dtype) || g->numel() == 0) continue;
    NoGradGuard no_grad;
    Tensor nan = to_device(any(binary(BinaryOp::Ne, g, g), std::nullopt, false), Device{});
    if (*nan->data<bool>())
      throw RuntimeError(msg("[backward] Function '", node.name(), "' returned nan values in its ", i,
                             "th output (anomaly detection)"));
  }
}
}  // namespace

thread_local bool g_capturing = false;  // the running backward pass serves autograd.grad (it has `inputs`)
bool anomaly::enabled() { return g_anomaly; }
bool capturing_grads() { return g_capturing; }
bool anomaly::check_nan() { return g_anomaly_nan; }
void anomaly::set(bool on, bool check_nan) {
  g_anomaly = on;
  g_anomaly_nan = check_nan;
}
void grad_mode::set(bool on) { g_grad_enabled = on; }

const Tensor& Saved::get() const {
  if (t && t->storage.get() != storage)
    throw RuntimeError(msg("[backward] one of the tensors needed for gradient computation (", describe(t),
                           ") was given new data (.data = ...) after it was saved"));
  if (t && t->version() != version)
    throw RuntimeError(msg("[backward] one of the tensors needed for gradient computation (", describe(t),
                           ") was modified by an in-place operation: version ", t->version(),
                           " instead of ", version));
  return t;
}

TensorList FnNode::apply(const Tensor& g) {
  if (!fn)
    throw RuntimeError(msg("[backward] trying to run ", nm,
                           " a second time: its saved tensors were freed; pass retain_graph=True to the "
                           "first backward() if you need to backward through the graph twice"));
  return fn(g);
}

TensorList AccumulateGrad::apply(const Tensor& g) {
  Tensor v = var.lock();
  if (!v) return {};
  Tensor grad = g;
  std::vector<GradHook> hooks = v->hooks;  // a copy: a hook may register or remove hooks
  for (auto& h : hooks) {
    Tensor r = h(grad);
    if (r) grad = r;
  }
  if (!v->grad) {
    // Own the gradient: never alias a tensor the caller may still write to.
    bool owned = grad.use_count() <= 2 && grad->storage.use_count() == 1 && grad->is_contiguous() &&
                 !grad->requires_grad;
    v->grad = grad_mode::enabled() || owned ? grad : clone(grad);
    if (v->grad->shape != v->shape) v->grad = sum_to(v->grad, v->shape);
  } else if (grad_mode::enabled()) {
    v->grad = add(v->grad, grad);
  } else {
    assign_inplace(v->grad, add(v->grad, grad), "backward");
  }
  std::vector<PostAccHook> post = v->post_acc_hooks;
  for (auto& h : post) h(v);
  return {};
}

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!g_grad_enabled) return false;
  for (auto* t : inputs)
    if (*t && (*t)->requires_grad) return true;
  return false;
}

std::shared_ptr<Node> grad_edge(const Tensor& t) {
  if (!t || !t->requires_grad) return nullptr;
  if (t->grad_fn) return t->grad_fn;
  // Two threads (running ops with the GIL released) may ask for the same leaf's accumulator.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (auto existing = t->grad_accumulator.lock()) return existing;
  auto acc = std::make_shared<AccumulateGrad>();
  acc->var = t;
  acc->seq = g_next_seq++;
  t->grad_accumulator = acc;
  return acc;
}

Tensor record(const char* name, const TensorList& inputs, const Tensor& out, BackwardFn fn) {
  if (!g_grad_enabled) return out;
  bool any = false;
  for (auto& t : inputs) any = any || (t && t->requires_grad);
  if (!any) return out;
  auto node = std::make_shared<FnNode>(name, std::move(fn));
  node->seq = g_next_seq++;
  node->next.reserve(inputs.size());
  for (auto& t : inputs) node->next.push_back(grad_edge(t));
  out->grad_fn = node;
  out->requires_grad = true;
  return out;
}

TensorList run_backward(const TensorList& roots, const TensorList& grads, bool keep_graph, bool create_graph,
                        const TensorList& inputs, bool allow_unused) {
  struct GradModeGuard {
    bool prev = g_grad_enabled;
    ~GradModeGuard() { g_grad_enabled = prev; }
  } guard;
  g_grad_enabled = create_graph;
  struct CaptureGuard {
    bool prev = g_capturing;
    ~CaptureGuard() { g_capturing = prev; }
  } capture_guard;
  g_capturing = !inputs.empty();

  std::unordered_map<Node*, Tensor> buffers;
  std::unordered_map<Node*, int> deps;
  std::vector<std::shared_ptr<Node>> starts;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    if (!r->requires_grad)
      throw RuntimeError(msg("[backward] element ", i, " of the outputs does not require grad and has no grad_fn"));
    auto n = grad_edge(r);
    Tensor& b = buffers[n.get()];
    b = b ? add(b, grads[i]) : grads[i];
    starts.push_back(n);
  }
  // Capture points for autograd.grad: the node that receives each input's gradient.
  std::unordered_map<Node*, size_t> capture;
  TensorList captured(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto n = grad_edge(inputs[i]);
    if (!n) throw RuntimeError(msg("[grad] input ", i, " does not require grad"));
    capture[n.get()] = i;
  }
  // Dependency counts over the reachable graph.
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (auto& s : starts)
    if (seen.insert(s.get()).second) stack.push_back(s.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (auto& nx : n->next) {
      if (!nx) continue;
      deps[nx.get()]++;
      if (seen.insert(nx.get()).second) stack.push_back(nx.get());
    }
  }
  auto cmp = [](const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) { return a->seq < b->seq; };
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, decltype(cmp)> ready(cmp);
  std::unordered_set<Node*> queued;
  for (auto& s : starts)
    if (deps[s.get()] == 0 && queued.insert(s.get()).second) ready.push(s);

  while (!ready.empty()) {
    auto node = ready.top();
    ready.pop();
    Tensor g;
    if (auto it = buffers.find(node.get()); it != buffers.end()) {
      g = std::move(it->second);
      buffers.erase(it);
    }
    TensorList in_grads;
    if (g) {  // a node reached only by paths without gradient still releases its inputs' deps
      std::vector<GradHook> hooks = node->pre_hooks;
      for (auto& h : hooks) {
        Tensor r = h(g);
        if (r) g = r;
      }
      if (auto keep = node->retained.lock())
        keep->grad = keep->grad ? add(keep->grad, g) : (create_graph ? g : clone(g));
      if (auto cap = capture.find(node.get()); cap != capture.end()) captured[cap->second] = g;
      bool is_acc = dynamic_cast<AccumulateGrad*>(node.get()) != nullptr;
      if (!(is_acc && !inputs.empty())) in_grads = node->apply(g);
      if (g_anomaly && g_anomaly_nan) check_anomaly(*node, in_grads);
    }
    if (!keep_graph) node->release();
    for (size_t i = 0; i < node->next.size(); ++i) {
      auto& nx = node->next[i];
      if (!nx) continue;
      if (i < in_grads.size() && in_grads[i]) {
        Tensor& b = buffers[nx.get()];
        b = b ? add(b, in_grads[i]) : in_grads[i];
      }
      if (--deps[nx.get()] == 0) ready.push(nx);
    }
  }
  for (size_t i = 0; i < captured.size(); ++i)
    if (!captured[i] && !allow_unused)
      throw RuntimeError(msg("[grad] input ", i, " was not used in the graph; pass allow_unused=True"));
  return captured;
}

}  // namespace sx
