"""Resident memory returns to where it started after creating and freeing many tensors and graphs.

Each check runs in a fresh interpreter so that the test process's own allocations do not blur the
numbers; resident size comes from /proc/self/statm after ``sneppx_core.empty_cache()``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = [
    pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc/self/statm (Linux)"),
    # AddressSanitizer keeps freed memory in quarantine and maps shadow memory: RSS says nothing there.
    pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""), reason="resident size is meaningless under ASan"),
]

PRELUDE = textwrap.dedent(
    """
    import gc, os
    import sneppx_core as sx

    PAGE = os.sysconf("SC_PAGE_SIZE")

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * PAGE

    def settle():
        gc.collect()
        sx.empty_cache()
        return rss()
    """
)

CHURN = PRELUDE + textwrap.dedent(
    """
    def churn_tensors(n, batch=10_000):
        for _ in range(n // batch):  # up to `batch` tensors alive at once, then all freed
            keep = [sx.zeros(4) for _ in range(batch // 2)]
            keep += [sx.ones(3, dtype=sx.int64) + 1 for _ in range(batch // 2)]
            del keep

    def churn_graphs(n):
        for i in range(n):
            x = sx.randn(8, 8, requires_grad=True)
            w = sx.randn(8, 8, requires_grad=True)
            h = (x @ w).tanh()
            h.retain_grad()
            y = (h * h).sum() + x.exp().mean() + h[1:, ::2].sum()
            y.backward(retain_graph=(i % 3 == 0))
            if i % 5 == 0:
                (x * 2).sigmoid().sum()  # a graph dropped without backward
            if i % 7 == 0:
                (g,) = sx.autograd.grad((x ** 3).sum(), x, create_graph=True)
                g.sum().backward()

    churn_tensors(20_000)
    churn_graphs(50)
    base = settle()
    churn_tensors(1_000_000)
    churn_graphs(1000)
    big = [sx.randn(256, 1024) for _ in range(8)]  # cached blocks must be returned by empty_cache
    del big
    after = settle()
    print("GROWTH", after - base)
    """
)


def _run(code):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("GROWTH")][-1]
    return int(line.split()[1])


def test_million_tensors_and_thousand_graphs_do_not_leak():
    growth = _run(CHURN)
    assert growth < 4 * 2**20, f"resident memory grew by {growth / 2**20:.1f} MB"


def test_empty_cache_returns_large_blocks():
    code = PRELUDE + textwrap.dedent(
        """
        base = settle()
        for _ in range(20):
            t = sx.ones(4 * 2**20)  # 16 MB blocks go through the allocator's cache
        del t
        cached = sx._C.cached_bytes()
        assert cached >= 16 * 2**20, cached
        freed = sx.empty_cache()
        assert freed >= 16 * 2**20 and sx._C.cached_bytes() == 0
        print("GROWTH", settle() - base)
        """
    )
    assert _run(code) < 4 * 2**20


def test_medium_temporaries_reuse_cached_blocks():
    # Blocks from 32 KiB up are cached: two live temporaries of 240 KB freed at the top of malloc's heap
    # made glibc trim it and fault the pages back in on the next op (x.abs().neg() 140 us instead of 7).
    import numpy as np
    import sneppx_core as sx

    x = sx.randn(30, 40, 50)
    sx.empty_cache()
    y = x.abs().neg()
    assert sx._C.cached_bytes() >= 240_000  # the abs temporary went to the cache
    y = x.abs().neg()
    before = sx._C.cached_bytes()  # two blocks: the temporary's and the result's before it
    for _ in range(50):
        y = x.abs().neg()
    assert sx._C.cached_bytes() == before <= 2 * 245_760  # each op took its blocks from there
    np.testing.assert_array_equal(y.numpy(), -np.abs(x.numpy()))


def test_large_blocks_start_off_page_boundaries_and_free_cleanly():
    # Large blocks are 2 MiB aligned plus a fixed offset: never on a 4 KiB page boundary (page-aligned
    # buffers stall copies against other libraries' page-aligned buffers on 4K aliasing), and all at the
    # same offset within their page (an output a little further into its page than an input stalls a
    # streaming kernel). Freeing them, through the cache and empty_cache, must hand the original block
    # back to the system (no growth, no crash).
    code = PRELUDE + textwrap.dedent(
        """
        import numpy as np
        base = settle()
        for size in (2**20, 3 * 2**20 + 5, 2**22):
            ts = [sx.ones(size) for _ in range(4)]
            offsets = [t.data_ptr() % 4096 for t in ts]
            assert offsets[0] != 0 and offsets[0] % 64 == 0 and len(set(offsets)) == 1, offsets
            for i, t in enumerate(ts):
                t.fill_(float(i))
            for i, t in enumerate(ts):
                assert np.all(t.numpy() == i)
            del ts, t
            sx.empty_cache()
        print("GROWTH", settle() - base)
        """
    )
    assert _run(code) < 8 * 2**20


def test_hook_capturing_its_tensor_is_collected():
    # The cycle wrapper -> TensorImpl -> grad_fn -> hook -> function -> wrapper runs through C++; the
    # Tensor type's tp_traverse/tp_clear show the hooks to the cycle collector.
    code = PRELUDE + textwrap.dedent(
        """
        base = settle()
        for _ in range(3000):
            x = sx.randn(4000, requires_grad=True)
            h = x * 2
            h.register_hook(lambda g, h=h: g + 0 * h)
        del x, h
        print("GROWTH", settle() - base)
        """
    )
    assert _run(code) < 8 * 2**20
