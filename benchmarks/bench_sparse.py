"""Speed of sparse tensors against PyTorch's: a graph-convolution training step as pytorch/examples' gcn takes it
(a normalised sparse adjacency and sparse bag-of-words features of a Cora-sized graph, two layers, Adam), the
sparse-dense product on its own with backward, the row gathers and scatters it is made of (``index_select`` and
``index_add`` of short rows), and building sparse tensors (``coalesce`` of duplicate indices, ``to_sparse`` of a
dense matrix). Float32, 2 threads, both libraries interleaved in this process; rows report the median
microseconds per call and ``ratio = sneppx / torch``.

Run: ``python benchmarks/bench_sparse.py [--quick]``.
"""

from __future__ import annotations

import sys

import numpy as np
import sneppx_core as sx
from common import case_rows, print_rows, set_threads, try_torch

FULL = {"warmup": 10, "repeat": 15}
QUICK = {"warmup": 2, "repeat": 3}
NODES, FEATURES, HIDDEN, CLASSES = 2708, 1433, 16, 7  # Cora's sizes


def _data():
    rng = np.random.default_rng(0)
    f = np.float32
    feats = ((rng.random((NODES, FEATURES)) < 0.0127) * 1.0).astype(f)  # about 18 words per node, as Cora
    edges = rng.integers(0, NODES, (2, 5429))
    return {"feats": feats, "edges": edges, "labels": rng.integers(0, CLASSES, NODES),
            "w1": (rng.standard_normal((FEATURES, HIDDEN)) * 0.05).astype(f),
            "w2": (rng.standard_normal((HIDDEN, CLASSES)) * 0.3).astype(f),
            "rows": rng.standard_normal((300, 16)).astype(f), "pick": rng.integers(0, 300, 19551),
            "dup": rng.integers(0, 2000, (2, 20000)), "dup_vals": rng.standard_normal(20000).astype(f)}


def _cases(T, F, optim, data):
    """name -> a function running one call in library ``T`` (functional ``F``, optimizers ``optim``)."""
    t = {k: T.tensor(v) for k, v in data.items()}
    adj = T.eye(NODES) + T.sparse_coo_tensor(t["edges"], T.ones(t["edges"].shape[1]), (NODES, NODES))
    deg = T.diag(T.sqrt(1 / T.sum(adj, dim=1))).to_sparse()
    adj = (deg @ adj @ deg).to_sparse()
    feats = t["feats"].to_sparse()
    w1, w2 = t["w1"].clone().requires_grad_(True), t["w2"].clone().requires_grad_(True)
    opt = optim.Adam([w1, w2], lr=0.01)

    def gcn_step():
        opt.zero_grad()
        h = T.relu(T.spmm(adj, T.mm(feats, w1)))
        loss = F.cross_entropy(T.spmm(adj, T.mm(h, w2)), t["labels"])
        loss.backward()
        opt.step()

    dense = t["rows"].clone().requires_grad_(True)
    x = t["feats"][:, :300].contiguous()
    mat = x.to_sparse()

    def spmm_backward():
        T.spmm(mat, dense).sum().backward()

    zeros = T.zeros(300, 16)
    src = t["rows"].index_select(0, t["pick"])
    dup = T.sparse_coo_tensor(t["dup"], t["dup_vals"], (2000, 2000))
    return {
        f"GCN train step, Cora-sized ({NODES} nodes, {FEATURES} sparse features, Adam)": gcn_step,
        f"sparse ({NODES}, 300) nnz {mat._nnz()} @ dense (300, 16), with backward": spmm_backward,
        "index_select dim 0: 19551 rows of 16 from (300, 16)": lambda: t["rows"].index_select(0, t["pick"]),
        "index_add dim 0: 19551 rows of 16 into (300, 16)": lambda: zeros.index_add(0, t["pick"], src),
        "coalesce: 20000 COO entries with duplicates, (2000, 2000)": lambda: dup.coalesce(),
        f"to_sparse of a dense ({NODES}, 300) matrix, 1.3% nonzero": lambda: x.to_sparse(),
    }


def run(quick: bool = False) -> list:
    """Times each case in both libraries; rows name, sneppx, torch, ratio, unit (us per call)."""
    cfg = QUICK if quick else FULL
    torch = try_torch()
    set_threads()
    data = _data()
    import sneppx_core.functional as SF
    import sneppx_optim

    ours = _cases(sx, SF, sneppx_optim, data)
    theirs = None
    if torch is not None:
        theirs = _cases(torch, torch.nn.functional, torch.optim, data)
    return case_rows(ours, theirs, cfg)


def main(argv: list) -> None:
    """Prints the rows of :func:`run` as a table."""
    print_rows(run(quick="--quick" in argv), 72)


if __name__ == "__main__":
    main(sys.argv[1:])
