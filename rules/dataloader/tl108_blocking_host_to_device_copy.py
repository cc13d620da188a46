"""TL108 blocking-host-to-device-copy: Batch from a pinned loader copied to the device without
`non_blocking=True`."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.batches import (
    batch_moves,
    copy_takes_non_blocking,
    is_cpu_device,
    is_device_move,
    loader_batches,
    loader_calls,
)
from trainlint.analysis.inplace import changed_after_copy
from trainlint.analysis.star_args import dict_entries
from trainlint.analysis.tree import parameter
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Rule, Valid

from .cases import BY_KEY, CLOSURE, DRAWN, FIT_METHOD, HANDED, MNIST, PHASES, SHARED_EPOCH, TRAINER_CLASS
from .loaders import device_arg, excerpt, setting_value


_HELPER = ("import torch\nfrom torch.utils.data import DataLoader\ndef to_device(t):\n    return {move}\n"
           "loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
           "for x, y in loader:\n    {body}\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n")


_STEP_FN = (
    "from torch.utils.data import DataLoader\n"
    "loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
    "def train_step(model, batch, device):\n"
    "    images, labels = batch\n"
    "    loss = model({to}).loss(labels)\n"
    "    loss.backward()\n"
    "    return loss\n"
    "for batch in loader:\n"
    "    train_step(model, batch, device)\n"
    "    opt.step()\n"
    "    if retry:\n"
    "        train_step(model, batch=batch, device=device)\n"
)

_NESTED_STEP = (
    "from torch.utils.data import DataLoader\n"
    "loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
    "def prepare(batch, device):\n"
    "    return {to}\n"
    "def train_step(model, batch, device):\n"
    "    model(prepare(batch, device)).backward()\n"
    "for batch in loader:\n"
    "    train_step(model, batch, device)\n"
    "    opt.step()\n"
)


# A model of the file whose forward moves its input; `{move}`: what the loop does first.
_FORWARD = (
    "import torch\nfrom torch.utils.data import DataLoader\n"
    "class Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.l = torch.nn.Linear(4, 1)\n        self.device = torch.device('cuda')\n"
    "    def forward(self, x):\n        x = x.to(self.device)\n        return self.l(x)\n"
    "model = Net().cuda()\nloader = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)\n"
    "for x in loader:\n{move}    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"
)


_CUSTOM_BATCH = (
    "import torch\nfrom torch.utils.data import DataLoader\n"
    "class Batch:\n    def __init__(self, x):\n        self.x = x\n"
    "    def to({params}):\n        return Batch(self.x.to(device))\n"
    "loader = DataLoader(ds, num_workers=2, pin_memory=True, collate_fn=lambda s: Batch(torch.stack(s)))\n"
    "for batch in loader:\n    {move}\n    model(batch.x).backward()\n    opt.step()\n"
)
_HF_BATCH = (
    "from torch.utils.data import DataLoader\nfrom transformers import DataCollatorWithPadding\n"
    "collator = DataCollatorWithPadding(tokenizer)\n"
    "loader = DataLoader(ds, num_workers=2, pin_memory=True, collate_fn=collator)\n"
    "for batch in loader:\n    {move}\n    model(**batch).loss.backward()\n    opt.step()\n"
)
_COLLATED = (
    "import torch\nfrom torch.utils.data import DataLoader\n{collate}\n"
    "loader = DataLoader(ds, num_workers=2, pin_memory=True, collate_fn=collate)\n"
    "for x, y in loader:\n    {move}\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n"
)
_STACKS = "def collate(samples):\n    return torch.stack([a for a, _ in samples]), torch.tensor([b for _, b in samples])"


# Several steps on each batch: its copies in the step loop, a change before or after that loop.
_FREE_STEPS = (
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
    "for x, y in loader:\n{before}    for _ in range(4):\n        {inner}\n        loss = model(xd, y)\n"
    "        loss.backward()\n        opt.step()\n{after}"
)


# "Free" adversarial training: several optimizer steps on each batch, in a loop inside the loop
# over the batches.
_FREE_AT = (
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
    "for x, y in loader:\n    x, y = {x}, y.cuda(non_blocking=True)\n    for _ in range(4):\n"
    "        loss = model(x + delta, y)\n        loss.backward()\n        opt.step()\n"
)


# A step loop drawing the batches of a pinned loader from a generator that re-yields them.
_REYIELDED = ("from torch.utils.data import DataLoader\ndef infinite(dl):\n    while True:\n        {body}\n"
              "loader = DataLoader(ds, shuffle=True, pin_memory=True)\nit = infinite(loader)\n"
              "for step in range(1000):\n    x, y = next(it)\n    loss = model({x})\n    loss.backward()\n    opt.step()\n")

# Two pinned loaders zipped, {bar} binding what the loop goes over ({it}).
_ZIPPED = ("from torch.utils.data import DataLoader\nfrom tqdm import tqdm\nsrc = DataLoader(a, pin_memory=True)\n"
           "tgt = DataLoader(b, pin_memory=True)\n{bar}for (xs,), (xt,) in {it}:\n    xs, xt = {move}\n"
           "    loss = model(xs, xt)\n    loss.backward()\n    opt.step()\n")
_ZIPPED_COPIES = "xs.to(device), xt.to(device)"
_ZIPPED_FIXED = "xs.to(device, non_blocking=True), xt.to(device, non_blocking=True)"

class BlockingHostToDeviceCopy(Rule):
    code = "TL108"
    name = "blocking-host-to-device-copy"
    summary = "Batch from a pinned loader copied to the device without `non_blocking=True`"
    source = "§3.3"
    fix_applicability = "safe"
    # pin_memory may be passed by position (TL102's fix writes it there when the call passes that
    # far): no keyword to find, but every loader call is spelled with "DataLoader" in the file.
    triggers = ("pin_memory", "DataLoader")
    needs_hot_loop = True
    docs = """
## What it does
In the hot loop (or a loop over the batches that holds it: several optimizer steps on each
batch), flags `.to(device)` / `.cuda()` of a batch drawn from a loader with
`pin_memory=True` (written there, or read as TL101 describes: `pin_memory=PIN` with `PIN = True`;
`pin_memory=torch.cuda.is_available()` counts, as the loader pins on a GPU) that does not pass
`non_blocking=True`. The loop may be where the loader is built, in a function
that returns it to its caller or that it is handed to (`train(model, train_loader)` every epoch,
as in PyTorch's MNIST example, also a `run_epoch(model, loader)` that the evaluation loader goes
through too), or a function reading the module's loader (or its enclosing function's, a
closure); or a step loop drawing the batches with `next(it)` from `it = iter(loader)` (or
`it = iter(DataLoader(...))`, the loader written in the call), or from a
generator of the module that yields only the loader's batches (`it = infinite(loader)` with
`def infinite(dl): while True: yield from dl`, or `for b in dl: yield b`). A loop over loaders
zipped together goes over each, the zip written in its header or assigned to a name first
(`pbar = tqdm(zip(src, tgt))`, then `for (xs,), (xt,) in pbar:`). Flagged
are copies of the batch or of tensors taken from it (`x, y = batch`, `batch["x"]`, `for t in
batch`), there or in module-local functions the loop hands them to (`train_step(model, batch)`, up to three calls down;
also a helper that returns the copy, `x = to_device(x)` with `def to_device(t): return t.to(device)`,
or `{k: v.to(device) ... for k, v in batch.items()}`; not one that calls itself on the parts of any
structure, whose copies may be of any object).
Not flagged: copies to the CPU (`"cpu"`, `torch.device("cpu")`, a name assigned one of those),
which must stay blocking to be read right after, and copies of tensors the loop has already
copied to the device (`y` after `y = y.to(device, non_blocking=True)`, also in a function the
loop hands such a copy to: `x.to(self.device)` in the `forward` that `model(x)` runs after `x =
x.to(device, non_blocking=True)`): they do not read pinned memory; nor a copy that unpacks a dict holding `non_blocking` (`x.to(**move)` with `move =
dict(device=device, non_blocking=True)`, `y.to(device, **{"non_blocking": True})`, or a dict built
from one holding it: `{**base, "dtype": t}`, `dict(base, dtype=t)`): the dict sets it.

A tensor taken out of a batch the loop already copied (a dict or tuple comprehension of
copies, then `batch.pop("labels")`) is in device memory and not reported; a batch handed in a list
or tuple to a helper that changes its items in place withholds the fix; a recursive helper that
only builds new containers does not.

## Why is this bad?
A blocking copy makes the host wait until the transfer ends, so it cannot queue the next kernels;
from pinned memory the copy can run asynchronously and overlap with compute.

## Example
```python
for x, y in loader:  # DataLoader(..., pin_memory=True)
    x, y = x.to(device), y.to(device)
```

## Use instead
```python
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
```

## Fix safety
Safe: work queued on the same CUDA stream after the copy still sees the copied data. A
`non_blocking` passed by position (`x.cuda(0, False)`) is set where it stands. The fix is written
only where what is copied is known to take `non_blocking`: the tensors of a default-collated batch
(a loader without `collate_fn`, or passing `None` for it), what a `collate_fn` of this module returns as tensors (or as an
object of a class of this module whose `to`/`cuda` takes `non_blocking` or `**kwargs`), the
tensors a transformers data collator's batch holds, and a copy made only of a tensor (`v.to(device)
if torch.is_tensor(v) else v`, under `if isinstance(v, torch.Tensor):`). The copy of anything else (another batch
object, a part of the batch of a `collate_fn` the file does not show, a value reaching the copy by
a way no loader of the file is seen to take) is fixed only with `--unsafe-fixes`: a transformers
`BatchEncoding` takes `non_blocking` from transformers 4.48 on, and such a value may be anything. An object of a class of this
module whose `to`/`cuda` does not take it gets no fix (passing it would raise a TypeError), nor
does a copy under `with torch.cuda.stream(s):` in a function where no stream waits for another
(`wait_stream`, `wait_event`): there the copy's being blocking is what makes the data ready for
the default stream that reads it. Nor does the copy of a host tensor changed in place after it
(`xd = x.to(device)` then `x.mul_(std)`, `x += 1`, `x[m] = 0`, `torch.add(a, b, out=x)`,
`F.relu(x, inplace=True)`, a function of the module that changes its argument so, `cutout_(x)`, or
a change through a view, `v = x[:, 0]` then `v.zero_()`): later in the pass, after a loop around
the copy, on the next pass of a loop around it inside the loop over the batches (several steps on
each batch, `x.add_(noise)` before the copy), or after a call of a helper of the module that copies
the tensor it is handed. The host goes on while a non-blocking copy waits its turn, so the copy
could read the changed values. The copy of an item at a literal key, `batch["x"].to(device)` or
`batch[0].cuda()`, is followed through that same item (`batch["x"].mul_(0.5)`, `batch["x"][0] = 0`,
`out=batch["x"]`) until the item or its container is set anew: the item set anew, `batch["x"] =
...`, is no change in place. Nor does a copy that unpacks
a dict the file does not show (`x.to(**to_kw)` of a function's `**to_kw`) or `*args`: it may pass
`non_blocking` already, and the keyword beside it would then be passed twice (a TypeError); a dict
whose keys the file shows without it takes the keyword beside it. Nor does a copy in
a function of the module whose device is its parameter when some call passes the CPU there
(`def move(t, dev): return t.to(dev)`, also `move(pred, "cpu")`): a non-blocking copy to the
host would be read before it ends.
"""
    _SRC = ("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
            "for x, y in loader:\n    {move}\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n")
    valid = [
        # A batch the loop copied already, handed to the model: forward's own `.to(self.device)`
        # of it copies nothing from the host (it was reported, and the fix added non_blocking=True there).
        Valid(_FORWARD.format(move="    x = x.to('cuda', non_blocking=True)\n")),
        Valid(_FORWARD.format(move="    x = x.cuda(non_blocking=True)\n").replace("model(x)", "model(x=x)")),
        # Taken out of a batch its loop copied already (a dict or tuple comprehension of copies):
        # in device memory, nothing to pin.
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
              "for batch in loader:\n    batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}\n"
              "    labels = batch.pop('labels')\n    loss = model(**batch, labels=labels.to(device, torch.float32))\n"
              "    loss.backward()\n    opt.step()\n"),
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
              "for batch in loader:\n    batch = tuple(t.to(device, non_blocking=True) for t in batch)\n"
              "    ids, labels = batch\n    loss = model(ids, labels.to(device).float())\n    loss.backward()\n    opt.step()\n"),
        # ... also on the same line, after `;`: the copy's line was once looked past, so the
        # earlier small statement that copied the batch was not seen (flagged, fixed needlessly).
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
              "for batch in loader:\n    batch = [t.to(device, non_blocking=True) for t in batch]; x = batch[0].to(device)\n"
              "    loss = model(x)\n    loss.backward()\n    opt.step()\n"),
        Valid(_SRC.format(move="x = x.to(device, non_blocking=True)")),
        Valid(_SRC.replace("pin_memory=True", "pin_memory=False").format(move="x = x.to(device)")),
        Valid("import torch\n" + _SRC.format(move="x = x.to(torch.float16)")),
        Valid(_SRC.format(move="model.to(device)")),
        # A layout change alone is no copy to the device; with `device=` among the keywords it is.
        Valid("import torch\n" + _SRC.format(move="x = x.to(memory_format=torch.channels_last)")),
        # Drawn with next() from another loader's iterator.
        Valid(DRAWN.format(pin=", pin_memory=True", x="x.cuda()").replace("next(data_iter)", "next(other_iter)")),
        # The pinned loader of the dict is not the one this loop picks.
        Valid(BY_KEY.format(pin_a="", pin_b=", pin_memory=True", move="x.cuda()")),
        # non_blocking passed by position.
        Valid(_SRC.format(move="x, y = x.cuda(0, True), y.to(device, None, True)")),
        # ... or by a dict the copy unpacks, whose keys the file shows: a keyword beside it was
        # once added, passing non_blocking twice (TypeError).
        Valid(_SRC.format(move="x = x.to(**move)\n    y = y.to(device, **{'non_blocking': True})").replace(
            "for x, y", "move = dict(device=device, non_blocking=True)\nfor x, y")),
        # ... also a dict built from one holding it (`{**base, ...}`, `dict(base, ...)`): these were
        # reported, unfixed, as if the key were unknown.
        Valid(_SRC.format(move="x = x.to(device, **kw1)\n    y = y.to(device, **kw2)").replace(
            "for x, y", "base = {'non_blocking': True}\nkw1 = {**base, 'dtype': torch.float32}\n"
                        "kw2 = dict(base, dtype=torch.float32)\nfor x, y")),
        # The step function is handed something other than the batch.
        Valid(_STEP_FN.format(to="images.to(device)").replace("train_step(model, batch, device)",
                                                             "train_step(model, cached, device)").replace(
            "train_step(model, batch=batch, device=device)", "pass")),
        # Copies to the CPU (a non-blocking one read right after would give stale values): by a
        # name assigned the CPU device, or `torch.device("cpu")` written in the call.
        Valid("import torch\ncpu = torch.device('cpu')\n" + _SRC.format(
            move="x = x.to(device, non_blocking=True)\n    x_host = x.to(cpu)\n    y_host = y.to(torch.device('cpu:0'))")),
        Valid("import torch\n" + _SRC.replace("for x, y", "host = 'cpu'\ndef train():\n  for x, y").format(
            move="y_host = y.to(host)").replace("\n    ", "\n      ") + "train()\n"),
        # Tensors the loop already copied to the device: a copy of them is not of pinned memory.
        Valid(_SRC.format(move="x, y = x.to(device, non_blocking=True), y.cuda(non_blocking=True)\n"
                               "    if step % 4 == 0:\n        log(x.to(host), y[0].to(other))")),
        Valid(_SRC.format(move="y = y.to(device, non_blocking=True).long()\n    y_host = y.to(host)")),
        # A helper that calls itself on the parts of any structure (TL106's `_trainlint_to_device`):
        # its `obj.to(device)` may be of any object; it is not followed.
        Valid(_HELPER.format(move="[to_device(p) for p in t] if isinstance(t, list) else t.to(device)",
                             body="x = to_device(x)")),
    ]
    invalid = [
        # Zipped loaders under a name a progress bar (or zip itself) is assigned, as written in the
        # loop's header: the copies were not seen (TL102 saw them).
        Invalid(_ZIPPED.format(bar="pbar = tqdm(zip(src, tgt))\n", it="pbar", move=_ZIPPED_COPIES),
                fixed=_ZIPPED.format(bar="pbar = tqdm(zip(src, tgt))\n", it="pbar", move=_ZIPPED_FIXED)),
        Invalid(_ZIPPED.format(bar="pairs = zip(src, tgt)\n", it="enumerate(pairs)", move=_ZIPPED_COPIES).replace(
                    "for (xs,)", "for i, ((xs,)").replace("(xt,) in", "(xt,)) in"),
                fixed=_ZIPPED.format(bar="pairs = zip(src, tgt)\n", it="enumerate(pairs)", move=_ZIPPED_FIXED).replace(
                    "for (xs,)", "for i, ((xs,)").replace("(xt,) in", "(xt,)) in")),
        Invalid(_ZIPPED.format(bar="", it="tqdm(zip(src, tgt))", move=_ZIPPED_COPIES),
                fixed=_ZIPPED.format(bar="", it="tqdm(zip(src, tgt))", move=_ZIPPED_FIXED)),
        # ... but not when the loop hands it over as the loader gave it (or one call of the two does).
        Invalid(_FORWARD.format(move=""), fixed=_FORWARD.format(move="").replace(
            "x.to(self.device)", "x.to(self.device, non_blocking=True)")),
        Invalid(_FORWARD.format(move="    x = x.to('cuda', non_blocking=True)\n").replace(
            "    opt.step()\n", "    opt.step()\n    model(raw)\n").replace("for x in loader:", "for raw in loader:\n    x = raw"),
            fixed=_FORWARD.format(move="    x = x.to('cuda', non_blocking=True)\n").replace(
            "    opt.step()\n", "    opt.step()\n    model(raw)\n").replace("for x in loader:", "for raw in loader:\n    x = raw")
            .replace("x.to(self.device)", "x.to(self.device, non_blocking=True)")),
        # A step loop drawing with `next(it)` from an iterator over a loader written in the call
        # (`it = iter(DataLoader(...))`): the loader had no name to follow, the draws were not seen.
        Invalid(_REYIELDED.format(body="", x="x.cuda()").replace("def infinite(dl):\n    while True:\n        \n", "")
                .replace("loader = DataLoader(ds, shuffle=True, pin_memory=True)\nit = infinite(loader)",
                         "it = iter(DataLoader(ds, shuffle=True, pin_memory=True))"),
                fixed=_REYIELDED.format(body="", x="x.cuda(non_blocking=True)").replace(
                    "def infinite(dl):\n    while True:\n        \n", "")
                .replace("loader = DataLoader(ds, shuffle=True, pin_memory=True)\nit = infinite(loader)",
                         "it = iter(DataLoader(ds, shuffle=True, pin_memory=True))")),
        # The same through a wrapper inside the iterator (`iter(tqdm(DataLoader(...)))`).
        Invalid(_REYIELDED.format(body="", x="x.cuda()").replace("def infinite(dl):\n    while True:\n        \n", "")
                .replace("loader = DataLoader(ds, shuffle=True, pin_memory=True)\nit = infinite(loader)",
                         "it = iter(tqdm(DataLoader(ds, shuffle=True, pin_memory=True)))"),
                fixed=_REYIELDED.format(body="", x="x.cuda(non_blocking=True)").replace(
                    "def infinite(dl):\n    while True:\n        \n", "")
                .replace("loader = DataLoader(ds, shuffle=True, pin_memory=True)\nit = infinite(loader)",
                         "it = iter(tqdm(DataLoader(ds, shuffle=True, pin_memory=True)))")),
        # Gone over through a progress bar made each epoch, after the loader's assignment: the loop
        # goes over this loader (a check of re-bound names once took the bar for a new value).
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
                "for epoch in range(3):\n    bar = tqdm(loader)\n    for x in bar:\n        loss = model(x.cuda())\n"
                "        loss.backward()\n        opt.step()\n",
                fixed="from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
                "for epoch in range(3):\n    bar = tqdm(loader)\n    for x in bar:\n        loss = model(x.cuda(non_blocking=True))\n"
                "        loss.backward()\n        opt.step()\n"),
        Invalid(_SRC.format(move="x = x.to(device)"), fixed=_SRC.format(move="x = x.to(device, non_blocking=True)")),
        # A dict unpacked into the copy: one without the key takes the keyword beside it; one the
        # file does not show (a function's `**to_kw`) may hold it already (the keyword beside it
        # once raised "got multiple values"): no fix.
        Invalid(_SRC.format(move="x = x.to(**move)").replace("for x, y", "move = dict(device=device)\nfor x, y"),
                fixed=_SRC.format(move="x = x.to(**move, non_blocking=True)").replace(
                    "for x, y", "move = dict(device=device)\nfor x, y")),
        # ... so is one built from a dict without it (its keys known through `**base`).
        Invalid(_SRC.format(move="x = x.to(**move)").replace(
                    "for x, y", "base = {'device': device}\nmove = {**base, 'dtype': dt}\nfor x, y"),
                fixed=_SRC.format(move="x = x.to(**move, non_blocking=True)").replace(
                    "for x, y", "base = {'device': device}\nmove = {**base, 'dtype': dt}\nfor x, y")),
        Invalid("from torch.utils.data import DataLoader\ndef train(loader, **to_kw):\n    for x, y in loader:\n"
                "        loss = model(x.to(**to_kw), y)\n        loss.backward()\n        opt.step()\n"
                "train(DataLoader(ds, num_workers=2, pin_memory=True), device=device, non_blocking=True)\n",
                fixed=NO_FIX, message="unless `**to_kw` passes `non_blocking=True`; not fixed"),
        Invalid(_SRC.format(move="x = x.cuda()"), fixed=_SRC.format(move="x = x.cuda(non_blocking=True)")),
        # pin_memory passed by position (the 8th of DataLoader's; TL102's fix writes it there when
        # the call passes that far): no `pin_memory` keyword in the file.
        Invalid(_SRC.format(move="x = x.cuda()").replace("num_workers=2, pin_memory=True", "8, True, None, None, 2, None, True"),
                fixed=_SRC.format(move="x = x.cuda(non_blocking=True)").replace(
                    "num_workers=2, pin_memory=True", "8, True, None, None, 2, None, True")),
        # The host tensor changed in place after its copy (normalized on the host for a log, a
        # buffer reused): a non-blocking copy may read it after the change; reported, no fix.
        Invalid(_SRC.format(move="xd = x.to(device)\n    x.mul_(std)"), fixed=NO_FIX,
                message="`x` is changed in place after the copy"),
        Invalid(_SRC.format(move="xd = x.to(device)\n    if step % 10 == 0:\n        x[x < 0] = 0"), fixed=NO_FIX,
                message="`x` is changed in place after the copy"),
        # ... also later on the copy's own line, after `;` (the rest of the line was once skipped,
        # and the copy fixed).
        Invalid(_SRC.format(move="xd = x.to(device); x.mul_(std)"), fixed=NO_FIX,
                message="`x` is changed in place after the copy"),
        Invalid(_SRC.format(move="with ctx:\n        yd = y.cuda()\n    y += 1"), fixed=NO_FIX,
                message="`y` is changed in place after the copy"),
        # ... by a function of the module the tensor is handed to (a cutout on the host; two calls
        # down), through a view of it (taken before or after the copy), by `out=` or `inplace=True`,
        # or on the next pass of a loop around the copy inside the loop over the batches (several
        # steps on each batch): no fix.
        Invalid(_SRC.format(move="xd = x.to(device)\n    cutout_(x)").replace(
                    "loader = ", "def cutout_(t):\n    t[:, :, :4, :4] = 0\nloader = "), fixed=NO_FIX,
                message="`x` is changed in place after the copy, by `cutout_(x)`"),
        Invalid(_SRC.format(move="xd = x.to(device)\n    augment(x, 4)").replace(
                    "loader = ", "def erase(t, n):\n    t.narrow(2, 0, n).zero_()\n"
                                 "def augment(images, n):\n    erase(images[0], n)\nloader = "), fixed=NO_FIX,
                message="`x` is changed in place after the copy, by `augment(x, 4)`"),
        # A recursive helper that builds new lists and changes nothing (it once counted as a
        # change, followed to the depth limit): fixed.
        Invalid(_SRC.format(move="xd = x.to(device)\n    moved = to_device(x)").replace(
                    "loader = ", "def to_device(t):\n    if isinstance(t, torch.Tensor):\n        return t.cuda()\n"
                                 "    return [to_device(v) for v in t]\nloader = "),
                fixed=_SRC.format(move="xd = x.to(device, non_blocking=True)\n    moved = to_device(x)").replace(
                    "loader = ", "def to_device(t):\n    if isinstance(t, torch.Tensor):\n        return t.cuda()\n"
                                 "    return [to_device(v) for v in t]\nloader = ")),
        # ... handed inside a list or tuple to a helper that changes each item in place.
        Invalid(_SRC.format(move="xd = x.to(device)\n    normalize_([x])").replace(
                    "loader = ", "def normalize_(ts):\n    for t in ts:\n        t.sub_(0.5)\nloader = "), fixed=NO_FIX,
                message="`x` is changed in place after the copy, by `normalize_([x])`"),
        Invalid(_SRC.format(move="v = y[:, 0]\n    yd = y.to(device)\n    v.zero_()"), fixed=NO_FIX,
                message="`y` is changed in place after the copy, by `v.zero_()`"),
        Invalid(_SRC.format(move="yd = y.to(device)\n    y.view(-1)[0] = 1"), fixed=NO_FIX,
                message="`y` is changed in place after the copy"),
        Invalid("import torch\n" + _SRC.format(move="yd = y.to(device)\n    torch.add(y, 1, out=y)"), fixed=NO_FIX,
                message="`y` is changed in place after the copy, by `torch.add(y, 1, out=y)`"),
        Invalid(_SRC.format(move="xd = x.to(device)\n    h = F.relu(x, inplace=True)"), fixed=NO_FIX,
                message="`x` is changed in place after the copy"),
        Invalid(_SRC.format(move="xs = [t.cuda() for t in x]\n    x[0].mul_(2)"), fixed=NO_FIX,
                message="`x` is changed in place after the copy"),
        Invalid(_FREE_STEPS.format(before="", inner="x.add_(noise)\n        xd = x.to(device)", after=""),
                fixed=NO_FIX, message="`x` is changed in place after the copy, on the next pass of the loop"),
        Invalid(_FREE_STEPS.format(before="", inner="xd = x.to(device)", after="    x.zero_()\n"), fixed=NO_FIX,
                message="`x` is changed in place after the copy, by `x.zero_()`"),
        # Copied by a helper of the module, then changed by its caller.
        Invalid(_HELPER.format(move="t.to(device)", body="xd = to_device(x)\n    x.mul_(std)"), fixed=NO_FIX,
                message="`x` is changed in place after the copy, by `x.mul_(std)`"),
        # ... or through what it was taken from (a list batch's item; a dict's item set anew is no
        # change of the tensor).
        Invalid(_SRC.format(move="xd = x.to(device)\n    batch[0].zero_()").replace(
                    "for x, y in loader:", "for batch in loader:\n    x, y = batch"), fixed=NO_FIX,
                message="`x` is changed in place after the copy, by `batch[0].zero_()`"),
        Invalid(_SRC.format(move="batch['x'] = x.to(device)").replace(
                    "for x, y in loader:", "for batch in loader:\n    x, y = batch['x'], batch['y']"),
                fixed=_SRC.format(move="batch['x'] = x.to(device, non_blocking=True)").replace(
                    "for x, y in loader:", "for batch in loader:\n    x, y = batch['x'], batch['y']")),
        # The copy of an item (same container, same literal key) changed in place after it: by a
        # method, a write into it, `out=`; a list batch's item too. No fix. The item set anew
        # first, another key, the container bound anew: fixed.
        Invalid(_SRC.format(move="xd = batch['x'].to(device)\n    batch['x'].mul_(0.5)").replace("for x, y in loader:", "for batch in loader:"),
                fixed=NO_FIX, message="`batch['x']` is changed in place after the copy, by `batch['x'].mul_(0.5)`"),
        Invalid(_SRC.format(move="xd = batch[0].to(device)\n    batch[0].add_(1)").replace("for x, y in loader:", "for batch in loader:"),
                fixed=NO_FIX, message="`batch[0]` is changed in place after the copy"),
        Invalid(_SRC.format(move='xd = batch["x"].float().to(device)\n    batch["x"][0] = 0').replace("for x, y in loader:", "for batch in loader:"),
                fixed=NO_FIX, message="is changed in place after the copy, by `batch[\"x\"][0] = 0`"),
        Invalid("import torch\n" + _SRC.format(move="xd = batch['x'].to(device)\n    torch.mul(m, 2, out=batch['x'])")
                .replace("for x, y in loader:", "for batch in loader:"), fixed=NO_FIX, message="`batch['x']` is changed in place after the copy"),
        Invalid(_SRC.format(move="xd = batch['x'].to(device)\n    batch['x'] = aug(batch['x'])\n    batch['x'].mul_(2)\n"
                                 "    batch['y'].mul_(2)\n    batch[0].mul_(2)").replace("for x, y in loader:", "for batch in loader:"),
                fixed=_SRC.format(move="xd = batch['x'].to(device, non_blocking=True)\n    batch['x'] = aug(batch['x'])\n"
                                       "    batch['x'].mul_(2)\n    batch['y'].mul_(2)\n    batch[0].mul_(2)").replace("for x, y in loader:", "for batch in loader:")),
        Invalid(_SRC.format(move="xd = batch['x'].to(device)\n    batch = other\n    batch['x'].mul_(2)").replace("for x, y in loader:", "for batch in loader:"),
                fixed=_SRC.format(move="xd = batch['x'].to(device, non_blocking=True)\n    batch = other\n"
                                       "    batch['x'].mul_(2)").replace("for x, y in loader:", "for batch in loader:")),
        # What is handed on is only read, or changed after the function makes its own copy; a
        # copy of the tensor (not a view) is changed; the change comes before the loop around the
        # copy, or after the copy rebinds the name to the device's tensor: fixed.
        Invalid(_SRC.format(move="xd = x.to(device)\n    m = stats(x)\n    noisy = aug(x)").replace(
                    "loader = ", "def stats(t):\n    return t.mean()\ndef aug(t):\n    t = t.flip(0)\n"
                                 "    t.mul_(2)\n    return t\nloader = "),
                fixed=_SRC.format(move="xd = x.to(device, non_blocking=True)\n    m = stats(x)\n    noisy = aug(x)").replace(
                    "loader = ", "def stats(t):\n    return t.mean()\ndef aug(t):\n    t = t.flip(0)\n"
                                 "    t.mul_(2)\n    return t\nloader = ")),
        Invalid(_SRC.format(move="xd = x.to(device)\n    v = x.clone()\n    v[:, 0] = 0\n    x.sum().add_(1)"),
                fixed=_SRC.format(move="xd = x.to(device, non_blocking=True)\n    v = x.clone()\n    v[:, 0] = 0\n"
                                       "    x.sum().add_(1)")),
        Invalid(_FREE_STEPS.format(before="    x.add_(noise)\n", inner="xd = x.to(device)", after=""),
                fixed=_FREE_STEPS.format(before="    x.add_(noise)\n", inner="xd = x.to(device, non_blocking=True)",
                                         after="")),
        Invalid(_FREE_STEPS.format(before="", inner="x = x.to(device)\n        x.add_(noise)", after=""),
                fixed=_FREE_STEPS.format(before="", inner="x = x.to(device, non_blocking=True)\n        x.add_(noise)",
                                         after="")),
        # Changed after it is bound to something else, or the copy itself rebinds it: fixed.
        Invalid(_SRC.format(move="x = x.to(device)\n    x.mul_(std)"),
                fixed=_SRC.format(move="x = x.to(device, non_blocking=True)\n    x.mul_(std)")),
        Invalid(_SRC.format(move="xd = x.to(device)\n    x = x.clone()\n    x.mul_(std)"),
                fixed=_SRC.format(move="xd = x.to(device, non_blocking=True)\n    x = x.clone()\n    x.mul_(std)")),
        Invalid(_SRC.format(move="x.mul_(std)\n    xd = x.to(device)\n    log(x.mean())"),
                fixed=_SRC.format(move="x.mul_(std)\n    xd = x.to(device, non_blocking=True)\n    log(x.mean())")),
        # Copied in a helper of the module that returns the copy (`x = to_device(x)`), as a tensor
        # or the values of a dict batch: the helper's copy is fixed.
        Invalid(_HELPER.format(move="t.to(device)", body="x = to_device(x)"),
                fixed=_HELPER.format(move="t.to(device, non_blocking=True)", body="x = to_device(x)")),
        Invalid(_HELPER.format(move="{k: v.to(device) if torch.is_tensor(v) else v\n            for k, v in t.items()}",
                               body="batch = to_device(batch)").replace("for x, y in", "for batch in"),
                fixed=_HELPER.format(move="{k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v\n"
                                          "            for k, v in t.items()}",
                                     body="batch = to_device(batch)").replace("for x, y in", "for batch in")),
        # The helper also copies to the CPU for another caller: reported, no fix (a non-blocking
        # copy to the host is read before it ends).
        Invalid(_HELPER.format(move="t.to(dev)", body="x = to_device(x, device)\n    log(to_device(loss))").replace(
                    "def to_device(t):", "def to_device(t, dev='cpu'):"),
                fixed=NO_FIX, message="`to_device` also copies to the CPU"),
        # Several steps on each batch: the loop over the batches holds the step loop.
        Invalid(_FREE_AT.format(x="x.to(device)"), fixed=_FREE_AT.format(x="x.to(device, non_blocking=True)")),
        # PyTorch's MNIST example: pinned (and batch size given) through the loader's `**` dict.
        Invalid(MNIST.format(x="data.to(device)"), fixed=MNIST.format(x="data.to(device, non_blocking=True)")),
        Invalid("import torch\n" + _SRC.format(move="x = x.to(memory_format=torch.channels_last, device=device)"),
                fixed="import torch\n" + _SRC.format(
                    move="x = x.to(memory_format=torch.channels_last, device=device, non_blocking=True)")),
        # Pinned through a variable (settings written as names are read as TL101 describes).
        Invalid(_SRC.format(move="x = x.cuda()").replace("pin_memory=True", "pin_memory=PIN").replace(
            "loader = ", "PIN = True\nloader = "),
                fixed=_SRC.format(move="x = x.cuda(non_blocking=True)").replace(
                    "pin_memory=True", "pin_memory=PIN").replace("loader = ", "PIN = True\nloader = ")),
        Invalid(_SRC.format(move="x, y = x.to(device), y.to(device)"),
                fixed=_SRC.format(move="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),
        # Pinned where there is a GPU (`torch.cuda.is_available()`, as TL102's fix writes it for a script
        # that picks its device that way, at the call, in a variable or a config field): read as
        # pinned, the run on the GPU is the one whose copies block. Before, TL102's fix took this
        # rule's fix away from those scripts.
        Invalid("import torch\n" + _SRC.format(move="x = x.to(device)").replace(
            "pin_memory=True", "pin_memory=torch.cuda.is_available()"),
                fixed="import torch\n" + _SRC.format(move="x = x.to(device, non_blocking=True)").replace(
                    "pin_memory=True", "pin_memory=torch.cuda.is_available()")),
        Invalid("import torch\nclass Config:\n    pin: bool = torch.cuda.is_available()\ncfg = Config()\n"
                + _SRC.format(move="x = x.to(device)").replace("pin_memory=True", "pin_memory=cfg.pin"),
                fixed="import torch\nclass Config:\n    pin: bool = torch.cuda.is_available()\ncfg = Config()\n"
                + _SRC.format(move="x = x.to(device, non_blocking=True)").replace("pin_memory=True", "pin_memory=cfg.pin")),
        Invalid(_SRC.format(move="x = x.to('cuda', non_blocking=False)"),
                fixed=_SRC.format(move="x = x.to('cuda', non_blocking=True)")),
        # A device that is not the CPU on every run; a copy of what the loop copied is a copy of
        # the batch again once the name is bound to the batch's tensor anew.
        Invalid(_SRC.format(move="dev = 'cpu' if cpu_only else 'cuda'\n    x = x.to(dev)"),
                fixed=_SRC.format(move="dev = 'cpu' if cpu_only else 'cuda'\n    x = x.to(dev, non_blocking=True)")),
        Invalid(_SRC.format(move="z = x.to(device, non_blocking=True)\n    z = x\n    z = z.cuda()"),
                fixed=_SRC.format(move="z = x.to(device, non_blocking=True)\n    z = x\n    z = z.cuda(non_blocking=True)")),
        # A positional non_blocking=False is replaced where it stands (`to(other, bool)`, `cuda(device, bool)`).
        Invalid(_SRC.format(move="x, y = x.to(ref, False), y.cuda(0, False)"),
                fixed=_SRC.format(move="x, y = x.to(ref, True), y.cuda(0, True)")),
        # The copy happens in the step function the batch is handed to (called twice: one finding).
        Invalid(_STEP_FN.format(to="images.to(device)"), fixed=_STEP_FN.format(to="images.to(device, non_blocking=True)")),
        # Each tensor of the batch, copied in a comprehension (simpletransformers).
        Invalid(_SRC.format(move="x = [t.cuda() for t in x]"),
                fixed=_SRC.format(move="x = [t.cuda(non_blocking=True) for t in x]")),
        # ... or of a tuple of the batch's tensors.
        Invalid(_SRC.format(move="x, y = (t.to(device) for t in (x, y))"),
                fixed=_SRC.format(move="x, y = (t.to(device, non_blocking=True) for t in (x, y))")),
        # The loader is handed to the training function (MNIST's shape); the checking loop is no hot loop.
        Invalid(HANDED.format(pin=", pin_memory=True"),
                fixed=HANDED.format(pin=", pin_memory=True").replace(
                    "x, y = x.to(device), y.to(device)",
                    "x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),
        # A function both loaders go through (its copy is of the pinned loader's batches on some calls).
        Invalid(SHARED_EPOCH.format(a=", pin_memory=True", b=""),
                fixed=SHARED_EPOCH.format(a=", pin_memory=True", b="").replace(
                    "x = x.to(device)", "x = x.to(device, non_blocking=True)")),
        # A trainer class's loader, wrapped in a progress bar in the method that trains.
        Invalid(TRAINER_CLASS.format(options=", pin_memory=True", x="x.cuda()"),
                fixed=TRAINER_CLASS.format(options=", pin_memory=True", x="x.cuda(non_blocking=True)")),
        Invalid(FIT_METHOD.format(options=", pin_memory=True", x="x.cuda()", call="Trainer().fit(loader, 10)"),
                fixed=FIT_METHOD.format(options=", pin_memory=True", x="x.cuda(non_blocking=True)",
                                         call="Trainer().fit(loader, 10)")),
        # A loop over (phase, loader) pairs: its copies are of `a`'s pinned batches in one phase.
        Invalid(PHASES.format(a=", pin_memory=True", b=""),
                fixed=PHASES.format(a=", pin_memory=True", b="").replace("x.cuda()", "x.cuda(non_blocking=True)")),
        # A closure reading its enclosing function's loader, called every epoch.
        Invalid(CLOSURE.format(x="x.cuda()"), fixed=CLOSURE.format(x="x.cuda(non_blocking=True)")),
        # Drawn with next() in a step loop.
        Invalid(DRAWN.format(pin=", pin_memory=True", x="x.cuda()"),
                fixed=DRAWN.format(pin=", pin_memory=True", x="x.cuda(non_blocking=True)")),
        # Drawn with next() from a generator of the module that re-yields the loader (`yield from`
        # or a loop yielding each batch): its batches are the loader's (they were not followed).
        Invalid(_REYIELDED.format(body="yield from dl", x="x.cuda()"),
                fixed=_REYIELDED.format(body="yield from dl", x="x.cuda(non_blocking=True)")),
        Invalid(_REYIELDED.format(body="for b in dl:\n            yield b", x="x.cuda()"),
                fixed=_REYIELDED.format(body="for b in dl:\n            yield b", x="x.cuda(non_blocking=True)")),
        # Picked from a dict by its key; the other loader of the dict is not pinned.
        Invalid(BY_KEY.format(pin_a=", pin_memory=True", pin_b="", move="x.cuda()"),
                fixed=BY_KEY.format(pin_a=", pin_memory=True", pin_b="", move="x.cuda()").replace(
                    "x.cuda()", "x.cuda(non_blocking=True)", 1)),
        # A module's loader read in the function that trains (pytorch-cifar's shape).
        Invalid("from torch.utils.data import DataLoader\ntrainloader = DataLoader(ds, pin_memory=True)\n"
                "def train(epoch):\n    for x, y in trainloader:\n        loss = model(x.cuda(), y.cuda())\n"
                "        loss.backward()\n        opt.step()\n",
                fixed="from torch.utils.data import DataLoader\ntrainloader = DataLoader(ds, pin_memory=True)\n"
                "def train(epoch):\n    for x, y in trainloader:\n"
                "        loss = model(x.cuda(non_blocking=True), y.cuda(non_blocking=True))\n"
                "        loss.backward()\n        opt.step()\n"),
        # Two calls down: the step function hands the batch on to a helper that copies it.
        Invalid(_NESTED_STEP.format(to="batch['x'].to(device)"),
                fixed=_NESTED_STEP.format(to="batch['x'].to(device, non_blocking=True)")),
        # A collate_fn's batch of a class of this module: its `to` takes no non_blocking (TypeError
        # after the fix), or does (the fix stays).
        Invalid(_CUSTOM_BATCH.format(params="self, device", move="batch = batch.to(device)"), fixed=NO_FIX,
                message="its class's `to` must take `non_blocking` first"),
        Invalid(_CUSTOM_BATCH.format(params="self, device, non_blocking=False", move="batch = batch.to(device)"),
                fixed=_CUSTOM_BATCH.format(params="self, device, non_blocking=False",
                                           move="batch = batch.to(device, non_blocking=True)")),
        # A transformers collator's batch is a BatchEncoding (non_blocking from transformers 4.48 on):
        # fixed only as unsafe (plain --fix leaves it); the tensors it holds take the safe fix.
        Invalid(_HF_BATCH.format(move="batch = batch.to(device)"),
                fixed=_HF_BATCH.format(move="batch = batch.to(device, non_blocking=True)"),
                message="if `batch` is a tensor"),
        Invalid(_HF_BATCH.format(move="batch = {k: v.to(device) for k, v in batch.items()}"),
                fixed=_HF_BATCH.format(move="batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}")),
        # A collate_fn of this module that returns tensors; one of another module: not known (unsafe).
        Invalid(_COLLATED.format(collate=_STACKS, move="x, y = x.to(device), y.to(device)"),
                fixed=_COLLATED.format(collate=_STACKS,
                                       move="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),
        Invalid(_COLLATED.format(collate="from utils import collate", move="x = x.to(device)"),
                fixed=_COLLATED.format(collate="from utils import collate", move="x = x.to(device, non_blocking=True)")),
        # On a side stream nothing waits for: the blocking copy is what orders it (no fix); with a
        # wait_stream, the fix.
        Invalid("import torch\n" + _SRC.format(move="with torch.cuda.stream(s):\n        x = x.to(device)"),
                fixed=NO_FIX, message="it runs on a side stream"),
        Invalid("import torch\n" + _SRC.format(
            move="with torch.cuda.stream(s):\n        x = x.to(device)\n    torch.cuda.current_stream().wait_stream(s)"),
                fixed="import torch\n" + _SRC.format(
            move="with torch.cuda.stream(s):\n        x = x.to(device, non_blocking=True)\n"
                 "    torch.cuda.current_stream().wait_stream(s)")),
    ]

    def __init__(self, ctx, options) -> None:
        super().__init__(ctx, options)
        self._reported: set[cst.Call] = set()  # a step function two loops call is reported once

    def visit_Module(self, node: cst.Module) -> None:
        ctx = self.ctx
        for loop, target in _pinned_batches(ctx):
            # The loop over the batches steps the optimizer, or holds a loop that does: several
            # steps on one batch ("free" adversarial training, inner optimization) copy it once.
            if ctx.loops.runs_steps(loop):
                self._check_copies(batch_moves(ctx, loop, pieces=True, target=target))

    def _check_copies(self, moves: frozenset[cst.Call]) -> None:
        ctx = self.ctx
        for call in moves - self._reported:
            if not is_device_move(ctx, call):
                continue  # a batch helper (`send_to_device(batch, device)`): its own signature
            self._reported.add(call)
            position = _non_blocking_position(ctx, call)
            arg = ctx.keyword(call, "non_blocking") or ctx.positional(call, position)
            if arg is not None and ctx.literal(arg.value) is not False:
                continue
            unpacked = _unpacks_non_blocking(ctx, call)
            if unpacked is True:
                continue  # `x.to(**move)` with `move = dict(device=d, non_blocking=True)`: the dict says
            message = "Copy of a pinned batch blocks the host; pass `non_blocking=True` so it overlaps with compute"
            if unpacked is None:
                # `x.to(**to_kw)` of a dict the file does not show: it may pass non_blocking, and a
                # keyword beside it would then be passed twice (TypeError).
                star = next(a for a in call.args if a.star)
                self.report(call, f"Copy of a pinned batch blocks the host unless `{star.star}{ctx.code(star.value)}` "
                            "passes `non_blocking=True`; not fixed: a keyword beside it would be passed twice "
                            "if it passes `non_blocking` already, so set it where that is built")
                continue
            if ctx.on_unwaited_side_stream(call):
                # A blocking copy on a side stream is done when `.to()` returns; a non-blocking one
                # would race with the default stream that reads it.
                self.report(call, message + " (it runs on a side stream: make the stream that reads it "
                            "`wait_stream(...)` that one first)")
                continue
            helper = _also_copies_to_cpu(ctx, call)
            if helper is not None:
                # `def move(t, dev): return t.to(dev)`, also called with "cpu": a non-blocking copy
                # to the host is read before it ends (stale values).
                self.report(call, message + f" (`{helper}` also copies to the CPU, where a non-blocking copy "
                            "would be read before it ends: give the batch a copy of its own)")
                continue
            changed = changed_after_copy(ctx, call)
            if changed is not None:
                # The host keeps going while a non-blocking copy waits its turn on the stream: a
                # change made in place afterwards may reach the device copy.
                when = ", on the next pass of the loop" if changed.next_pass else ""
                self.report(call, message + f" (`{changed.name}` is changed in place after the copy{when}, by "
                            f"`{excerpt(ctx, changed.node)}`, which a non-blocking copy may read after the "
                            "change: change it first, or copy a clone)")
                continue
            takes = copy_takes_non_blocking(ctx, call)
            if takes is False:
                self.report(call, message + f" (its class's `{call.func.attr.value}` must take `non_blocking` first)")
                continue
            replacement = (call, ctx.with_keyword(call, "non_blocking", "True", position=position))
            if takes is None:  # not known to be a tensor: its `to` may not take non_blocking
                self.report(call, message + f" (if `{ctx.code(call.func.value)}` is a tensor: the collate_fn's "
                            "batch may be an object whose method does not take `non_blocking`)",
                            self.fix(Applicability.UNSAFE, "Pass `non_blocking=True`", replacement))
                continue
            self.report(call, message, self.fix(Applicability.SAFE, "Pass `non_blocking=True`", replacement))


def _unpacks_non_blocking(ctx, call: cst.Call) -> bool | None:
    """Whether the copy's `*args`/`**options` pass non_blocking: False when it has none or the
    file shows the dicts' keys without it (a keyword beside them is safe), True when a dict's keys
    hold it (`move = dict(device=d, non_blocking=True)`, `**{"non_blocking": True}`: the dict decides
    it), None when not known (`**to_kw` a parameter, or `*args`, which may pass it by position)."""
    found = False
    for arg in call.args:
        if not arg.star:
            continue
        if arg.star == "*":
            return None
        entries = dict_entries(ctx, arg.value)
        if entries is None:
            return None
        found = found or "non_blocking" in entries
    return found


def _also_copies_to_cpu(ctx, call: cst.Call) -> str | None:
    """The name of the module-local function the copy is in when its device is a parameter of that
    function and some call of it passes the CPU there (`move(pred, "cpu")`); else None."""
    device = device_arg(call)
    fn = ctx.index.enclosing_function(call)
    if device is None or fn is None or not isinstance(device.value, cst.Name):
        return None
    param = device.value.value
    declared = parameter(fn, param)
    if declared is None:
        return None
    name = fn.name.value
    for other in ctx.index.nodes(cst.Call):
        if ctx.loops.local_callee_name(other) != name:
            continue
        bound = dict(ctx.loops.bind_params(name, other))
        given = bound[param].value if param in bound else declared.default  # `dev="cpu"` left out
        if given is not None and is_cpu_device(ctx, given):
            return name
    return None


def _non_blocking_position(ctx, call: cst.Call) -> int:
    """Where a device copy takes non_blocking positionally: `Tensor.cuda(device, non_blocking)`;
    `Tensor.to(device, dtype, non_blocking)`, or `Tensor.to(other, non_blocking)` when the second
    argument is a bool (PyTorch has no `to(device, bool)`)."""
    if call.func.attr.value == "cuda":
        return 1
    second = ctx.positional(call, 1)
    return 1 if second is not None and isinstance(ctx.literal(second.value), bool) else 2


def _pinned_batches(ctx) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    """(loop, target) for each loop taking the batches of a pinned loader of this file (as
    loader_batches finds them: loops over it where it is bound, returned to or handed to, on some
    calls at least, and `next(it)` draws): a non-blocking copy of another loader's pageable batch
    is only a plain copy. Once per file."""
    pinned = getattr(ctx, "_pinned_batches", None)
    if pinned is None:
        pinned = []
        for call in loader_calls(ctx):
            if setting_value(ctx, call, "pin_memory", False) is True:
                pinned += [found for found in loader_batches(ctx, call, shared=True) if found not in pinned]
        ctx._pinned_batches = pinned
    return pinned
