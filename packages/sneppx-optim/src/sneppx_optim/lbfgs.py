"""L-BFGS with an optional strong-Wolfe line search (``torch.optim.LBFGS``).

The direction comes from the two-loop recursion over the last ``history_size`` curvature pairs
``(s, y)`` (step and gradient change); the line search brackets a step satisfying the strong Wolfe
conditions ``f(x + t d) <= f + c1 t g.d`` and ``|g(x + t d).d| <= c2 |g.d|`` and then shrinks the
bracket with safeguarded cubic interpolation (Nocedal and Wright, Algorithms 3.5 and 3.6).
"""

from __future__ import annotations

import functools

import sneppx_core as sx

from .optimizer import Optimizer, check_range


def _cubic_min(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to ``bounds``
    (default: the interval between x1 and x2); the midpoint when the cubic has no minimum."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2
    d2 = disc ** 0.5
    if x1 <= x2:
        t = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        t = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(t, lo), hi)


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Step ``t`` along ``d`` meeting the strong Wolfe conditions; returns (f, g, t, evaluations).
    ``evaluate(t)`` returns the loss and flat gradient at ``x + t d``."""
    d_norm = float(d.abs().max().item())
    f_new, g_new = evaluate(t)
    evals, it = 1, 0
    gtd_new = float(g_new.dot(d).item())
    prev = (0.0, f, g, gtd)
    done, bracket = False, None
    while it < max_ls:  # bracketing phase
        if f_new > f + c1 * t * gtd or (it > 1 and f_new >= prev[1]):
            bracket = [prev, (t, f_new, g_new, gtd_new)]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, done = [(t, f_new, g_new, gtd_new)], True
            break
        if gtd_new >= 0:
            bracket = [prev, (t, f_new, g_new, gtd_new)]
            break
        lo, hi = t + 0.01 * (t - prev[0]), t * 10
        t_next = _cubic_min(prev[0], prev[1], prev[3], t, f_new, gtd_new, bounds=(lo, hi))
        prev = (t, f_new, g_new, gtd_new)
        t = t_next
        f_new, g_new = evaluate(t)
        evals, it = evals + 1, it + 1
        gtd_new = float(g_new.dot(d).item())
    if it == max_ls:
        bracket = [(0.0, f, g, gtd), (t, f_new, g_new, gtd_new)]
    low = 0 if len(bracket) == 1 or bracket[0][1] <= bracket[1][1] else 1
    stuck = False
    while not done and it < max_ls:  # zoom phase
        (a, fa, _, ga), (b, fb, _, gb) = bracket
        if abs(b - a) * d_norm < tolerance_change:
            break
        t = _cubic_min(a, fa, ga, b, fb, gb)
        top, bottom = max(a, b), min(a, b)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:  # too close to an end: move inside, or note it
            if stuck or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                stuck = False
            else:
                stuck = True
        else:
            stuck = False
        f_new, g_new = evaluate(t)
        evals, it = evals + 1, it + 1
        gtd_new = float(g_new.dot(d).item())
        point = (t, f_new, g_new, gtd_new)
        if f_new > f + c1 * t * gtd or f_new >= bracket[low][1]:
            bracket[1 - low] = point
            low = 0 if bracket[0][1] <= bracket[1][1] else 1
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[1 - low][0] - bracket[low][0]) >= 0:
                bracket[1 - low] = bracket[low]
            bracket[low] = point
    t, f_new, g_new, _ = bracket[low]
    return f_new, g_new, t, evals


class LBFGS(Optimizer):
    """Limited-memory BFGS (``torch.optim.LBFGS``); ``step(closure)`` needs a closure that zeroes
    the gradients, computes the loss, calls ``backward`` and returns the loss.

    Args:
        params: the parameters (one group only).
        lr: step length (1). max_iter: iterations per ``step`` (20).
        max_eval: closure evaluations per ``step`` (default ``max_iter * 5 // 4``).
        tolerance_grad: stop when the largest gradient entry is at most this (1e-7).
        tolerance_change: stop when the loss or the step changes less than this (1e-9).
        history_size: curvature pairs kept (100).
        line_search_fn: None (fixed step ``lr``) or ``"strong_wolfe"``.
    """

    def __init__(self, params, lr: float = 1.0, max_iter: int = 20, max_eval=None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100, line_search_fn=None) -> None:
        max_eval = max_iter * 5 // 4 if max_eval is None else max_eval
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change, history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS: doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _validate(self, group: dict) -> None:
        check_range("LBFGS", "lr", group["lr"])
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {group['line_search_fn']!r}")

    def _flat_grad(self):
        return sx.cat([(p.grad if p.grad is not None else sx.zeros_like(p)).reshape(-1) for p in self._params], 0)

    def _add(self, t, d) -> None:
        start = 0
        for p in self._params:
            n = p.numel()
            p.add_(d.narrow(0, start, n).reshape(tuple(p.shape)) * t)
            start += n

    def _evaluate(self, closure, x, t, d):
        """Loss and flat gradient at ``x + t d``; the parameters are put back to ``x``."""
        self._add(t, d)
        with sx.enable_grad():
            loss = float(closure())
        g = self._flat_grad()
        for p, v in zip(self._params, x):
            p.copy_(v)
        return loss, g

    def step(self, closure):
        """Runs up to ``max_iter`` L-BFGS iterations; returns the closure's first loss."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the model and returns the loss")
        with sx.no_grad():
            return self._step(closure)

    def _step(self, closure):
        grp = self.param_groups[0]
        lr, tol_change = grp["lr"], grp["tolerance_change"]
        st = self.state.setdefault(self._params[0], {"func_evals": 0, "n_iter": 0})
        with sx.enable_grad():
            orig_loss = closure()
        loss, evals = float(orig_loss), 1
        st["func_evals"] += 1
        g = self._flat_grad()
        if float(g.abs().max().item()) <= grp["tolerance_grad"]:
            return orig_loss
        d, t = st.get("d"), st.get("t")
        dirs, steps, ro = st.get("old_dirs", []), st.get("old_stps", []), st.get("ro", [])
        h_diag, prev_g, prev_loss = st.get("H_diag", 1.0), st.get("prev_flat_grad"), st.get("prev_loss")
        n_iter = 0
        while n_iter < grp["max_iter"]:
            n_iter += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                d, dirs, steps, ro, h_diag = -g, [], [], [], 1.0
            else:
                y, s = g - prev_g, d * t
                ys = float(y.dot(s).item())
                if ys > 1e-10:  # keep the pair only while the curvature is positive
                    if len(dirs) == grp["history_size"]:
                        dirs.pop(0), steps.pop(0), ro.pop(0)
                    dirs.append(y), steps.append(s), ro.append(1.0 / ys)
                    h_diag = ys / float(y.dot(y).item())
                d = self._two_loop(g, dirs, steps, ro, h_diag)
            prev_g, prev_loss = g.clone(), loss
            t = min(1.0, 1.0 / float(g.abs().sum().item())) * lr if st["n_iter"] == 1 else lr
            gtd = float(g.dot(d).item())
            if gtd > -tol_change:
                break
            ls_evals = 0
            if grp["line_search_fn"] == "strong_wolfe":
                x = [p.clone() for p in self._params]
                loss, g, t, ls_evals = _strong_wolfe(functools.partial(self._evaluate, closure, x, d=d), t, d, loss,
                                                     g, gtd)
                self._add(t, d)
            else:
                self._add(t, d)
                if n_iter != grp["max_iter"]:
                    with sx.enable_grad():
                        loss = float(closure())
                    g, ls_evals = self._flat_grad(), 1
            evals += ls_evals
            st["func_evals"] += ls_evals
            if (n_iter == grp["max_iter"] or evals >= grp["max_eval"]
                    or float(g.abs().max().item()) <= grp["tolerance_grad"]
                    or float((d * t).abs().max().item()) <= tol_change or abs(loss - prev_loss) < tol_change):
                break
        st.update(d=d, t=t, old_dirs=dirs, old_stps=steps, ro=ro, H_diag=h_diag, prev_flat_grad=prev_g,
                  prev_loss=prev_loss)
        return orig_loss

    @staticmethod
    def _two_loop(g, dirs, steps, ro, h_diag):
        """The L-BFGS direction ``-H g`` by the two-loop recursion."""
        q = -g
        alphas = [0.0] * len(dirs)
        for i in range(len(dirs) - 1, -1, -1):
            alphas[i] = float(steps[i].dot(q).item()) * ro[i]
            q = q - dirs[i] * alphas[i]
        r = q * h_diag
        for i in range(len(dirs)):
            beta = float(dirs[i].dot(r).item()) * ro[i]
            r = r + steps[i] * (alphas[i] - beta)
        return r
