"""Scripts several TL2xx rules' self-test cases share (each rule's own live beside it)."""

from __future__ import annotations


# A method of a framework's class, with a host read in it.
HOOK = """import torch
import lightning as L
import transformers
class M({base}):
    def {hook}(self, batch, batch_idx):
        loss, acc = self.model(batch)
        self.history.append({read})
        return loss
"""
# A loader's batch arrives on the host: the loop moves its tensors to the device itself.
HOST_BATCH = """import numpy as np
import torch
for step, batch in enumerate(loader):
    x = batch["x"].cuda(non_blocking=True)
    y = batch["y"]
    {read}
    loss = model(x, y.cuda(non_blocking=True))
    loss.backward()
    opt.step()
"""
# A closure handed to the optimizer's step, which calls it (L-BFGS up to `max_iter` times per step).
CLOSURE = """import torch
def fit(model, x, y, iters=5):
    opt = torch.optim.{optimizer}(model.parameters(), lr=0.1)
    history = []
    def closure():
        opt.zero_grad()
        loss = model(x, y)
        loss.backward()
        {read}
        return loss
    for it in range(iters):
        opt.step({closure})
    return history
"""

# A model of the file whose forward holds `{body}`, trained by a loop that calls it (`{make}` builds
# it, `{call}` runs it). Its forward runs on every step, through nn.Module's `__call__`.
FORWARD = """import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.stats = []
    def forward(self, x):
        h = self.fc(x)
        {body}
        return h
{make}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step, x in enumerate(loader):
    loss = {call}.sum()
    loss.backward()
    opt.step()
"""


def forward_case(body: str, make: str = "model = Net().cuda()", call: str = "model(x.cuda())") -> str:
    """FORWARD with `body` (lines after the first indented as forward's)."""
    return FORWARD.format(body=body.replace("\n", "\n        "), make=make, call=call)


# A Trainer that keeps the model (`self.model = Net()`) and calls it in its loop.
FORWARD_TRAINER = """import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, x, mask):
        {body}
        return self.fc(x)
class Trainer:
    def __init__(self):
        self.model = Net().to("cuda")
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def fit(self, loader):
        for x, mask in loader:
            loss = self.model(x.cuda(), mask.cuda()).sum()
            loss.backward()
            self.opt.step()
"""

# TL201's logging interval where the script has none (it has no option for it).


WRITER = "from torch.utils.tensorboard import SummaryWriter\nwriter = SummaryWriter()\n"


def in_accumulation_step(body: str, counter: str = "global_step += 1\n") -> str:
    """A rule case: gradient accumulation, with `body` in the branch that steps the optimizer
    (once per optimizer step, every training step), after `counter`."""
    inner = (counter + body).replace("\n", "\n        ").rstrip(" ")
    return ("import torch\nfor i, (x, y) in enumerate(loader):\n    (model(x, y) / accum).backward()\n"
            "    if (i + 1) % accum == 0:\n        opt.step()\n        opt.zero_grad()\n        " + inner + "\n")
