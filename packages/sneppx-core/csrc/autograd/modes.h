// Switches of the backward engine read from Python.
#pragma once

// Anomaly detection (autograd.detect_anomaly): with it on, the backward engine checks the gradients
// each node returns and raises, naming the node, when one holds NaN. Off by default; process-wide.
namespace sx::anomaly {
bool enabled();
bool check_nan();
void set(bool on, bool check_nan);
}  // namespace sx::anomaly

namespace sx {
// True while this thread runs a backward pass for autograd.grad (gradients captured, not accumulated): a
// reentrant checkpoint, which accumulates into .grad, refuses to run then.
bool capturing_grads();
}  // namespace sx
