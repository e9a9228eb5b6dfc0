"""Training entry points under sneppx_core's NumPy backend (SNEPPX_BACKEND=numpy, in a subprocess):
Trainer.fit, an optimizer's fused step and backward raise the RuntimeError that says training needs
the C backend."""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import numpy as np
    import sneppx_core as sx
    import sneppx_optim as so
    from optim_helpers import TinyModel, mse

    assert not sx._HAS_C_BACKEND
    model = TinyModel(3, 2)
    x, y = sx.randn(4, 3), sx.randn(4, 2)
    calls = {
        "fit": lambda: so.Trainer(model, so.SGD(model.parameters(), lr=0.1), mse, progress=False).fit([(x, y)]),
        "backward": lambda: mse(model(x), y).backward(),
        "step": lambda: [setattr(p, "grad", sx.ones_like(p)) for p in model.parameters()]
                        and so.SGD(model.parameters(), lr=0.1, momentum=0.9).step(),
        "adam": lambda: [setattr(p, "grad", sx.ones_like(p)) for p in model.parameters()]
                        and so.Adam(model.parameters(), lr=0.1).step(),
    }
    for name, call in calls.items():
        try:
            call()
        except RuntimeError as e:
            assert "training requires the C backend" in str(e) and "C++20 compiler" in str(e), (name, e)
            print(name, "raised")
        else:
            raise AssertionError(name + " did not raise")
""")


def test_training_entry_points_raise_on_the_numpy_backend():
    env = dict(os.environ, SNEPPX_BACKEND="numpy",
               PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.split() == ["fit", "raised", "backward", "raised", "step", "raised", "adam", "raised"]
