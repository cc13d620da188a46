"""TL102 dataloader-no-pin-memory: Training DataLoader without `pin_memory=True` while batches move to
an accelerator."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.batches import (
    batch_moves,
    batches_made_on_device,
    builds_trainer_loader,
    dataset_changed_after,
    dataset_from_device_helper,
    is_device_helper,
    is_device_move,
    loader_arg,
    loader_batches,
    loader_calls,
)
from trainlint.analysis.framework_loaders import accelerate_trains_on, lightning_trainers, places_batches
from trainlint.analysis.frameworks import configured_for_cpu
from trainlint.analysis.literals import UNKNOWN
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Valid

from .cases import (
    DRAWN,
    HANDED,
    MNIST,
    MOVED_BY_HELPER,
    PARTIAL,
    ON_DEVICE,
    PHASES,
    PHASES_ZIP,
    PHASE_KEYS,
    PHASE_PICKED,
    RETURNED_DICT,
    SHARED_EPOCH,
    SHARED_EPOCH_GUARD,
    STORED_ON_DEVICE,
    TENSORS_ON_DEVICE,
    TOKENIZED,
)
from .loaders import (
    DataLoaderRule,
    TRAINER_TRIGGERS,
    is_training_loader,
    loader_name,
    device_arg,
    setting_advice,
    setting_fix,
    setting_source,
    setting_value,
)


# A frozen encoder's features, computed on the device by a helper (the tester's linear probe).
_EXTRACT = ("def extract(encoder, images, bs=64):\n    feats = []\n    for i in range(0, len(images), bs):\n"
            "        feats.append(encoder(images[i:i + bs].to(device)))\n    return torch.cat(feats)\n")

# ... with pin_memory given only where the dict is built (the cases change it there).
_MNIST_UNPINNED = MNIST.format(x="data.to(device)").replace("'pin_memory': True, ", "")


# A script whose batches go to {move}, after {device} (TL102's device picked by CUDA's availability).
_AVAILABLE = ("import torch\nfrom torch.utils.data import DataLoader\n{device}loader = DataLoader(ds, num_workers=2{pin})\n"
              "for x, y in loader:\n    x = {move}\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n")
_TRAINER_DEVICE = (
    "import torch as th\nfrom torch.utils.data import DataLoader\nclass Trainer:\n    def __init__(self):\n"
    "        self.device = th.device('cuda:0' if th.cuda.is_available() else 'cpu')\n"
    "        self.loader = DataLoader(ds, num_workers=2{pin})\n    def fit(self):\n"
    "        for x, y in self.loader:\n            loss = model(x.to(self.device), y)\n"
    "            loss.backward()\n            opt.step()\n")
_PICKED = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
# A training function handed the device its caller picks by CUDA's availability.
_HANDED_TO_TRAIN = (
    "import torch\nfrom torch.utils.data import DataLoader\ndef train(model, loader, device):\n"
    "    for x, y in loader:\n        loss = model(x.to(device), y.to(device))\n        loss.backward()\n"
    "        opt.step()\ndef main():\n    " + _PICKED + "    loader = DataLoader(ds, num_workers=2{pin})\n"
    "    for epoch in range(2):\n        train(model, loader, device)\n")
# A trainer handed its device when it is constructed ({device} picks it, {constructions} construct
# the trainer and train).
_HANDED_DEVICE = (
    "import torch\nfrom torch.utils.data import DataLoader\nclass Trainer:\n    def __init__(self, loader, device):\n"
    "        self.loader, self.device = loader, device\n    def fit(self):\n        for x, y in self.loader:\n"
    "            loss = model(x.to(self.device), y)\n            loss.backward()\n            opt.step()\n"
    "{device}loader = DataLoader(ds, num_workers=2{pin})\n"
    "{constructions}"
)
# ... handed a flag instead, tested around the copy.
_HANDED_FLAG = _HANDED_DEVICE.replace("x.to(self.device)", "x.cuda() if self.use_cuda else x").replace(
    "device", "use_cuda").replace("{use_cuda}", "{device}")


# A collate_fn set on the loader in the function it is handed to (`fit(train_loader)`).
_COLLATE_SET_LATER = ("import torch\nfrom torch.utils.data import DataLoader\n\n\ndef to_gpu(batch):\n"
                      "    return torch.stack(batch).to('cuda')\n\n\ndef fit(train_loader: DataLoader):\n"
                      "    train_loader.collate_fn = to_gpu\n    for x in train_loader:\n"
                      "        model(x).backward()\n        opt.step()\n\n\nfit(DataLoader(ds, batch_size=4{options}))\n")


class DataLoaderNoPinMemory(DataLoaderRule):
    code = "TL102"
    name = "dataloader-no-pin-memory"
    summary = "Training DataLoader without `pin_memory=True` while batches move to an accelerator"
    source = "§3.3"
    fix_applicability = "safe"
    docs = """
## What it does
Flags a training `DataLoader` without `pin_memory=True` whose batches the training loop moves to
an accelerator (`.to(device)`, `.cuda()`, or a batch helper such as torchtune's
`batch_to_device(batch, device)` or accelerate's `send_to_device`).

Decided per loader. A loader iterated in a loop of this module is flagged only when that loop's
own batches (its target, values computed from it, and module-local functions they are handed
to, up to three calls down) reach such a copy; one whose batches stay on the CPU is not. A loader
a module-local function returns counts as iterated by its caller's loops over the name the call
binds it to (by position in a returned tuple), unless the caller hands that name on; not by a
call on which it is not made (built under `if not evaluate:`, for `load(path, evaluate=True)`). A loader
handed to a function that other loaders go through too (`run_epoch(model, train_loader, opt)`,
`run_epoch(model, val_loader)`) trains when that function's step is reached on its calls: the
`if` conditions around the step are read with what each call passes (`if optimizer is not None:`
is false on the call that passes no optimizer), and so are the guards that leave before it (`if
not train: continue`); so are they for a loop over pairs that binds it
(`for phase, loader in [("train", train_loader), ("val", val_loader)]`: `if phase == "train":` is
false for the validation loader). A loader gone over only by comprehensions (`[model(x.cuda())
for x in loader]`) trains only when they call a function of the module that steps. A loader
not iterated here (returned, handed to a framework or to a function's parameter) is flagged when
the hot loop copies something that no visible loop over a loader of the file leads to, unless
its name, or the function returning it (Lightning's `val_dataloader()`), says it evaluates
(whole words such as `val`, `eval`, `test`, or a stem run together with a loader word, as in
`valloader`; `device_loader` and `retrieval_loader` only contain one).

Frameworks copy the batches themselves. A loader a Lightning Trainer trains on (handed to
`trainer.fit`, or returned by a LightningModule's or LightningDataModule's `train_dataloader()`)
is flagged unless the file's Trainers train on the CPU (`accelerator="cpu"`); transformers'
Trainer pins by default, so only `TrainingArguments(dataloader_pin_memory=False)` is flagged, and
not with `use_cpu=True`. A training loader an accelerate `Accelerator` prepares is flagged unless
it runs on the CPU (`cpu=True`) or places nothing (`device_placement=False`); the message adds
`DataLoaderConfiguration(non_blocking=True)`, without which accelerate's copies still block.

Not a loader whose batches come out of it on the device: its `collate_fn` (also one set on it
after it is built, `train_loader.collate_fn = to_gpu`), or its dataset's class
in this module (`__getitem__`, `__iter__`, the methods and the module's functions they call, three
calls down, `to_dev(x)`, or `__init__` storing the data there), moves tensors to a device; or its
dataset, of any class, is handed a callable of this module that does (a transform: `transform=lambda
t: t.to(device)`, `transform=to_dev`, also through a name, `functools.partial` or an object whose
`__call__` does), which it may apply to every item; or its dataset is built from tensors on the device
(`TensorDataset(X.to(device), Y.to(device))`, `.cuda()`, a tensor made with `device=` other than
the CPU, what `torch.load` restores with a `map_location` other than the CPU and its items
(`data = torch.load(path, map_location=device)`, `TensorDataset(data["x"], data["y"])`), or with
no `map_location` from a file this module `torch.save`s such tensors into (a path built from the
same parts: they come back on the device they were saved from), a list
appended such tensors, what `torch.cat` or a model makes of them, what a function of this module
returns when its returns are such tensors, two calls down (`feats = extract(encoder, images)`
returning `torch.cat` of `encoder(x.to(device))`), a name assigned such a tensor on some path or
unpacked from a split of one (`a, b = torch.split(X, 20)`, `X.chunk(2)`) or from a comprehension or
`map` that moves them (`X, Y = map(lambda t: t.to(device), (X, Y))`), any dataset class handed
one, `Subset`/`ConcatDataset` or a `random_split` of such a dataset (`tr, va = random_split(full,
...)`), or a dataset given them as an attribute after it is built (`ds.tensors = tuple(t.to(device)
for t in ds.tensors)`). There is no pageable
copy to speed up, and pinning CUDA tensors raises (`cannot pin 'torch.cuda.FloatTensor'`).

A setting written as a name is read as TL101 describes: `pin_memory=PIN` with `PIN = False`,
`pin_memory=cfg.pin_memory` whose field defaults to False, `pin_memory=args.pin_memory` whose
option is off by default (`default=False`, or a `store_true` switch, and no `set_defaults` turns
it on: the run copies from pageable memory unless the flag is given). The fix changes the value
where it is written; a `store_true` switch becomes `action=argparse.BooleanOptionalAction,
default=True`, so `--pin-memory` still works and `--no-pin-memory` turns pinning off.

The fix writes `pin_memory=torch.cuda.is_available()` when the batches go to a device the script
picks by whether CUDA is there (`torch.device("cuda" if torch.cuda.is_available() else "cpu")`, a
`use_cuda` flag assigned from that test, or a copy under `if torch.cuda.is_available():`; also
one handed to a trainer's constructor that keeps it, `self.device = device`, when every
construction of the class in the file hands it such a device, or to a training function,
`train(model, device, loader, opt)`, when every call of it in the file does): on a CPU-only machine a pinning
loader warns on every pass ("no accelerator is found"). It writes
`pin_memory=True` when the device is written as "cuda", when a framework copies the batches, and
when the module does not import torch at its top level.

## Why is this bad?
Copies from pageable host memory go through a staging buffer and cannot overlap with compute.
Pinned (page-locked) batches copy faster and allow `non_blocking=True` transfers.

## Example
```python
loader = DataLoader(ds, batch_size=32, num_workers=4)
for x, y in loader:
    x, y = x.cuda(), y.cuda()
```

## Use instead
```python
loader = DataLoader(ds, batch_size=32, num_workers=4, pin_memory=True)
```

## Fix safety
Safe: pinning changes where host memory lives, not what is computed. A `pin_memory` passed by
position is replaced where it stands. Unsafe when a tensor the dataset is built from comes from a
call of a function of this module that copies tensors to a device somewhere in it, and what it
returns is not seen to be on the device: it may be (pinning would then raise); and when the
dataset is given attributes after it is built (`ds.tensors = tuple(prepare(t) for t in ds.tensors)`),
since what it then holds is not all seen.
"""
    # No hot-loop prefilter: a script that hands its loader to a framework's Trainer has no loop.
    triggers = TRAINER_TRIGGERS
    trainer_settings = True
    _LOOP = "from torch.utils.data import DataLoader\n{loader}\nfor x, y in loader:\n    x = x.to(device)\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n"
    _LIGHTNING = ("import lightning as L\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds{pin})\n"
                  "trainer = L.Trainer({settings})\ntrainer.fit(model, loader)\n")
    _HF = "from transformers import Trainer, TrainingArguments\nTrainer(model, TrainingArguments('out'{settings}))\n"
    # A loader whose pin_memory is a command-line option, for _LOOP's `loader`.
    _PIN_OPTION = ("import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument({option})\n"
                   "args = parser.parse_args()\nloader = DataLoader(ds, num_workers=2, pin_memory=args.{dest})")
    _PREPARED = ("from accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
                 "def get_dataloaders(ds, vds):\n    train_dataloader = DataLoader(ds, shuffle=True{pin})\n"
                 "    eval_dataloader = DataLoader(vds)\n    return train_dataloader, eval_dataloader\n"
                 "def train(model, opt, ds, vds):\n    accelerator = Accelerator()\n"
                 "    train_dataloader, eval_dataloader = get_dataloaders(ds, vds)\n"
                 "    model, opt, train_dataloader, eval_dataloader = accelerator.prepare(\n"
                 "        model, opt, train_dataloader, eval_dataloader)\n"
                 "    for batch in train_dataloader:\n        accelerator.backward(model(batch))\n        opt.step()\n"
                 "    for batch in eval_dataloader:\n        evaluate(model, batch)\n")
    _ACCELERATE = ("from accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
                   "accelerator = Accelerator({settings})\nloader = DataLoader(ds, shuffle=True{pin})\n"
                   "model, opt, loader = accelerator.prepare(model, opt, loader)\nfor batch in loader:\n"
                   "    accelerator.backward(model(batch))\n    opt.step()\n")
    valid = [
        # Its collate_fn, set after the loader is built, puts the batches on the device: pinning
        # them would raise (before: reported, with the pin fix; the loop's own move is a no-op).
        Valid(_COLLATE_SET_LATER.format(options="").replace("model(x)", "model(x.to('cuda'))")),
        Valid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)")),
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\nfor x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    opt.step()\n"),
        Valid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, **kw)")),
        # A helper that moves to the CPU is not a copy to an accelerator.
        Valid(_LOOP.replace("x = x.to(device)", "x = move_to_cpu(x)").format(loader="loader = DataLoader(ds)")),
        Valid(_LOOP.format(loader="val_loader = DataLoader(ds, num_workers=2)\nloader = DataLoader(ds, num_workers=2, pin_memory=True)")),
        # A loader only iterated by a loop without optimizer steps is not a training loader
        # (ecosystem: pytorch-tabnet's predict()).
        Valid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)") +
              "def predict(X):\n    dl = DataLoader(X, batch_size=64)\n    for batch in dl:\n"
              "        out = model(batch.to(device))\n"),
        # A helper making the training or the evaluation loader by a flag: the evaluation one only
        # reaches the call that passes `evaluate=True` (ecosystem: simpletransformers' conv_ai).
        Valid("from torch.utils.data import DataLoader\ndef load(ds, evaluate=False):\n    if not evaluate:\n"
              "        dl = DataLoader(ds, shuffle=True, num_workers=2, pin_memory=True)\n    else:\n"
              "        dl = DataLoader(ds, num_workers=2)\n    return dl\ndef fit():\n    train_dl = load(ds)\n"
              "    eval_dl = load(vs, evaluate=True)\n    for x in train_dl:\n        model(x.cuda()).backward()\n"
              "        opt.step()\n    for x in eval_dl:\n        evaluate(x.cuda())\n"),
        # A sequential sampler marks an evaluation loader (ecosystem: simpletransformers).
        Valid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)") +
              "eval_sampler = SequentialSampler(eval_ds)\nscore_loader = DataLoader(eval_ds, sampler=eval_sampler)\n"),
        # ... also imported under another name (the hot loop's copy may be of any unseen loader's batches).
        Valid("from torch.utils.data import DataLoader, SequentialSampler as InOrder\ndef fit(dl):\n"
              "    for x in dl:\n        model(x.cuda()).backward()\n        opt.step()\n"
              "score_loader = DataLoader(ds, num_workers=2, sampler=InOrder(ds))\n"),
        # ... pinned by the partial, or at the call; a partial of another function is no loader.
        Valid(PARTIAL.format(options=", num_workers=2, pin_memory=True", call="")),
        Valid(PARTIAL.format(options=", num_workers=2", call=", pin_memory=True")),
        Valid(PARTIAL.format(options=", num_workers=2", call="").replace("partial(DataLoader", "partial(build_loader")),
        # Batches the dataset already puts on the device: nothing to pin (pinning them raises).
        # ... through a function of the module (two calls down), or a transform it is handed (a lambda,
        # a function of the module, by keyword or position, through a name) and applies in
        # __getitem__: the fix pinned CUDA tensors ("cannot pin 'torch.cuda.FloatTensor'").
        Valid(MOVED_BY_HELPER.format(item="to_dev(x)", loader="loader = DataLoader(Wrapped(X), batch_size=8)")),
        Valid(MOVED_BY_HELPER.format(item="prepare(x)", loader="loader = DataLoader(Wrapped(X), batch_size=8)")),
        Valid(MOVED_BY_HELPER.format(
            item="x", loader="loader = DataLoader(Wrapped(X, transform=lambda t: t.to(device)), batch_size=8)")),
        Valid(MOVED_BY_HELPER.format(item="x", loader="ds = Wrapped(X, to_dev)\nloader = DataLoader(ds, batch_size=8)")),
        Valid(MOVED_BY_HELPER.format(
            item="x", loader="move = lambda t: prepare(t)\nloader = DataLoader(Wrapped(X, transform=move), batch_size=8)")),
        Valid(ON_DEVICE.format(options=", num_workers=0")),
        Valid(STORED_ON_DEVICE.format(options="")),
        # Built from tensors on the device: moved there (`X.to(device)`, `.cuda()`), made there
        # (`device=`), or a dataset of such a dataset (`Subset`, `ConcatDataset`).
        Valid(TENSORS_ON_DEVICE.format(data="X = torch.randn(1024, 8).to(device)\nY = torch.randn(1024, 1).to(device)\n",
                                        dataset="TensorDataset(X, Y)", options=", num_workers=0")),
        Valid(TENSORS_ON_DEVICE.format(data="", dataset="TensorDataset(xs.cuda(), ys.cuda().float())", options="")),
        # ... through a function of the module, or an attribute the class holds them in.
        Valid(TENSORS_ON_DEVICE.format(
            data="FEATS = torch.randn(100, 4, device=device)\ndef lookup(i):\n    return FEATS[i]\n"
                 "class Cached(torch.utils.data.Dataset):\n"
                 "    def __len__(self):\n        return 100\n    def __getitem__(self, i):\n        return lookup(i), i\n",
            dataset="Cached()", options="")),
        Valid(TENSORS_ON_DEVICE.format(
            data="FEATS = torch.randn(100, 4, device=device)\nclass Cached(torch.utils.data.Dataset):\n"
                 "    def __init__(self):\n        self.table = FEATS\n"
                 "    def __len__(self):\n        return 100\n    def __getitem__(self, i):\n        return self.table[i], i\n",
            dataset="Cached()", options="")),
        # A dataset class whose __getitem__ indexes module-level tensors made on the device.
        Valid(TENSORS_ON_DEVICE.format(
            data="FEATS = torch.randn(100, 4, device=device)\nclass Cached(torch.utils.data.Dataset):\n"
                 "    def __len__(self):\n        return 100\n    def __getitem__(self, i):\n        return FEATS[i], i\n",
            dataset="Cached()", options="")),
        Valid(TENSORS_ON_DEVICE.format(data="X = torch.randn(1024, 8, device=device)\nY = X.sum(1, keepdim=True)\n"
                                             "train = TensorDataset(X, Y)\n",
                                        dataset="Subset(train, range(512))", options="")),
        # Unpacked from a split of device tensors (`torch.split`, `.chunk`), a `random_split` of a
        # dataset of them, or given them as an attribute after it is built (`ds.tensors = ...`):
        # pinning them raised "cannot pin 'torch.cuda.FloatTensor'" after the fix.
        Valid(TENSORS_ON_DEVICE.format(data="X = torch.randn(40, 4).to(device)\na, b = torch.split(X, 20)\n",
                                        dataset="TensorDataset(a, b.sum(1))", options="")),
        Valid(TENSORS_ON_DEVICE.format(data="X = torch.randn(40, 4).to(device)\na, b = X.chunk(2)\n",
                                        dataset="TensorDataset(a, b)", options="")),
        Valid(TENSORS_ON_DEVICE.format(data="X = torch.randn(40, 4).to(device)\nfull = TensorDataset(X, X.sum(1))\n"
                                             "tr, va = random_split(full, [32, 8])\n", dataset="tr", options="")),
        Valid(TENSORS_ON_DEVICE.format(data="ds = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))\n"
                                             "ds.tensors = tuple(t.to(device) for t in ds.tensors)\n",
                                        dataset="ds", options="")),
        Valid(TENSORS_ON_DEVICE.format(data="X = torch.randn(1024, 8)\nif torch.cuda.is_available():\n"
                                             "    X = X.cuda()\n",
                                        dataset="ConcatDataset([TensorDataset(X), extra])", options="")),
        # Restored onto the device by torch.load, or features a helper of the module returns from the
        # device (a frozen encoder's, for a linear probe): pinning them raises on CUDA.
        Valid(TENSORS_ON_DEVICE.format(data="data = torch.load('cache.pt', map_location=device)\n",
                                        dataset="TensorDataset(data['x'], data['y'])", options="")),
        Valid(TENSORS_ON_DEVICE.format(data="x, y = torch.load('cache.pt', device)\n",
                                        dataset="TensorDataset(x, y)", options="")),
        # Tensors unpacked into the dataset from a comprehension that moves them.
        Valid(TENSORS_ON_DEVICE.format(data="", dataset="TensorDataset(*[t.to(device) for t in (X, Y)])",
                                        options="")),
        # ... or from a `map` that moves them (a lambda, `torch.Tensor.cuda`, a function of the
        # module): the fix pinned them and raised "cannot pin 'torch.cuda.FloatTensor'".
        Valid(TENSORS_ON_DEVICE.format(data="X, Y = map(lambda t: t.to(device), (X, Y))\n",
                                        dataset="TensorDataset(X, Y)", options="")),
        Valid(TENSORS_ON_DEVICE.format(data="X, Y = map(torch.Tensor.cuda, (X, Y))\n",
                                        dataset="TensorDataset(X, Y)", options="")),
        Valid(TENSORS_ON_DEVICE.format(data="def move(t):\n    return t.float().to(device)\n"
                                             "X, Y = map(move, [X, Y])\n",
                                        dataset="TensorDataset(X, Y)", options="")),
        # No map_location: restored where they were saved from, and this file saves device tensors
        # there (a path built from the same parts).
        Valid(TENSORS_ON_DEVICE.format(
            data="CACHE = 'feats.pt'\ntorch.save({'x': encoder(images.to(device)), 'y': labels}, CACHE)\n"
                 "data = torch.load(CACHE)\n", dataset="TensorDataset(data['x'], data['y'])", options="")),
        Valid(TENSORS_ON_DEVICE.format(data=_EXTRACT + "feats = extract(encoder, images)\n",
                                        dataset="TensorDataset(feats, labels)", options="")),
        Valid(TENSORS_ON_DEVICE.format(data=_EXTRACT.replace("    return torch.cat(feats)", "    return embed(feats)")
                                        + "def embed(feats):\n    return torch.cat(feats)\n"
                                        + "feats = extract(encoder, images)\n",
                                        dataset="TensorDataset(feats, labels)", options="")),
        # Decided per loader: `b`'s batches never leave the CPU; `c` is never iterated, and the only
        # copy in the hot loop is of another loader's batches.
        Valid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
                                  "b = DataLoader(ds2, num_workers=2)\nc = DataLoader(ds3, num_workers=2)") +
              "for y in b:\n    loss = cpu_model(y)\n    loss.backward()\n    opt.step()\n"),
        # Returned by a function named for evaluation (Lightning's val_dataloader()), while the hot
        # loop iterates a parameter.
        Valid("from torch.utils.data import DataLoader\ndef fit(dl):\n    for x in dl:\n        model(x.cuda()).backward()\n"
              "        opt.step()\nclass Data:\n    def val_dataloader(self):\n        return DataLoader(self.ds)\n"
              "    def build_eval_loader(self):\n        loader = DataLoader(self.ds)\n        return loader\n"),
        # A command-line switch set on by set_defaults (timm's `--pin-mem`/`--no-pin-mem`).
        Valid(_LOOP.format(loader="import argparse\nparser = argparse.ArgumentParser()\n"
                                  "parser.add_argument('--pin-mem', action='store_true')\n"
                                  "parser.add_argument('--no-pin-mem', action='store_false', dest='pin_mem')\n"
                                  "parser.set_defaults(pin_mem=True)\nargs = parser.parse_args()\n"
                                  "loader = DataLoader(ds, num_workers=2, pin_memory=args.pin_mem)")),
        # A Lightning Trainer on the CPU; the transformers Trainer's default, or a run on the CPU.
        Valid(_LIGHTNING.format(pin="", settings="accelerator='cpu', max_epochs=3")),
        Valid(_HF.format(settings="")),
        # accelerate on the CPU, told not to place batches, or preparing an evaluation loader.
        Valid(_ACCELERATE.format(settings="cpu=True", pin="")),
        Valid(_ACCELERATE.format(settings="device_placement=False", pin="")),
        Valid(_ACCELERATE.format(settings="", pin=", pin_memory=True") +
              "scores = DataLoader(vds)\nscores = accelerator.prepare(scores)\nfor b in scores:\n    evaluate(b)\n"),
        # Prepared in a helper whose result no training loop is seen to iterate (accelerate's tests).
        Valid(_ACCELERATE.format(settings="", pin=", pin_memory=True") +
              "def create_dataloader(accelerator, ds):\n    dl = DataLoader(ds, batch_size=4)\n"
              "    dl = accelerator.prepare(dl)\n    return dl\n"),
        Valid(_HF.format(settings=", use_cpu=True, dataloader_pin_memory=False")),
        Valid(_LOOP.replace("x = x.to(device)", "x = x.to(device)\n    scale = torch.ones(1).cuda()").format(
            loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)\nb = DataLoader(ds2)") +
              "for y in b:\n    loss = model(y, scale)\n    loss.backward()\n    opt.step()\n"),
        # Handed to an evaluation function (its name says nothing): no training loader.
        Valid(HANDED.format(pin=", pin_memory=True")),
        # A function both loaders go through, stepping only on `a`'s calls: `b` does not train.
        Valid(SHARED_EPOCH.format(a=", pin_memory=True", b="")),
        Valid(SHARED_EPOCH_GUARD.format(a=", pin_memory=True", b="")),
        # A loop over (phase, loader) pairs steps in the "train" phase only: `b` does not train.
        Valid(PHASES.format(a=", pin_memory=True", b="")),
        # ... or over the keys of a dict of loaders (`loaders[phase]`).
        Valid(PHASE_KEYS.format(a=", pin_memory=True", b="")),
        Valid(PHASE_PICKED.format(a=", pin_memory=True", b="")),
        Valid(PHASES_ZIP.format(a=", pin_memory=True", b="")),
        Valid(RETURNED_DICT.format(a=", pin_memory=True", b="")),
        # The batches it draws stay on the CPU; the step's copy is of another tensor.
        Valid(DRAWN.format(pin="", x="x + table.cuda()")),
    ]
    invalid = [
        # Built through `functools.partial(DataLoader, ...)`: pinned at the call (it was not seen).
        Invalid(PARTIAL.format(options=", num_workers=2", call=""),
                fixed=PARTIAL.format(options=", num_workers=2", call=", pin_memory=True")),
        # A transform that keeps the items on the CPU (or moves them there): pinned as any.
        Invalid(MOVED_BY_HELPER.format(item="x", loader="loader = DataLoader(Wrapped(X, lambda t: t.to('cpu')))"),
                fixed=MOVED_BY_HELPER.format(
                    item="x", loader="loader = DataLoader(Wrapped(X, lambda t: t.to('cpu')), pin_memory=True)")),
        # A dataset tokenized by a comprehension from a file: before, any comprehension counted as
        # plain Python values and no loader rule looked at it.
        Invalid(TOKENIZED, message="pin_memory=True"),
        # Turned off in the loader's `**` dict: a keyword beside the dict would pass it twice, so
        # the fix changes the dict's entry where it is given on every run that reaches the loader
        # and no other loader unpacks the dict; under `if use_cuda:` only, reported, no fix.
        Invalid(MNIST.format(x="data.to(device)").replace("'pin_memory': True", "'pin_memory': False"), fixed=NO_FIX,
                message="set `pin_memory` to `True` in `train_kwargs` (the dict the call unpacks)"),
        Invalid(_MNIST_UNPINNED.replace("{'batch_size': 64}", "{'batch_size': 64, 'pin_memory': 0}"),
                fixed=_MNIST_UNPINNED.replace("{'batch_size': 64}", "{'batch_size': 64, 'pin_memory': True}")),
        Invalid(_MNIST_UNPINNED.replace("{'batch_size': 64}", "dict(batch_size=64, pin_memory=False)"),
                fixed=_MNIST_UNPINNED.replace("{'batch_size': 64}", "dict(batch_size=64, pin_memory=True)")),
        # A second loader unpacks the same dict: changing it would change that loader too.
        Invalid(_MNIST_UNPINNED.replace("{'batch_size': 64}", "{'batch_size': 64, 'pin_memory': False}")
                .replace("    loader = DataLoader(ds, **train_kwargs)\n",
                         "    loader = DataLoader(ds, **train_kwargs)\n    probe = DataLoader(ds, **train_kwargs)\n"),
                fixed=NO_FIX),
        Invalid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2)"),
                fixed=_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)")),
        # The device is picked by whether CUDA is there (inline, through `torch.device`, a flag, or an
        # `if` around the copy): the script also runs on a CPU-only machine, where `pin_memory=True`
        # made every pass over the loader warn "no accelerator is found". Pinning follows the device.
        Invalid(_AVAILABLE.format(device='device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
                                  pin="", move="x.to(device)"),
                fixed=_AVAILABLE.format(device='device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
                                        pin=", pin_memory=torch.cuda.is_available()", move="x.to(device)"),
                message="set `pin_memory=torch.cuda.is_available()`"),
        Invalid(_AVAILABLE.format(device="", pin="", move='x.to("cuda" if torch.cuda.is_available() else "cpu")'),
                fixed=_AVAILABLE.format(device="", pin=", pin_memory=torch.cuda.is_available()",
                                        move='x.to("cuda" if torch.cuda.is_available() else "cpu")')),
        Invalid(_AVAILABLE.format(device="use_cuda = not args.no_cuda and torch.cuda.is_available()\n"
                                         "if use_cuda:\n    device = 'cuda'\nelse:\n    device = 'cpu'\n",
                                  pin="", move="x.to(device)"),
                fixed=_AVAILABLE.format(device="use_cuda = not args.no_cuda and torch.cuda.is_available()\n"
                                               "if use_cuda:\n    device = 'cuda'\nelse:\n    device = 'cpu'\n",
                                        pin=", pin_memory=torch.cuda.is_available()", move="x.to(device)")),
        Invalid(_AVAILABLE.format(device="", pin="", move="x.cuda() if torch.cuda.is_available() else x"),
                fixed=_AVAILABLE.format(device="", pin=", pin_memory=torch.cuda.is_available()",
                                        move="x.cuda() if torch.cuda.is_available() else x")),
        # ... handed to the training function as a parameter (PyTorch's MNIST example: `train(model,
        # device, loader, opt)` from `main`): the device every call hands in (before, True).
        Invalid(_HANDED_TO_TRAIN.format(pin=""), fixed=_HANDED_TO_TRAIN.format(pin=", pin_memory=torch.cuda.is_available()"),
                message="set `pin_memory=torch.cuda.is_available()`"),
        Invalid(_HANDED_TO_TRAIN.format(pin="").replace("        train(model, loader, device)", "        train(model, loader, 'cuda')"),
                fixed=_HANDED_TO_TRAIN.format(pin=", pin_memory=True").replace(
                    "        train(model, loader, device)", "        train(model, loader, 'cuda')")),
        # ... held by the trainer (`self.device`), and with torch imported under another name.
        Invalid(_TRAINER_DEVICE.format(pin=""),
                fixed=_TRAINER_DEVICE.format(pin=", pin_memory=th.cuda.is_available()")),
        # ... handed to the trainer's constructor, which keeps it (`self.device = device`): the
        # device every construction hands in (before, only one assigned in the class was followed).
        Invalid(_HANDED_DEVICE.format(device=_PICKED, pin="", constructions="Trainer(loader, device).fit()\n"),
                fixed=_HANDED_DEVICE.format(device=_PICKED, pin=", pin_memory=torch.cuda.is_available()",
                                            constructions="Trainer(loader, device).fit()\n")),
        # ... kept with an annotation (`self.device: torch.device = device`): followed alike (it was
        # not: only plain assignments were read, and the fix wrote `pin_memory=True`).
        Invalid(_HANDED_DEVICE.format(device=_PICKED, pin="", constructions="Trainer(loader, device).fit()\n")
                .replace("self.loader, self.device = loader, device", "self.loader = loader\n        self.device: torch.device = device"),
                fixed=_HANDED_DEVICE.format(device=_PICKED, pin=", pin_memory=torch.cuda.is_available()",
                                            constructions="Trainer(loader, device).fit()\n")
                .replace("self.loader, self.device = loader, device", "self.loader = loader\n        self.device: torch.device = device")),
        # ... also a flag handed in by keyword and tested around the copy.
        Invalid(_HANDED_FLAG.format(device="", pin="",
                                    constructions="Trainer(loader, use_cuda=torch.cuda.is_available()).fit()\n"),
                fixed=_HANDED_FLAG.format(device="", pin=", pin_memory=torch.cuda.is_available()",
                                          constructions="Trainer(loader, use_cuda=torch.cuda.is_available()).fit()\n")),
        # Constructions that disagree (one is handed "cuda"): the script needs a GPU, pinning always.
        Invalid(_HANDED_DEVICE.format(device=_PICKED, pin="",
                                      constructions="Trainer(loader, device).fit()\nTrainer(loader, 'cuda').fit()\n"),
                fixed=_HANDED_DEVICE.format(device=_PICKED, pin=", pin_memory=True",
                                            constructions="Trainer(loader, device).fit()\nTrainer(loader, 'cuda').fit()\n")),
        # A device written as "cuda" (the script needs a GPU): pinning always.
        Invalid(_AVAILABLE.format(device='device = torch.device("cuda")\n', pin="", move="x.to(device)"),
                fixed=_AVAILABLE.format(device='device = torch.device("cuda")\n', pin=", pin_memory=True",
                                        move="x.to(device)")),
        # `torch` is not the torch module here: `pin_memory=True` still (nothing to write the test with).
        Invalid(_AVAILABLE.format(device="", pin="", move='x.to("cuda" if gpu_ok() else "cpu")')
                .replace("import torch\n", ""),
                fixed=_AVAILABLE.format(device="", pin=", pin_memory=True", move='x.to("cuda" if gpu_ok() else "cpu")')
                .replace("import torch\n", "")),
        # Tensors made on or brought back to the CPU (a dtype-only `.to`): pageable, pinning helps.
        Invalid(TENSORS_ON_DEVICE.format(data="X = torch.randn(1024, 8, device='cpu').to(torch.float16)\n"
                                               "Y = X.cuda().cpu()\n", dataset="TensorDataset(X, Y)", options=""),
                fixed=TENSORS_ON_DEVICE.format(data="X = torch.randn(1024, 8, device='cpu').to(torch.float16)\n"
                                                     "Y = X.cuda().cpu()\n", dataset="TensorDataset(X, Y)",
                                                options=", pin_memory=True")),
        # Loaded onto the CPU, or features brought back to it: pinning helps. A helper that copies
        # to the device and returns what is not seen to be there gets the fix as unsafe.
        # ... while a file saved from host tensors, or one this file does not write, is read to the CPU.
        Invalid(TENSORS_ON_DEVICE.format(
            data="torch.save({'x': images, 'y': labels}, 'feats.pt')\ndata = torch.load('feats.pt')\n",
            dataset="TensorDataset(data['x'], data['y'])", options=""),
            fixed=TENSORS_ON_DEVICE.format(
            data="torch.save({'x': images, 'y': labels}, 'feats.pt')\ndata = torch.load('feats.pt')\n",
            dataset="TensorDataset(data['x'], data['y'])", options=", pin_memory=True")),
        # A `map` that keeps the tensors where they are: pinned.
        Invalid(TENSORS_ON_DEVICE.format(data="X, Y = map(lambda t: t.float(), (X, Y))\n",
                                          dataset="TensorDataset(X, Y)", options=""),
                fixed=TENSORS_ON_DEVICE.format(data="X, Y = map(lambda t: t.float(), (X, Y))\n",
                                                dataset="TensorDataset(X, Y)", options=", pin_memory=True")),
        Invalid(TENSORS_ON_DEVICE.format(data="data = torch.load('cache.pt', map_location='cpu')\n",
                                          dataset="TensorDataset(data['x'], data['y'])", options=""),
                fixed=TENSORS_ON_DEVICE.format(data="data = torch.load('cache.pt', map_location='cpu')\n",
                                                dataset="TensorDataset(data['x'], data['y'])",
                                                options=", pin_memory=True")),
        Invalid(TENSORS_ON_DEVICE.format(data=_EXTRACT.replace(".to(device)))", ".to(device)).cpu())")
                                          + "feats = extract(encoder, images)\n",
                                          dataset="TensorDataset(feats, labels)", options=""),
                fixed=TENSORS_ON_DEVICE.format(data=_EXTRACT.replace(".to(device)))", ".to(device)).cpu())")
                                                + "feats = extract(encoder, images)\n",
                                                dataset="TensorDataset(feats, labels)", options=", pin_memory=True")),
        # Frameworks move the batches: Lightning's loaders, the Trainer's pinning turned off.
        Invalid(_LIGHTNING.format(pin="", settings="max_epochs=3"),
                fixed=_LIGHTNING.format(pin=", pin_memory=True", settings="max_epochs=3")),
        Invalid("import pytorch_lightning as pl\nfrom torch.utils.data import DataLoader\n"
                "class Data(pl.LightningDataModule):\n    def train_dataloader(self):\n"
                "        return DataLoader(self.ds, batch_size=32)\n",
                fixed="import pytorch_lightning as pl\nfrom torch.utils.data import DataLoader\n"
                      "class Data(pl.LightningDataModule):\n    def train_dataloader(self):\n"
                      "        return DataLoader(self.ds, batch_size=32, pin_memory=True)\n"),
        # A command-line switch that is off unless given: its default is fixed; a store_true switch
        # becomes a BooleanOptionalAction on by default.
        Invalid(_LOOP.format(loader=_PIN_OPTION.format(option="'--pin-memory', type=bool, default=False",
                                                       dest="pin_memory")),
                fixed=_LOOP.format(loader=_PIN_OPTION.format(option="'--pin-memory', type=bool, default=True",
                                                             dest="pin_memory"))),
        Invalid(_LOOP.format(loader=_PIN_OPTION.format(option="'--pin-mem', action='store_true'", dest="pin_mem")),
                fixed=_LOOP.format(loader=_PIN_OPTION.format(
                    option="'--pin-mem', action=argparse.BooleanOptionalAction, default=True", dest="pin_mem")),
                message="unless `--pin-mem` is given (it is off by default)"),
        # ... also with its `default=False` written out (made `default=True` alone, the flag could
        # no longer turn pinning off).
        Invalid(_LOOP.format(loader=_PIN_OPTION.format(option="'--pin-mem', action='store_true', default=False",
                                                       dest="pin_mem")),
                fixed=_LOOP.format(loader=_PIN_OPTION.format(
                    option="'--pin-mem', action=argparse.BooleanOptionalAction, default=True", dest="pin_mem"))),
        Invalid(_LOOP.format(loader="from argparse import ArgumentParser\nparser = ArgumentParser()\n"
                                    "parser.add_argument('--pin', action='store_true', help='pin batches')\n"
                                    "args = parser.parse_args()\nloader = DataLoader(ds, pin_memory=args.pin)"),
                # `import argparse` added for the action's name.
                fixed="import argparse\n\n" + _LOOP.format(
                    loader="from argparse import ArgumentParser\nparser = ArgumentParser()\n"
                           "parser.add_argument(\n    '--pin', action=argparse.BooleanOptionalAction, help='pin batches', "
                           "default=True\n)\n"
                           "args = parser.parse_args()\nloader = DataLoader(ds, pin_memory=args.pin)")),
        # A variable or a configuration field that holds False: fixed where it is written.
        Invalid(_LOOP.format(loader="PIN = False\nloader = DataLoader(ds, num_workers=2, pin_memory=PIN)"),
                fixed=_LOOP.format(loader="PIN = True\nloader = DataLoader(ds, num_workers=2, pin_memory=PIN)"),
                message="pageable memory (`PIN` is False); set `PIN = True`"),
        Invalid(_LOOP.format(loader="class Config:\n    pin_memory: bool = False\ncfg = Config()\n"
                                    "loader = DataLoader(ds, num_workers=2, pin_memory=cfg.pin_memory)"),
                fixed=_LOOP.format(loader="class Config:\n    pin_memory: bool = True\ncfg = Config()\n"
                                          "loader = DataLoader(ds, num_workers=2, pin_memory=cfg.pin_memory)"),
                message="unless configured otherwise (`Config.pin_memory` is off by default)"),
        # Whole words of a function's name: `device` is no `dev` set.
        Invalid("from torch.utils.data import DataLoader\ndef fit(dl):\n    for x in dl:\n        model(x.cuda()).backward()\n"
                "        opt.step()\ndef device_loader(ds):\n    return DataLoader(ds)\n",
                fixed="from torch.utils.data import DataLoader\ndef fit(dl):\n    for x in dl:\n"
                      "        model(x.cuda()).backward()\n        opt.step()\ndef device_loader(ds):\n"
                      "    return DataLoader(ds, pin_memory=True)\n"),
        Invalid(_ACCELERATE.format(settings="", pin=""), fixed=_ACCELERATE.format(settings="", pin=", pin_memory=True"),
                message="DataLoaderConfiguration(non_blocking=True)"),
        # Built inline as prepare's argument: the loader is what the target in its position holds
        # (before, only a loader prepared alone was followed, and this one was missed).
        Invalid(_ACCELERATE.format(settings="", pin="").replace(
                    "loader = DataLoader(ds, shuffle=True)\nmodel, opt, loader = accelerator.prepare(model, opt, loader)",
                    "model, opt, loader = accelerator.prepare(model, opt, DataLoader(ds))"),
                fixed=_ACCELERATE.format(settings="", pin="").replace(
                    "loader = DataLoader(ds, shuffle=True)\nmodel, opt, loader = accelerator.prepare(model, opt, loader)",
                    "model, opt, loader = accelerator.prepare(model, opt, DataLoader(ds, pin_memory=True))")),
        # Built in one function, prepared and trained on in another (accelerate's examples).
        Invalid(_PREPARED.format(pin=""), fixed=_PREPARED.format(pin=", pin_memory=True")),
        # ... also when the helper returns the loader directly (accelerate's `generate_baseline_dataloader`).
        Invalid(_PREPARED.replace("    train_dataloader = DataLoader(ds, shuffle=True{pin})\n", "").replace(
            "return train_dataloader, eval_dataloader", "return DataLoader(ds, shuffle=True{pin}), eval_dataloader").format(
            pin=""),
                fixed=_PREPARED.replace("    train_dataloader = DataLoader(ds, shuffle=True{pin})\n", "").replace(
            "return train_dataloader, eval_dataloader", "return DataLoader(ds, shuffle=True{pin}), eval_dataloader").format(
            pin=", pin_memory=True")),
        Invalid(_HF.format(settings=", dataloader_pin_memory=False"),
                fixed=_HF.format(settings=", dataloader_pin_memory=True"), message="`dataloader_pin_memory=True`"),
        Invalid(_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=False)"),
                fixed=_LOOP.format(loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)")),
        Invalid(_LOOP.format(loader="loader = DataLoader(\n    ds,\n    num_workers=2,\n)"),
                fixed=_LOOP.format(loader="loader = DataLoader(\n    ds,\n    num_workers=2,\n    pin_memory=True,\n)")),
        Invalid(_LOOP.replace("x.to(device)", "x.cuda()").format(loader="loader = DataLoader(ds)"),
                fixed=_LOOP.replace("x.to(device)", "x.cuda()").format(loader="loader = DataLoader(ds, pin_memory=True)")),
        # torchtune's recipes move the batch dict with a helper.
        Invalid(_LOOP.replace("x = x.to(device)", "utils.batch_to_device(x, self._device)").format(
            loader="loader = DataLoader(ds)"),
                fixed=_LOOP.replace("x = x.to(device)", "utils.batch_to_device(x, self._device)").format(
                    loader="loader = DataLoader(ds, pin_memory=True)"),
                message="pin_memory=True"),
        # A positional pin_memory=False is replaced where it stands.
        Invalid(_LOOP.format(loader="loader = DataLoader(ds, 8, True, None, None, 2, None, False)"),
                fixed=_LOOP.format(loader="loader = DataLoader(ds, 8, True, None, None, 2, None, True)")),
        # The batch reaches the copy through a comprehension, and through a step function.
        Invalid(_LOOP.replace("x = x.to(device)", "x = {{k: v.to(device) for k, v in x.items()}}").format(
            loader="loader = DataLoader(ds, num_workers=2)\nother = DataLoader(ds2, pin_memory=True)"),
                fixed=_LOOP.replace("x = x.to(device)", "x = {{k: v.to(device) for k, v in x.items()}}").format(
                    loader="loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
                           "other = DataLoader(ds2, pin_memory=True)")),
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds)\ndef step(batch):\n"
                "    inputs, labels = batch\n    loss = model(inputs.cuda(), labels.cuda())\n    loss.backward()\n"
                "    opt.step()\nfor epoch in range(3):\n    for i, batch in enumerate(loader):\n        step(batch)\n",
                fixed="from torch.utils.data import DataLoader\nloader = DataLoader(ds, pin_memory=True)\ndef step(batch):\n"
                      "    inputs, labels = batch\n    loss = model(inputs.cuda(), labels.cuda())\n    loss.backward()\n"
                      "    opt.step()\nfor epoch in range(3):\n    for i, batch in enumerate(loader):\n        step(batch)\n"),
        # Handed to the training function every epoch; the loader handed to the checking one is not
        # for training.
        Invalid(HANDED.format(pin=""), fixed=HANDED.format(pin=", pin_memory=True")),
        Invalid(SHARED_EPOCH.format(a="", b=""), fixed=SHARED_EPOCH.format(a=", pin_memory=True", b="")),
        Invalid(SHARED_EPOCH_GUARD.format(a="", b=""), fixed=SHARED_EPOCH_GUARD.format(a=", pin_memory=True", b="")),
        Invalid(PHASES.format(a="", b=""), fixed=PHASES.format(a=", pin_memory=True", b="")),
        Invalid(PHASE_KEYS.format(a="", b=""), fixed=PHASE_KEYS.format(a=", pin_memory=True", b="")),
        Invalid(PHASE_PICKED.format(a="", b=""), fixed=PHASE_PICKED.format(a=", pin_memory=True", b="")),
        Invalid(PHASES_ZIP.format(a="", b=""), fixed=PHASES_ZIP.format(a=", pin_memory=True", b="")),
        Invalid(RETURNED_DICT.format(a="", b=""), fixed=RETURNED_DICT.format(a=", pin_memory=True", b="")),
        Invalid(DRAWN.format(pin="", x="x.cuda()"), fixed=DRAWN.format(pin=", pin_memory=True", x="x.cuda()")),
        # Iterated where this module cannot see it (a parameter), while the visible loop over another
        # loader evaluates: the hot loop's copy may be of its batches.
        Invalid("from torch.utils.data import DataLoader\ndef fit(dl):\n    for x in dl:\n        loss = model(x.cuda())\n"
                "        loss.backward()\n        opt.step()\ntrain_loader = DataLoader(ds, num_workers=2)\n"
                "val_loader = DataLoader(vds, pin_memory=True)\nfit(train_loader)\nfor x in val_loader:\n"
                "    score(model(x.cuda()))\n",
                fixed="from torch.utils.data import DataLoader\ndef fit(dl):\n    for x in dl:\n"
                      "        loss = model(x.cuda())\n        loss.backward()\n        opt.step()\n"
                      "train_loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
                      "val_loader = DataLoader(vds, pin_memory=True)\nfit(train_loader)\nfor x in val_loader:\n"
                      "    score(model(x.cuda()))\n"),
    ]

    def check_loader(self, call: cst.Call) -> None:
        ctx = self.ctx
        arg = loader_arg(ctx, call, "pin_memory")
        pin = setting_value(ctx, call, "pin_memory", False)
        if pin is UNKNOWN or pin:  # (the loader pins when the value is true: 0 and None do not)
            return
        accelerators, name, moves = None, loader_name(ctx, call), frozenset()
        if batches_made_on_device(ctx, call):
            return  # already on the device: nothing to pin (pinning them raises)
        if builds_trainer_loader(ctx, call):
            # The Trainer pins by default: only a written-out False, for a run on an accelerator.
            if arg is None or configured_for_cpu(call):
                return
        elif (trainers := lightning_trainers(ctx, call, name)) is not None:
            # Lightning moves the batches itself (non-blocking to CUDA), unless told to stay on the CPU.
            if trainers and all(configured_for_cpu(trainer) for trainer in trainers):
                return
        elif accelerators := accelerate_trains_on(ctx, call):
            # accelerate's prepared loader moves each batch itself.
            if not any(places_batches(ctx, accelerator) for accelerator in accelerators):
                return
        elif not (moves := self._feeds_copies(call)):
            return
        # accelerate copies without non_blocking unless its DataLoaderConfiguration says so.
        overlap = " (with `dataloader_config=DataLoaderConfiguration(non_blocking=True)` for the Accelerator)" \
            if accelerators else ""
        # A dataset tensor from a helper of the module that copies to the device (`feats =
        # extract(encoder, images)`) may be on it where on_device cannot tell: pinning would raise.
        # So may one whose attributes are assigned after it is built (`ds.tensors = tuple(f(t) for t in
        # ds.tensors)`): what it holds is not only what it was seen built from.
        applicability = Applicability.UNSAFE if dataset_from_device_helper(ctx, call) \
            or dataset_changed_after(ctx, call) else Applicability.SAFE
        value = _pin_value(ctx, call, moves)
        self.report(
            call,
            setting_advice(ctx, call, "pin_memory", value, "Batches go to the accelerator from pageable memory",
                           f"for faster, asynchronous copies{overlap}"),
            setting_fix(self, call, "pin_memory", value, applicability),
        )

    def _feeds_copies(self, call: cst.Call) -> frozenset[cst.Call]:
        """The device copies of a training loader of this module's batches in the hot loop (or, when
        its loops are not seen, the hot loop's copies no seen loop leads to); empty when none."""
        ctx = self.ctx
        if not is_training_loader(ctx, call):
            return frozenset()
        batches = [(loop, target) for loop, target in loader_batches(ctx, call) if ctx.loops.runs_steps(loop)]
        batches += [(loop, loop.target) for loop, path in ctx.loops.shared_loops(call)
                    if ctx.loops.steps_on(loop, path) is not False]
        if batches:
            # Its own batches must reach a device copy; another loader's copies say nothing of it.
            return frozenset().union(*(batch_moves(ctx, loop, target=target) for loop, target in batches))
        return _unattributed_moves(ctx)


def _pin_value(ctx, call: cst.Call, moves: frozenset[cst.Call]) -> str:
    """What to set pin_memory to: `torch.cuda.is_available()` when a copy of the batches goes to a
    device the script picks by whether CUDA is there (`device = torch.device("cuda" if
    torch.cuda.is_available() else "cpu")`, or a `.cuda()` under `if torch.cuda.is_available():`):
    the script is meant to run on a CPU-only machine too, where a pinning loader warns on every
    pass ("no accelerator is found"). Else (a device written as "cuda", a framework's copies, a
    `store_true` switch, whose fix turns the flag on by default) True. The call needs the torch
    module bound at module level, as `torch` or an alias."""
    torch = ctx.names.module_alias("torch")
    source = setting_source(ctx, call, "pin_memory")
    if torch is None or not moves or source is not None and source.switch is not None:
        return "True"
    devices = ctx.devices
    for move in moves:
        # `.to(device)`'s device, a batch helper's arguments (`send_to_device(batch, device)`).
        picked = [device_arg(move)] if is_device_move(ctx, move) else list(move.args)
        if devices.under_availability_test(move) or any(
                arg is not None and devices.picked_by_cuda_availability(arg.value) for arg in picked):
            return f"{torch}.cuda.is_available()"
    return "True"


def _hot_moves(ctx) -> frozenset[cst.Call]:
    """Device copies (`.to(device)`, `.cuda()`, batch helpers such as `batch_to_device(batch,
    device)`) in a hot loop or a function it calls."""
    cached = getattr(ctx, "_hot_moves", None)
    if cached is None:
        cached = frozenset(c for c in ctx.index.nodes(cst.Call)
                           if (is_device_move(ctx, c) or is_device_helper(ctx, c)) and ctx.loops.in_hot_loop(c))
        ctx._hot_moves = cached
    return cached


def _unattributed_moves(ctx) -> frozenset[cst.Call]:
    """Device copies in the hot loop that no visible loop over a loader of this file leads to: the
    batches of a loader whose loop is not seen here (iterated through a parameter, `next(it)`, a
    framework) may be what they copy. With no loader iterated in a visible loop, all of them."""
    cached = getattr(ctx, "_unattributed_moves", None)
    if cached is None:
        attributed: set = set()
        for call in loader_calls(ctx):
            for loop, target in loader_batches(ctx, call, shared=True):
                attributed |= batch_moves(ctx, loop, target=target)
        cached = _hot_moves(ctx) - attributed
        ctx._unattributed_moves = cached
    return cached
