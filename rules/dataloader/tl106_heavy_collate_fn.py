"""TL106 heavy-collate-fn: `collate_fn` that tokenizes, pads, masks, decodes images or moves tensors to
a device."""

from __future__ import annotations

import re

import libcst as cst

from trainlint.analysis.batches import (
    MOVES_TENSORS,
    PADS,
    PADS_TOKENS,
    batch_part,
    collate_arg,
    collate_leaves_on_host,
    collates_set_on,
    device_global_read,
    heavy_work,
    is_cpu_device,
    is_loader,
    loader_batches,
    loader_calls,
    reads_as_loader,
    callable_choices,
    resolve_callable,
)
from trainlint.analysis.imports import after_imports
from trainlint.analysis.tree import parameter_names
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Rule, Valid

from .cases import STREAM, UNSHARDED
from .loaders import device_arg, draws_one_batch, excerpt
from .tl101_dataloader_no_workers import DataLoaderNoWorkers
from .workers import add_workers_fix, has_workers, workers_advice, workers_value


# TL106's device-move case: the collate_fn moves batches to a module-level device.
_MOVES = '''\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def collate(batch):
    xs = torch.stack([b[0] for b in batch]).to(device)
    ys = torch.stack([b[1] for b in batch]).to(device)
    return xs, ys


loader = DataLoader(ds, batch_size=4, collate_fn=collate)
for x, y in loader:
    loss = model(x, y)
    loss.backward()
    opt.step()
'''
_MOVES_RETURN = ("    xs = torch.stack([b[0] for b in batch]).to(device)\n"
                 "    ys = torch.stack([b[1] for b in batch]).to(device)\n    return xs, ys\n")
_MOVES_RETURN_FIXED = _MOVES_RETURN.replace(".to(device)", "")
_LONG_RETURN = ("    return torch.stack([b[0] for b in batch]).to(device=device, memory_format=torch.contiguous_format), "
                "torch.stack([b[1] for b in batch]).to(device)\n")
_LONG_RETURN_FIXED = ("    return torch.stack([b[0] for b in batch]).to(memory_format=torch.contiguous_format), "
                      "torch.stack([b[1] for b in batch])\n")
_MOVES_LOOP = "for x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n"
_MOVES_LOOP_FIXED = _MOVES_LOOP.replace("\n", "\n    x, y = _trainlint_to_device((x, y), device)\n", 1)
_OTHER_LOOPS = ("\n\ndef evaluate():\n    for x, y in loader:\n        print(model(x, y))\n\n\n"
                "def train(loader):\n    for batch in loader:\n        model(batch).backward()\n        opt.step()\n\n\n"
                "train(DataLoader(ds))\n")
_DRAWS = ("it = iter(loader)\nfor step in range(100):\n    try:\n        x, y = next(it)\n    except StopIteration:\n"
          "        it = iter(loader)\n        x, y = next(it)\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n")
_SHARED = ("def run_epoch(model, loader, opt=None):\n    for batch in loader:\n        loss = model(batch)\n"
           "        if opt is not None:\n            loss.backward()\n            opt.step()\n\n\n"
           "run_epoch(model, loader, opt)\nrun_epoch(model, DataLoader(val_ds))\n")
_IN_DICT = ("def evaluate(loaders):\n    for name, dl in loaders.items():\n        for x, y in dl:\n"
            "            print(name, model(x, y))\n\n\nevaluate({'train': loader})\n")
# A collate_fn set on a loader after it is built (sentence-transformers' legacy `fit`, on the loader
# its caller built): {param} is the loader's parameter, {collate} the collate method's body.
_SET_AFTER = """from torch.utils.data import DataLoader


class CrossEncoder:
    def smart_batching_collate(self, batch):
        {collate}

    def fit(self, {param}, epochs=1):
        train_dataloader.collate_fn = self.smart_batching_collate
        for epoch in range(epochs):
            for features, labels in train_dataloader:
                self.model(**features).loss.backward()
                self.optimizer.step()
"""
_TOKENIZES_TO_DEVICE = ("enc = self.tokenizer([b.texts for b in batch], padding=True, return_tensors='pt')\n"
                        "        return enc.to(self.model.device), torch.tensor([b.label for b in batch])")
_MOVES_FIXED = '''\
import torch
from torch.utils.data import DataLoader


def _trainlint_to_device(batch, device):
    """Added by trainlint (TL106): the batch with every tensor moved to `device`."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if hasattr(batch, "to") and callable(batch.to) and not isinstance(batch, type):
        return batch.to(device)  # an object of its own class: its `to` may not take non_blocking
    if isinstance(batch, dict):
        return type(batch)(
            (k, _trainlint_to_device(v, device)) for k, v in batch.items()
        )
    if isinstance(batch, (list, tuple)):
        moved = [_trainlint_to_device(v, device) for v in batch]
        return type(batch)(*moved) if hasattr(batch, "_fields") else type(batch)(moved)
    return batch


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def collate(batch):
    xs = torch.stack([b[0] for b in batch])
    ys = torch.stack([b[1] for b in batch])
    return xs, ys


loader = DataLoader(ds, batch_size=4, collate_fn=collate)
for x, y in loader:
    x, y = _trainlint_to_device((x, y), device)
    loss = model(x, y)
    loss.backward()
    opt.step()
'''


class HeavyCollateFn(Rule):
    code = "TL106"
    name = "heavy-collate-fn"
    summary = "`collate_fn` that tokenizes, pads, masks, decodes images or moves tensors to a device"
    source = "§3, §3.3"
    fix_applicability = "unsafe"
    # Every loader call is spelled with "DataLoader" somewhere in the file (its import at least);
    # a collate_fn passed by position has no keyword to find.
    triggers = ("collate_fn", "DataLoader")
    options = DataLoaderNoWorkers.options
    docs = """
## What it does
Resolves a loader's `collate_fn` to its definition in the module and flags one that tokenizes,
pads, builds masks, decodes images, extracts audio features (as TL107 reads them) or moves
tensors to a device.

`functools.partial(collate, ...)` is read as the function it runs, a lambda as the module's functions
its body calls (`lambda b: pad_collate(b, PAD_ID)`), and the kinds of work are
named (tokenizes text, pads token sequences, decodes images or audio, moves tensors to a device)
with offline advice that follows them (none for a device move alone). Padding is "of token
sequences" when it is a tokenizer's or its arguments show integer ids (`input_ids`, `pad_token_id`,
`dtype=torch.long`, `.long()`); else, as for float features (`F.pad` of spectrograms,
`pad_sequence` of MFCC frames), it "pads sequences", with advice for features. Padding and masks
alone are not flagged when the loader already runs workers (`num_workers` not 0): padding each
batch to its own longest sequence there is the usual cheap way, off the training process. Nor is
a loader made to draw one batch (`next(iter(DataLoader(...)))`, or a variable whose only use is
one `next(iter(loader))` run once), as for TL101: its collate_fn runs once, not every step. One a
loop draws from with a new iterator for every batch (`next(iter(loader))` each step) is reported,
without workers (as TL101 says, they would start again with each iterator).

A collate_fn set on a loader after it is built is read too (`train_dataloader.collate_fn =
self.smart_batching_collate`, sentence-transformers' legacy `fit`): on a loader of this file,
under a name it is known by (also in a function it is handed to), or on one the file shows to be a
loader (a parameter annotated `DataLoader`, a name such as `train_dataloader`). It is reported on
the assignment, with no fix. Where the file does not build that loader, its workers are not
known, so padding and masks alone are not reported there.

## Why is this bad?
`collate_fn` runs once per batch on the loader's critical path; in the main process
(`num_workers=0`) the GPU waits for it at every step. Tokenizing or decoding per step repeats work
that can be done once, offline. Device moves in `collate_fn` force CUDA into worker processes.

## Example
```python
def collate(batch):
    return tokenizer([b["text"] for b in batch], padding=True, return_tensors="pt")
loader = DataLoader(ds, batch_size=32, collate_fn=collate)
```

## Use instead
Pre-tokenize once (token ids in a binary array or memmap), pad to buckets offline, and at least
run the loader with workers:
```python
loader = DataLoader(ds, batch_size=32, collate_fn=collate, num_workers=min(8, os.cpu_count() or 1))
```

## Fix safety
Unsafe. Device moves in `collate_fn` (to a string or module-level device) are taken out of it, each
where it stands with its other arguments kept (`y.to(device, dtype=torch.float32)` becomes
`y.to(dtype=torch.float32)`; `non_blocking` goes with the device), and done where the batches arrive instead, through a small helper the fix adds (`_trainlint_to_device`,
which moves every tensor of a nested batch with `non_blocking=True`, and calls a batch object of
another class's own `.to(device)` without it, since that may not take it): first thing in every loop over the loader (evaluation
loops too, and a function's loop that other loaders go through), right after each `next(it)` draw.
The loops of every loader built with that `collate_fn` get the move. When one of them also goes
where its loops are not seen (another module's function, a comprehension, a one-off draw such as
`x, y = next(iter(loader))` after training, a draw that binds no name, `model(*next(it))`, an
iterator made in a `with` or handed on, a return to callers whose loops are not all seen), or the
module uses the function in another way too, no fix (the message says where it goes, but for
that other use): some batches would stay on the CPU. Nor when the
`collate_fn` also works on the device apart from its moves (a torch factory given a device that
is not the CPU, `torch.rand(shape, device=device)`, or a module-level tensor on the device, `xs -
MEAN`): without the moves that would meet host tensors. Nor
when the `collate_fn` returns something it does not move (a part of its tuple or dict, such as the
sequence lengths `pack_padded_sequence` needs on the CPU, or a value the file does not show to be
a device copy): moving the whole batch in the loop would move that too. Nor when the move is
CUDA-only (`.cuda()`, `.cuda(local_rank)`, `"cuda"`) and a loop it would go into also takes the
batches of another loader (`DataLoader(ds)` in the `else:` of `if use_cuda:`): that run would
break. A conditional `collate_fn` (`collate_to_gpu if use_cuda else None`) is reported by the
branch that does the work, with no fix and no workers; one behind a lambda keeps its device moves
(no fix). Otherwise, when the
loader runs in the main process, the fix adds workers, as TL101 (not to an iterable dataset of
this module that does not split its stream between workers: each would replay every sample; the
message says so). Moving tokenizing and decoding offline is left to you.
"""
    _SRC = "import os\nfrom torch.utils.data import DataLoader\ndef collate(batch):\n    {body}\n    return batch\nloader = DataLoader(ds, {args})\n"
    valid = [
        Valid(_SRC.format(body="batch = torch.stack(batch)", args="collate_fn=collate")),
        # A collate_fn that changes the layout only moves nothing to a device.
        Valid(_SRC.format(body="batch = torch.stack(batch).to(memory_format=torch.channels_last)",
                          args="collate_fn=collate, num_workers=2")),
        Valid(_SRC.format(body="ids = tokenizer(batch)", args="collate_fn=other")),
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, collate_fn=default_collate)\n"),
        Valid(_SRC.format(body="x = [b * 2 for b in batch]", args="collate_fn=collate, num_workers=4")),
        # Padding alone, in a loader that runs workers: each batch padded to its own longest there
        # is the usual cheap way (before: reported, the tester's spectrogram loader with 4
        # persistent workers).
        Valid(_SRC.format(body="x = torch.stack([F.pad(s, (0, T - s.shape[-1])) for s in batch])",
                          args="collate_fn=collate, num_workers=4, persistent_workers=True")),
        Valid(_SRC.format(body="ids = pad_sequence(batch, batch_first=True, padding_value=pad_id)",
                          args="collate_fn=lambda b: collate(b, PAD_ID), num_workers=2").replace(
                              "def collate(batch):", "def collate(batch, pad_id):")),
        # Set after the loader is built: a light collate_fn (an identity), an attribute of an
        # object that is not a loader (a loader class's own `self.collate_fn`), a parameter that
        # neither its annotation nor its name shows to be a loader, and padding alone on a loader
        # built elsewhere (it may run workers).
        Valid(_SET_AFTER.format(param="train_dataloader: DataLoader", collate="return batch")),
        Valid("class Loader:\n    def __init__(self, collate_fn):\n        self.collate_fn = collate_fn\n"),
        Valid(_SET_AFTER.format(param="data", collate=_TOKENIZES_TO_DEVICE).replace("train_dataloader", "data")),
        Valid(_SET_AFTER.format(param="train_dataloader: DataLoader",
                                collate="return pad_sequence(batch, batch_first=True)")),
        # A loader made to draw one batch (a sample decode, a shape probe) runs its collate_fn
        # once, not per step; nor does TL101 add it workers (before: reported, and workers added,
        # on a CTC script's dev loader whose one batch it decodes each epoch).
        Valid(_SRC.format(body="batch = pad_sequence(batch, batch_first=True)", args="collate_fn=collate")
              + "example = next(iter(loader))\n"),
        Valid(_SRC.format(body="ids = tokenizer(batch)", args="collate_fn=collate").replace(
            "loader = DataLoader(ds, collate_fn=collate)", "example = next(iter(DataLoader(ds, collate_fn=collate)))")),
    ]
    invalid = [
        # A new iterator for every batch (`next(iter(loader))` in the loop): the collate_fn runs every
        # step (before: left alone as a one-batch probe); no workers, which would start at each step.
        Invalid(_SRC.format(body="ids = tokenizer(batch)", args="collate_fn=collate")
                + "for step in range(100):\n    x = next(iter(loader))\n    model(x).backward()\n    opt.step()\n",
                fixed=NO_FIX, message="no workers added: the loop makes a new iterator over it for every batch"),
        # Set after the loader is built (before: not seen): on a parameter annotated as a loader,
        # one named as a loader, and a loader of this file that runs in the main process. No fix.
        Invalid(_SET_AFTER.format(param="train_dataloader: DataLoader", collate=_TOKENIZES_TO_DEVICE), fixed=NO_FIX,
                message="collate_fn `self.smart_batching_collate` (set on `train_dataloader`) moves tensors to a "
                        "device, tokenizes text once per batch on the loader's critical path; do this once offline "
                        "(pre-tokenized ids in a memmap, pre-padded buckets); move `.to(device)` into the training "
                        "loop (no fix: the collate_fn is set after the loader is built)"),
        Invalid(_SET_AFTER.format(param="train_dataloader", collate=_TOKENIZES_TO_DEVICE), fixed=NO_FIX),
        Invalid(_SRC.format(body="x = pad_sequence(batch, batch_first=True)", args="batch_size=4")
                + "loader.collate_fn = collate\n", fixed=NO_FIX,
                message="collate_fn `collate` (set on `loader`) pads sequences in the main process"),
        # Through functools.partial (Hugging Face's `partial(collate, tokenizer=tok)`): the function it runs.
        Invalid(("import functools\n" + _SRC).format(body="ids = tokenizer(batch, padding=True)",
                                                     args="collate_fn=functools.partial(collate, tokenizer=tok), num_workers=2"),
                message="tokenizes"),
        Invalid(_SRC.format(body="enc = tokenizer(batch, padding=True)", args="collate_fn=collate"),
                fixed=_SRC.format(body="enc = tokenizer(batch, padding=True)",
                                  args="collate_fn=collate, num_workers=min(8, os.cpu_count() or 1)")),
        # A lambda that calls the module's collate function with a padding id (before, the lambda's
        # own body was read, and the padding in the function it calls was not reported). In the
        # main process: no workers, a lambda cannot be pickled for spawned workers (TL101's reason).
        Invalid(_SRC.format(body="ids = pad_sequence(batch, batch_first=True, padding_value=pad_id)",
                            args="collate_fn=lambda b: collate(b, PAD_ID)").replace(
                                "def collate(batch):", "def collate(batch, pad_id):"),
                fixed=NO_FIX, message="collate_fn `collate` (called by its lambda) pads token sequences"),
        Invalid(_SRC.format(body="ids = pad_sequence(batch, batch_first=True, padding_value=pad_id)",
                            args="collate_fn=lambda b: collate(b, PAD_ID)").replace(
                                "def collate(batch):", "def collate(batch, pad_id):"),
                fixed=NO_FIX, message="no workers added: its `collate_fn` is a lambda"),
        # Float features padded (the tester's spectrograms): not called token sequences, and the
        # advice fits features (before: "pads token sequences ... pre-tokenized ids in a memmap").
        Invalid(_SRC.format(body="x = torch.stack([F.pad(s, (0, T - s.shape[-1])) for s in batch])",
                            args="collate_fn=collate"),
                message="pads sequences in the main process, so the GPU waits on it every step; do this once "
                        "offline (features computed once, length-bucketed batches)"),
        Invalid(_SRC.format(body="x = pad_sequence([torch.tensor(b, dtype=torch.long) for b in batch])",
                            args="collate_fn=collate"),
                message="pads token sequences in the main process"),
        # Padded with the tokenizer's pad id in one branch, without in the other (simpletransformers'):
        # token sequences, said once (before this case: "pads sequences, pads token sequences").
        Invalid(_SRC.format(body="x = pad_sequence(batch) if tok.pad_token is None else "
                                 "pad_sequence(batch, padding_value=tok.pad_token_id)", args="collate_fn=collate"),
                message="collate_fn `collate` pads token sequences in the main process"),
        # ... and device moves there: reported, left in place (the fix edits a collate_fn the loader names).
        Invalid(_SRC.format(body="batch = torch.stack(batch).to(device)",
                            args="collate_fn=lambda b: collate(b, 'cuda')").replace(
                                "def collate(batch):", "def collate(batch, device):"),
                fixed=NO_FIX, message="(no fix: the loader's collate_fn is a lambda that calls it)"),
        # With workers already, or a device move with no loop over the loader to move it to: no fix.
        Invalid(_SRC.format(body="enc = tokenizer(batch, padding=True)", args="collate_fn=collate, num_workers=4"),
                fixed=NO_FIX),
        # The collate_fn (and the workers) passed by position: no `collate_fn` keyword in the file.
        Invalid(_SRC.format(body="enc = tokenizer(batch, padding=True)", args="8, True, None, None, 4, collate"),
                fixed=NO_FIX, message="collate_fn `collate` tokenizes text"),
        Invalid(_SRC.format(body="x = pad_sequence(batch, batch_first=True)", args="collate_fn=collate"),
                fixed=_SRC.format(body="x = pad_sequence(batch, batch_first=True)",
                                  args="collate_fn=collate, num_workers=min(8, os.cpu_count() or 1)")),
        Invalid(_SRC.format(body="imgs = [Image.open(p) for p in batch]", args="collate_fn=collate"),
                fixed=_SRC.format(body="imgs = [Image.open(p) for p in batch]",
                                  args="collate_fn=collate, num_workers=min(8, os.cpu_count() or 1)")),
        Invalid(_SRC.format(body="batch = [b.cuda() for b in batch]", args="collate_fn=collate"), fixed=NO_FIX),
        # A lambda collate_fn: it cannot be pickled for workers started by spawn; no workers added.
        Invalid(_SRC.format(body="pass", args="collate_fn=lambda b: tokenizer(b, padding=True)"),
                fixed=NO_FIX, message="no workers added: its `collate_fn` is a lambda"),
        # An iterable dataset that does not split its stream by worker: no workers added.
        Invalid(STREAM.format(helper="def collate(batch):\n    return tokenizer(batch, padding=True)\n",
                               body=UNSHARDED, options=", collate_fn=collate"),
                fixed=NO_FIX, message="no workers added: `Stream` is an IterableDataset"),
        # Device moves leave collate_fn for the training loop (a helper moves nested batches; only
        # tensors get non_blocking, a batch class's own `to` is called plainly).
        Invalid(_MOVES, fixed=_MOVES_FIXED),
        # The helper names torch as the module does, and imports it when the module does not.
        Invalid(re.sub(r"\btorch\.(?!utils)", "th.", _MOVES.replace("import torch\n", "import torch as th\n")),
                fixed=re.sub(r"\btorch\.(?!utils)", "th.", _MOVES_FIXED.replace("import torch\n", "import torch as th\n"))),
        Invalid(_MOVES.replace("import torch\n", "from torch import stack\n").replace("torch.stack", "stack")
                .replace('torch.device("cuda" if torch.cuda.is_available() else "cpu")', '"cuda"'),
                fixed=_MOVES_FIXED.replace("import torch\n", "from torch import stack\n")
                .replace("torch.stack", "stack").replace('torch.device("cuda" if torch.cuda.is_available() else "cpu")',
                                                         '"cuda"')
                .replace("DataLoader\n\n\ndef", "DataLoader\nimport torch\n\n\ndef")),
        # Device work left in the collate_fn besides its moves (a random mask made on the device,
        # a module-level CUDA mean): the fix once took the moves out and left it mixing host and
        # device tensors (then workers started CUDA). Reported, no fix.
        Invalid(_MOVES.replace("    return xs, ys\n", "    mask = torch.rand(xs.shape, device=device) < 0.15\n"
                               "    return xs, ys\n"), fixed=NO_FIX, message="no fix: it also works on the device"),
        Invalid(_MOVES.replace("\n\ndef collate", "MEAN = torch.zeros(3, device=device)\n\n\ndef collate").replace(
                    "ys = torch.stack([b[1] for b in batch]).to(device)\n",
                    "ys = torch.stack([b[1] for b in batch]).to(device)\n    xs = xs - MEAN\n"),
                fixed=NO_FIX, message="(`MEAN`)"),
        # A loop written on one line: reported, no fix (it once escaped as an internal error).
        Invalid(_MOVES.replace(_MOVES_LOOP, "for x, y in loader: loss = model(x, y); loss.backward(); opt.step()\n"),
                fixed=NO_FIX),
        # Every loop over the loader gets the move, an evaluation loop too (its batches would stay
        # on the CPU); the batch of `enumerate` is the target's second part; a loop of another
        # function over another loader of the same name is left alone.
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP.replace("x, y in loader", "i, (x, y) in enumerate(loader)")
                               + _OTHER_LOOPS),
                fixed=_MOVES_FIXED.replace(_MOVES_LOOP_FIXED, _MOVES_LOOP_FIXED.replace(
                    "x, y in loader", "i, (x, y) in enumerate(loader)") + _OTHER_LOOPS.replace(
                    "    for x, y in loader:\n", "    for x, y in loader:\n        x, y = _trainlint_to_device((x, y), device)\n"))),
        # Batches drawn by `next(it)` in a step loop are moved right after each draw.
        Invalid(_MOVES.replace(_MOVES_LOOP, _DRAWS),
                fixed=_MOVES_FIXED.replace(_MOVES_LOOP_FIXED, _DRAWS.replace(
                    "        x, y = next(it)\n", "        x, y = next(it)\n        x, y = _trainlint_to_device((x, y), device)\n"))),
        # A function that another loader goes through too: its loop moves every loader's batches.
        Invalid(_MOVES.replace(_MOVES_LOOP, _SHARED),
                fixed=_MOVES_FIXED.replace(_MOVES_LOOP_FIXED, _SHARED.replace(
                    "    for batch in loader:\n", "    for batch in loader:\n        batch = _trainlint_to_device(batch, device)\n"))),
        # Handed down inside a dict to a function that goes over its values: that loop moves
        # the batches too (an evaluation once got CPU batches on a GPU model).
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + _IN_DICT),
                fixed=_MOVES_FIXED.replace(_MOVES_LOOP_FIXED, _MOVES_LOOP_FIXED + _IN_DICT.replace(
                    "        for x, y in dl:\n", "        for x, y in dl:\n            x, y = _trainlint_to_device((x, y), device)\n"))),
        # Handed to another module's function, or gone over by a comprehension, the loader has
        # loops this file does not show: reported, no fix.
        Invalid(_MOVES.replace(_MOVES_LOOP, "from utils import evaluate\n" + _MOVES_LOOP + "evaluate(model, loader)\n"),
                fixed=NO_FIX, message="; no fix: `loader` is handed where the file does not show every loop over it "
                                      "(another module's function, another name), and the batches taken there would "
                                      "stay on the CPU"),
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + "print([model(x, y) for x, y in loader])\n"), fixed=NO_FIX,
                message="; no fix: a comprehension goes over `loader`, with no statement to move its batches in"),
        # Returned (beside other values too) where no caller of the file binds it: the caller's
        # loops are not seen. No fix.
        Invalid(_MOVES.replace("loader = DataLoader(ds, batch_size=4, collate_fn=collate)\n" + _MOVES_LOOP,
                               "def train(ds):\n    loader = DataLoader(ds, batch_size=4, collate_fn=collate)\n"
                               + _MOVES_LOOP.replace("\n", "\n    ").replace("for", "    for", 1)
                               + "return loader, opt\n"), fixed=NO_FIX,
                message="; no fix: `loader` is returned from `train`, and the file does not show every loop its "
                        "callers run over it; the batches taken there would stay on the CPU"),
        # Batches taken where no loop the fix edits takes them: a one-off draw after training, a
        # draw that binds no target (`model(*next(it))`), an iterator made in a `with` or handed
        # on: they would stay on the CPU. No fix.
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + "x, y = next(iter(loader))\nprint(model(x, y))\n"),
                fixed=NO_FIX, message="no fix: `next(iter(loader))` takes batches"),
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + "it = iter(loader)\nfor _ in range(3):\n    print(model(*next(it)))\n"),
                fixed=NO_FIX, message="no fix: `next(it)` takes batches"),
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + "with tqdm(loader) as bar:\n    for x, y in bar:\n        print(model(x, y))\n"),
                fixed=NO_FIX),
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + "prefetcher = Prefetcher(iter(loader))\n"), fixed=NO_FIX),
        # One collate_fn for two loaders: both loaders' loops get the move; not when one of them
        # goes where its loops are not seen, nor when the module uses the function elsewhere too.
        Invalid(_MOVES.replace(_MOVES_LOOP, "val_loader = DataLoader(vs, collate_fn=collate)\n" + _MOVES_LOOP
                               + "for x, y in val_loader:\n    print(model(x, y))\n"),
                fixed=_MOVES_FIXED.replace(_MOVES_LOOP_FIXED, "val_loader = DataLoader(vs, collate_fn=collate)\n"
                                           + _MOVES_LOOP_FIXED + "for x, y in val_loader:\n"
                                           "    x, y = _trainlint_to_device((x, y), device)\n    print(model(x, y))\n")),
        Invalid(_MOVES.replace(_MOVES_LOOP, "val_loader = DataLoader(vs, collate_fn=collate)\n" + _MOVES_LOOP
                               + "print([model(x, y) for x, y in val_loader])\n"), fixed=NO_FIX),
        Invalid(_MOVES.replace(_MOVES_LOOP, _MOVES_LOOP + "x, y = collate(samples)\n"), fixed=NO_FIX),
        # A CUDA-only move (`.cuda(local_rank)`) whose loop also takes the batches of a CPU
        # loader (the other branch of `if use_cuda:`): the added move would break that run.
        Invalid(_MOVES.replace(").to(device)", ").cuda(local_rank)").replace(
                    "loader = DataLoader(ds, batch_size=4, collate_fn=collate)\n",
                    "if use_cuda:\n    loader = DataLoader(ds, batch_size=4, collate_fn=collate)\n"
                    "else:\n    loader = DataLoader(ds, batch_size=4)\n"), fixed=NO_FIX),
        # A conditional collate_fn: the branch that moves is reported (by its name); no fix, which
        # would change the other branch's batches too, and no workers (TL101 says so as well).
        Invalid(_MOVES.replace("collate_fn=collate)", "collate_fn=collate if use_cuda else None)"), fixed=NO_FIX,
                message="collate_fn `collate` moves tensors to a device"),
        # A collate_fn that leaves part of its batch on the CPU (sequence lengths, which packing
        # needs there): moving the whole batch in the loop would move them too; reported only.
        Invalid(_MOVES.replace("ys = torch.stack([b[1] for b in batch]).to(device)",
                               "ys = torch.tensor([len(b[0]) for b in batch])"), fixed=NO_FIX,
                message="its batch may hold values it leaves on the CPU"),
        Invalid(_MOVES.replace("return xs, ys", "return {'x': xs, 'y': ys, 'n': torch.tensor(len(batch))}"),
                fixed=NO_FIX, message="its batch may hold values it leaves on the CPU"),
        # What is made on the device by a torch function of moved tensors counts as moved.
        Invalid(_MOVES.replace("torch.stack([b[1] for b in batch]).to(device)", "torch.cat([b[1].to(device) for b in batch])"),
                fixed=_MOVES_FIXED.replace("torch.stack([b[1] for b in batch])", "torch.cat([b[1] for b in batch])")),
        # An instance of a class with `__call__` is named as the loader names it (its class).
        Invalid("from torch.utils.data import DataLoader\nclass PadCollator:\n    def __call__(self, batch):\n"
                "        return pad_sequence(batch, batch_first=True)\n"
                "loader = DataLoader(ds, collate_fn=PadCollator())\n",
                message="collate_fn `PadCollator` pads sequences"),
        # `.cuda(rank)` keeps its index (a module-level rank): the batches go to that device, not
        # to the current one (`.cuda()` alone means the current device).
        Invalid(_MOVES.replace('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")', "rank = 1")
                .replace(".to(device)", ".cuda(rank)"),
                fixed=_MOVES_FIXED.replace('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
                                           "rank = 1").replace("((x, y), device)", "((x, y), rank)")),
        Invalid(_MOVES.replace(".to(device)", ".cuda(device=device)"), fixed=_MOVES_FIXED),
        Invalid(_MOVES.replace(".to(device)", ".cuda()"),
                fixed=_MOVES_FIXED.replace("((x, y), device)", '((x, y), "cuda")')),
        # A one-off draw outside a loop (a sample batch for shapes) would stay on the CPU.
        Invalid(_MOVES.replace(_MOVES_LOOP, "it = iter(loader)\nsample = next(it)\n" + _MOVES_LOOP), fixed=NO_FIX),
        # A move that also converts keeps the conversion (a label cast to float for BCE), by keyword
        # or by position; non_blocking goes with the device.
        Invalid(_MOVES.replace("[1] for b in batch]).to(device)", "[1] for b in batch]).to(device, dtype=torch.float32)"),
                fixed=_MOVES_FIXED.replace("[1] for b in batch])\n", "[1] for b in batch]).to(dtype=torch.float32)\n")),
        Invalid(_MOVES.replace("[1] for b in batch]).to(device)", "[1] for b in batch]).to(device, torch.float32, copy=True)")
                .replace("[0] for b in batch]).to(device)", "[0] for b in batch]).to(device=device, non_blocking=True)"),
                fixed=_MOVES_FIXED.replace("[1] for b in batch])\n", "[1] for b in batch]).to(torch.float32, copy=True)\n")),
        # Moves in one line too long for it (a keyword device beside another keyword): each `.to`
        # is taken out where it stands, other arguments kept (the fix once rewrote the whole
        # return value for one of them, over the other's edit: an internal error).
        Invalid(_MOVES.replace(_MOVES_RETURN, _LONG_RETURN), fixed=_MOVES_FIXED.replace(_MOVES_RETURN_FIXED, _LONG_RETURN_FIXED)),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not is_loader(ctx, node) or ctx.is_offline_script:
            return
        if draws_one_batch(ctx, node):
            return  # its collate_fn runs once, not per step (as the other loader rules skip it)
        arg = collate_arg(ctx, node)
        if arg is None or arg.star:
            return
        found = _collate_work(ctx, arg.value, cheap=not has_workers(ctx, node))
        if found is None:
            return
        definition, wrapper, work = found
        conditional = isinstance(arg.value, cst.IfExp)
        message = _message(ctx, arg.value, definition, wrapper, work, in_main=workers_value(ctx, node) == 0)
        moves = _device_moves(work)
        if moves:
            # Device moves first: adding workers to a collate_fn that touches CUDA would break it.
            if wrapper is not None:
                # The fix rewrites a collate_fn the loader names; one behind a lambda is left as it is.
                message += " (no fix: the loader's collate_fn is a lambda that calls it)"
                fix = None
            elif other := _other_device_work(ctx, definition, moves):
                # Taking the moves out would leave it mixing host and device tensors, and workers
                # added next (TL101) would start CUDA in forked processes.
                message += (f"; no fix: it also works on the device apart from those moves (`{excerpt(ctx, other)}`), "
                            "which would then meet host tensors; do that in the training loop too")
                fix = None
            elif collate_leaves_on_host(ctx, definition):
                # Moving the whole batch would move what it keeps on the CPU too (`lengths` for packing).
                message += (" for the tensors it moves (no fix: its batch may hold values it leaves on the CPU, "
                            "which a move of the whole batch would move too)")
                fix = None
            elif conditional:
                fix = None
            elif stray := next((draw for user in _collate_users(ctx, definition)
                                for draw in ctx.loops.stray_draws(user)), None):
                # Batches taken outside every loop the fix would edit (`next(iter(loader))` after
                # training) would stay on the CPU while the model is on the device.
                message += (f"; no fix: `{excerpt(ctx, stray)}` takes batches outside the loops the move would "
                            f"go into, and they would stay on the CPU")
                fix = None
            elif gone := next((why for user in _collate_users(ctx, definition) if (why := _out_of_sight(ctx, user))), None):
                # Batches taken in loops this file does not show would stay on the CPU.
                message += f"; no fix: {gone}"
                fix = None
            else:
                fix = _move_to_loop_fix(self, node, definition, moves)
        elif workers_value(ctx, node) == 0 and not ctx.hides_arguments(node) and not conditional:
            fix = add_workers_fix(self, node)
            replay = workers_advice(ctx, node)
            message += f"; no workers added: {replay}" if replay else ""
        else:
            fix = None
        self.report(arg, message, fix)

    def visit_Assign(self, node: cst.Assign) -> None:
        # `train_dataloader.collate_fn = self.smart_batching_collate`: a collate_fn set on a loader
        # after it is built (sentence-transformers' legacy fit, on the loader its caller built).
        # Reported without a fix: the loader's arguments are not here, or are another's to edit.
        ctx = self.ctx
        if ctx.is_offline_script:
            return
        for target in node.targets:
            obj = target.target
            if not (isinstance(obj, cst.Attribute) and obj.attr.value == "collate_fn"):
                continue
            built = [call for call in loader_calls(ctx) if node.value in collates_set_on(ctx, call)]
            if not built and not reads_as_loader(ctx, obj.value):
                continue
            # Built elsewhere, the loader may run workers: padding alone is not reported then.
            in_main = bool(built) and all(workers_value(ctx, call) == 0 for call in built)
            found = _collate_work(ctx, node.value, cheap=in_main)
            if found is None:
                continue
            definition, wrapper, work = found
            message = _message(ctx, node.value, definition, wrapper, work, in_main=in_main,
                               set_on=ctx.code(obj.value).strip())
            self.report(obj, message + " (no fix: the collate_fn is set after the loader is built)", None)


def _collate_work(ctx, value: cst.BaseExpression, *, cheap: bool):
    """(definition, lambda wrapper or None, work) of the collate_fn value names, when it does work
    worth a finding (heavy_work's calls); None otherwise. Padding and masks alone count only with
    cheap (the loader runs in the main process): in workers they are the usual cheap way. A
    conditional collate_fn (`collate_to_gpu if use_cuda else None`) is read by the branch that
    does the work; a lambda by the module's functions its body calls (`lambda b: pad_collate(b,
    PAD_ID)`)."""
    choices = callable_choices(ctx, value)
    definition, work = next(((d, w) for d in choices if (w := heavy_work(ctx, d, masks=True))), (None, None))
    wrapper = None
    if not work:
        definition, wrapper, work = next(((d, lam, w) for lam in choices for d in _called_by_lambda(ctx, lam)
                                          if (w := heavy_work(ctx, d, masks=True))), (None, None, None))
    if not work or not cheap and all(kind in _CHEAP_IN_WORKERS for _, kind in work):
        return None
    return definition, wrapper, work


def _message(ctx, value: cst.BaseExpression, definition: cst.CSTNode, wrapper, work, *, in_main: bool,
             set_on: str | None = None) -> str:
    """The finding's sentence: the collate_fn as written (the branch of a conditional that does the
    work), the loader it is set on afterwards (set_on), the kinds of work, where they run, the
    offline advice that follows them, and where its device moves belong."""
    shown = value
    if isinstance(value, cst.IfExp):
        shown = next((b for b in (value.body, value.orelse) if (wrapper or definition) in callable_choices(ctx, b)), value)
    kinds = sorted({kind for _, kind in work})
    if PADS_TOKENS in kinds and PADS in kinds:
        kinds.remove(PADS)  # ids padded one way here, another there (with and without a pad id)
    where = "in the main process, so the GPU waits on it every step" if in_main \
        else "once per batch on the loader's critical path"
    offline = offline_advice(kinds)
    name = f"{definition.name.value}` (called by its lambda)" if wrapper else f"{_written_name(ctx, shown, definition)}`"
    if set_on is not None:
        name += f" (set on `{set_on}`)"
    return (f"collate_fn `{name} {', '.join(kinds)} {where}"
            + (f"; do this once offline ({offline})" if offline else "")
            + ("; move `.to(device)` into the training loop" if _device_moves(work) else ""))


def _device_moves(work) -> list[cst.Call]:
    """The calls of a collate_fn's work (heavy_work's) that move tensors to a device."""
    return [call for call, kind in work if kind == MOVES_TENSORS]


def _called_by_lambda(ctx, collate: cst.CSTNode) -> list[cst.FunctionDef]:
    """The module's functions a lambda collate_fn calls in its body (`lambda b: pad_collate(b,
    PAD_ID)`, a common way to pass a padding id), which do its work; [] for anything else."""
    if not isinstance(collate, cst.Lambda):
        return []
    found = []
    for node in ctx.index.walk(collate.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) \
                and isinstance(fn := resolve_callable(ctx, node.func), cst.FunctionDef) and fn not in found:
            found.append(fn)
    return found


def _other_device_work(ctx, collate: cst.CSTNode, moves: list[cst.Call]) -> cst.CSTNode | None:
    """What in the collate_fn, besides its moves, makes or reads tensors on the device: a torch
    factory given a device that is not the CPU (`torch.rand(n, device=DEVICE)`), or a module-level
    tensor on the device (`imgs - MEAN` with `MEAN = torch.tensor(..., device=DEVICE)`)."""
    if isinstance(collate, (cst.FunctionDef, cst.Lambda)):
        read = device_global_read(ctx, collate)
        if read is not None:
            return read
    for node in ctx.index.walk(collate):
        if isinstance(node, cst.Call) and node not in moves and (ctx.names.qualified(node.func) or "").startswith("torch.") \
                and (device := ctx.keyword(node, "device")) is not None and not is_cpu_device(ctx, device.value):
            return node
    return None


# Work a loader's workers do cheaply off the training process: padding a batch to its longest
# sequence (and the masks beside it). Only flagged in the main process.
_CHEAP_IN_WORKERS = frozenset({PADS, PADS_TOKENS, "builds masks"})


def offline_advice(kinds) -> str:
    """What to do once, offline, for the kinds of per-batch work a collate_fn does (heavy_work's);
    "" when it only moves tensors to a device, which belongs in the training loop instead."""
    advice = []
    if any("text" in k or "token" in k for k in kinds):
        advice.append("pre-tokenized ids in a memmap, pre-padded buckets")
    elif PADS in kinds:
        advice.append("features computed once, length-bucketed batches")
    if any("features" in k for k in kinds):
        advice.append("features computed once, a memmap of log-mel frames")
    if any("decodes" in k for k in kinds):
        advice.append("decoded tensors saved once")
    if any("masks" in k for k in kinds) and not advice:
        advice.append("masks built with the padded batches")
    return "; ".join(advice)


# Inserted once per module by the TL106 fix: moves every tensor of a batch (nested dicts, lists,
# tuples) to the device, so collate_fn can stay on the CPU. Only tensors get non_blocking: a batch
# class of the project's own (`def to(self, device)`) may not take it. {torch}: the module's name
# for torch.
MOVE_HELPER = """def _trainlint_to_device(batch, device):
    \"\"\"Added by trainlint (TL106): the batch with every tensor moved to `device`.\"\"\"
    if isinstance(batch, {torch}.Tensor):
        return batch.to(device, non_blocking=True)
    if hasattr(batch, "to") and callable(batch.to) and not isinstance(batch, type):
        return batch.to(device)  # an object of its own class: its `to` may not take non_blocking
    if isinstance(batch, dict):
        return type(batch)(
            (k, _trainlint_to_device(v, device)) for k, v in batch.items()
        )
    if isinstance(batch, (list, tuple)):
        moved = [_trainlint_to_device(v, device) for v in batch]
        return type(batch)(*moved) if hasattr(batch, "_fields") else type(batch)(moved)
    return batch
"""


def _move_to_loop_fix(rule: Rule, loader: cst.Call, collate: cst.CSTNode, moves: list[cst.Call]):
    """Take the device moves out of collate_fn and move each batch in the loops over this loader.

    Only when every move names the same device through something the loop can see too (a string,
    or a module-level name), and the loader's loops bind the batch to plain names."""
    ctx = rule.ctx
    params = parameter_names(collate) if isinstance(collate, (cst.FunctionDef, cst.Lambda)) else set()
    local = params | {ctx.dotted(t.target) for a in ctx.index.walk(collate) if isinstance(a, cst.Assign)
                      for t in a.targets}
    devices = set()
    for call in moves:
        found = device_arg(call)
        if call.func.attr.value == "cuda" and found is None:
            devices.add('"cuda"')  # the current device, as `.cuda()` means
            continue
        if found is None:
            return None  # `x.to(memory_format=..., device=...)` read another way: not sure which is the device
        # `.cuda(rank)` keeps its index: `.to(rank)` goes to the same device (an int is a CUDA index).
        device = found.value
        root = device
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and root.value in local or not isinstance(root, (cst.Name, cst.SimpleString)):
            return None
        devices.add(ctx.code(device))
    # Every loader built with this collate_fn loses its moves: all of their batches must be seen.
    users = _collate_users(ctx, collate)
    if loader not in users:
        return None
    batches = [found for user in users for found in loader_batches(ctx, user, shared=True)]
    batches = list(dict.fromkeys(batches))  # a shared function's loop, once
    if len(devices) != 1 or not batches:
        return None
    device = devices.pop()
    # A loop that also takes batches from another loader: the move added there moves those too.
    # To a device named by a variable (`device`, CPU where there is no GPU) that is harmless; to a
    # CUDA-only one (`.cuda()`, `.cuda(local_rank)`) it breaks the run the other loader is for
    # (`DataLoader(ds, collate_fn=to_gpu) if use_cuda else DataLoader(ds)`).
    cuda_only = any(call.func.attr.value == "cuda" for call in moves) or "cuda" in device
    if cuda_only:
        others = [call for call in loader_calls(ctx) if call not in users]
        fed_by_others = {loop for other in others for loop, _ in loader_batches(ctx, other, shared=True)}
        if any(loop in fed_by_others for loop, _ in batches):
            return None
    # Each move is taken out where it stands, its other arguments kept (`y.to(device, dtype=...)`
    # -> `y.to(dtype=...)`), written as text: a call handed to rule.fix may take its whole
    # statement along (call_replacement), over the edits of the other moves in it.
    stripper = _MoveStripper(set(moves))
    outermost = [call for call in moves if not any(a in stripper.moves for a in ctx.index.ancestors(call))]
    replacements = []
    for call in outermost:
        new = call.visit(stripper)
        if stripper.failed:
            return None  # an argument left that cannot stand without the device
        replacements.append((call, ctx.render(new, at=call)))
    for loop, target in batches:
        batch = batch_part(ctx, loop, target)
        names = [batch] if isinstance(batch, cst.Name) else [e.value for e in getattr(batch, "elements", ())]
        if not names or not all(isinstance(n, cst.Name) for n in names):
            return None  # bound to anything else: `batch["x"]`, starred
        bound = ", ".join(n.value for n in names)
        packed = bound if isinstance(batch, cst.Name) else f"({bound}{',' if len(names) == 1 else ''})"
        move = f"{bound} = _trainlint_to_device({packed}, {device})"
        if target is loop.target:  # first thing in the loop's body
            if not isinstance(loop.body, cst.IndentedBlock):
                return None  # `for x in loader: step(x)` on one line: no statement to add before its body
            replacements.append(ctx.insert_before(loop.body.body[0], move))
        else:  # drawn by `target = next(it)`: right after the draw
            draw = ctx.parent(ctx.parent(ctx.parent(target)))  # target, AssignTarget, Assign, its line
            if not isinstance(draw, cst.SimpleStatementLine) or len(draw.body) != 1:
                return None
            replacements.append(ctx.insert_after(draw, move))
    if "_trainlint_to_device" not in ctx.loops.functions:
        newline, torch = ctx.module.default_newline, ctx.names.module_alias("torch")
        code = newline * 2 + MOVE_HELPER.replace("{torch}", torch or "torch")
        if torch is None:  # `from torch.utils.data import DataLoader` only: the helper needs torch itself
            code = "import torch" + newline + code
        helper = after_imports(ctx, code, blank_lines_after=2)
        if helper is None:
            return None
        replacements.append(helper)
    return rule.fix(Applicability.UNSAFE, f"Move batches to {device} in the training loop, not in collate_fn",
                    *replacements)


def _written_name(ctx, value: cst.BaseExpression, definition: cst.CSTNode) -> str:
    """The collate_fn as the loader names it: `collate`, `self.collate`, the class of an instance
    (`PadCollator()` -> `PadCollator`), else its code when short (`partial(collate, pad=0)`), else
    its definition's name."""
    name = ctx.dotted(value)
    if name is None and isinstance(value, cst.Call) and isinstance(definition, cst.FunctionDef) \
            and definition.name.value == "__call__":
        name = ctx.dotted(value.func)
    if name is None:
        code = ctx.code(value).strip()
        name = code if "\n" not in code and len(code) <= 60 else None
    if name is None:
        name = definition.name.value if isinstance(definition, cst.FunctionDef) else "collate_fn"
    return name


class _MoveStripper(cst.CSTTransformer):
    """Rewrites each device move (by identity, in `moves`) to what it does but the move:
    `x.to(device)`/`x.cuda()` -> `x`; `x.to(device, torch.float32)` -> `x.to(torch.float32)`,
    `x.to(device=d, memory_format=m)` -> `x.to(memory_format=m)` (`non_blocking` goes with the
    device). Sets `failed` where an argument left would mean something else without it."""

    def __init__(self, moves: set) -> None:
        super().__init__()
        self.moves = moves
        self.failed = False

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if original not in self.moves:
            return updated
        func = updated.func
        if func.attr.value == "cuda":
            device = updated.args[0] if updated.args and updated.args[0].keyword is None else None
            kept = [a for a in updated.args if a is not device and not (a.keyword and a.keyword.value in ("device", "non_blocking"))]
            if any(a.keyword is None for a in kept):
                self.failed = True  # `x.cuda(0, True)`: a positional non_blocking
            func = func.with_changes(attr=cst.Name("to"))
        else:
            device = device_arg(updated)
            kept = [a for a in updated.args if a is not device and not (a.keyword and a.keyword.value == "non_blocking")]
            first = kept[0] if kept and kept[0].keyword is None else None
            if first is not None and isinstance(first.value, cst.Name) and first.value.value in ("True", "False"):
                self.failed = True  # `x.to(other, True)`: non_blocking would become a dtype
        if any(a.star for a in kept):
            self.failed = True
        if not kept:
            return updated.func.value
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(func=func, args=kept)


def _collate_users(ctx, collate: cst.CSTNode) -> list[cst.Call]:
    """The loaders whose collate_fn is the definition collate; [] when the module names it
    anywhere else too (called directly, wrapped, stored): its other uses would lose the moves."""
    users, uses = [], []
    for call in loader_calls(ctx):
        arg = collate_arg(ctx, call)
        if arg is not None and not arg.star and resolve_callable(ctx, arg.value) is collate:
            users.append(call)
            uses += [id(n) for n in ctx.index.walk(arg.value) if isinstance(n, cst.Name)]
    name = collate.name.value if isinstance(collate, cst.FunctionDef) else None
    if isinstance(collate, cst.FunctionDef) and collate.name.value == "__call__":
        name = ctx.index.enclosing_class(collate).name.value
    if name is not None and any(n.value == name and id(n) not in uses for n in ctx.index.nodes(cst.Name)
                                if not isinstance(ctx.parent(n), (cst.FunctionDef, cst.ClassDef))):
        return []
    return users


def _out_of_sight(ctx, loader: cst.Call) -> str | None:
    """Why some of the loader's batches are taken where no loop the fix edits takes them, as the
    message says it; None when they are not. A name the loader is known by, on every call or on
    some (`paths_of`), is returned where the callers binding it are not all known, or handed where
    the loops seen are not all of its loops (to another module's function, another target), or a
    comprehension goes over it. (Draws outside a loop, `stray_draws`, the caller names itself.)"""
    if over := ctx.loops.comprehensions_over(loader, shared=True):
        return f"a comprehension goes over `{excerpt(ctx, over[0].iter)}`, with no statement to move its batches in"
    followed = bool(ctx.loops.returned_to(loader))
    for path in ctx.loops.paths_of(loader):
        if not ctx.loops.escapes(path.name, path.scope, returns=not followed, shared=True):
            continue
        if path.scope is not None and not ctx.loops.escapes(path.name, path.scope, returns=False, shared=True):
            return (f"`{path.name}` is returned from `{path.scope.name.value}`, and the file does not show every "
                    f"loop its callers run over it; the batches taken there would stay on the CPU")
        return (f"`{path.name}` is handed where the file does not show every loop over it (another module's "
                f"function, another name), and the batches taken there would stay on the CPU")
    return None
