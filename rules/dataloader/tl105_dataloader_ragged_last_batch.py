"""TL105 dataloader-ragged-last-batch: Shuffled training loader without `drop_last=True`."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.batches import dataset_builds, dataset_class, loader_arg, method_of
from trainlint.analysis.words import words
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Valid

from .cases import (
    BY_KEY,
    FRESH,
    MNIST,
    PARTIAL,
    PHASE_KEYS,
    PHASE_PICKED,
    PHASES,
    PHASES_ZIP,
    SHARED_EPOCH,
    SHARED_EPOCH_GUARD,
    TOKENIZED,
)
from .loaders import (
    DataLoaderRule,
    draws_a_batch_per_pass,
    excerpt,
    is_training_loader,
    names_evaluation,
    sampler_calls,
    sampler_is,
    setting_advice,
    setting_fix,
    setting_source,
    setting_value,
)


# A training loader of a module that also has an {evaluate} function, and what comes {after} training.
_EVALUATED = (
    "import torch\nfrom torch.utils.data import DataLoader\n"
    "{evaluate}def main(ds, model, opt):\n    train_loader = DataLoader(ds, batch_size=16, shuffle=True)\n"
    "    for epoch in range(3):\n        for x, y in train_loader:\n"
    "            model(x, y).backward()\n            opt.step()\n{after}"
)
_EVALUATE = ("def evaluate(model, loader):\n    correct = 0\n    with torch.no_grad():\n        for x, y in loader:\n"
             "            correct += (model(x).argmax(1) == y).sum().item()\n    return correct\n")
# Samplers that draw a new random order (or random draws: weighted, or a random subset) each epoch.
_SHUFFLING = ("RandomSampler", "DistributedSampler", "WeightedRandomSampler", "SubsetRandomSampler")


def _shuffles_without_sampler(ctx, call: cst.Call, shuffle: cst.Arg) -> bool:
    """`shuffle=(sampler is None)` beside `sampler=sampler` (PyTorch's ImageNet example): the
    loader shuffles itself exactly when it is given no sampler, and the sampler decides otherwise."""
    test = shuffle.value
    sampler = loader_arg(ctx, call, "sampler")
    return sampler is not None and not sampler.star and isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
        and isinstance(test.comparisons[0].operator, cst.Is) and ctx.dotted(test.comparisons[0].comparator) == "None" \
        and ctx.dotted(test.left) is not None and ctx.dotted(test.left) == ctx.dotted(sampler.value)


def shuffles(ctx, call: cst.Call) -> bool:
    """The loader draws batches in a new random order each epoch: `shuffle=True`, or a
    `RandomSampler` / `DistributedSampler` (which shuffles unless told `shuffle=False`), a
    `WeightedRandomSampler` or a `SubsetRandomSampler`."""
    shuffle = loader_arg(ctx, call, "shuffle")
    if shuffle is not None and not _shuffles_without_sampler(ctx, call, shuffle):
        return setting_value(ctx, call, "shuffle", False) is True
    samplers = sampler_calls(ctx, call, or_none=shuffle is not None)
    if not samplers:
        return False
    for sampler in samplers:
        if not sampler_is(ctx, sampler.func, _SHUFFLING):
            return False
        option = ctx.keyword(sampler, "shuffle")
        if option is not None and ctx.literal(option.value) is not True:
            return False
    return True


# A shuffled loader gone over by a comprehension only: {call} is what each batch is handed to.
_COMPREHENDED = ("import torch\nfrom torch.utils.data import DataLoader\n\n\n"
                 "def train_step(x):\n    model(x).sum().backward()\n    opt.step()\n\n\n"
                 "def run(model, ds):\n    loader = DataLoader(ds, batch_size=64, shuffle=True)\n"
                 "    return [{call}(x.cuda()) for x in loader]\n")


class DataLoaderRaggedLastBatch(DataLoaderRule):
    code = "TL105"
    name = "dataloader-ragged-last-batch"
    summary = "Shuffled training loader without `drop_last=True`"
    source = "§6.2"
    fix_applicability = "unsafe"
    docs = """
## What it does
Flags a shuffled training `DataLoader` (`shuffle=True`, or a `RandomSampler`,
`DistributedSampler`, `WeightedRandomSampler` or `SubsetRandomSampler` as its `sampler`, passed
directly or through a name: the assignment that reaches the loader, as `sampler = RandomSampler(ds)`
just above it in one branch of an `if` whose other branch assigns a `SequentialSampler`; else
every assignment in its function, which must all shuffle) without
`drop_last=True`; not one with `batch_size=None`, whose dataset yields whole batches (there is no
ragged last batch, and `drop_last` would raise), nor one whose batch size is 1 (written, or
DataLoader's default when none is given: every batch is one sample). Whether it trains is read as TL102 describes (the optimizer steps of its loops,
also on the calls of a function other loaders go through; for one gone over only by
comprehensions, whether they call a function of the module that steps; else its name). Settings written as
names (`drop_last=cfg.drop_last`) are read as TL101 describes, and fixed where they are written.
Not a loader that shuffles a dataset whose size the file writes (a `TensorDataset` of
`torch.randn(20, 3)`, a class whose `__len__` returns a literal) when its batch size divides that
size or exceeds it: every batch is then the same size, and for a dataset smaller than one batch
`drop_last=True` would leave no batch at all. Nor one whose batch is its whole dataset
(`batch_size=len(ds)` of the dataset it is given, with no sampler), nor one whose sampler draws a
written number of samples an epoch that its literal batch size divides
(`RandomSampler(buf, replacement=True, num_samples=10**6)` with `batch_size=16`). Nor one whose every
pass is a new iterator drawn for one batch (`next(iter(loader))` each step): no pass reaches its last batch.

## Why is this bad?
The last batch of each epoch is smaller. A new shape recompiles `torch.compile`d graphs, defeats
CUDA graphs and cuDNN autotuning caches, and a tiny batch gives a noisy gradient step.

## Example
```python
loader = DataLoader(ds, batch_size=64, shuffle=True)
```

## Use instead
```python
loader = DataLoader(ds, batch_size=64, shuffle=True, drop_last=True)
```

## Fix safety
Unsafe: up to `batch_size - 1` samples per epoch are skipped (a different subset each epoch).
A `drop_last` passed by position is replaced where it stands. A loader built by a comprehension
(`{x: DataLoader(sets[x], shuffle=True) for x in ["train", "val"]}`) stands for the evaluation
loaders too: the fix sets `drop_last` per key (`drop_last=x == "train"`) where the keys are
written and one of them (`"train"`, `"training"`) names the training set; otherwise it is
reported with no fix, the message showing that setting. A comprehension over datasets rather than
splits (`[DataLoader(ds, ...) for ds in datasets]`: written strings, a dict keyed by the name, or
a name such as `split` or `phase` say splits) is reported with no fix and no per-key setting:
`drop_last=True` fits where every loader it builds trains. A loader that is also gone over by a
pass that trains nothing (a loop with no optimizer step, as in an `evaluate(model, train_loader)`
of the module, a comprehension over it, or a call of another module's function named for
evaluation) is reported with no fix: that pass would skip the last partial batch too.
"""
    _DRAWN = ("from torch.utils.data import DataLoader, RandomSampler\ndef main(buf):\n"
              "    loader = DataLoader(buf, batch_size={batch}, sampler={sampler})\n    for x in loader:\n"
              "        model(x).backward()\n        opt.step()\n")
    valid = [
        # A new iterator for every batch: only first batches are drawn, never a ragged last one.
        Valid(FRESH.format(opts=", batch_size=32")),
        # Gone over by a comprehension that steps nothing (predictions): not a training loader, and
        # drop_last would drop predictions (before: reported, the loader taken for a training one).
        Valid(_COMPREHENDED.format(call="model")),
        # Full-batch training: the batch is the whole dataset, so no last batch is smaller (before,
        # reported).
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, batch_size=len(ds), shuffle=True)\n"),
        # A sampler drawing a written number of samples that the batch size divides (a replay
        # buffer's `RandomSampler(buf, replacement=True, num_samples=10**6)`, 16 a batch): every
        # batch is full (before, reported, as the dataset's size was judged).
        Valid(_DRAWN.format(batch="16", sampler="RandomSampler(buf, replacement=True, num_samples=10**6)")),
        Valid(_DRAWN.format(batch="16", sampler="sampler").replace(
            "    loader = ", "    sampler = RandomSampler(buf, num_samples=1024)\n    loader = ")),
        # Re-bound through a wrapper of itself (`accelerator.prepare`): still the loader its loops
        # go over, which take no optimizer step here.
        Valid("from torch.utils.data import DataLoader\ndef check(accelerator):\n    dl = DataLoader(ds, shuffle=True)\n"
              "    dl = accelerator.prepare(dl)\n    for _ in range(3):\n        for b in dl:\n            seen.append(b)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, shuffle=True, drop_last=True)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, shuffle=False)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds)\n"),
        Valid("from torch.utils.data import DataLoader\nval_loader = DataLoader(ds, shuffle=True)\n"),
        # One sample a batch (written, or DataLoader's default): no last batch is smaller, and
        # drop_last changes nothing (the finding was noise).
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, shuffle=True)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, batch_size=1, shuffle=True)\n"),
        # `batch_size=None`: the dataset yields whole batches (DLRM's); drop_last would raise.
        Valid("from torch.utils.data import DataLoader\nDataLoader(batches, batch_size=None, shuffle=True)\n"),
        # Evaluation by whole words of the name, or a stem run together with a loader word.
        Valid("from torch.utils.data import DataLoader\ntestloader = DataLoader(ds, shuffle=True)\n"
              "evalDataLoader = DataLoader(ds, shuffle=True)\n"),
        # A dataset whose size the file writes, smaller than the batch size or a multiple of it:
        # every batch is the same size. Before, `drop_last=True` was added, and a dataset smaller
        # than a batch gave no batch at all (the training loop never ran; a tester's toy script
        # then failed reading the loss after it).
        Valid("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nx = torch.randn(20, 3)\n"
              "train_loader = DataLoader(TensorDataset(x, x.sum(1)), batch_size=32, shuffle=True)\n"),
        Valid("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
              "train_loader = DataLoader(TensorDataset(torch.zeros((64, 3))), batch_size=16, shuffle=True)\n"),
        Valid("from torch.utils.data import DataLoader, Dataset\nclass Toy(Dataset):\n    def __len__(self):\n"
              "        return 10\n    def __getitem__(self, i):\n        return i\n"
              "train_loader = DataLoader(Toy(), batch_size=32, shuffle=True)\n"),
        # Samplers that keep the order, or are told not to shuffle.
        Valid("from torch.utils.data import DataLoader, SequentialSampler\n"
              "DataLoader(ds, sampler=SequentialSampler(ds), batch_size=8)\n"),
        Valid("from torch.utils.data import DataLoader\nfrom torch.utils.data.distributed import DistributedSampler\n"
              "DataLoader(ds, sampler=DistributedSampler(ds, shuffle=False), batch_size=8)\n"),
        Valid("from torch.utils.data import DataLoader, RandomSampler\n"
              "sampler = RandomSampler(ds) if train else None\nDataLoader(ds, sampler=sampler, batch_size=8)\n"),
        # Handed to a local function whose loop only checks the batches (accelerate's data-loop test).
        Valid("from torch.utils.data import DataLoader\ndef check_batches(dl):\n    for batch in dl:\n"
              "        assert len(batch) == 4\nloader = DataLoader(ds, shuffle=True)\ncheck_batches(loader)\n"),
        # A function both loaders go through, stepping only on `a`'s calls: `b` does not train.
        Valid(SHARED_EPOCH.format(a=", drop_last=True", b="")),
        Valid(SHARED_EPOCH_GUARD.format(a=", drop_last=True", b="")),
        Valid(PHASES.format(a=", drop_last=True", b="")),
        Valid(PHASE_KEYS.format(a=", drop_last=True", b="")),
        Valid(PHASE_PICKED.format(a=", drop_last=True", b="")),
        Valid(PHASES_ZIP.format(a=", drop_last=True", b="")),
        # ... or from a dict's items, by their key.
        Valid("from torch.utils.data import DataLoader\n"
              "held = {'fit': DataLoader(ds, shuffle=True, drop_last=True), 'check': DataLoader(vs, shuffle=True)}\n"
              "for name, dl in held.items():\n    for x in dl:\n        loss = model(x)\n"
              "        if name == 'fit':\n            loss.backward()\n            opt.step()\n"),
        # Picked from a dict by key: the loop over "b" runs no optimizer step.
        Valid(BY_KEY.format(pin_a=", drop_last=True", pin_b="", move="x.cuda()")),
    ]
    invalid = [
        # Built through `functools.partial(DataLoader, ..., shuffle=True)`: drop_last at the call, for
        # this loader alone (an evaluation loader may come from the same partial); it was not seen.
        Invalid(PARTIAL.format(options="", call=""), fixed=PARTIAL.format(options="", call=", drop_last=True")),
        # ... but one whose comprehension calls a function of the module that steps trains.
        Invalid(_COMPREHENDED.format(call="train_step")),
        # A function building a training or an evaluation loader with one sampler variable: the
        # training branch's loader reads the random sampler assigned just above it (every
        # assignment was read, and two samplers made it unknown: not reported; simpletransformers'
        # conv_ai). The evaluation branch's sequential one is not.
        Invalid("from torch.utils.data import DataLoader, RandomSampler, SequentialSampler\ndef build(ds, evaluate):\n"
                "    if not evaluate:\n        sampler = RandomSampler(ds)\n"
                "        data_loader = DataLoader(ds, sampler=sampler, batch_size=8)\n"
                "    else:\n        sampler = SequentialSampler(ds)\n"
                "        data_loader = DataLoader(ds, sampler=sampler, batch_size=8)\n    return data_loader\n",
                fixed="from torch.utils.data import DataLoader, RandomSampler, SequentialSampler\ndef build(ds, evaluate):\n"
                      "    if not evaluate:\n        sampler = RandomSampler(ds)\n"
                      "        data_loader = DataLoader(ds, sampler=sampler, batch_size=8, drop_last=True)\n"
                      "    else:\n        sampler = SequentialSampler(ds)\n"
                      "        data_loader = DataLoader(ds, sampler=sampler, batch_size=8)\n    return data_loader\n"),
        # ... one it does not divide, or the size of another set: still reported.
        Invalid(_DRAWN.format(batch="16", sampler="RandomSampler(buf, replacement=True, num_samples=1000)"),
                message="drop_last=True"),
        Invalid("from torch.utils.data import DataLoader\nDataLoader(ds, batch_size=len(other), shuffle=True)\n",
                message="drop_last=True"),
        # A dataset tokenized by a comprehension from a file: before, any comprehension counted as
        # plain Python values and no loader rule looked at it.
        Invalid(TOKENIZED, message="drop_last=True"),
        # PyTorch's ImageNet example: a DistributedSampler or none, `shuffle=(sampler is None)`:
        # shuffled either way.
        Invalid("from torch.utils.data import DataLoader, DistributedSampler\n"
                "sampler = DistributedSampler(ds) if distributed else None\n"
                "loader = DataLoader(ds, batch_size=64, shuffle=(sampler is None), sampler=sampler)\n"
                "for epoch in range(3):\n    for x in loader:\n        model(x).backward()\n        opt.step()\n",
                message="set `drop_last=True`"),
        # Shuffled through the loader's `**` dict, which does not set drop_last: set beside it.
        Invalid(MNIST.format(x="data.to(device)"),
                fixed=MNIST.format(x="data.to(device)").replace("**train_kwargs)", "**train_kwargs, drop_last=True)")),
        Invalid("from torch.utils.data import DataLoader\nDataLoader(ds, batch_size=8, shuffle=True)\n",
                fixed="from torch.utils.data import DataLoader\nDataLoader(ds, batch_size=8, shuffle=True, drop_last=True)\n"),
        Invalid(SHARED_EPOCH.format(a="", b=""), fixed=SHARED_EPOCH.format(a=", drop_last=True", b="")),
        Invalid(SHARED_EPOCH_GUARD.format(a="", b=""), fixed=SHARED_EPOCH_GUARD.format(a=", drop_last=True", b="")),
        # PyTorch's fine-tuning tutorial: one call builds the "train" and the "val" loader; the
        # validation loader must keep its last batch (its loss is divided by the dataset's size).
        Invalid("from torch.utils.data import DataLoader\n"
                "loaders = {x: DataLoader(sets[x], 4, shuffle=True) for x in ['train', 'val']}\n"
                "for epoch in range(3):\n    for phase in ['train', 'val']:\n        for x, y in loaders[phase]:\n"
                "            loss = model(x, y)\n            if phase == 'train':\n"
                "                loss.backward()\n                opt.step()\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "loaders = {\n    x: DataLoader(sets[x], 4, shuffle=True, drop_last=x == 'train')\n"
                      "    for x in ['train', 'val']\n}\n"
                      "for epoch in range(3):\n    for phase in ['train', 'val']:\n        for x, y in loaders[phase]:\n"
                      "            loss = model(x, y)\n            if phase == 'train':\n"
                      "                loss.backward()\n                opt.step()\n",
                message="`drop_last=x == 'train'`"),
        # One loader per dataset, not per split (the objectives of a multi-task fit): which of
        # them train is not known, and a per-key test would be nonsense (it read `ds == "train"`).
        Invalid("from torch.utils.data import DataLoader\n"
                "loaders = [DataLoader(ds, 4, shuffle=True) for ds in datasets]\n"
                "for epoch in range(3):\n    for loader in loaders:\n        for x, y in loader:\n"
                "            loss = model(x, y)\n            loss.backward()\n            opt.step()\n",
                fixed=NO_FIX, message="set `drop_last=True` if every loader this call builds (one per `ds`) is for "
                                      "training"),
        # Keys not written (or none of them the training set's): the setting is shown, not written.
        Invalid("from torch.utils.data import DataLoader\n"
                "loaders = {x: DataLoader(sets[x], 4, shuffle=True) for x in phases}\n"
                "for epoch in range(3):\n    for phase in phases:\n        for x, y in loaders[phase]:\n"
                "            loss = model(x, y)\n            loss.backward()\n            opt.step()\n",
                fixed=NO_FIX, message='`drop_last=x == "train"`'),
        # Shuffling and keeping the last batch by a configuration's defaults: the default is fixed.
        Invalid("from torch.utils.data import DataLoader\nclass Args:\n    shuffle = True\n    drop_last = False\n"
                "DataLoader(ds, 8, shuffle=Args.shuffle, drop_last=Args.drop_last)\n",
                fixed="from torch.utils.data import DataLoader\nclass Args:\n    shuffle = True\n    drop_last = True\n"
                      "DataLoader(ds, 8, shuffle=Args.shuffle, drop_last=Args.drop_last)\n",
                message="unless configured otherwise (`Args.drop_last` is off by default); default `Args.drop_last` to"),
        # Names that only contain an evaluation stem: `retrieval`, `interval`.
        Invalid("from torch.utils.data import DataLoader\nretrieval_loader = DataLoader(ds, 8, shuffle=True)\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "retrieval_loader = DataLoader(ds, 8, shuffle=True, drop_last=True)\n"),
        Invalid("from torch.utils.data import DataLoader\nDataLoader(ds, 8, shuffle=True, drop_last=False)\n",
                fixed="from torch.utils.data import DataLoader\nDataLoader(ds, 8, shuffle=True, drop_last=True)\n"),
        Invalid("from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, 32, True)\n",
                fixed="from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, 32, True, drop_last=True)\n"),
        # A known size that the batch size does not divide: the last batch is smaller.
        Invalid("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nx = torch.randn(70, 3)\n"
                "train_loader = DataLoader(TensorDataset(x, x.sum(1)), batch_size=32, shuffle=True)\n",
                fixed="import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nx = torch.randn(70, 3)\n"
                      "train_loader = DataLoader(\n    TensorDataset(x, x.sum(1)), batch_size=32, shuffle=True, drop_last=True\n)\n"),
        # A positional drop_last=False is replaced where it stands.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, 32, True, None, None, 2, None, True, False)\n",
                fixed="from torch.utils.data import DataLoader\n"
                      "loader = DataLoader(ds, 32, True, None, None, 2, None, True, True)\n"),
        Invalid("import torch\nloader = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True, num_workers=2)\n",
                fixed="import torch\nloader = torch.utils.data.DataLoader(\n"
                      "    ds, batch_size=4, shuffle=True, num_workers=2, drop_last=True\n)\n"),
        # The Hugging Face examples' shape: a RandomSampler assigned first.
        Invalid("from torch.utils.data import DataLoader, RandomSampler\ntrain_sampler = RandomSampler(train_dataset)\n"
                "train_loader = DataLoader(train_dataset, sampler=train_sampler, batch_size=8)\n",
                fixed="from torch.utils.data import DataLoader, RandomSampler\ntrain_sampler = RandomSampler(train_dataset)\n"
                "train_loader = DataLoader(\n    train_dataset, sampler=train_sampler, batch_size=8, drop_last=True\n)\n"),
        # Random draws: class-balanced weights, or a random subset of the indices.
        Invalid("from torch.utils.data import DataLoader, WeightedRandomSampler\n"
                "sampler = WeightedRandomSampler(weights, num_samples=len(ds))\n"
                "train_loader = DataLoader(ds, batch_size=8, sampler=sampler)\n",
                fixed="from torch.utils.data import DataLoader, WeightedRandomSampler\n"
                      "sampler = WeightedRandomSampler(weights, num_samples=len(ds))\n"
                      "train_loader = DataLoader(ds, batch_size=8, sampler=sampler, drop_last=True)\n"),
        Invalid("import torch\nloader = torch.utils.data.DataLoader(\n"
                "    ds, batch_size=4, sampler=torch.utils.data.SubsetRandomSampler(train_idx)\n)\n",
                fixed="import torch\nloader = torch.utils.data.DataLoader(\n"
                      "    ds,\n    batch_size=4,\n    sampler=torch.utils.data.SubsetRandomSampler(train_idx),\n"
                      "    drop_last=True,\n)\n"),
        Invalid("import torch\nfrom torch.utils.data.distributed import DistributedSampler\n"
                "loader = torch.utils.data.DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds))\n",
                fixed="import torch\nfrom torch.utils.data.distributed import DistributedSampler\n"
                      "loader = torch.utils.data.DataLoader(\n"
                      "    ds, batch_size=4, sampler=DistributedSampler(ds), drop_last=True\n)\n"),
        # The training loader also gone over to evaluate or extract features (the tester's
        # `evaluate(model, train_loader)` under no_grad): drop_last made that pass skip 2 of 50
        # samples each epoch, so there is no fix.
        Invalid(_EVALUATED.format(evaluate=_EVALUATE, after="        print(evaluate(model, train_loader))\n"), fixed=NO_FIX,
                message="not fixed: `evaluate(model, train_loader)` also goes over it"),
        # ... by a closure reading the loader: named by its call (it was `train_loader`, the loop's).
        Invalid(_EVALUATED.format(evaluate="", after="        print(check())\n").replace(
                    "    for epoch in range(3):\n", "    def check():\n        n = 0\n        for x, y in train_loader:\n"
                    "            n += (model(x).argmax(1) == y).sum()\n        return n\n    for epoch in range(3):\n"),
                fixed=NO_FIX, message="not fixed: `check()` also goes over it"),
        Invalid(_EVALUATED.format(evaluate="", after="    feats = [model(x) for x, _ in train_loader]\n"), fixed=NO_FIX,
                message="not fixed: `[model(x) for x, _ in train_loader]` also goes over it"),
        Invalid(_EVALUATED.format(evaluate="from utils import evaluate\n", after="        evaluate(model, train_loader)\n"),
                fixed=NO_FIX, message="not fixed: `evaluate(model, train_loader)` also goes over it"),
        # A generator handed to a call is shown with the call (it was shown bare, without the
        # parentheses it borrows from it: `len(x) for x, _ in train_loader`).
        Invalid(_EVALUATED.format(evaluate="", after="    n = sum(len(x) for x, _ in train_loader)\n"), fixed=NO_FIX,
                message="not fixed: `sum(len(x) for x, _ in train_loader)` also goes over it"),
    ]

    def check_loader(self, call: cst.Call) -> None:
        ctx = self.ctx
        batch_sampler = loader_arg(ctx, call, "batch_sampler")
        if not shuffles(ctx, call) or (batch_sampler is not None and ctx.literal(batch_sampler.value) is not None):
            return
        batch_size = loader_arg(ctx, call, "batch_size")
        if batch_size is not None and not batch_size.star and ctx.literal(batch_size.value) is None:
            return  # `batch_size=None`: the dataset's items are the batches; drop_last would raise
        if not is_training_loader(ctx, call):
            return
        if draws_a_batch_per_pass(ctx, call):
            return  # a new iterator for every batch: only first batches are drawn, never the last
        if setting_value(ctx, call, "drop_last", False) is not False:
            return
        if _batches_even(ctx, call):
            return
        problem = "The last batch of each epoch is smaller (new shapes, a noisy step)"
        per_key = _comprehension_key(ctx, call)
        if per_key is not None:
            # One call builds the evaluation loaders too (`{x: DataLoader(...) for x in ["train",
            # "val"]}`): dropping their last batch would drop evaluation samples. Where the keys
            # are written and one of them names the training set, the setting is per key.
            name, train, by_split = per_key
            if not by_split:
                # `[DataLoader(ds, ...) for ds in datasets]`: one loader per dataset, not per split;
                # which of them train is not known here (a `ds == "train"` test would be nonsense).
                self.report(call, f"{problem}; set `drop_last=True` if every loader this call builds (one per "
                                  f"`{name}`) is for training")
                return
            q = ctx.quote
            value = f"{name} == {q}{train or 'train'}{q}"
            fix = None
            if train is not None and setting_source(ctx, call, "drop_last") is None:
                fix = setting_fix(self, call, "drop_last", value, Applicability.UNSAFE)
            self.report(call, f"{problem}; set `drop_last` for the training loader only, as in "
                              f"`drop_last={value}`, as this call builds every `{name}`'s loader", fix)
            return
        other = _pass_not_training(ctx, call)
        if other is not None:
            # The loader also feeds evaluation or feature extraction: drop_last would skip the
            # last partial batch there too (results computed on fewer samples).
            self.report(call, f"{setting_advice(ctx, call, 'drop_last', 'True', problem)}; not fixed: "
                              f"`{other}` also goes over it, and would skip the last partial batch too "
                              f"(give it a loader of its own without `drop_last`)")
            return
        self.report(call, setting_advice(ctx, call, "drop_last", "True", problem),
                    setting_fix(self, call, "drop_last", "True", Applicability.UNSAFE))


def _pass_not_training(ctx, call: cst.Call) -> str | None:
    """Where a pass over the training loader that takes no optimizer step starts, as code for the
    message: a loop over it that runs no steps (an `evaluate(model, train_loader)` of the module
    under `no_grad`), a comprehension over it, a loop of a function other loaders go through that
    does not step on this loader's calls, or the loader handed to a function of another module
    named for evaluation (`evaluate`, `validate`, `test`). `drop_last=True` would make those skip
    samples too; None when every pass seen trains."""
    passes = [loop for loop in ctx.loops.loops_over(call) if not ctx.loops.runs_steps(loop)]
    passes += ctx.loops.comprehensions_over(call)
    passes += [loop for loop, path in ctx.loops.shared_loops(call) if ctx.loops.steps_on(loop, path) is False]
    for node in passes:
        return excerpt(ctx, _pass_anchor(ctx, call, node))
    for handed in ctx.loops.handed_out(call):
        name = ctx.dotted(handed.func)
        if name is not None and names_evaluation(name.rsplit(".", 1)[-1]):
            return excerpt(ctx, handed)
    return None


def _pass_anchor(ctx, call: cst.Call, node: cst.CSTNode) -> cst.CSTNode:
    """What to show for a pass over the loader: the outermost call of a module function that hands
    the loader down to it (`evaluate(model, train_loader)`), else the comprehension, or the `for`
    loop's iterable."""
    fn = ctx.index.enclosing_function(node)
    paths = ctx.loops.paths_of(call)
    for path in paths:
        if path.calls and path.scope is fn and ctx.loops.in_sight(node, path.name, path.scope):
            return path.calls[0]
    # A function reading the loader from an enclosing scope (a closure `def evaluate(): for x in
    # loader`, or the module's loader): its call, where that scope runs it (`evaluate()`).
    reads = [path.scope for path in paths if fn is not None and path.scope is not fn and not path.calls
             and ctx.loops.in_sight(node, path.name, path.scope)]
    if reads and isinstance(fn, cst.FunctionDef):
        calls = ctx.loops.calls_of(fn)
        shown = next((c for c in calls if ctx.index.enclosing_function(c) in reads), calls[0] if calls else None)
        if shown is not None:
            return shown
    while isinstance(node, cst.CompFor):
        node = ctx.parent(node)
    if isinstance(node, cst.GeneratorExp) and not node.lpar and isinstance(ctx.parent(node), cst.Arg):
        return ctx.parent(ctx.parent(node))  # `sum(len(x) for x in loader)`: it borrows the call's parentheses
    return node if not isinstance(node, cst.For) else node.iter


def _batches_even(ctx, call: cst.Call) -> bool:
    """Every batch of an epoch has the same size: the batch size is 1 (written or the default), or
    the loader shuffles its whole dataset (no sampler of its own), whose size the file shows (`_dataset_size`), and the literal batch size
    divides it or is larger than it; or the batch is the whole dataset (`_full_batch`); or the
    sampler draws a literal number of samples that the batch size divides (`_samples_drawn`). A dataset smaller than its batch size is one batch an epoch;
    `drop_last=True` would leave none, and the training loop would never run."""
    if _full_batch(ctx, call):
        return True
    batch = setting_value(ctx, call, "batch_size", 1, certain=True)
    if not isinstance(batch, int) or isinstance(batch, bool) or batch <= 0:
        return False
    if batch == 1:  # one sample a batch (also the default): no last batch is smaller
        return True
    sampler = loader_arg(ctx, call, "sampler")
    if sampler is not None and not sampler.star:
        drawn = _samples_drawn(ctx, sampler.value)
        if drawn is not None:
            return drawn % batch == 0
    if sampler is not None and (sampler.star or ctx.literal(sampler.value) is not None):
        return False
    size = _dataset_size(ctx, call)
    return size is not None and (size <= batch or size % batch == 0)


def _full_batch(ctx, call: cst.Call) -> bool:
    """The batch size is `len(...)` of the loader's own dataset (`DataLoader(ds, batch_size=len(ds),
    shuffle=True)`, full-batch training) and no sampler of its own draws otherwise: every epoch is
    one whole batch, never a smaller one (before, reported)."""
    batch = loader_arg(ctx, call, "batch_size")
    dataset = ctx.positional(call, 0) or ctx.keyword(call, "dataset")
    if batch is None or batch.star or dataset is None or dataset.star or loader_arg(ctx, call, "sampler") is not None:
        return False
    size = batch.value
    if not (isinstance(size, cst.Call) and ctx.names.qualified(size.func) == "builtins.len" and len(size.args) == 1):
        return False
    spelled = ctx.dotted(dataset.value)
    return spelled is not None and ctx.dotted(size.args[0].value) == spelled


# Samplers that take how many indices to draw an epoch as `num_samples`.
_COUNTED_SAMPLERS = frozenset({"torch.utils.data.RandomSampler", "torch.utils.data.sampler.RandomSampler",
                               "torch.utils.data.WeightedRandomSampler",
                               "torch.utils.data.sampler.WeightedRandomSampler"})


def _samples_drawn(ctx, sampler: cst.BaseExpression, depth: int = 0) -> int | None:
    """The literal number of indices the loader's sampler draws an epoch: its `num_samples=`
    (`RandomSampler(buf, replacement=True, num_samples=10**6)`; WeightedRandomSampler's second
    argument), through a name assigned once; None when not written. A literal batch size that
    divides it leaves no smaller last batch (before, TL105 judged the dataset's size instead)."""
    if isinstance(sampler, cst.Name) and depth < 3:
        values = ctx.assigned_values(sampler)
        return _samples_drawn(ctx, values[0], depth + 1) if len(values) == 1 else None
    if not isinstance(sampler, cst.Call) or ctx.names.qualified(sampler.func) not in _COUNTED_SAMPLERS:
        return None
    count = ctx.keyword(sampler, "num_samples")
    if count is None and "Weighted" in (ctx.names.qualified(sampler.func) or ""):
        count = ctx.positional(sampler, 1)
    value = ctx.literal(count.value) if count is not None and not count.star else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


# Torch factories whose first argument (or the first element of a size tuple) is the first dimension.
_SIZED_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty",
                              "torch.full", "torch.arange"})


def _dataset_size(ctx, call: cst.Call) -> int | None:
    """The number of samples of the loader's dataset, when the file writes it as a literal: a
    `TensorDataset` of a torch factory's tensor (`torch.randn(20, 3)`, through a name assigned it
    once), or a dataset class of the module whose `__len__` returns a literal; None otherwise."""
    builds = dataset_builds(ctx, call)
    if len(builds) != 1:
        return None
    build = builds[0]
    if ctx.names.qualified(build.func) in ("torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"):
        first = build.args[0] if build.args and not build.args[0].star and build.args[0].keyword is None else None
        return _first_dimension(ctx, first.value, 0) if first is not None else None
    cls = dataset_class(ctx, call)
    length = method_of(ctx, cls, "__len__") if cls is not None else None
    if length is None:
        return None
    returns = ctx.index.returns(length)
    value = ctx.literal(returns[0].value) if len(returns) == 1 and returns[0].value is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _first_dimension(ctx, expr: cst.BaseExpression, depth: int) -> int | None:
    """The literal first dimension of a tensor a torch factory makes (`torch.randn(20, 3)`,
    `torch.zeros((20, 3))`), followed through a name assigned once; None otherwise."""
    if isinstance(expr, cst.Name) and depth < 3:
        values = ctx.assigned_values(expr)
        return _first_dimension(ctx, values[0], depth + 1) if len(values) == 1 else None
    if not (isinstance(expr, cst.Call) and ctx.names.qualified(expr.func) in _SIZED_FACTORIES and expr.args):
        return None
    first = expr.args[0]
    if first.star or first.keyword is not None:
        return None
    size = first.value
    if isinstance(size, (cst.Tuple, cst.List)) and size.elements:
        size = size.elements[0].value
    if ctx.names.qualified(expr.func) == "torch.arange" and len(expr.args) > 1:
        return None  # `torch.arange(start, end)`
    value = ctx.literal(size)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# Names of a comprehension's variable that say it goes over splits (`for split in splits`).
_SPLIT_WORDS = frozenset({"split", "splits", "phase", "phases", "mode", "modes", "stage", "stages", "subset",
                          "partition"})


def _comprehension_key(ctx, call: cst.Call) -> tuple[str, str | None, bool] | None:
    """(the name, the training key, whether the name goes over splits) when call is the element of
    a comprehension that builds one loader per value of that name (`{x: DataLoader(sets[x], ...)
    for x in ["train", "val"]}`: ("x", "train", True)); the training key is the one string of a
    written list of them that names the training set (`"train"`, `"training"`), else None. The
    name goes over splits when the values are written strings, the comprehension is a dict keyed
    by it, or its words say so (`split`, `phase`); not `for ds in datasets`. None when call is no
    such element."""
    comp = ctx.parent(call)
    if not isinstance(comp, (cst.DictComp, cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return None
    if (comp.value if isinstance(comp, cst.DictComp) else comp.elt) is not call:
        return None
    target = comp.for_in.target
    if not isinstance(target, cst.Name):
        return None
    keys = comp.for_in.iter
    values = [ctx.literal(e.value) for e in keys.elements] if isinstance(keys, (cst.List, cst.Tuple)) else []
    train = [v for v in values if isinstance(v, str) and v.lower() in ("train", "training")]
    written = bool(values) and all(isinstance(v, str) for v in values)
    by_split = written or isinstance(comp, cst.DictComp) and ctx.dotted(comp.key) == target.value \
        or bool(words(target.value) & _SPLIT_WORDS)
    return target.value, train[0] if len(train) == 1 and written else None, by_split
