"""A PyTorch training program (a word-level LSTM language model in the style of PyTorch's examples)
run on SneppX after changing only its imports, and compared with the same program on PyTorch.

The program text below is written against ``torch``; ``_run`` executes it under the SneppX import
block or under PyTorch's. It seeds every device, sets the cuDNN flags, builds a DataLoader with
``pin_memory``, trains with gradient clipping and a scheduler, saves a checkpoint with
``torch.save`` and resumes from it with ``torch.load``.
"""

from __future__ import annotations

import numpy as np
import pytest

SNEPPX_IMPORTS = """
import sneppx_core as torch
import sneppx_nn as nn
import sneppx_core.functional as F
import sneppx_optim as optim
from sneppx_data import DataLoader, TensorDataset
"""

TORCH_IMPORTS = """
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset
"""

PROGRAM = """
torch.manual_seed(0)
torch.cuda.manual_seed_all(0)
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.deterministic = True
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, cell="LSTM"):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, cell)(ninp, nhid, nlayers, batch_first=True)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid, self.cell = nlayers, nhid, cell

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.encoder(input), hidden)
        return self.decoder(output), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        h = weight.new_zeros(self.nlayers, bsz, self.nhid)
        return (h, weight.new_zeros(self.nlayers, bsz, self.nhid)) if self.cell == "LSTM" else h


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


data = torch.LongTensor(IDS)
loader = DataLoader(TensorDataset(data[:, :-1], data[:, 1:]), batch_size=4, shuffle=False, pin_memory=True,
                    drop_last=True)
model = RNNModel(50, 16, 24, 2, CELL).to(device)
model.load_state_dict({k: torch.tensor(v) for k, v in INIT.items()})
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)


def train_epoch():
    model.train()
    hidden = model.init_hidden(4)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        hidden = repackage_hidden(hidden)
        optimizer.zero_grad()
        output, hidden = model(x, hidden)
        loss = criterion(output.reshape(-1, 50), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        LOSSES.append(loss.item())
    scheduler.step()


for epoch in range(2):
    train_epoch()
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 2}, PATH)
checkpoint = torch.load(PATH, map_location=device)
model.load_state_dict(checkpoint["model"])
optimizer.load_state_dict(checkpoint["optimizer"])
train_epoch()
with torch.no_grad():
    model.eval()
    logits, _ = model(data[:2, :-1], model.init_hidden(2))
    PROBS = F.softmax(logits, dim=-1)[0, 0, :5].tolist()
"""


def _init(torch, cell):
    model = getattr(torch.nn, cell)(16, 24, 2)
    rng = np.random.default_rng(0)
    shapes = {"encoder.weight": (50, 16), "decoder.weight": (50, 24), "decoder.bias": (50,)}
    shapes.update({"rnn." + k: tuple(v.shape) for k, v in model.state_dict().items()})
    return {k: (rng.standard_normal(s) * 0.3).astype(np.float32) for k, s in shapes.items()}


def _run(imports, cell, init, path):
    ids = np.random.default_rng(1).integers(0, 50, (16, 13)).tolist()
    env = {"IDS": ids, "INIT": init, "CELL": cell, "PATH": str(path), "LOSSES": []}
    exec(imports + PROGRAM, env)  # noqa: S102  (the program under test)
    return env["LOSSES"], env["PROBS"]


@pytest.mark.parity
@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_language_model_program_matches_pytorch(tmp_path, cell):
    torch = pytest.importorskip("torch")
    init = _init(torch, cell)
    ours = _run(SNEPPX_IMPORTS, cell, init, tmp_path / "sneppx.pt")
    theirs = _run(TORCH_IMPORTS, cell, init, tmp_path / "torch.pt")
    assert len(ours[0]) == len(theirs[0]) == 12
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-4)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=2e-4)


def test_language_model_program_runs_and_learns(tmp_path):
    import sneppx_core as sx

    rng = np.random.default_rng(0)
    init = {"encoder.weight": rng.standard_normal((50, 16)) * 0.3, "decoder.weight": rng.standard_normal((50, 24)) * 0.3,
            "decoder.bias": np.zeros(50)}
    import sneppx_nn as nn

    init.update({"rnn." + k: v.detach().numpy() for k, v in nn.LSTM(16, 24, 2).state_dict().items()})
    init = {k: np.asarray(v, dtype=np.float32) for k, v in init.items()}
    losses, probs = _run(SNEPPX_IMPORTS, "LSTM", init, tmp_path / "ckpt.pt")
    assert np.mean(losses[-4:]) < np.mean(losses[:4])
    assert all(0 < p < 1 for p in probs)
    saved = sx.load(tmp_path / "ckpt.pt")
    assert saved["epoch"] == 2 and "rnn.weight_ih_l1" in saved["model"]
    assert saved["optimizer"]["param_groups"][0]["lr"] == pytest.approx(0.5)
