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

# PyTorch's import lines with `torch` renamed: the meta-package's module paths
META_IMPORTS = """
import SneppX_ALG as torch
import SneppX_ALG.nn as nn
import SneppX_ALG.nn.functional as F
import SneppX_ALG.optim as optim
from SneppX_ALG.utils.data import DataLoader, TensorDataset
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


def test_language_model_program_with_torch_renamed(tmp_path):
    """The same program with PyTorch's import lines, `torch` renamed to `SneppX_ALG`: the same results."""
    import sneppx_nn as nn

    rng = np.random.default_rng(2)
    init = {"encoder.weight": rng.standard_normal((50, 16)), "decoder.weight": rng.standard_normal((50, 24)),
            "decoder.bias": np.zeros(50)}
    init.update({"rnn." + k: v.detach().numpy() for k, v in nn.GRU(16, 24, 2).state_dict().items()})
    init = {k: (np.asarray(v) * 0.3).astype(np.float32) for k, v in init.items()}
    assert TORCH_IMPORTS.replace("import torch\n", "import SneppX_ALG as torch\n").replace(
        "torch.", "SneppX_ALG.") == META_IMPORTS
    ours = _run(SNEPPX_IMPORTS, "GRU", init, tmp_path / "a.pt")
    renamed = _run(META_IMPORTS, "GRU", init, tmp_path / "b.pt")
    assert ours[0] == renamed[0] and ours[1] == renamed[1]


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


VIDEO_PROGRAM = """
torch.manual_seed(0)
device = torch.device("cpu")


class ClipNet(nn.Module):
    \"\"\"A spatial transformer that aligns the frames of a clip, then a 3-d convolutional classifier.\"\"\"

    def __init__(self, classes):
        super().__init__()
        self.localization = nn.Sequential(nn.Conv2d(1, 4, kernel_size=5), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
        self.fc_loc = nn.Sequential(nn.Linear(4 * 6 * 6, 16), nn.ReLU(True), nn.Linear(16, 3 * 2))
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data = torch.tensor([0.9, 0.1, 0.05, -0.1, 0.9, -0.05])
        self.features = nn.Sequential(
            nn.Conv3d(1, 4, 3, padding=1), nn.BatchNorm3d(4), nn.ReLU(),
            nn.MaxPool3d((1, 2, 2)), nn.Conv3d(4, 8, (2, 3, 3), padding=(0, 1, 1)), nn.ReLU(),
            nn.AdaptiveAvgPool3d((1, 2, 2)))
        self.head = nn.LazyLinear(classes)

    def stn(self, clip):
        n, c, t, h, w = clip.shape
        theta = self.fc_loc(self.localization(clip.mean(2)).flatten(1)).view(-1, 2, 3)
        frames = clip.transpose(1, 2).reshape(n * t, c, h, w)
        theta = theta.unsqueeze(1).expand(n, t, 2, 3).reshape(n * t, 2, 3)
        grid = F.affine_grid(theta, frames.size(), align_corners=False)
        frames = F.grid_sample(frames, grid, padding_mode="border", align_corners=False)
        return frames.reshape(n, t, c, h, w).transpose(1, 2)

    def forward(self, clip):
        return self.head(self.features(self.stn(clip)).flatten(1))


model = ClipNet(3).to(device)
model.load_state_dict({k: torch.tensor(v) for k, v in INIT.items()})
optimizer = optim.Adafactor(model.parameters(), lr=0.02)
scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
clips, labels = torch.tensor(CLIPS), torch.tensor(LABELS)
model.train()
for step in range(10):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(clips), labels)
    loss.backward()
    optimizer.step()
    scheduler.step()
    LOSSES.append(loss.item())
model.eval()
with torch.no_grad():
    PROBS = F.softmax(model(clips[:2]), dim=-1).flatten().tolist()
"""

VIDEO_SHAPES = {
    "localization.0.weight": (4, 1, 5, 5), "localization.0.bias": (4,), "fc_loc.0.weight": (16, 144),
    "fc_loc.0.bias": (16,), "fc_loc.2.weight": (6, 16), "fc_loc.2.bias": (6,), "features.0.weight": (4, 1, 3, 3, 3),
    "features.0.bias": (4,), "features.1.weight": (4,), "features.1.bias": (4,), "features.1.running_mean": (4,),
    "features.1.running_var": (4,), "features.4.weight": (8, 4, 2, 3, 3), "features.4.bias": (8,),
    "head.weight": (3, 32), "head.bias": (3,),
}


def _run_video(imports):
    rng = np.random.default_rng(2)
    init = {k: (rng.standard_normal(s) * 0.3).astype(np.float32) for k, s in VIDEO_SHAPES.items()}
    init["fc_loc.2.weight"] *= 0.1
    init["fc_loc.2.bias"] = np.array([0.9, 0.1, 0.05, -0.1, 0.9, -0.05], np.float32)  # off the pixel centres
    init["features.1.running_var"] = np.abs(init["features.1.running_var"]) + 1
    init["features.1.num_batches_tracked"] = np.array(0)
    labels = rng.integers(0, 3, 6)
    clips = (rng.standard_normal((6, 1, 3, 16, 16)) * 0.2).astype(np.float32)
    for i, label in enumerate(labels):  # the class is where a bright square sits
        clips[i, 0, :, 2 + 4 * label:6 + 4 * label, 5:9] += 1.0
    env = {"INIT": init, "CLIPS": clips, "LABELS": labels, "LOSSES": []}
    exec(imports + VIDEO_PROGRAM, env)  # noqa: S102  (the program under test)
    return env["LOSSES"], env["PROBS"]


@pytest.mark.parity
def test_video_program_matches_pytorch():
    """Spatial transformer (affine_grid, grid_sample, a bias set through .data), Conv3d, BatchNorm3d,
    MaxPool3d, AdaptiveAvgPool3d, a LazyLinear sized by load_state_dict, Adafactor and StepLR."""
    pytest.importorskip("torch")
    ours, theirs = _run_video(SNEPPX_IMPORTS), _run_video(TORCH_IMPORTS)
    assert len(ours[0]) == len(theirs[0]) == 10
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-4, atol=1e-6)


def test_video_program_runs_and_learns():
    losses, probs = _run_video(SNEPPX_IMPORTS)
    assert losses[-1] < 0.9 * losses[0] and losses == sorted(losses, reverse=True), losses
    assert all(0 < p < 1 for p in probs)
