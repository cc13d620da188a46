"""TL103 dataloader-workers-not-persistent: Loader with workers, iterated for several epochs, without
`persistent_workers=True`."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.batches import builds_trainer_loader, loader_arg
from trainlint.analysis.framework_loaders import lightning_epochs
from trainlint.analysis.loops import runs_at_most_once, zipped_names
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Valid

from .changed import changed_between_passes
from .cases import CLOSURE, DRAWN, FIT_METHOD, FRESH, PHASES, RETURNED_DICT, TRAINER_CLASS
from .loaders import (
    DataLoaderRule,
    TRAINER_TRIGGERS,
    iterator_once,
    loader_name,
    names_evaluation,
    setting_advice,
    setting_fix,
    setting_source,
    setting_value,
)
from .workers import has_workers, workers_operand, workers_positive, workers_subject


# Step-based training that draws batches with next() and starts the iterator again at the end.
_GROWN = ("from torch.utils.data import DataLoader\ndef main(items, more, losses, x, y, i):\n    ds = {ds}\n"
          "    loader = DataLoader(ds, num_workers=2)\n    for epoch in range(3):\n        for x in loader:\n"
          "            step(x)\n        {grow}\n")
_CURRICULUM = ("import random\nclass Curriculum:\n    def __init__(self, items):\n        self.all = items\n"
               "        self.items = items[:8]\n    def grow(self, epoch):\n        self.items = self.all[: 8 * (epoch + 1)]\n"
               "    def resample(self):\n        random.shuffle(self.items)\n"
               "    def describe(self):\n        print(len(self.items))\n")


# A dataset class reading a setting of the object it is built with, and a module global; the epoch
# loop makes a {change}.
# A transform object the dataset is built with, given a new setting per epoch through its own name.
_HELD_TRANSFORM = (
    "import torch\nfrom torch.utils.data import DataLoader, Dataset\nclass Resize:\n    def __init__(self, size):\n"
    "        self.size = size\n    def __call__(self, img):\n        return img[: self.size]\n"
    "class Images(Dataset):\n    def __init__(self, transform):\n        self.transform = transform\n"
    "    def __getitem__(self, i):\n        return self.transform(torch.rand(64))\n"
    "def main():\n    resize = Resize(16)\n    loader = DataLoader(Images(resize), num_workers=2)\n"
    "    for epoch in range(3):\n        {change}\n        for x in loader:\n            step(x)\n"
)
_READS_SETTING = (
    "import torch\nfrom torch.utils.data import DataLoader, Dataset\nNOISE = 0.0\n"
    "class Tokens(Dataset):\n    def __init__(self, cfg):\n        self.cfg = cfg\n"
    "    def __getitem__(self, i):\n        return torch.zeros(self.cfg.seq_len) + NOISE\n"
    "def main(cfg):\n    loader = DataLoader(Tokens(cfg), num_workers=2)\n    for epoch in range(3):\n"
    "        {change}\n        for x in loader:\n            step(x)\n"
)
# Two iterators drawn from in turn, the first started again when it runs out.
_TWO_ITERATORS = (
    "from torch.utils.data import DataLoader\ndef main(ds, ds2):\n    loader = DataLoader(ds, num_workers=2)\n"
    "    other = DataLoader(ds2, num_workers=2, persistent_workers=True)\n    {make}\n    for step in range(100):\n"
    "        try:\n            a = next(it_a)\n        except StopIteration:\n            it_a = iter(loader)\n"
    "            a = next(it_a)\n        b = next(it_b)\n        step_fn(a, b)\n"
)


# A trainer kept its loader when it is constructed (`self.loader = loader`); {make} builds the loader
# as `train_dl` and constructs the trainer with it.
_KEPT = ("from torch.utils.data import DataLoader\nclass Trainer:\n    def __init__(self, model, loader):\n"
         "        self.model, self.loader = model, loader\n    def fit(self, epochs):\n"
         "        for epoch in range(epochs):\n            for x, y in self.loader:\n"
         "                self.model(x, y).backward()\n                opt.step()\n"
         "def main(model, ds):\n{make}    Trainer(model, {given}).fit(10)\n")
_KEPT_NAMED = "    train_dl = DataLoader(ds, num_workers=2{options})\n"


_YIELD_FROM = ("from torch.utils.data import DataLoader\ndef infinite(dl):\n    while True:\n        yield from dl\n"
               "def main(ds):\n    loader = DataLoader(ds, num_workers=2)\n    it = infinite(loader)\n"
               "    for step in range(10):\n        train(next(it))\n")



# A loader a helper makes and another helper returns on to the function whose epoch loop iterates it.
_CHAINED = ("from torch.utils.data import DataLoader\ndef make_loader(ds):\n"
            "    return DataLoader(ds, num_workers=4{persistent})\n"
            "def setup(ds):\n    train_loader = make_loader(ds)\n    return train_loader, None\n"
            "def main(ds):\n    train_loader, _ = setup(ds)\n    for epoch in range(3):\n"
            "        for batch in train_loader:\n            step(batch)\n")


# A loader whose worker count is a command-line option that defaults to 0, gone over every epoch.
_OPTION_WORKERS = ("import argparse\nfrom torch.utils.data import DataLoader\nparser = argparse.ArgumentParser()\n"
                   "parser.add_argument('--num-workers', type=int, default=0)\nargs = parser.parse_args()\n"
                   "loader = DataLoader(ds, num_workers=args.num_workers)\nfor epoch in range(3):\n"
                   "    for x in loader:\n        model(x).backward()\n        opt.step()\n")

class DataLoaderWorkersNotPersistent(DataLoaderRule):
    code = "TL103"
    name = "dataloader-workers-not-persistent"
    summary = "Loader with workers, iterated for several epochs, without `persistent_workers=True`"
    source = "§3.3"
    fix_applicability = "unsafe"
    triggers = TRAINER_TRIGGERS
    trainer_settings = True
    docs = """
## What it does
Flags a `DataLoader` with workers (`num_workers` not 0, as a literal or a variable holding one; a
setting written as a name is read as TL101 describes) and no `persistent_workers=True`
that is gone over once per epoch inside an outer loop: by a loop or a comprehension (`[model(x)
for x in val_loader]`), or a `yield from` of a generator of the module handed it (`def
infinite(dl): while True: yield from dl`), with the outer loop around it or around the calls of its function (`for
epoch in range(n): train(epoch)`; the loader found under another name it is given (`train_dl =
loader`), where a function of the module returns it to its caller, `train_loader, val_loader = make_loaders(cfg)` (also
through a helper that returns it on, up to three calls), or hands it on, as TL108 describes, or a
class of the module keeps it from its constructor (`self.loader = loader` in `__init__`,
when every construction hands it the same loader), or
in a dict or list the loop picks it from, `dataloaders[phase]`, also a dict a helper returns,
`loaders = build(cfg)`, and an item picked into a name, `train_loader = loaders["train"]`), or by
a function of another
module it is handed to inside the outer loop (`evaluate(model, val_loader)` imported from a utils
module), such as `iter(loader)` made again at each `StopIteration`; not when the outer loop builds
the loader again, which starts new workers every epoch whatever its settings. Batches drawn with
`next(it)` from an iterator made once before the loop (`it = iter(loader)`, or
`it = itertools.cycle(loader)`, which caches the batches of its one pass) are one pass; a new
iterator for every batch (`x, y = next(iter(loader))` in the loop) is a pass, and new workers, at
every step: the message says so, and that making the iterator once before the loop also keeps the
batches the workers prefetch. Also a loader a Lightning Trainer trains on (handed to `trainer.fit`, or
returned by a LightningModule's or LightningDataModule's `train_dataloader`) that runs several
epochs (`max_epochs` not a literal 1 or less, its default 1000, no `max_steps` and no
`reload_dataloaders_every_n_epochs`); and `TrainingArguments` with `dataloader_num_workers` and no
`dataloader_persistent_workers=True`, for a run of several epochs (`num_train_epochs` not a literal
1 or less, its default 3, and no `max_steps`).

A loader handed to a function inside a dict, list or tuple (`evaluate(model, {"train": loader})`),
or put in one a name holds (`loaders = [train_loader, val_loader]`), is followed into the loops
over it; a dataset changed by a method of its class (`ds.grow(epoch)`, `ds.resample()`), by a
module function handed it, or through a wrapper (`Subset(ds, idx)`) withholds the fix; `for epoch in
range(1)` repeats nothing. The message says what the fix changes in a seeded run: its random
draws after the loader's first pass (see Fix safety), for any loader, shuffled or not.

## Why is this bad?
Without persistent workers, every epoch starts by forking the workers again and re-running the
dataset's set-up in each; on short epochs the GPU waits for this at every epoch boundary.

## Example
```python
loader = DataLoader(ds, num_workers=4)
for epoch in range(10):
    for x, y in loader:
        ...
```

## Use instead
```python
loader = DataLoader(ds, num_workers=4, persistent_workers=True)
```

## Fix safety
Unsafe: live workers keep their copy of the dataset, so changes made to it between epochs are
not seen; and a seeded run draws different random numbers after the loader's first pass: without
persistent workers each pass over the loader draws its workers' base seed from the global RNG
(from the loader's `generator=` when given), with them only the first pass does, so every later
random draw of the run changes (any loader's shuffle, dropout, augmentations; the workers' RNGs
run on instead of being seeded anew), whether or not this loader shuffles. With a worker
count that may be 0 in a run, the fix sets `persistent_workers=workers > 0` (True with no workers
raises); a `persistent_workers` setting written elsewhere then gets no fix, since its one value
would be wrong for some runs. No fix either when the loader is gone over again while a loop
over it runs (a nested loop over it, `next(iter(loader))`, two passes in one loop's header such as
`zip(loader, loader)`, also assigned to a name first, `pbar = tqdm(zip(loader, loader))`, a train-set evaluation from a function
of the module the loop calls), or is handed inside that loop to a function this file does not
define, which may go over it (`evaluate(model, train_loader)` imported; `len(loader)`, `print`
do not count): with persistent workers every `iter(loader)` returns the same
iterator, reset for the new pass, so the outer loop ends early or repeats batches; a loop over it
after the other ends (an evaluation at the end of the epoch) keeps the fix. Nor when one loop
draws in turn from two iterators over the loader (`next(it_a)`, `next(it_b)`), each made by
`iter(loader)`, `itertools.cycle(loader)` or a generator function of the module handed it (`def
infinite(dl): while True: yield from dl`): the second `iter()` resets the first's pass. Nor when the loop
around the loader changes its dataset, by its name or as `loader.dataset` (`ds.set_epoch(epoch)`,
`ds.max_len = ...`, `ds.items.extend(new)`, `ds.labels[i] = y`, a method named to change it:
`set_*`, `close_*`, `reset*`, `enable_*`, `disable_*`; in the loop or a function of the module
it calls), or
a list or other object it was built from (`ds = ListDataset(items)`, then `items.extend(new)`,
`items.append(x)`, `items[i] = x`, `items += new`, or an attribute of it its class may read:
`cfg.seq_len = ...` with `Tokens(cfg)` reading `self.cfg.seq_len`, where the class is of this
module; or one the object's own class, of this module, reads: `resize.size = ...` with
`Images(resize)` and `resize = Resize(16)` reading `self.size`), or a module global the class's `__getitem__`/`__iter__`
(or a method or function of the module they call, two calls down) reads (`NOISE = ...` under `global NOISE`,
an item or attribute of it it reads, `NOISE["scale"] = ...`, or a mutating method): the live workers would keep the copy they were
started with (a grown list is indexed past the workers' shorter copy: IndexError).
"""
    _EPOCHS = "from torch.utils.data import DataLoader\nloader = {loader}\nfor epoch in range(3):\n    for batch in loader:\n        step(batch)\n"
    _FIT = ("import pytorch_lightning as pl\nfrom torch.utils.data import DataLoader\nloader = {loader}\n"
            "trainer = pl.Trainer({settings})\ntrainer.fit(model, {given})\n")
    _HOOK = ("import lightning as L\nfrom torch.utils.data import DataLoader\nclass Data(L.LightningDataModule):\n"
             "    def train_dataloader(self):\n        return {loader}\n")
    valid = [
        # A loader made again in the loop, one batch drawn from each: new workers whatever the settings.
        Valid(FRESH.format(opts=", num_workers=4").replace("    print(len(loader))\n", "")
              .replace("        x, y = next(iter(loader))\n", "        x, y = next(iter(DataLoader(ds, num_workers=4)))\n")),
        Valid(_EPOCHS.format(loader="DataLoader(ds, num_workers=4, persistent_workers=True)")),
        Valid(_EPOCHS.format(loader="DataLoader(ds, num_workers=0)")),
        # A name rebuilt per dataset in a loop, then assigned a last loader gone over once: the
        # loops before that assignment go over the earlier loaders.
        Valid("from torch.utils.data import DataLoader\ndef main(sets, final):\n    for ds in sets:\n"
              "        ld = DataLoader(ds, num_workers=2, persistent_workers=True)\n        for x in ld:\n            step(x)\n"
              "    ld = DataLoader(final, num_workers=2)\n    for x in ld:\n        step(x)\n"),
        # ... and the loops after a later assignment of the name go over the later loader.
        Valid("from torch.utils.data import DataLoader\ndef main(ds):\n    loader = DataLoader(ds, num_workers=2)\n"
              "    for x in loader:\n        step(x)\n    loader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
              "    for epoch in range(3):\n        for x in loader:\n            step(x)\n"),
        # One epoch, written as a loop: nothing is restarted.
        Valid(_EPOCHS.format(loader="DataLoader(ds, num_workers=4)").replace("range(3)", "range(1)")),
        Valid(_EPOCHS.format(loader="DataLoader(ds, num_workers=4)").replace("range(3)", "range(1, 2)")),
        # A loader the epoch loop builds anew each time (here, or through a helper): no workers to
        # keep alive.
        Valid("from torch.utils.data import DataLoader\nfor epoch in range(10):\n    ds.set_difficulty(epoch)\n"
              "    loader = DataLoader(ds, num_workers=4)\n    for batch in loader:\n        step(batch)\n"),
        Valid("from torch.utils.data import DataLoader\ndef make_loader(ds):\n    return DataLoader(ds, num_workers=4)\n"
              "def main(ds):\n    for epoch in range(3):\n        loader = make_loader(ds)\n"
              "        for batch in loader:\n            step(batch)\n"),
        # The helper returns two loaders; the epoch loop iterates only the second, once per epoch.
        Valid("from torch.utils.data import DataLoader\ndef make_loaders(ds):\n    train = DataLoader(ds, num_workers=4)\n"
              "    probe = DataLoader(ds, num_workers=4, persistent_workers=True)\n    return train, probe\n"
              "def main(ds):\n    train, probe = make_loaders(ds)\n    for batch in train:\n        step(batch)\n"
              "    for epoch in range(3):\n        for batch in probe:\n            check(batch)\n"),
        # No workers, from a variable assigned once.
        Valid(_EPOCHS.format(loader="DataLoader(ds, num_workers=NUM_WORKERS)").replace(
            "loader = ", "NUM_WORKERS = 0\nloader = ", 1)),
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\nfor batch in loader:\n    step(batch)\n"),
        # The function reading the module's loader is called once, not from a loop.
        Valid("from torch.utils.data import DataLoader\ntrainloader = DataLoader(ds, num_workers=2)\n"
              "def train(epoch):\n    for batch in trainloader:\n        step(batch)\n"
              "def main():\n    train(0)\nfor attempt in range(3):\n    print(attempt)\n"),
        Valid(_EPOCHS.format(loader="DataLoader(ds)")),
        # The loop over (phase, loader) pairs goes over each loader once: no epoch loop around it.
        Valid(PHASES.format(a=", num_workers=2", b=", num_workers=2").replace(
            "for epoch in range(3):\n    for phase", "if True:\n    for phase")),
        # Another function's variable of the same name is another loader; `len()` goes over nothing.
        Valid("from torch.utils.data import DataLoader\ndef probe(ds):\n    loader = DataLoader(ds, num_workers=4)\n"
              "    return next(iter(loader)), len(loader)\n"
              "def train(make):\n    for epoch in range(3):\n        loader = make(epoch)\n"
              "        print(len(loader))\n        for batch in loader:\n            step(batch)\n"),
        # One epoch, or a step budget that decides how often the loader is gone over.
        Valid("from transformers import TrainingArguments\n"
              "args = TrainingArguments('out', dataloader_num_workers=4, num_train_epochs=1)\n"
              "Trainer(model, args)\n"),
        Valid("from transformers import TrainingArguments\n"
              "args = TrainingArguments('out', dataloader_num_workers=4, max_steps=500)\n"
              "Trainer(model, args)\n"),
        Valid("from transformers import TrainingArguments\nargs = TrainingArguments("
              "'out', dataloader_num_workers=4, dataloader_persistent_workers=True)\n"
              "Trainer(model, args)\n"),
        # Lightning: one epoch, a step budget, loaders rebuilt every epoch, the validation loader
        # (fit's third argument), another library's fit, a hook of a class that is no Lightning module.
        Valid(_FIT.format(loader="DataLoader(ds, num_workers=4)", settings="max_epochs=1", given="loader")),
        Valid(_FIT.format(loader="DataLoader(ds, num_workers=4)", settings="max_steps=5000", given="loader")),
        Valid(_FIT.format(loader="DataLoader(ds, num_workers=4)", settings="reload_dataloaders_every_n_epochs=1",
                          given="loader")),
        Valid(_FIT.format(loader="DataLoader(ds, num_workers=4)", settings="", given="train, loader")),
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\nestimator.fit(model, loader)\n"),
        # A method of an object the file does not build from its class: where it goes is not seen.
        Valid(FIT_METHOD.format(options="", x="x", call="trainer = make_trainer()\ntrainer.fit(loader, 10)")),
        Valid("from torch.utils.data import DataLoader\nclass Data:\n    def train_dataloader(self):\n"
              "        return DataLoader(self.ds, num_workers=4)\n"),
        # Batches drawn with next() from an iterator made once, before the loop: one pass over the
        # loader (itertools.cycle caches the batches and never iterates it again).
        Valid("import itertools\nfrom torch.utils.data import DataLoader\n"
              "loader = DataLoader(ds, shuffle=True, num_workers=4, pin_memory=True)\n"
              "train_iter = itertools.cycle(loader)\nfor step in range(10_000):\n    x, y = next(train_iter)\n"
              "    loss = model(x.cuda(non_blocking=True), y)\n    loss.backward()\n    opt.step()\n"),
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n"
              "data_iter = iter(loader)\nfor step in range(len(loader)):\n    step_fn(next(data_iter))\n"),
        Valid("from itertools import cycle\nfrom torch.utils.data import DataLoader\n"
              "loader = DataLoader(ds, num_workers=4)\ndef train(steps):\n    batches = cycle(loader)\n"
              "    for step in range(steps):\n        step_fn(next(batches))\n"),
    ]
    invalid = [
        # A new iterator for every batch, `next(iter(loader))` in the loop: workers started at every
        # step (once reported only when the loader had another use, and then "at every epoch").
        Invalid(FRESH.format(opts=", num_workers=4"), fixed=FRESH.format(opts=", num_workers=4, persistent_workers=True"),
                message="Workers are restarted for every batch: the loop makes a new iterator over the loader each "
                        "time it draws one (`next(iter(loader))`); set `persistent_workers=True` to keep them alive, or "
                        "make the iterator once before the loop (`it = iter(loader)`, made again at `StopIteration`)"),
        Invalid(FRESH.format(opts=", num_workers=4").replace("    print(len(loader))\n", ""),
                fixed=FRESH.format(opts=", num_workers=4, persistent_workers=True").replace("    print(len(loader))\n", "")),
        # A shuffled loader: the message says the data order of a seeded run changes.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, shuffle=True, num_workers=2)\n"
                "for epoch in range(3):\n    for b in loader:\n        step(b)\n",
                message="a seeded run then draws different random numbers after the loader's first pass: "
                        "without persistent workers each pass draws the workers' base seed from the global RNG"),
        # Not shuffled itself (an evaluation loader), or ordered by a DistributedSampler (its seed and
        # epoch): the global RNG still moves on differently, and other loaders' shuffles with it
        # (the note was once given only for a shuffled loader, and spoke of its shuffle).
        Invalid("from torch.utils.data import DataLoader\nval_loader = DataLoader(vs, num_workers=2)\n"
                "for epoch in range(3):\n    for b in val_loader:\n        score(b)\n",
                message="any loader's shuffle, dropout"),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, generator=g)\n"
                "for epoch in range(3):\n    for b in loader:\n        step(b)\n",
                message="from the loader's `generator`"),
        Invalid(_EPOCHS.format(loader="DataLoader(ds, num_workers=4)"),
                fixed=_EPOCHS.format(loader="DataLoader(ds, num_workers=4, persistent_workers=True)")),
        # Drawn with next() and started again at StopIteration: a new pass, and new workers, each time.
        Invalid(DRAWN.format(pin=", num_workers=4", x="x"),
                fixed=DRAWN.format(pin=", num_workers=4, persistent_workers=True", x="x")),
        # A cycle made anew every epoch goes over the loader again.
        Invalid("import itertools\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n"
                "for epoch in range(3):\n    it = itertools.cycle(loader)\n    for step in range(10):\n"
                "        step_fn(next(it))\n",
                fixed="import itertools\nfrom torch.utils.data import DataLoader\n"
                      "loader = DataLoader(ds, num_workers=4, persistent_workers=True)\n"
                      "for epoch in range(3):\n    it = itertools.cycle(loader)\n    for step in range(10):\n"
                      "        step_fn(next(it))\n"),
        # PyTorch's MNIST example: workers only in the CUDA options, merged into the loader's `**`
        # dict; the guard reads the dict's worker count.
        Invalid("from torch.utils.data import DataLoader\ndef main(use_cuda):\n    train_kwargs = {'batch_size': 64}\n"
                "    if use_cuda:\n        cuda_kwargs = {'num_workers': 1, 'pin_memory': True}\n"
                "        train_kwargs.update(cuda_kwargs)\n    loader = DataLoader(ds, **train_kwargs)\n"
                "    for epoch in range(3):\n        train(model, loader)\n",
                fixed="from torch.utils.data import DataLoader\ndef main(use_cuda):\n    train_kwargs = {'batch_size': 64}\n"
                      "    if use_cuda:\n        cuda_kwargs = {'num_workers': 1, 'pin_memory': True}\n"
                      "        train_kwargs.update(cuda_kwargs)\n    loader = DataLoader(\n"
                      "        ds, **train_kwargs, persistent_workers=train_kwargs.get('num_workers', 0) > 0\n"
                      "    )\n    for epoch in range(3):\n        train(model, loader)\n"),
        # Returned by a helper to the function whose epoch loop iterates it (by the tuple's position).
        Invalid("from torch.utils.data import DataLoader\ndef make_loaders(ds, vs):\n"
                "    train = DataLoader(ds, num_workers=4)\n    val = DataLoader(vs)\n    return train, val\n"
                "def main(ds, vs):\n    train_loader, val_loader = make_loaders(ds, vs)\n    for epoch in range(3):\n"
                "        for batch in train_loader:\n            step(batch)\n",
                fixed="from torch.utils.data import DataLoader\ndef make_loaders(ds, vs):\n"
                      "    train = DataLoader(ds, num_workers=4, persistent_workers=True)\n    val = DataLoader(vs)\n"
                      "    return train, val\ndef main(ds, vs):\n    train_loader, val_loader = make_loaders(ds, vs)\n"
                      "    for epoch in range(3):\n        for batch in train_loader:\n            step(batch)\n"),
        # A worker count from an option that defaults to 0 (TL101's finding): the restart happens
        # in the runs that give it, as the message says.
        Invalid(_OPTION_WORKERS, fixed=_OPTION_WORKERS.replace(
                    "DataLoader(ds, num_workers=args.num_workers)",
                    "DataLoader(\n    ds, num_workers=args.num_workers, persistent_workers=args.num_workers > 0\n)"),
                message="Workers (when `--num-workers` is given; it defaults to 0) are restarted at every epoch"),
        # ... through two helpers (`make_loader` returns it to `setup`, which returns it to `main`).
        Invalid(_CHAINED.format(persistent=""), fixed=_CHAINED.format(persistent=", persistent_workers=True")),
        # Reached through another name (`train_dl = loader`), in the epoch loop or handed from it to
        # a function of the module: it was not followed, and the loader went unreported.
        Invalid("from torch.utils.data import DataLoader\ndef main(ds):\n    loader = DataLoader(ds, num_workers=2)\n"
                "    train_dl = loader\n    for epoch in range(3):\n        for x in train_dl:\n            step(x)\n",
                fixed="from torch.utils.data import DataLoader\ndef main(ds):\n"
                      "    loader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
                      "    train_dl = loader\n    for epoch in range(3):\n        for x in train_dl:\n            step(x)\n"),
        Invalid("from torch.utils.data import DataLoader\ndef run_epoch(model, dl):\n    for x in dl:\n"
                "        model(x).backward()\ndef main(ds, model):\n    loader = DataLoader(ds, num_workers=2)\n"
                "    train_dl = loader\n    for epoch in range(3):\n        run_epoch(model, train_dl)\n",
                fixed="from torch.utils.data import DataLoader\ndef run_epoch(model, dl):\n    for x in dl:\n"
                      "        model(x).backward()\ndef main(ds, model):\n"
                      "    loader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
                      "    train_dl = loader\n    for epoch in range(3):\n        run_epoch(model, train_dl)\n"),
        # An evaluation loader gone over at every evaluation, from a function the training loop calls.
        Invalid("from torch.utils.data import DataLoader\nval_loader = DataLoader(vs, num_workers=2)\n"
                "def validate():\n    for batch in val_loader:\n        score(batch)\n"
                "for step, batch in enumerate(train_loader):\n    model(batch).backward()\n    opt.step()\n"
                "    if step % 100 == 0:\n        validate()\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "val_loader = DataLoader(vs, num_workers=2, persistent_workers=True)\n"
                      "def validate():\n    for batch in val_loader:\n        score(batch)\n"
                      "for step, batch in enumerate(train_loader):\n    model(batch).backward()\n    opt.step()\n"
                      "    if step % 100 == 0:\n        validate()\n",
                message="Workers are restarted at every pass over the loader (each evaluation)"),
        # A module's loader read by the function the epoch loop calls (pytorch-cifar's `train(epoch)`).
        Invalid("from torch.utils.data import DataLoader\ntrainloader = DataLoader(ds, num_workers=2)\n"
                "def train(epoch):\n    for batch in trainloader:\n        step(batch)\n"
                "for epoch in range(3):\n    train(epoch)\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "trainloader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
                      "def train(epoch):\n    for batch in trainloader:\n        step(batch)\n"
                      "for epoch in range(3):\n    train(epoch)\n"),
        # persistent_workers from a variable holding False: fixed there while the workers are certain;
        # with a configurable worker count, True could meet 0 workers (a ValueError): no fix.
        Invalid(_EPOCHS.format(loader="DataLoader(ds, num_workers=8, persistent_workers=KEEP)").replace(
                    "loader = ", "KEEP = False\nloader = ", 1),
                fixed=_EPOCHS.format(loader="DataLoader(ds, num_workers=8, persistent_workers=KEEP)").replace(
                    "loader = ", "KEEP = True\nloader = ", 1),
                message="(`KEEP` is False); set `KEEP = True`"),
        Invalid(_EPOCHS.format(loader="DataLoader(ds, num_workers=cfg.workers, persistent_workers=cfg.keep)").replace(
                    "loader = ", "class Config:\n    workers = 4\n    keep = False\ncfg = Config()\nloader = ", 1),
                fixed=NO_FIX, message="unless configured otherwise (`Config.keep` is off by default)"),
        # Lightning runs the epochs: a Trainer of several (1000 by default) fitting the loader, or
        # the loader a module's train_dataloader() gives a Trainer built elsewhere.
        Invalid(_FIT.format(loader="DataLoader(ds, num_workers=4)", settings="max_epochs=10", given="loader"),
                fixed=_FIT.format(loader="DataLoader(ds, num_workers=4, persistent_workers=True)",
                                  settings="max_epochs=10", given="loader")),
        Invalid(_FIT.format(loader="DataLoader(ds, num_workers=4)", settings="", given="train_dataloaders=loader"),
                fixed=_FIT.format(loader="DataLoader(ds, num_workers=4, persistent_workers=True)", settings="",
                                  given="train_dataloaders=loader")),
        Invalid(_HOOK.format(loader="DataLoader(ds, num_workers=self.n)"),
                fixed=_HOOK.format(loader="DataLoader(ds, num_workers=self.n, persistent_workers=self.n > 0)")),
        Invalid(_EPOCHS.format(loader="DataLoader(ds, num_workers=args.workers, persistent_workers=False)"),
                fixed=_EPOCHS.format(loader="DataLoader(ds, num_workers=args.workers, persistent_workers=args.workers > 0)")),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\nfor epoch in range(3):\n"
                "    for i, batch in enumerate(loader):\n        step(batch)\n",
                fixed="from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
                      "for epoch in range(3):\n    for i, batch in enumerate(loader):\n        step(batch)\n"),
        # Returned to the caller, which hands it to another module's evaluator for each checkpoint
        # (fairseq's MMPT predict script).
        Invalid("from torch.utils.data import DataLoader\nfrom evaluation import Evaluator\n"
                "def get_loader(cfg):\n    test_loader = DataLoader(cfg.ds, num_workers=6)\n    return test_loader\n"
                "def main(cfg):\n    test_loader = get_loader(cfg)\n    for ckpt in cfg.checkpoints:\n"
                "        Evaluator(cfg).evaluate(load(ckpt), test_loader)\n",
                fixed="from torch.utils.data import DataLoader\nfrom evaluation import Evaluator\n"
                      "def get_loader(cfg):\n    test_loader = DataLoader(cfg.ds, num_workers=6, persistent_workers=True)\n"
                      "    return test_loader\n"
                      "def main(cfg):\n    test_loader = get_loader(cfg)\n    for ckpt in cfg.checkpoints:\n"
                      "        Evaluator(cfg).evaluate(load(ckpt), test_loader)\n",
                message="each evaluation"),
        # Each loader of a loop over (phase, loader) pairs, which the epoch loop runs again.
        Invalid(PHASES.format(a=", num_workers=2, persistent_workers=True", b=", num_workers=2"),
                fixed=PHASES.format(a=", num_workers=2, persistent_workers=True",
                                     b=", num_workers=2, persistent_workers=True")),
        # Returned in a dict, the training loader picked by its key (not the validation one).
        Invalid(RETURNED_DICT.format(a=", num_workers=2", b=", num_workers=2"),
                fixed=RETURNED_DICT.format(a=", num_workers=2", b=", num_workers=2").replace(
                    "DataLoader(cfg.train, shuffle=True, num_workers=2)",
                    "DataLoader(\n            cfg.train, shuffle=True, num_workers=2, persistent_workers=True\n        )")),
        # Gone over in a closure the epoch loop calls.
        Invalid(CLOSURE.format(x="x"), fixed=CLOSURE.format(x="x").replace(
            "pin_memory=True)", "pin_memory=True, persistent_workers=True)")),
        # Gone over by a comprehension in a function the epoch loop calls.
        Invalid("from torch.utils.data import DataLoader\nval_loader = DataLoader(vs, num_workers=2)\n"
                "def evaluate():\n    return sum([model(x) for x in val_loader])\n"
                "for epoch in range(3):\n    evaluate()\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "val_loader = DataLoader(vs, num_workers=2, persistent_workers=True)\n"
                      "def evaluate():\n    return sum([model(x) for x in val_loader])\n"
                      "for epoch in range(3):\n    evaluate()\n",
                message="each evaluation"),
        # A trainer class's loader, wrapped in a progress bar by the method fit() calls every epoch.
        Invalid(TRAINER_CLASS.format(options="", x="x"),
                fixed=TRAINER_CLASS.format(options=", persistent_workers=True", x="x")),
        # Handed to a method of the module's trainer class, on an instance built here.
        Invalid(FIT_METHOD.format(options="", x="x", call="trainer = Trainer()\ntrainer.fit(loader, 10)"),
                fixed=FIT_METHOD.format(options=", persistent_workers=True", x="x",
                                         call="trainer = Trainer()\ntrainer.fit(loader, 10)")),
        Invalid(FIT_METHOD.format(options="", x="x", call="Trainer().fit(loader, 10)"),
                fixed=FIT_METHOD.format(options=", persistent_workers=True", x="x", call="Trainer().fit(loader, 10)")),
        # Handed to the trainer's constructor, which keeps it (`self.loader = loader`) for the epoch
        # loop of a method: as a name, or written in the construction (it was missed).
        Invalid(_KEPT.format(make=_KEPT_NAMED.format(options=""), given="train_dl"),
                fixed=_KEPT.format(make=_KEPT_NAMED.format(options=", persistent_workers=True"), given="train_dl")),
        Invalid(_KEPT.format(make="", given="DataLoader(ds, num_workers=2)"),
                fixed=_KEPT.format(make="", given="DataLoader(ds, num_workers=2, persistent_workers=True)")),
        # ... kept with an annotation (`self.loader: DataLoader = loader`): it was missed.
        Invalid(_KEPT.format(make=_KEPT_NAMED.format(options=""), given="train_dl").replace(
                    "self.model, self.loader = model, loader", "self.model = model\n        self.loader: DataLoader = loader"),
                fixed=_KEPT.format(make=_KEPT_NAMED.format(options=", persistent_workers=True"), given="train_dl").replace(
                    "self.model, self.loader = model, loader", "self.model = model\n        self.loader: DataLoader = loader")),
        # Held in a dict the epoch loop picks it from by phase (PyTorch's fine-tuning tutorial).
        Invalid("from torch.utils.data import DataLoader\n"
                "loaders = {p: DataLoader(sets[p], num_workers=4) for p in ['train', 'val']}\n"
                "for epoch in range(3):\n    for phase in ['train', 'val']:\n"
                "        for x, y in loaders[phase]:\n            step(x, y)\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "loaders = {\n    p: DataLoader(sets[p], num_workers=4, persistent_workers=True)\n"
                      "    for p in ['train', 'val']\n}\n"
                      "for epoch in range(3):\n    for phase in ['train', 'val']:\n"
                      "        for x, y in loaders[phase]:\n            step(x, y)\n"),
        Invalid("from torch.utils.data import DataLoader\ndef train_epoch(dl):\n    for b in dl:\n        step(b)\n"
                "loader = DataLoader(ds, num_workers=2)\nfor epoch in range(3):\n    train_epoch(loader)\n",
                fixed="from torch.utils.data import DataLoader\ndef train_epoch(dl):\n    for b in dl:\n        step(b)\n"
                      "loader = DataLoader(ds, num_workers=2, persistent_workers=True)\nfor epoch in range(3):\n"
                      "    train_epoch(loader)\n"),
        # Only looked at inside the loop (`len(loader)`), or handed elsewhere after it ends: fixed.
        Invalid("from torch.utils.data import DataLoader\nfrom utils import evaluate\n"
                "loader = DataLoader(ds, num_workers=2)\nfor epoch in range(3):\n    for i, b in enumerate(loader):\n"
                "        fit(b, i / len(loader))\n    evaluate(model, loader)\n",
                fixed="from torch.utils.data import DataLoader\nfrom utils import evaluate\n"
                      "loader = DataLoader(ds, num_workers=2, persistent_workers=True)\nfor epoch in range(3):\n"
                      "    for i, b in enumerate(loader):\n        fit(b, i / len(loader))\n    evaluate(model, loader)\n"),
        # The loader gone over again while a loop over it runs (a train-set evaluation, a peek with
        # next(iter(loader))): persistent workers share one iterator, reset by each new pass, so
        # the outer pass would be cut short or repeat batches. Reported, no fix.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "def evaluate(dl):\n    for x, y in dl:\n        score(x, y)\n"
                "for epoch in range(3):\n    for i, (x, y) in enumerate(loader):\n        step(x, y)\n"
                "        if i % 4 == 0:\n            evaluate(loader)\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "for epoch in range(3):\n    for i, (x, y) in enumerate(loader):\n        step(x, y)\n"
                "        if i == 2:\n            xs, _ = next(iter(loader))\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "for epoch in range(3):\n    for x in loader:\n        step(x)\n"
                "        for y in loader:\n            check(y)\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        # ... handed down inside a dict or list (`evaluate(model, {"train": loader})`): the fix once
        # cut the run to 2 steps, and hung a loop that breaks out of its evaluation pass.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "def evaluate(loaders):\n    for name, dl in loaders.items():\n        for x, y in dl:\n            score(x, y)\n"
                "for epoch in range(3):\n    for i, (x, y) in enumerate(loader):\n        step(x, y)\n"
                "        if i % 4 == 0:\n            evaluate({'train': loader})\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "def evaluate(loaders):\n    for dl in loaders:\n        for x, y in dl:\n            score(x, y)\n"
                "for epoch in range(3):\n    for i, (x, y) in enumerate(loader):\n        step(x, y)\n"
                "        if i % 4 == 0:\n            evaluate([loader, other])\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        # ... put in a list a name holds, gone over inside the loop.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\nloaders = [loader, other]\n"
                "for epoch in range(3):\n    for i, (x, y) in enumerate(loader):\n        step(x, y)\n"
                "        if i == 3:\n            for dl in loaders:\n                for b in dl:\n                    score(b)\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        # A function reading the module's loader, called inside the loop over it.
        Invalid("from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, num_workers=2)\n"
                "def train_accuracy():\n    return sum(score(b) for b in train_loader)\n"
                "def main():\n    for epoch in range(3):\n        for step, b in enumerate(train_loader):\n"
                "            fit(b)\n            if step % 100 == 0:\n                print(train_accuracy())\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        # A function that several loaders go through, called with this one inside its loop.
        Invalid("from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, num_workers=2)\n"
                "val_loader = DataLoader(vs)\ndef evaluate(dl):\n    for b in dl:\n        score(b)\n"
                "for epoch in range(3):\n    for i, b in enumerate(train_loader):\n        fit(b)\n"
                "        if i % 50 == 0:\n            evaluate(train_loader)\n    evaluate(val_loader)\n",
                fixed=NO_FIX, message="gone over again while a loop over it runs"),
        # Handed, inside the loop over it, to a function defined elsewhere, which may go over it.
        Invalid("from torch.utils.data import DataLoader\nfrom utils import evaluate\n"
                "loader = DataLoader(ds, num_workers=2)\nfor epoch in range(3):\n    for i, b in enumerate(loader):\n"
                "        fit(b)\n        if i % 50 == 0:\n            evaluate(model, loader)\n",
                fixed=NO_FIX, message="handed to `evaluate`, defined elsewhere, which may go over it"),
        # Two passes at once from one loop's header (pairs of batches): both would draw from one
        # iterator. A zip of two different loaders keeps the fix.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "for epoch in range(3):\n    for a, b in zip(loader, loader):\n        step(a, b)\n",
                fixed=NO_FIX, message="the loader is gone over again while a loop over it runs"),
        # ... also a zip held in a name (a progress bar over it) the loop goes over.
        Invalid("from torch.utils.data import DataLoader\nfrom tqdm import tqdm\nloader = DataLoader(ds, num_workers=2)\n"
                "for epoch in range(3):\n    pbar = tqdm(zip(loader, loader))\n    for a, b in pbar:\n        step(a, b)\n",
                fixed=NO_FIX, message="the loader is gone over again while a loop over it runs"),
        Invalid("import itertools\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "for epoch in range(3):\n    for a, b in zip(loader, itertools.islice(loader, 1, None)):\n"
                "        step(a, b)\n", fixed=NO_FIX, message="gone over again"),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "other = DataLoader(ds2, num_workers=2, persistent_workers=True)\n"
                "for epoch in range(3):\n    for a, b in zip(loader, other):\n        step(a, b)\n",
                fixed="from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
                "other = DataLoader(ds2, num_workers=2, persistent_workers=True)\n"
                "for epoch in range(3):\n    for a, b in zip(loader, other):\n        step(a, b)\n"),
        # Two iterators over the loader drawn from in turn (a GAN's discriminator and generator
        # batches; `iter()` twice, or two generators each looping over it): with the fix the second
        # `iter()` reset the first's pass, repeating batches and losing others. Reported, no fix;
        # iterators over two loaders keep it.
        Invalid(_TWO_ITERATORS.format(make="it_a, it_b = iter(loader), iter(loader)"),
                fixed=NO_FIX, message="draws from two iterators over the loader in turn (`it_a` and `it_b`)"),
        # One generator that goes over the loader again and again with `yield from` (only `for b
        # in dl: yield b` was seen as passes over it): workers restart on each pass.
        Invalid(_YIELD_FROM, fixed=_YIELD_FROM.replace("num_workers=2)", "num_workers=2, persistent_workers=True)")),
        Invalid("def infinite(dl):\n    while True:\n        for b in dl:\n            yield b\n"
                + _TWO_ITERATORS.format(make="it_a = infinite(loader)\n    it_b = infinite(loader)"),
                fixed=NO_FIX, message="two iterators over the loader"),
        Invalid(_TWO_ITERATORS.format(make="it_a, it_b = iter(loader), iter(other)"),
                fixed=_TWO_ITERATORS.format(make="it_a, it_b = iter(loader), iter(other)").replace(
                    "DataLoader(ds, num_workers=2)", "DataLoader(ds, num_workers=2, persistent_workers=True)")),
        # A loader built inline as the argument of a framework's prepare call is known by the name
        # the call hands it back as (by position in accelerate's tuple): before, it had no name and
        # its passes were not seen.
        Invalid("from torch.utils.data import DataLoader\nm, o, dl = acc.prepare(m, o, "
                "DataLoader(ds, num_workers=4))\nfor epoch in range(3):\n    for x in dl:\n        step(x)\n",
                fixed="from torch.utils.data import DataLoader\nm, o, dl = acc.prepare(m, o, "
                      "DataLoader(ds, num_workers=4, persistent_workers=True))\nfor epoch in range(3):\n"
                      "    for x in dl:\n        step(x)\n"),
        Invalid("from torch.utils.data import DataLoader\ndl = fabric.setup_dataloaders(DataLoader(ds, num_workers=4))\n"
                "for epoch in range(3):\n    for x in dl:\n        step(x)\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "dl = fabric.setup_dataloaders(DataLoader(ds, num_workers=4, persistent_workers=True))\n"
                      "for epoch in range(3):\n    for x in dl:\n        step(x)\n"),
        # The dataset changed between epochs (a curriculum's `set_epoch`, an attribute assigned):
        # live workers would keep their own copy and never see it. Reported, no fix.
        Invalid("from torch.utils.data import DataLoader\nds = Curriculum()\nloader = DataLoader(ds, num_workers=2)\n"
                "for epoch in range(3):\n    ds.set_epoch(epoch)\n    for x in loader:\n        step(x)\n",
                fixed=NO_FIX, message="changes its dataset"),
        Invalid("from torch.utils.data import DataLoader\ndef main(ds):\n    loader = DataLoader(ds, num_workers=2)\n"
                "    for epoch in range(3):\n        ds.max_len = 2 + epoch\n        for x in loader:\n            step(x)\n",
                fixed=NO_FIX, message="changes its dataset"),
        # ... reached through the loader (`loader.dataset`), as Ultralytics' trainer closes mosaic.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(Scaled(), num_workers=2)\n"
                "for epoch in range(3):\n    loader.dataset.scale = float(epoch + 1)\n    for x in loader:\n        step(x)\n",
                fixed=NO_FIX, message="changes its dataset"),
        Invalid("from torch.utils.data import DataLoader\nclass Trainer:\n    def fit(self):\n"
                "        self.train_loader = DataLoader(ds, num_workers=2)\n        for epoch in range(9):\n"
                "            if epoch == 5:\n                self.train_loader.dataset.close_mosaic(hyp=self.args)\n"
                "            for x in self.train_loader:\n                step(x)\n",
                fixed=NO_FIX, message="changes its dataset"),
        # The data grows in place between rounds (self-training adds pseudo-labelled samples): a list
        # handed to the dataset's class, or an attribute of the dataset, extended or changed by item.
        # With the fix live workers keep the old list and the sampler indexes past it (IndexError).
        Invalid(_GROWN.format(ds="ListDataset(items)", grow="items.extend(more)"),
                fixed=NO_FIX, message="changes its dataset"),
        Invalid(_GROWN.format(ds="ListDataset(items)", grow="ds.items.append(x)"),
                fixed=NO_FIX, message="changes its dataset"),
        Invalid(_GROWN.format(ds="ListDataset(items)", grow="ds.labels[i] = y"),
                fixed=NO_FIX, message="changes its dataset"),
        Invalid(_GROWN.format(ds="ListDataset(items)", grow="items += more").replace(
                    "    ds = ", "    items = [x for x in range(16)]\n    ds = "),
                fixed=NO_FIX, message="changes its dataset"),
        Invalid(_GROWN.format(ds="ListDataset(items)", grow="pass").replace(
                    "DataLoader(ds,", "DataLoader(ListDataset(items),").replace("pass", "items.insert(0, x)"),
                fixed=NO_FIX, message="changes its dataset"),
        # ... by a method of its class that changes the dataset (a curriculum's `ds.grow(epoch)`,
        # `ds.resample()` shuffling its list), or a function of the module handed it: the fix
        # once let live workers index past their shorter copy (IndexError).
        Invalid(_CURRICULUM + _GROWN.format(ds="Curriculum(items)", grow="ds.grow(epoch)"),
                fixed=NO_FIX, message="changes its dataset"),
        Invalid(_CURRICULUM + _GROWN.format(ds="Curriculum(items)", grow="ds.resample()"),
                fixed=NO_FIX, message="changes its dataset"),
        Invalid(_CURRICULUM + "def widen(d, n):\n    d.items = d.all[:n]\n"
                + _GROWN.format(ds="Curriculum(items)", grow="widen(ds, 8 * epoch)"),
                fixed=NO_FIX, message="changes its dataset"),
        # ... also through a wrapper built from it (`Subset(ds, idx)` sees `ds.resample()`).
        Invalid(_CURRICULUM + _GROWN.format(ds="Subset(Curriculum(items), idx)", grow="pass").replace(
                    "    ds = Subset(Curriculum(items), idx)", "    base = Curriculum(items)\n    ds = Subset(base, idx)").replace(
                    "pass", "base.resample()"),
                fixed=NO_FIX, message="changes its dataset"),
        # ... or a setting of an object it was built from, which its class reads (`cfg.seq_len`
        # with `Tokens(cfg)` reading `self.cfg.seq_len`), or a module global its `__getitem__`
        # reads: the fix froze them in the workers at their first values.
        Invalid(_READS_SETTING.format(change="cfg.seq_len = 4 + epoch"), fixed=NO_FIX, message="changes its dataset"),
        Invalid(_READS_SETTING.format(change="global NOISE\n        NOISE = float(epoch)"), fixed=NO_FIX,
                message="changes its dataset or what it reads"),
        # ... also an item of such a global, set with no `global` statement (`CFG["noise"] = ...`).
        Invalid(_READS_SETTING.replace("NOISE = 0.0", "NOISE = {{'scale': 0.0}}").replace("+ NOISE", "+ NOISE['scale']")
                .format(change="NOISE['scale'] = float(epoch)"), fixed=NO_FIX,
                message="changes its dataset or what it reads"),
        # ... or a setting of an object handed to its constructor that the object's own class reads
        # (progressive resizing: `resize.size = ...` with `Images(resize)`): the fix froze the
        # workers' transform at its first size, as for `ds.set_epoch`.
        Invalid(_HELD_TRANSFORM.format(change="resize.size = 16 * (epoch + 1)"), fixed=NO_FIX,
                message="changes its dataset"),
        # A setting neither class reads: fixed.
        Invalid(_HELD_TRANSFORM.format(change="resize.label = str(epoch)"),
                fixed=_HELD_TRANSFORM.format(change="resize.label = str(epoch)").replace(
                    "num_workers=2)", "num_workers=2, persistent_workers=True)")),
        # A setting its class never reads: fixed.
        Invalid(_READS_SETTING.format(change="cfg.lr = 0.1 * epoch"),
                fixed=_READS_SETTING.format(change="cfg.lr = 0.1 * epoch").replace(
                    "num_workers=2)", "num_workers=2, persistent_workers=True)")),
        # A method that changes nothing of its object (`ds.describe()`): fixed.
        Invalid(_CURRICULUM + _GROWN.format(ds="Curriculum(items)", grow="ds.describe()"),
                fixed=_CURRICULUM + _GROWN.format(ds="Curriculum(items)", grow="ds.describe()").replace(
                    "num_workers=2)", "num_workers=2, persistent_workers=True)")),
        # A list the loop grows that the dataset was not built from (the losses): fixed.
        Invalid(_GROWN.format(ds="ListDataset(items)", grow="losses.append(x)"),
                fixed=_GROWN.format(ds="ListDataset(items)", grow="losses.append(x)").replace(
                    "num_workers=2)", "num_workers=2, persistent_workers=True)")),
        # Evaluated on the training set after the epoch's pass ends: no pass is cut short, fixed.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n"
                "def evaluate(dl):\n    for x, y in dl:\n        score(x, y)\n"
                "for epoch in range(3):\n    for x, y in loader:\n        step(x, y)\n    evaluate(loader)\n"
                "    print(next(iter(loader)))\n",
                fixed="from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
                      "def evaluate(dl):\n    for x, y in dl:\n        score(x, y)\n"
                      "for epoch in range(3):\n    for x, y in loader:\n        step(x, y)\n    evaluate(loader)\n"
                      "    print(next(iter(loader)))\n"),
        Invalid("from transformers import TrainingArguments\nargs = TrainingArguments('out', dataloader_num_workers=4)\n"
                "trainer = Trainer(model=model, args=args)\n",
                fixed="from transformers import TrainingArguments\nargs = TrainingArguments(\n"
                      "    'out', dataloader_num_workers=4, dataloader_persistent_workers=True\n)\n"
                      "trainer = Trainer(model=model, args=args)\n",
                message="`dataloader_persistent_workers=True`"),
    ]

    def check_loader(self, call: cst.Call) -> None:
        ctx = self.ctx
        if not has_workers(ctx, call) or setting_value(ctx, call, "persistent_workers", False) is not False:
            return
        if builds_trainer_loader(ctx, call):
            if not _trainer_epochs(ctx, call):
                return
        else:
            if not (_looped_over_per_epoch(ctx, call) or _handed_on_per_epoch(ctx, call)
                    or lightning_epochs(ctx, call, loader_name(ctx, call))):
                return
        workers = loader_arg(ctx, call, "num_workers")
        # PyTorch rejects persistent_workers=True without workers, so a configurable worker count
        # (simpletransformers' dataloader_num_workers, 0 by default) gets a condition, not True;
        # a setting written elsewhere has no room for one, so it gets no fix then.
        certain = workers_positive(ctx, workers.value)
        fix = setting_fix(self, call, "persistent_workers", "True", Applicability.UNSAFE,
                          at_call="True" if certain else f"{workers_operand(ctx, call, workers)} > 0")
        if setting_source(ctx, call, "persistent_workers") is not None and not certain:
            fix = None
        # Persistent workers share one iterator between passes: a new pass (`evaluate(model,
        # train_loader)`, `next(iter(train_loader))`) while a loop over the loader runs resets
        # it under that loop, which then ends early or repeats batches.
        reentered = _passes_within_a_pass(ctx, call)
        # So do two iterators over it drawn from in turn (`it_a, it_b = iter(loader), iter(loader)`,
        # two generators each looping over it): the second `iter()` resets the first's pass.
        concurrent = None if reentered else _concurrent_iterators(ctx, call)
        # Live workers keep the copy of the dataset they were forked with: a change made to it
        # between epochs (`ds.set_epoch(epoch)`, `ds.max_len = ...`) would no longer reach them.
        changed = not reentered and not concurrent and changed_between_passes(ctx, call)
        if reentered or concurrent or changed:
            fix = None
        # An evaluation loader (by its name: whether a loop trains is not always visible, verl's
        # training loop steps in other processes) gone over again at each evaluation (verl's
        # `_validate()` every `test_freq` steps) restarts its workers for each one, not per epoch.
        name = loader_name(ctx, call) or ""
        evaluates = names_evaluation(name.rsplit(".", 1)[-1]) and not builds_trainer_loader(ctx, call)
        when = "at every pass over the loader (each evaluation)" if evaluates else "at every epoch"
        # `next(iter(loader))` in the loop: a pass, and new workers, for every batch.
        fresh = ctx.loops.fresh_draws(call)
        if fresh:
            when = (f"for every batch: the loop makes a new iterator over the loader each time it draws one "
                    f"(`{ctx.code(fresh[0]).strip()}`)")
        workers = workers_subject(ctx, call)
        message = setting_advice(ctx, call, "persistent_workers", "True", f"{workers} are restarted {when}",
                                 "to keep them alive")
        if fresh:
            message += f", or {iterator_once(ctx, fresh[0])}, which also keeps the batches they prefetch"
        if reentered:
            again = "the loader is gone over again while a loop over it runs"
            if all(reentered is not node for node, _ in ctx.loops.passes_over(call)):  # handed elsewhere
                again = (f"while a loop over it runs the loader is handed to `{ctx.code(reentered.func).strip()}`, "
                         "defined elsewhere, which may go over it")
            message = (f"{workers} are restarted {when}; `persistent_workers=True` would keep them alive, but "
                       f"{again}: persistent workers share one iterator, so that inner pass would reset the "
                       "loop's (cutting it short or repeating batches); give the inner pass its own loader first")
        elif concurrent:
            message = (f"{workers} are restarted {when}; `persistent_workers=True` would keep them alive, but "
                       f"the loop draws from two iterators over the loader in turn (`{concurrent[0]}` and "
                       f"`{concurrent[1]}`): persistent workers share one iterator, so starting the second resets "
                       "the first (batches repeated and others never drawn); give each its own loader first")
        elif changed:
            message = (f"{workers} are restarted {when}; `persistent_workers=True` would keep them alive, but "
                       "the loop around the loader changes its dataset or what it reads, and live workers keep "
                       "their own copy of it, so they would not see the change")
        elif fix is not None:
            message += _rng_note(ctx, call)
        self.report(call, message, fix)


def _rng_note(ctx, call: cst.Call) -> str:
    """What persistent workers change in a seeded run, for TL103's message. Measured (docs/verify.md):
    each pass without them draws the workers' base seed from the global RNG (from the loader's own
    `generator=` when given), and with them only the first pass does; the global stream then moves
    on differently for every later random draw (any loader's shuffle, dropout, augmentations), and
    the workers' own RNGs run on instead of being seeded anew. A DistributedSampler's order comes
    from its seed and epoch, and is not what changes."""
    if builds_trainer_loader(ctx, call):
        return ""
    if loader_arg(ctx, call, "generator") is not None:
        return (" (a seeded run then draws different random numbers after the loader's first pass: without "
                "persistent workers each pass draws the workers' base seed from the loader's `generator`, with them only the "
                "first does, so its later shuffles and its workers' random augmentations change)")
    return (" (a seeded run then draws different random numbers after the loader's first pass: without persistent "
            "workers each pass draws the workers' base seed from the global RNG, with them only the first does, so every "
            "later random draw changes: any loader's shuffle, dropout, random augmentations in the workers too)")


def _header_nodes(ctx, header: cst.BaseExpression) -> list[cst.CSTNode]:
    """The nodes of a loop's header, and of the zip a name in it was assigned (`pbar =
    tqdm(zip(loader, loader))`, then `for a, b in pbar:`): the zip starts the passes."""
    nodes = list(ctx.index.walk(header))
    for node in list(nodes):
        if isinstance(node, cst.Name) and not isinstance(ctx.parent(node), cst.Attribute):
            nodes += [n for value in ctx.assigned_values(node) if isinstance(value, cst.Call) and zipped_names(value)
                      for n in ctx.index.walk(value)]
    return nodes


def _passes_within_a_pass(ctx, call: cst.Call) -> cst.CSTNode | None:
    """A pass over the loader (a loop, a comprehension, `iter(loader)`) started while a `for`
    loop over it runs: in its body, or in a module-local function called from there with the
    loader (or reading its name)."""
    passes = ctx.loops.passes_over(call)
    handed = ctx.loops.handed_out(call)
    names = ctx.loops.names_of(call)
    for loop, _ in passes:
        # Two passes started by one loop's header (`zip(loader, loader)`, `zip(loader,
        # islice(loader, 1, None))`): with persistent workers both draw from one iterator.
        header = loop.iter if isinstance(loop, cst.For) else getattr(getattr(loop, "for_in", None), "iter", None)
        if header is not None and sum(
                1 for node in _header_nodes(ctx, header) if isinstance(node, (cst.Name, cst.Attribute))
                and any(ctx.dotted(node) == name and ctx.loops.in_sight(node, name, scope) for name, scope in names)
                and not isinstance(ctx.parent(node), cst.Attribute)) > 1:
            return loop
        if isinstance(loop, cst.For):
            for node, anchor in passes:
                if node is not loop and (ctx.index.contains(loop.body, node) or ctx.loops.runs_inside(anchor, loop)):
                    return node
            # Handed to a function defined elsewhere (`evaluate(model, train_loader)` imported):
            # it may go over the loader; with no sight of it, the fix is not safe to offer.
            for other in handed:
                if ctx.loops.runs_inside(other, loop):
                    return other
    return None


# Calls that start a pass over the iterable they are given and hold it (`iter(loader)`, `cycle(loader)`).
_ITERATOR_MAKERS = frozenset({"builtins.iter", "itertools.cycle"})


def _concurrent_iterators(ctx, call: cst.Call) -> tuple[str, str] | None:
    """The names of two iterators over the loader that one loop draws from in turn (`next(it_a)`,
    `next(it_b)`), each made by `iter(loader)`, `itertools.cycle(loader)` or a generator function of
    the module handed the loader (`def infinite(dl): while True: for b in dl: yield b`); None when
    no loop does. Both passes are alive at once: with persistent workers the second `iter()`
    returns the same iterator, reset."""
    names = ctx.loops.names_of(call)
    holders: dict = {}  # (holder name, its scope) -> the call that made it
    for maker in ctx.index.nodes(cst.Call):
        if not any(not a.star and any(ctx.dotted(a.value) == name and ctx.loops.in_sight(a.value, name, scope)
                                      for name, scope in names) for a in maker.args):
            continue
        if ctx.names.qualified(maker.func) not in _ITERATOR_MAKERS and not _is_generator_call(ctx, maker):
            continue
        holder = _bound_name(ctx, maker)
        if holder is not None:
            holders.setdefault((holder, ctx.index.enclosing_function(maker)), maker)
    if len(holders) < 2:
        return None
    for loop in [*ctx.index.nodes(cst.For), *ctx.index.nodes(cst.While)]:
        drawn = []
        for node in ctx.index.walk(loop.body):
            if isinstance(node, cst.Call) and ctx.names.qualified(node.func) == "builtins.next" and node.args:
                key = (ctx.dotted(node.args[0].value), ctx.index.enclosing_function(node))
                if key in holders and key[0] not in drawn:
                    drawn.append(key[0])
        if len(drawn) >= 2:
            return drawn[0], drawn[1]
    return None


def _is_generator_call(ctx, call: cst.Call) -> bool:
    """call runs a function of the module that yields (a generator, made when called)."""
    return any(ctx.index.is_generator(fn) for fn in ctx.loops.callees(call))


def _bound_name(ctx, value: cst.BaseExpression) -> str | None:
    """The name value is assigned to: `it = value`, or its place in `a, b = value, other`."""
    parent = ctx.parent(value)
    if isinstance(parent, cst.Element) and isinstance(tuple_ := ctx.parent(parent), cst.Tuple):
        assign = ctx.parent(tuple_)
        if isinstance(assign, cst.Assign) and assign.value is tuple_ and len(assign.targets) == 1 \
                and isinstance(assign.targets[0].target, (cst.Tuple, cst.List)) \
                and len(assign.targets[0].target.elements) == len(tuple_.elements):
            return ctx.dotted(assign.targets[0].target.elements[tuple_.elements.index(parent)].value)
        return None
    if isinstance(parent, cst.Assign) and parent.value is value and len(parent.targets) == 1:
        return ctx.dotted(parent.targets[0].target)
    return None


def _trainer_epochs(ctx, call: cst.Call) -> bool:
    """The Trainer these TrainingArguments configure goes over its loader more than once:
    `num_train_epochs` is not a literal 1 or less (the default is 3), and no `max_steps` decides
    instead."""
    if ctx.keyword(call, "max_steps") is not None:
        return False
    epochs = ctx.keyword(call, "num_train_epochs")
    value = ctx.literal(epochs.value) if epochs is not None else 3
    return not (isinstance(value, (int, float)) and value <= 1)


def _looped_over_per_epoch(ctx, call: cst.Call) -> bool:
    """A loop or comprehension over the loader (as loops_over finds them: where a function returns
    it to its caller, hands it to another, or reads the module's) is run again and again by an outer loop, around it
    or around the calls of its function (`for epoch in ...: train(epoch)`), that does not build
    the loader again."""
    rebuilt = ctx.loops.loops_around(call)  # a new loader, and new workers, on each of their runs
    rebuilt |= {loop for loop in ctx.index.nodes(cst.For) if runs_at_most_once(loop)}  # `range(1)` repeats nothing
    passes = [*ctx.loops.loops_over(call), *ctx.loops.comprehensions_over(call), *ctx.loops.yields_over(call)]
    if any(outer not in rebuilt for loop in passes for outer in ctx.loops.repeating_loops(loop)):
        return True
    return any(outer not in rebuilt for loop, path in ctx.loops.shared_loops(call)
               for outer in ctx.loops.repeats_on(loop, path))


# `next(it)` draws from an iterator made before (`it = itertools.cycle(loader)`, `it = iter(loader)`):
# only the call that made it starts a pass over the loader, and workers, and is judged itself.
_NOT_ITERATING = frozenset({"len", "print", "isinstance", "hasattr", "getattr", "type", "id", "repr", "str", "next"})


def _handed_on_per_epoch(ctx, call: cst.Call) -> bool:
    """A name the loader is known by (`Loops.names_of`) is handed, inside an outer loop that does
    not build it, to a call that loops_over does not follow into: a function of another module
    (`evaluate(model, val_loader)` imported from a utils module, `engine.train_one_epoch(loader)`),
    which goes over it at each call."""
    rebuilt = ctx.loops.loops_around(call) | {loop for loop in ctx.index.nodes(cst.For) if runs_at_most_once(loop)}
    names = ctx.loops.names_of(call)
    names += [known for known in ctx.loops.returned_to(call, escaping=True) if known not in names]
    for name, scope in names:
        for other in ctx.index.nodes(cst.Call):
            # Into the module's own functions names_of follows it: their loops decide. Builtins
            # that only look at it (`len(loader)`, `print`) do not go over it.
            if ctx.dotted(other.func) in _NOT_ITERATING or not any(
                    ctx.dotted(arg.value) == name and not ctx.loops.follows(other, arg, name) for arg in other.args):
                continue
            if ctx.loops.in_sight(other, name, scope) and any(outer not in rebuilt for outer in ctx.loops.repeating_loops(other)):
                return True
    return False
