"""TL101 dataloader-no-workers: DataLoader loads data in the main process (`num_workers` missing or 0)."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.batches import (
    batches_made_on_device,
    builds_trainer_loader,
    dataset_held_on_device,
    derived_names,
    loader_batches,
    mentions_any,
)
from trainlint.analysis.tensors import pure_tensor_method
from trainlint.analysis.tree import LIST_ADDS
from trainlint.rule import NO_FIX, Invalid, Option, Valid

from .cases import (
    FRESH,
    GUARDED,
    LEFTOVER,
    LOCAL_FUNCTION,
    MOVED_BY_HELPER,
    PARTIAL,
    ON_DEVICE,
    SEEDED,
    SHARDED,
    SHARD_HELPER,
    STORED_ON_DEVICE,
    STREAM,
    TENSORS_ON_DEVICE,
    TOKENIZED,
    TOP_LEVEL,
    UNSHARDED,
    WORKERS_SET,
)
from .loaders import DataLoaderRule, TRAINER_TRIGGERS, is_training_loader, setting_advice
from .processes import started_in_processes
from .queues import queue_fed_builds
from .workers import add_workers_fix, subject, workers_advice, workers_to_set, workers_value


# A replay buffer (a Dataset the loop adds to) and a dataset reading one; the loop draws batches.
_REPLAY = ("from torch.utils.data import DataLoader, Dataset\nclass Replay(Dataset):\n    def __init__(self):\n"
           "        self.items = []\n    def add(self, x):\n        self.items.append(x)\n"
           "    def __getitem__(self, i):\n        return self.items[i]\n"
           "class Window(Dataset):\n    def __init__(self, buf):\n        self.buf = buf\n"
           "    def __getitem__(self, i):\n        return self.buf.items[-i]\n"
           "def main(env):\n    buf = Replay()\n    {loader}\n    for step in range(100):\n"
           "        obs = env.step()\n        {body}\n"
           "if __name__ == '__main__':\n    main(None)\n")


# An IterableDataset taking its items from a queue (an RL trainer's rollouts); {take} is how.
_QUEUED = ("import queue\nimport multiprocessing as mp\nfrom torch.utils.data import DataLoader, IterableDataset\n"
           "class Rollouts(IterableDataset):\n    def __init__(self, {param}):\n        self.rollouts = rollouts\n"
           "    def __iter__(self):\n        while True:\n{take}"
           "def main(rollouts, files):\n    {build}\n    loader = DataLoader(dataset, batch_size=1)\n"
           "    for batch in loader:\n        step(batch)\n")
_GET = "            yield self.rollouts.get()\n"


# An offline pass over shards of a dataset, one process per shard (DeepSpeed's data analyzer):
# {start} runs `self.run_shard` in processes, {more} is added to the module.
_SHARDED_PASS = ("{imports}from torch.utils.data import DataLoader, Subset\n"
                 "class Analyzer:\n    def __init__(self, dataset, splits):\n"
                 "        self.dataset, self.splits = dataset, splits\n"
                 "    def run_shard(self, i):\n        start, end = self.splits[i]\n"
                 "        loader = DataLoader(Subset(self.dataset, range(start, end)), batch_size=64, num_workers=0)\n"
                 "        return [metric(batch) for batch in loader]\n"
                 "    def run(self):\n{start}{more}")
_PROCESS_START = ("        procs = [Process(target=self.run_shard, args=(i,)) for i in range(len(self.splits))]\n"
                  "        for p in procs:\n            p.start()\n")
# {pool} maps self.{fn} over the shards.
_POOL_MAP = "        with {pool}(4) as pool:\n            return pool.map(self.{fn}, range(len(self.splits)))\n"
_SHARD_HELPER = "    def shard(self, i):\n        return self.run_shard(i)\n"


# A collate_fn set on a training loader after it is built, in the function that builds it: {define}
# what the function defines first, {collate} the collate_fn set.
_SET_LATER_IN_MAIN = ("from torch.utils.data import DataLoader\n\n\ndef main(ds):\n{define}"
                      "    loader = DataLoader(ds, batch_size=4, shuffle=True)\n    loader.collate_fn = {collate}\n"
                      "    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n")
# A collate_fn set on the loader in the function it is handed to (`fit(train_loader)`).
_COLLATE_SET_LATER = ("import torch\nfrom torch.utils.data import DataLoader\n\n\ndef to_gpu(batch):\n"
                      "    return torch.stack(batch).to('cuda')\n\n\ndef fit(train_loader: DataLoader):\n"
                      "    train_loader.collate_fn = to_gpu\n    for x in train_loader:\n"
                      "        model(x).backward()\n        opt.step()\n\n\nfit(DataLoader(ds, batch_size=4{options}))\n")


class DataLoaderNoWorkers(DataLoaderRule):
    code = "TL101"
    name = "dataloader-no-workers"
    summary = "DataLoader loads data in the main process (`num_workers` missing or 0)"
    source = "§3, §3.3"
    fix_applicability = "unsafe"
    triggers = TRAINER_TRIGGERS
    trainer_settings = True
    options = {
        "num-workers": Option(0, int, "The value the fix writes; 0 means `min(8, os.cpu_count() or 1)` at run time.",
                              minimum=0),
    }
    _OPTION = ("import argparse\nfrom torch.utils.data import DataLoader\nparser = argparse.ArgumentParser()\n"
               "parser.add_argument({flag}, type=int, default={default})\nargs = parser.parse_args()\n"
               "loader = DataLoader(ds, num_workers=args.num_workers)\n")
    _CONFIG = ("import os\nfrom dataclasses import dataclass, field\nfrom torch.utils.data import DataLoader\n"
               "@dataclass\nclass Config:\n    batch_size: int = 32\n    num_workers: int = {default}\n{more}"
               "def main(cfg: Config):\n    return DataLoader(ds, cfg.batch_size, num_workers=cfg.num_workers)\n")
    docs = """
## What it does
Flags a `DataLoader` (any import alias, local subclasses, `StatefulDataLoader`) whose `num_workers`
is missing or a literal 0. Evaluation and inference loaders too: the message says the batches load
in the training process for a loader a loop of the file trains on (or that nothing shows to be an
evaluation one), and in the main process for one that only evaluates or predicts (a loop with no
optimizer step, `val_loader`, a sequential sampler, `predict_dataloader()`). A loader over constants the file writes (`range(n)`, a list of
literals, a comprehension over those that calls nothing; not one over data, such as
`[tokenize(t) for t in texts]`) or made to draw one batch (`next(iter(DataLoader(...)))`, or a
variable whose only use is one `next(iter(loader))`, run once) has nothing to overlap and is not flagged,
by this or any loader rule. A loop that makes a new iterator for every batch (`x, y =
next(iter(loader))` each step) is reported without a fix: workers would start again with each
iterator, slower than none; the message says to make the iterator once before the loop first. Nor, by this rule, is a loader whose dataset takes its items from a
queue that another thread or process fills (an RL trainer's rollouts, a reader's producer
processes): a class of the module whose `__iter__` or `__getitem__` (or a method of the class they
call through `self.`, up to two calls down) calls `.get()`/`.get_nowait()` on an attribute set to
a `queue`/`multiprocessing` queue (made there, or a parameter annotated as one), or calls it in a
`try` that catches `queue.Empty`. Its producer does the loading beside training already, and a
worker would get its own copy of the queue, which nothing fills. Every build of the dataset must
be such a class, one handed it (`Batcher(dataset)`), or a placeholder whose `__iter__` returns
`iter([])` (a conditional expression's sides count each); where another build loads data
(`dataset = Rollouts(q)` in one branch, `dataset = Files(paths)` in the other) or is no
construction seen here (`dataset = splits[0]`), the loader is reported with no fix.
Nor is a loader built in a function the file runs in processes it starts itself (or in one that
only such functions call, up to three calls down): one a `multiprocessing` (or
`torch.multiprocessing`) process Pool runs (`pool.map(fn, shards)`, also a pool from
`get_context(...)`), since a pool's processes are daemonic and cannot start workers at all
("daemonic processes are not allowed to have children"); or the `target=` of a `Process` (or a
function a `ProcessPoolExecutor`'s `map`/`submit` runs), in a module that trains nothing (no
backward, no optimizer step: an offline pass over shards of a dataset, one process per shard, as
DeepSpeed's data analyzer runs), where the script spreads its loading over those processes
already. A process that trains (one per rank, as scripts started before torchrun do) is reported
as any training loader is.
Nor is a loader of a test module (`test_*.py`, `*_test.py`, a file under `tests/`) with no
training loop, or one that feeds no training and whose batches no model is seen to run on (the
loops over it only collect, compare or drop them: accelerate's sharding and seed checks beside
its tests that train), or one held in a local name that the file never iterates nor hands on
(only its attributes read, `isinstance(dl.batch_sampler, ...)` after `dl =
prepare_data_loader(dl, ...)`): its batches feed the test's assertions (values, shapes,
sharding), and workers would only make the test start processes. A test's training loader, and
an evaluation pass of a fine-tuning script named `test_*.py`, are reported as any script's are.
Also flags transformers' `TrainingArguments` (and trl's and sentence-transformers' subclasses,
such as `SFTConfig`) handed to a trainer in the same file, without `dataloader_num_workers` or
with 0, its default: the Trainer then loads and collates every batch in the training process.
TL103 and TL104 read its `dataloader_persistent_workers` and `dataloader_prefetch_factor` too.

A loader built through `functools.partial(DataLoader, ...)` that gives keywords only (`make =
partial(DataLoader, batch_size=8, shuffle=True)`, then `make(ds)`) is read as the DataLoader call
`make(ds)` makes (the same for TL101-TL108): a setting the call does not give is read from the
partial, and the fix sets it at the call (`make(ds, num_workers=...)`), where it replaces the
partial's keyword for that loader alone (another loader of the same partial may evaluate).

A setting written as a name is read where the file writes it (the same reading for TL101-TL105):
a variable assigned once in the scope the read looks in (`NUM_WORKERS = 0` at module level, or
`workers = 0` in the function; not one declared `global` elsewhere, nor a parameter); a
command-line option's default (`args.num_workers`: the file's one `add_argument` for it, by
`dest=` or its first long flag, with no `set_defaults` for it); or the default of a configuration
class's field (`cfg.num_workers`, where `cfg` is annotated with the module's one class declaring
`num_workers`, built from it, or parsed into it by a call handed the class, such as
`tyro.cli(Config)`; and nothing in the file sets the field: no `cfg.num_workers = ...`, no
construction naming it or passing arguments by position or `**`, no `replace(...)` of it). An
option's or field's default of 0 loads in the training process unless the run is configured
otherwise. The fix changes the value where it is written, once for every loader that reads it.
Options passed as `**options` are read when the function shows the dict's whole life: built from
literal keys (`{...}`, `dict(a=...)`, `options["key"] = ...`, `options.update(...)` of such a dict,
as PyTorch's MNIST example merges its CUDA options) and otherwise only read or unpacked. A key
it may hold reads as the literal it is given where every place that sets it gives the same one
(`"pin_memory": True` in the CUDA options), else as not known here. A key it holds is fixed in
the dict (a keyword beside the `**` would pass it twice): the literal it is given is replaced
where the dict is built or changed in the loader call's own block, and only when no other call
unpacks the dict; otherwise (set under a condition, or a dict two loaders share) it is reported
without a fix. One it cannot hold is missing, and the fix adds the keyword beside the `**` (a
guard on workers reads `options.get("num_workers", 0)`).

No workers fix either for a dataset that keeps an open file or database handle from its
`__init__` (`self.f = open(path, "rb")`, `Path(path).open()`, an archive kept open by `zipfile.ZipFile`
or `tarfile.open`: forked workers would share its position; `h5py.File` or `tables.open_file`: HDF5
is not fork-safe; `lmdb.open` or `sqlite3.connect`: not to be used after a fork), also an
object read through such a handle (`self.x = h5py.File(path)["x"]`, or an item of a name bound to
the file; not a copy read out with `[:]`), for a
dataset class defined inside a function (it cannot be pickled for spawned workers), nor
for a `collate_fn` (also one set on the loader after it is built, `loader.collate_fn = ...`) or
`worker_init_fn` that is a lambda (never picklable by reference, even at the module's top level), a
function defined inside a function (a method's body too; not a method, `self.collate`, which
pickles with its object) or an instance of a class defined inside a function
(`collate_fn=Collator()`), or such a function the dataset is
built with (`Mapped(base, lambda t: t * 2)`, a transform `Lambda(lambda x: ...)` it is given, also
through a name; not one a builtin only calls while the data is built, `map(lambda r: ..., rows)`), where
a local name hides the module `os` the fix calls, or for a framework's training run at the top level
of an unguarded script (`L.Trainer(...).fit(...)`, a Trainer's `.train()`). A config unpacked from
`HfArgumentParser(...).parse_args_into_dataclasses()` is read as an instance of its class.

## Why is this bad?
With no workers, every batch is read, decoded and collated in the training process between two
steps, and the accelerator idles while it happens. Worker processes prepare the next batches
while the current one trains.

## Example
```python
loader = DataLoader(dataset, batch_size=64, shuffle=True)
```

## Use instead
```python
loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=min(8, os.cpu_count() or 1))
```

## Fix safety
Unsafe: workers need a picklable dataset and collate function, and each worker has its own RNG
stream, so random augmentations differ from a run without workers. A value the file does not
settle (a parameter, an option or field it cannot see once), `*args`, or `**options` whose keys
the file does not show, is not a finding. A `0` passed by position is replaced where it stands.
A loader whose batches its dataset or `collate_fn` (defined in this module; also one set on the
loader after it is built, `train_loader.collate_fn = to_gpu`, where the file follows it) already puts on the
device (as TL102 reads it: also through a function of the module, `to_dev(x)` in `__getitem__`, or a
transform of the module the dataset is handed, `transform=lambda t: t.to(device)`), or whose dataset is built from tensors on the device (`TensorDataset(X.to(device), Y)`,
`.cuda()`, a tensor made with `device=`, or a name assigned one; any dataset class handed such a
tensor, also inside `Subset(...)` or `ConcatDataset([...])`), is reported with no fix: workers
cannot start CUDA in forked processes, so those copies must move into the training loop first
(TL106 does it for a `collate_fn`); for a dataset that holds its data on the device (built from
device tensors, or moving them there in its `__init__`) the message says so, and that keeping no
workers or indexing the tensors on the GPU directly is the other choice. An iterable dataset (a subclass of `IterableDataset`) defined
in this module whose `__iter__` does not split its stream between workers is reported with no fix
either: every worker runs the whole `__iter__`, so each sample would come once per worker (64
samples an epoch become 128 with 2 workers). It counts as split when its `__iter__`, or the methods
of the class and the module's functions it calls (three calls down), read the worker's `id` or
`num_workers` from `torch.utils.data.get_worker_info()` (`info.id`, `get_worker_info().num_workers`)
or hand the worker info to another call, or when the loader sets a `worker_init_fn`; the info read
only to seed a per-worker RNG (`random.Random(info.seed)`), or asked for in a method `__iter__`
never calls, splits nothing. An iterable dataset not defined here (Hugging Face `datasets`
streaming, webdataset, a project module's class), or a class here deriving from such a class, is
not seen and keeps the fix: the libraries' streaming datasets split their shards between workers
themselves; check a project's own stream before applying it. A script that trains at its top
level (a hot loop there; a top-level call of a function of the module that runs one, or that
function handed to what calls it: `fire.Fire(main)`, `Thread(target=main)`; or a call of the
app such a function is registered with: Typer's `@app.command()` and `app()`) outside
an `if __name__ == "__main__":` guard is reported with no fix too: a worker started by spawn or
forkserver (the default on macOS and Windows, and on Linux from Python 3.14) imports the main
module again and would start the training (not a notebook: a worker does not run its cells again).
In a notebook, a loader handed a class or function its cells define (the dataset's class, a
`collate_fn`, `worker_init_fn` or sampler) gets no fix: such a worker unpickles it by importing
`__main__`, which for a kernel is no file; it belongs in a `.py` module the notebook imports.
A loader whose dataset, or an object it was built with, is changed in a loop that takes its
batches (a replay buffer filled by `buf.add(obs)` beside `next(it)`, in the body of `for batch in
loader`; the same changes TL103 looks for) is reported with no fix: each worker keeps the copy it
was forked with at the pass's start, so it would never see what the loop adds (the model would
train on the empty buffer). A change between passes is seen by workers started for the next pass.
TL106 and TL107 add workers the same way, under the same conditions, and say why when they add
none.
"""
    valid = [
        # Constants the file writes: a list of literals, a comprehension over a range that calls nothing.
        Valid("from torch.utils.data import DataLoader\ndl = DataLoader([1, 2, 3], batch_size=2, shuffle=True)\n"),
        Valid("from torch.utils.data import DataLoader\nitems = [(i, i % 2) for i in range(10)]\n"
              "dl = DataLoader(items, batch_size=2, shuffle=True)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, batch_size=8, num_workers=4)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=args.workers)\n"),
        Valid("from torch.utils.data import DataLoader\nDataLoader(ds, **loader_kwargs)\n"),
        Valid("import torch\nloader = torch.utils.data.DataLoader(ds, 8, True, None, None, 2)\n"),
        Valid("from mylib import DataLoader\nDataLoader(ds)\n"),
        # `*args` may carry num_workers by position.
        Valid("from torch.utils.data import DataLoader\nloader = DataLoader(*loader_args)\n"),
        # Plain Python values in memory: nothing for workers to load (ecosystem: accelerate tests).
        Valid("from torch.utils.data import DataLoader\ndl = DataLoader(range(64), batch_size=8, shuffle=True)\n"),
        # One batch drawn and the loader dropped (ecosystem: torchrec's inference client): no loading to overlap.
        Valid("from torch.utils.data import DataLoader\nexample = next(iter(DataLoader(ds, batch_size=8)))\n"),
        Valid("from torch.utils.data import DataLoader\ndef trace(model, ds):\n    probe = DataLoader(ds, batch_size=1)\n"
              "    return torch.jit.trace(model, next(iter(probe)))\n"),
        # ... also once an epoch, beside the step loop (a sample decoded): not a new pass every step.
        Valid("from torch.utils.data import DataLoader\ndef main(ds, train_loader):\n    dev = DataLoader(ds, batch_size=8)\n"
              "    for epoch in range(10):\n        for x, y in train_loader:\n            model(x, y).backward()\n"
              "            opt.step()\n        print(decode(model(*next(iter(dev)))))\n"),
        Valid("from torch.utils.data import DataLoader\nitems = list(range(10))\ndl = DataLoader(items, batch_size=1)\n"),
        Valid("from transformers import TrainingArguments\nargs = TrainingArguments('out', dataloader_num_workers=4)\n"
              "Trainer(model, args).train()\n"),
        Valid("from transformers import TrainingArguments\nargs = TrainingArguments(**config)\nTrainer(model, args).train()\n"),
        Valid("from transformers import TrainingArguments as TA\nTrainer(model, TA('out', dataloader_num_workers=2))\n"),
        # Built and given to no trainer here: no DataLoader is configured (accelerate's DeepSpeed test).
        Valid("from transformers import TrainingArguments\nargs = TrainingArguments('out')\nassert args is not None\n"),
        # trl's model settings are not TrainingArguments.
        Valid("from trl import ModelConfig\nmodel_args = ModelConfig(model_name_or_path='gpt2')\n"),
        # A command-line worker count that defaults to some workers, or whose option is not seen once.
        Valid(_OPTION.format(flag="'--num-workers'", default="4")),
        Valid(_OPTION.format(flag="'--num-workers'", default="0") +
              "parser.add_argument('--num_workers', type=int, default=2)\n"),
        Valid(_OPTION.format(flag="'--workers'", default="0")),
        Valid(_OPTION.format(flag="'--num-workers'", default="0") + "parser.set_defaults(num_workers=8)\n"),
        # A subclass with its own __init__ does not take DataLoader's arguments (ecosystem: torchtitan tests).
        Valid("from torch.utils.data import DataLoader\nclass FakeLoader(DataLoader):\n    def __init__(self):\n"
              "        super().__init__(dataset=[], batch_size=1)\nloader = FakeLoader()\n"),
        # A worker count from a variable is known only when it is assigned once, where the read looks.
        Valid("from torch.utils.data import DataLoader\nNUM_WORKERS = 4\ndef main():\n"
              "    return DataLoader(ds, num_workers=NUM_WORKERS)\n"),
        Valid("from torch.utils.data import DataLoader\nNUM_WORKERS = 0\ndef setup(n):\n    global NUM_WORKERS\n"
              "    NUM_WORKERS = n\ndef main():\n    return DataLoader(ds, num_workers=NUM_WORKERS)\n"),
        Valid("from torch.utils.data import DataLoader\ndef main(fast):\n    workers = 0\n    if fast:\n"
              "        workers = 8\n    return DataLoader(ds, num_workers=workers)\n"),
        Valid("from torch.utils.data import DataLoader\nNUM_WORKERS = 0\ndef main(NUM_WORKERS):\n"
              "    return DataLoader(ds, num_workers=NUM_WORKERS)\n"),
        # A `**options` dict that may hold the worker count, or whose keys the file does not show.
        Valid("from torch.utils.data import DataLoader\ndef main(fast):\n    kw = {'batch_size': 32}\n    if fast:\n"
              "        kw.update(num_workers=8)\n    return DataLoader(ds, **kw)\n"),
        Valid("from torch.utils.data import DataLoader\ndef main():\n    kw = {'batch_size': 32}\n    tune(kw)\n"
              "    return DataLoader(ds, **kw)\n"),
        # A module's dict a function changes (it may run before the loader is built), or one
        # declared `global` somewhere: its keys are not known.
        Valid("from torch.utils.data import DataLoader\nKW = {'batch_size': 32}\ndef fast():\n"
              "    KW['num_workers'] = 8\ndef main():\n    return DataLoader(ds, **KW)\n"),
        Valid("from torch.utils.data import DataLoader\nKW = {'batch_size': 32}\ndef setup(kw):\n    global KW\n"
              "    KW = kw\ndef main():\n    return DataLoader(ds, **KW)\n"),
        # A configuration field's default decides only when nothing in the file sets the field.
        Valid(_CONFIG.format(default="4", more="")),
        Valid(_CONFIG.format(default="0", more="") + "main(Config(num_workers=4))\n"),
        Valid(_CONFIG.format(default="0", more="") + "main(Config(64, 4))\n"),
        Valid(_CONFIG.format(default="0", more="") + "cfg = Config()\ncfg.num_workers = 4\nmain(cfg)\n"),
        Valid(_CONFIG.format(default="0", more="") + "main(dataclasses.replace(Config(), num_workers=4))\n"),
        Valid(_CONFIG.format(default="0", more="class Fast(Config):\n    num_workers: int = 8\n")),
        # An object the file never ties to the class may be anything.
        Valid(_CONFIG.format(default="0", more="").replace("cfg: Config", "cfg")),
        # A dataset taking its items from a queue another thread or process fills: the producer
        # loads, beside training already (ecosystem: trl's async GRPO and distillation trainers).
        Valid(_QUEUED.format(param="rollouts: queue.Queue", take=_GET, build="dataset = Rollouts(rollouts)")),
        Valid(_QUEUED.format(param="rollouts: 'mp.Queue | None'", take=_GET,
                             build="dataset = Rollouts(rollouts)").replace("'mp.Queue | None'", "mp.Queue | None")),
        Valid(_QUEUED.format(param="rollouts", build="dataset = Rollouts(rollouts)",
                             take="            try:\n                yield self.rollouts.get(timeout=5)\n"
                                  "            except queue.Empty:\n                check_health()\n")),
        Valid(_QUEUED.format(param="files", build="dataset = Rollouts(files)", take=_GET).replace(
            "self.rollouts = rollouts", "self.rollouts = mp.Queue(maxsize=64)\n"
                                        "        mp.Process(target=read, args=(files, self.rollouts)).start()")),
        # ... a queue a base class of the module makes.
        Valid("import queue\nfrom torch.utils.data import DataLoader, IterableDataset\nclass Fed(IterableDataset):\n"
              "    def __init__(self):\n        self.rollouts = queue.Queue()\nclass Rollouts(Fed):\n"
              "    def __iter__(self):\n        while True:\n            yield self.rollouts.get()\n"
              "def main():\n    for batch in DataLoader(Rollouts(), batch_size=4):\n        step(batch)\n"),
        # ... chosen by a conditional expression beside a placeholder with nothing to yield.
        Valid(_QUEUED.format(param="rollouts: queue.Queue", take=_GET,
                             build="dataset = Rollouts(rollouts) if rollouts is not None else Empty()")
              + "class Empty(IterableDataset):\n    def __iter__(self):\n        return iter([])\n"),
        # The queue's `get` in a method `__iter__` calls (two calls down).
        Valid(_QUEUED.format(param="rollouts: queue.Queue", build="dataset = Rollouts(rollouts)",
                             take="            yield self._next()\n    def _next(self):\n        return self._take()\n"
                                  "    def _take(self):\n        return self.rollouts.get()\n")),
        # Another function's `dataset` is another variable: its files dataset is not this loader's.
        Valid(_QUEUED.format(param="rollouts: queue.Queue", take=_GET, build="dataset = Rollouts(rollouts)")
              + "def offline(files):\n    dataset = Files(files)\n    return dataset\n"),
        # ... wrapped by a batcher, or a placeholder with nothing to yield on the ranks that never draw.
        Valid(_QUEUED.format(param="rollouts: queue.Queue", take=_GET, build=(
            "if rank == 0:\n        dataset = Rollouts(rollouts)\n        dataset = Batcher(dataset, 8)\n"
            "    else:\n        dataset = Empty()")) +
            "class Batcher(IterableDataset):\n    def __init__(self, dataset, n):\n        self.dataset = dataset\n"
            "    def __iter__(self):\n        yield from self.dataset\n"
            "class Empty(IterableDataset):\n    def __iter__(self):\n        return iter([])\n"),
        # Loaders in processes the script starts itself, over shards of its data: a Process's
        # target in a module that trains nothing, a function a process Pool maps (a pool's
        # processes are daemonic and cannot start workers), a pool from a context.
        Valid(_SHARDED_PASS.format(imports="from multiprocessing import Process\n", start=_PROCESS_START, more="")),
        Valid(_SHARDED_PASS.format(imports="import torch.multiprocessing as mp\n",
                                   start=_PROCESS_START.replace("Process(", "mp.get_context('spawn').Process("), more="")),
        Valid(_SHARDED_PASS.format(imports="import multiprocessing as mp\n", more="",
                                   start=_POOL_MAP.format(pool="mp.Pool", fn="run_shard"))),
        # A ProcessPoolExecutor's processes, in a module that trains nothing.
        Valid(_SHARDED_PASS.format(imports="from concurrent.futures import ProcessPoolExecutor\n", more="",
                                   start="        with ProcessPoolExecutor(4) as ex:\n"
                                         "            return list(ex.map(self.run_shard, range(len(self.splits))))\n")),
        # Built in a function that only a Pool's function calls.
        Valid(_SHARDED_PASS.format(imports="import multiprocessing as mp\n", more="",
                                   start=_POOL_MAP.format(pool="mp.Pool", fn="shard") + _SHARD_HELPER)),
        # Two classes with a method of the same name: the Process runs its own class's.
        Valid(_SHARDED_PASS.format(imports="from multiprocessing import Process\n", start=_PROCESS_START, more="")
              .replace("class Analyzer:", "class Other:\n    def run_shard(self, i):\n        return i\nclass Analyzer:")),
        Valid(_SHARDED_PASS.format(
            imports="import multiprocessing as mp\n", start="        pool = mp.get_context('fork').Pool(4)\n"
                                                           "        return pool.imap(self.run_shard, range(8))\n",
            more="def train(model, opt, loader):\n    for x in loader:\n        model(x).sum().backward()\n"
                 "        opt.step()\n")),
    ]

    invalid = [
        # A new iterator for every batch (`next(iter(loader))` in the loop): workers would start
        # again at every step, slower than none; the iterator must be made once first.
        Invalid(FRESH.format(opts=""), fixed=NO_FIX,
                message="the loop makes a new iterator over it for every batch (`next(iter(loader))`), and each new "
                        "iterator would start the workers again; make the iterator once before the loop "
                        "(`it = iter(loader)`, made again at `StopIteration`), then set `num_workers`"),
        # A loader no loop trains on (an evaluation loop, `predict()`'s) loads in the main process;
        # the message does not speak of training there (before: "in the training process ...
        # while the GPU trains" for every loader).
        Invalid("from torch.utils.data import DataLoader\n\n\ndef predict(model, ds):\n"
                "    loader = DataLoader(ds, batch_size=64)\n    out = []\n    for x in loader:\n"
                "        out.append(model(x))\n    return out\n",
                message="DataLoader loads batches in the main process; set `num_workers=min(8, os.cpu_count() or 1)` "
                        "so workers prepare the next batches while the model runs on the current one"),
        Invalid("from torch.utils.data import DataLoader\nval_loader = DataLoader(ds, batch_size=64)\n",
                message="loads batches in the main process"),
        Invalid("from torch.utils.data import DataLoader\n\n\ndef train(model, opt, ds):\n"
                "    loader = DataLoader(ds, batch_size=64, shuffle=True)\n"
                "    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n",
                message="loads batches in the training process; set `num_workers=min(8, os.cpu_count() or 1)` so "
                        "workers prepare the next batches while the GPU trains"),
        # A collate_fn set after the loader is built that could not be pickled for spawned workers (a
        # lambda, a function defined inside a function): no workers added (before: added).
        Invalid(_SET_LATER_IN_MAIN.format(define="    def keep(batch):\n        return batch\n\n", collate="keep"),
                fixed=NO_FIX, message="its `collate_fn` (set after it is built) is a function defined inside a function"),
        Invalid(_SET_LATER_IN_MAIN.format(define="", collate="lambda b: b"),
                fixed=NO_FIX, message="its `collate_fn` (set after it is built) is a lambda"),
        # A collate_fn set after the loader is built, in the function it is handed to, that puts
        # the batches on the device (before: workers added, which would start CUDA in forked
        # processes). No fix.
        Invalid(_COLLATE_SET_LATER.format(options=""), fixed=NO_FIX,
                message="its dataset or collate_fn puts them on the device"),
        # A process that trains (a process per rank, as before torchrun) wants workers; so does a
        # loader in a function no process runs, and one a thread pool maps (threads may start
        # workers).
        Invalid(_SHARDED_PASS.format(
            imports="from multiprocessing import Process\n", start=_PROCESS_START,
            more="    def fit(self, model, opt):\n        for x in self.run_shard(0):\n"
                 "            x.backward()\n            opt.step()\n"),
            message="DataLoader loads batches in the"),
        Invalid(_SHARDED_PASS.format(imports="from multiprocessing import Process\n",
                                     start=_PROCESS_START.replace("self.run_shard", "self.run"), more="")),
        Invalid(_SHARDED_PASS.format(
            imports="import concurrent.futures as cf\n",
            start="        ex = cf.ProcessPoolExecutor(4)\n        return [ex.submit(self.run_shard, i) for i in range(4)]\n",
            more="def train(model, opt, loader):\n    for x in loader:\n        model(x).sum().backward()\n"
                 "        opt.step()\n")),
        # ... and one the main process calls as well.
        Invalid(_SHARDED_PASS.format(imports="import multiprocessing as mp\n", more="",
                                     start=_POOL_MAP.format(pool="mp.Pool", fn="shard").replace(
                                         "return pool.map", "pool.map") + "        return self.run_shard(0)\n"
                                     + _SHARD_HELPER)),
        Invalid(_SHARDED_PASS.format(imports="from multiprocessing.pool import ThreadPool\n", more="",
                                     start=_POOL_MAP.format(pool="ThreadPool", fn="run_shard"))),
        # A helper that takes from the queue but that `__iter__` never calls is not how it gets items.
        Invalid(_QUEUED.format(param="rollouts: queue.Queue", build="dataset = Rollouts(rollouts)",
                               take="            yield self.items\n    def _take(self):\n"
                                    "        return self.rollouts.get()\n"),
                message="DataLoader loads batches in the"),
        # `.get()` of no queue (a dict's), or a queue the class keeps but does not take its items
        # from (a trace logger's): a dataset like any other.
        Invalid(_QUEUED.format(param="rollouts: dict", take="            yield self.rollouts.get('x')\n",
                               build="dataset = Rollouts(rollouts)"), message="DataLoader loads batches in the"),
        Invalid(_QUEUED.format(param="rollouts", take="            yield self.rollouts.get('x')\n",
                               build="dataset = Rollouts(rollouts)").replace(
            "self.rollouts = rollouts", "self.rollouts = rollouts\n        self.traces = queue.Queue()"),
            message="DataLoader loads batches in the"),
        # One branch's dataset is fed by a queue, the other reads files (also written as a
        # conditional expression) or is not a construction seen here: reported with no fix (a
        # worker's copy of the queue would have nothing filling it).
        Invalid(_QUEUED.format(param="rollouts: queue.Queue", take=_GET, build=(
            "if rollouts is not None:\n        dataset = Rollouts(rollouts)\n    else:\n        dataset = Files(files)")),
            fixed=NO_FIX, message="`Rollouts` takes its items from a queue that another thread or process fills"),
        Invalid(_QUEUED.format(param="rollouts: queue.Queue", take=_GET,
                               build="dataset = Rollouts(rollouts) if rollouts is not None else Files(files)"),
                fixed=NO_FIX, message="`Rollouts` takes its items from a queue"),
        Invalid(_QUEUED.format(param="rollouts: queue.Queue", take=_GET, build=(
            "if rollouts is not None:\n        dataset = Rollouts(rollouts)\n    else:\n        dataset = files[0]")),
            fixed=NO_FIX, message="`Rollouts` takes its items from a queue"),
        # A dataset tokenized by a comprehension from a file: before, any comprehension counted as
        # plain Python values and no loader rule looked at it.
        Invalid(TOKENIZED, message="loads batches in the training process"),
        # A script that trains at its top level, unguarded: a spawned worker would import it and
        # train again. Under `if __name__ == "__main__":`, the fix.
        # `os` is another value where the loader is built: `os.cpu_count()` there would fail.
        Invalid("from torch.utils.data import DataLoader\ndef main(ds, os='linux'):\n    loader = DataLoader(ds)\n"
                "    for b in loader:\n        model(b).backward()\n        opt.step()\n", fixed=NO_FIX),
        # A dataset that keeps an open file on itself (workers would share its position), or whose
        # class is defined in a function (it cannot be pickled for spawned workers): no workers fix.
        Invalid("from torch.utils.data import DataLoader, Dataset\nclass Records(Dataset):\n    def __init__(self, path):\n"
                "        self.f = open(path, 'rb')\n    def __getitem__(self, i):\n        self.f.seek(i * 64)\n"
                "        return self.f.read(64)\ndef main():\n    loader = DataLoader(Records('r.bin'))\n"
                "    for b in loader:\n        model(b).backward()\n        opt.step()\n", fixed=NO_FIX,
                message="`Records` opens `self.f` in `__init__`"),
        # The same for a handle opened by `Path.open` or an archive kept open (each member read
        # seeks the shared file): before, workers were added and a forked worker read another's
        # offsets (zipfile.BadZipFile: Bad CRC-32 on a real run with four workers).
        Invalid("from pathlib import Path\nfrom torch.utils.data import DataLoader, Dataset\nclass Records(Dataset):\n"
                "    def __init__(self, path):\n        self.f = Path(path).open('rb')\n    def __getitem__(self, i):\n"
                "        self.f.seek(i * 64)\n        return self.f.read(64)\ndef main():\n"
                "    loader = DataLoader(Records('r.bin'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX, message="`Records` opens `self.f` in `__init__`"),
        Invalid("import zipfile\nfrom torch.utils.data import DataLoader, Dataset\nclass Shards(Dataset):\n"
                "    def __init__(self, path):\n        self.zf = zipfile.ZipFile(path)\n    def __getitem__(self, i):\n"
                "        return self.zf.read(f'{i}.bin')\ndef main():\n"
                "    loader = DataLoader(Shards('s.zip'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX, message="`Shards` opens `self.zf` in `__init__`"),
        Invalid("from tarfile import TarFile\nfrom torch.utils.data import DataLoader, Dataset\nclass Shards(Dataset):\n"
                "    def __init__(self, path):\n        self.tar = TarFile(path)\n    def __getitem__(self, i):\n"
                "        return self.tar.extractfile(f'{i}.bin').read()\ndef main():\n"
                "    loader = DataLoader(Shards('s.tar'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX, message="`Shards` opens `self.tar` in `__init__`"),
        # An HDF5 file or an lmdb environment: the reason is not a shared file position (the message
        # once said so) but that HDF5 is not fork-safe, and lmdb's environment must not cross a fork.
        Invalid("import h5py\nfrom torch.utils.data import DataLoader, Dataset\nclass Frames(Dataset):\n"
                "    def __init__(self, path):\n        self.h5 = h5py.File(path, 'r')\n    def __getitem__(self, i):\n"
                "        return self.h5['x'][i]\ndef main():\n"
                "    loader = DataLoader(Frames('f.h5'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX,
                message="`Frames` opens `self.h5` in `__init__`, and HDF5 is not fork-safe"),
        # ... also an object read through the file: an item of it, or of a name bound to it (the
        # tester's `self.x = h5py.File(p)["x"]` got the workers fix); not a copy read out (`[:]`).
        Invalid("import h5py\nfrom torch.utils.data import DataLoader, Dataset\nclass Frames(Dataset):\n"
                "    def __init__(self, path):\n        self.x = h5py.File(path, 'r')['x']\n    def __getitem__(self, i):\n"
                "        return self.x[i]\ndef main():\n"
                "    loader = DataLoader(Frames('f.h5'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX, message="`Frames` opens `self.x` in `__init__`"),
        Invalid("import h5py\nfrom torch.utils.data import DataLoader, Dataset\nclass Frames(Dataset):\n"
                "    def __init__(self, path):\n        f = h5py.File(path, 'r')\n        self.x, self.y = f['x'], f['y']\n"
                "    def __getitem__(self, i):\n        return self.x[i]\ndef main():\n"
                "    loader = DataLoader(Frames('f.h5'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX, message="`Frames` opens `self.x` in `__init__`"),
        Invalid("import h5py\nfrom torch.utils.data import DataLoader, Dataset\nclass Frames(Dataset):\n"
                "    def __init__(self, path):\n        f = h5py.File(path, 'r')\n        self.x = f['x'][:]\n"
                "    def __getitem__(self, i):\n        return self.x[i]\ndef main():\n"
                "    loader = DataLoader(Frames('f.h5'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", message="; set `num_workers="),
        Invalid("import lmdb\nfrom torch.utils.data import DataLoader, Dataset\nclass Records(Dataset):\n"
                "    def __init__(self, path):\n        self.env = lmdb.open(path, readonly=True)\n"
                "    def __getitem__(self, i):\n        with self.env.begin() as txn:\n"
                "            return txn.get(str(i).encode())\ndef main():\n"
                "    loader = DataLoader(Records('db'))\n    for b in loader:\n        model(b).backward()\n"
                "        opt.step()\n", fixed=NO_FIX,
                message="`Records` opens `self.env` in `__init__`, and an lmdb environment must not be used after a fork"),
        Invalid("from torch.utils.data import DataLoader, Dataset\ndef main():\n    class Local(Dataset):\n"
                "        def __getitem__(self, i):\n            return i\n    loader = DataLoader(Local())\n"
                "    for b in loader:\n        model(b).backward()\n        opt.step()\n", fixed=NO_FIX,
                message="is defined inside a function"),
        # So is a collate_fn or worker_init_fn that is a lambda (never picklable, even at the top
        # level) or a function defined inside a function, or such a function the dataset is built
        # with (directly or in a transform it is given): the fix once added workers that raised
        # AttributeError under spawn (macOS, Windows).
        Invalid(LOCAL_FUNCTION.format(before="", ds="ds", options=", collate_fn=lambda b: torch.stack(b) * 2"),
                fixed=NO_FIX, message="its `collate_fn` is a lambda, which cannot be pickled for a worker started by spawn"),
        Invalid(LOCAL_FUNCTION.format(before="    def collate(b):\n        return torch.stack(b)\n", ds="ds",
                                       options=", collate_fn=functools.partial(collate)"),
                fixed=NO_FIX, message="its `collate_fn` is a function defined inside a function"),
        # ... also one defined inside a method (simpletransformers' language-modeling `train`,
        # whose nested `collate` was taken for a method of the class, and workers added).
        Invalid("import torch\nfrom torch.utils.data import DataLoader\nclass LM:\n"
                "    def train(self, ds, model, opt):\n        def collate(examples):\n"
                "            return torch.stack(examples)\n"
                "        loader = DataLoader(ds, batch_size=8, shuffle=True, collate_fn=collate)\n"
                "        for x in loader:\n            model(x.cuda()).backward()\n            opt.step()\n",
                fixed=NO_FIX, message="its `collate_fn` is a function defined inside a function"),
        # An instance of a class defined inside the function (a callable Collator): pickled by its
        # class's name, which spawned workers cannot find ("Can't pickle local object"); the fix
        # added workers.
        Invalid(LOCAL_FUNCTION.format(before="    class Collator:\n        def __call__(self, b):\n"
                                              "            return torch.stack(b)\n", ds="ds",
                                       options=", collate_fn=Collator()"),
                fixed=NO_FIX, message="its `collate_fn` is an instance of a class defined inside a function, "
                                      "which cannot be pickled for a worker started by spawn or forkserver (macOS, "
                                      "Windows, Linux from Python 3.14); define the class at the module's top level"),
        Invalid(LOCAL_FUNCTION.format(before="    class Collator:\n        def __call__(self, b):\n"
                                              "            return torch.stack(b)\n    collate = Collator()\n",
                                       ds="ds", options=", collate_fn=collate"),
                fixed=NO_FIX, message="an instance of a class defined inside a function"),
        # ... a class at the module's top level pickles by name: fixed.
        Invalid(LOCAL_FUNCTION.format(before="", ds="ds", options=", collate_fn=Collator()").replace(
                    "def main(", "class Collator:\n    def __call__(self, b):\n        return torch.stack(b)\ndef main("),
                fixed=LOCAL_FUNCTION.format(before="", ds="\n        ds, collate_fn=Collator()",
                                             options=", num_workers=min(8, os.cpu_count() or 1)\n    ").replace(
                    "def main(", "class Collator:\n    def __call__(self, b):\n        return torch.stack(b)\ndef main(")),
        Invalid(LOCAL_FUNCTION.format(before="    seed = lambda i: None\n", ds="ds", options=", worker_init_fn=seed"),
                fixed=NO_FIX, message="its `worker_init_fn` is a lambda"),
        Invalid(LOCAL_FUNCTION.format(before="", ds="Mapped(base, lambda t: t * 2)", options=""),
                fixed=NO_FIX, message="its dataset is built with `lambda t: t * 2`, a lambda"),
        Invalid(LOCAL_FUNCTION.format(before="    tf = T.Compose([T.ToTensor(), T.Lambda(lambda x: x.repeat(3, 1, 1))])\n",
                                       ds="ImageFolder(root, transform=tf)", options=""),
                fixed=NO_FIX, message="a lambda"),
        # A lambda a builtin only calls (`map`) while the data is built is not kept: fixed.
        Invalid(LOCAL_FUNCTION.format(before="", ds="TensorDataset(torch.tensor(list(map(lambda r: r * 2, rows))))",
                                       options=""),
                fixed=LOCAL_FUNCTION.format(before="", ds="\n        TensorDataset(torch.tensor(list(map(lambda r: r * 2, rows))))",
                                             options=",\n        num_workers=min(8, os.cpu_count() or 1),\n    ")),
        Invalid(TOP_LEVEL, fixed=NO_FIX, message='no `if __name__ == "__main__":` guard'),
        # A framework that trains at the top level (Lightning's fit, transformers' train): its
        # loader's workers would import the script again too.
        Invalid("import lightning as L\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n"
                "L.Trainer(max_epochs=3).fit(model, loader)\n", fixed=NO_FIX,
                message='no `if __name__ == "__main__":` guard'),
        Invalid("from transformers import Trainer, TrainingArguments\nargs = TrainingArguments('out')\n"
                "trainer = Trainer(model=model, args=args, train_dataset=ds)\ntrainer.train()\n", fixed=NO_FIX,
                message='no `if __name__ == "__main__":` guard'),
        # ... also when the top level hands the training function to what calls it, or calls the
        # command-line app it is registered with.
        Invalid(TOP_LEVEL.replace("main()\n", "import fire\nfire.Fire(main)\n"), fixed=NO_FIX,
                message='no `if __name__ == "__main__":` guard'),
        Invalid(TOP_LEVEL.replace("main()\n", "import threading\nthreading.Thread(target=main).start()\n"),
                fixed=NO_FIX, message='no `if __name__ == "__main__":` guard'),
        Invalid(TOP_LEVEL.replace("def main():", "import typer\napp = typer.Typer()\n@app.command()\ndef main():")
                .replace("main()\n", "app()\n"), fixed=NO_FIX, message='no `if __name__ == "__main__":` guard'),
        Invalid(GUARDED, fixed="import os\n\n" + GUARDED.replace(
            "DataLoader(ds)", "DataLoader(ds, num_workers=min(8, os.cpu_count() or 1))")),
        # Built through `functools.partial(DataLoader, ...)`: the setting the partial gives (or lacks)
        # is overridden at the call (a keyword there replaces the partial's); it was not seen at all.
        Invalid(PARTIAL.format(options="", call=""),
                fixed=PARTIAL.format(options="", call=", num_workers=min(8, os.cpu_count() or 1)").replace(
                    "import functools\n", "import functools\nimport os\n")),
        Invalid(PARTIAL.format(options=", num_workers=0", call="").replace("functools.partial", "partial").replace(
                    "import functools\n", "from functools import partial\n"),
                fixed="import os\n" + PARTIAL.format(options=", num_workers=0", call=", num_workers=min(8, os.cpu_count() or 1)")
                .replace("functools.partial", "partial").replace("import functools\n", "from functools import partial\n")),
        # Batches made on the device: reported, with no workers added (they cannot start CUDA).
        Invalid(ON_DEVICE.format(options=""), fixed=NO_FIX, message="move those copies into the training loop"),
        # ... through a function of the module, or a transform of the module it is handed: workers
        # would start CUDA in forked processes (the fix was offered).
        Invalid(MOVED_BY_HELPER.format(item="to_dev(x)", loader="loader = DataLoader(Wrapped(X), batch_size=8)"),
                fixed=NO_FIX, message="move those copies into the training loop"),
        Invalid(MOVED_BY_HELPER.format(item="x", loader="loader = DataLoader(Wrapped(X, transform=to_dev), batch_size=8)"),
                fixed=NO_FIX, message="move those copies into the training loop"),
        # ... stored there by the dataset's `__init__`: the data is on the device already, and
        # the advice says to keep no workers or index it there (it said to move the copies).
        Invalid(STORED_ON_DEVICE.format(options=""), fixed=NO_FIX, message="the data is already on the device"),
        # An iterable dataset of this module that does not split its stream by worker: each worker
        # would yield every sample; with get_worker_info (here, or in a function it calls) or a
        # worker_init_fn, workers are added.
        Invalid(STREAM.format(helper="", body=UNSHARDED, options=""), fixed=NO_FIX,
                message="`Stream` is an IterableDataset that does not split its stream between workers"),
        Invalid(STREAM.format(helper="", body=UNSHARDED, options="").replace(
                    "class Stream(IterableDataset)", "class Base(IterableDataset):\n    pass\nclass Stream(Base)"),
                fixed=NO_FIX, message="each worker would replay the whole stream"),
        Invalid(STREAM.format(helper="", body=SHARDED, options=""),
                fixed=STREAM.format(helper="", body=SHARDED, options=WORKERS_SET)),
        # The worker info read only to seed a per-worker RNG, or asked for by a method `__iter__`
        # never calls: every worker still yields every sample (the tester's 32 samples became 64).
        Invalid(STREAM.format(helper="", body=SEEDED, options=""), fixed=NO_FIX,
                message="reads no worker `id` or `num_workers`"),
        Invalid(STREAM.format(helper="", body=UNSHARDED + LEFTOVER, options=""), fixed=NO_FIX,
                message="does not split its stream between workers"),
        # Split in a method `__iter__` calls, or by the call's own `id`: workers are added.
        Invalid(STREAM.format(helper="", body=UNSHARDED.replace("self.paths", "self._mine()") + LEFTOVER.replace(
                    "_unused", "_mine"), options=""),
                fixed=STREAM.format(helper="", body=UNSHARDED.replace("self.paths", "self._mine()") + LEFTOVER.replace(
                    "_unused", "_mine"), options=WORKERS_SET)),
        Invalid(STREAM.format(helper="", body=UNSHARDED.replace("self.paths", "self.paths[get_worker_info().id::2]"),
                               options=""),
                fixed=STREAM.format(helper="", body=UNSHARDED.replace("self.paths", "self.paths[get_worker_info().id::2]"),
                                     options=WORKERS_SET)),
        Invalid(STREAM.format(helper=SHARD_HELPER, body=UNSHARDED.replace("self.paths", "shard(self.paths)"), options=""),
                fixed=STREAM.format(helper=SHARD_HELPER, body=UNSHARDED.replace("self.paths", "shard(self.paths)"),
                                     options=WORKERS_SET)),
        Invalid(STREAM.format(helper="", body=UNSHARDED, options=", worker_init_fn=split_files"),
                fixed=STREAM.format(helper="", body=UNSHARDED, options=", worker_init_fn=split_files, num_workers=4"),
                options={"num-workers": 4}),
        # A replay buffer the loop fills while it draws from the loader (`buf.add(obs)` beside
        # `next(it)`): each worker would keep the empty copy it was forked with, and the fix made
        # the model train on zeros. Reported, no fix; also for a change in a `for` over the loader,
        # and for an object the dataset was built with, changed through its own name.
        Invalid(_REPLAY.format(loader="it = iter(DataLoader(buf, batch_size=16))",
                               body="buf.add(obs)\n        batch = next(it)"),
                fixed=NO_FIX, message="the loop that takes its batches changes its dataset"),
        Invalid(_REPLAY.format(loader="loader = DataLoader(buf, batch_size=16)\n    it = iter(loader)",
                               body="buf.add(obs)\n        batch = next(it)"),
                fixed=NO_FIX, message="changes its dataset (or an object it holds)"),
        Invalid(_REPLAY.format(loader="loader = DataLoader(Window(buf), batch_size=16)",
                               body="for batch in loader:\n            buf.add(obs)"),
                fixed=NO_FIX, message="changes its dataset (or an object it holds)"),
        # Filled before the loader is drawn from, or between passes (workers start again at each
        # pass and copy it then): workers are added.
        Invalid(_REPLAY.format(loader="loader = DataLoader(buf, batch_size=16)",
                               body="buf.add(obs)\n        for batch in loader:\n            step(batch)"),
                fixed=_REPLAY.format(loader="loader = DataLoader(buf, batch_size=16, num_workers=2)",
                                     body="buf.add(obs)\n        for batch in loader:\n            step(batch)"),
                options={"num-workers": 2}),
        # A dataset class that keeps its tensors on the device from `__init__`, on purpose: the
        # message said "move those copies into the training loop"; keeping no workers, or
        # indexing on the GPU, is the advice for data already there.
        Invalid("import torch\nfrom torch.utils.data import DataLoader, Dataset\nclass OnGPU(Dataset):\n"
                "    def __init__(self, n):\n        self.x = torch.randn(n, 8).to('cuda')\n"
                "    def __getitem__(self, i):\n        return self.x[i]\n"
                "def main():\n    for x in DataLoader(OnGPU(64), batch_size=8):\n        step(x)\n",
                fixed=NO_FIX, message="keep `num_workers=0` or index those tensors on the GPU directly"),
        # A dataset built from tensors on the device: workers cannot use them either.
        Invalid(TENSORS_ON_DEVICE.format(data="X = torch.randn(1024, 8).to(device)\nY = torch.randn(1024, 1).to(device)\n",
                                          dataset="TensorDataset(X, Y)", options=""),
                fixed=NO_FIX, message="its dataset holds tensors on the device"),
        Invalid(TENSORS_ON_DEVICE.format(data="", dataset="TensorDataset(xs.cuda(), ys.cuda())", options=", shuffle=True"),
                fixed=NO_FIX, message="keep the dataset on the CPU"),
        Invalid(TENSORS_ON_DEVICE.format(data="", dataset="TensorDataset(*[t.to(device) for t in (X, Y)])", options=""),
                fixed=NO_FIX, message="its dataset holds tensors on the device"),
        Invalid(
            "import os\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n",
            fixed="import os\nfrom torch.utils.data import DataLoader\n"
            "loader = DataLoader(ds, batch_size=8, num_workers=min(8, os.cpu_count() or 1))\n",
        ),
        Invalid(
            "from torch.utils.data import DataLoader as DL\nloader = DL(ds, num_workers=0)\n",
            fixed="import os\n\nfrom torch.utils.data import DataLoader as DL\n"
            "loader = DL(ds, num_workers=min(8, os.cpu_count() or 1))\n",
        ),
        Invalid(
            "import torch.utils.data as tud\nloader = tud.DataLoader(ds)\n",
            fixed="import torch.utils.data as tud\nloader = tud.DataLoader(ds, num_workers=4)\n",
            options={"num-workers": 4},
        ),
        Invalid("from torch.utils import data\nloader = data.DataLoader(ds, shuffle=True)\n",
                fixed="import os\n\nfrom torch.utils import data\n"
                      "loader = data.DataLoader(ds, shuffle=True, num_workers=min(8, os.cpu_count() or 1))\n"),
        # A positional 0 is replaced where it stands: a keyword beside it would raise TypeError.
        Invalid("import os\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, 4, True, None, None, 0)\n",
                fixed="import os\nfrom torch.utils.data import DataLoader\n"
                      "loader = DataLoader(ds, 4, True, None, None, min(8, os.cpu_count() or 1))\n"),
        Invalid("from torch.utils.data.dataloader import DataLoader\nloader = DataLoader(ds)\n",
                fixed="import os\n\nfrom torch.utils.data.dataloader import DataLoader\n"
                      "loader = DataLoader(ds, num_workers=min(8, os.cpu_count() or 1))\n"),
        # A loader kept under a name and used again may be iterated there; `iter()` alone may be drawn
        # from many times.
        Invalid("from torch.utils.data import DataLoader\nloader = DataLoader(ds)\nexample = next(iter(loader))\n"
                "train(loader)\n",
                fixed="import os\n\nfrom torch.utils.data import DataLoader\n"
                      "loader = DataLoader(ds, num_workers=min(8, os.cpu_count() or 1))\nexample = next(iter(loader))\n"
                      "train(loader)\n"),
        Invalid("from torch.utils.data import DataLoader\nbatches = iter(DataLoader(ds))\n",
                fixed="import os\n\nfrom torch.utils.data import DataLoader\n"
                      "batches = iter(DataLoader(ds, num_workers=min(8, os.cpu_count() or 1)))\n"),
        Invalid(
            "from torch.utils.data import DataLoader\nclass MyLoader(DataLoader):\n    pass\nloader = MyLoader(ds)\n",
            fixed="import os\n\nfrom torch.utils.data import DataLoader\nclass MyLoader(DataLoader):\n    pass\n"
            "loader = MyLoader(ds, num_workers=min(8, os.cpu_count() or 1))\n",
        ),
        Invalid("from torchdata.stateful_dataloader import StatefulDataLoader\nloader = StatefulDataLoader(ds)\n",
                fixed="import os\n\nfrom torchdata.stateful_dataloader import StatefulDataLoader\n"
                      "loader = StatefulDataLoader(ds, num_workers=min(8, os.cpu_count() or 1))\n"),
        # The Trainer builds its DataLoader from TrainingArguments: `dataloader_num_workers`, 0 by default.
        Invalid("import os\nfrom transformers import TrainingArguments\nargs = TrainingArguments('out', bf16=True)\n"
                "if __name__ == '__main__':\n    Trainer(model, args).train()\n",
                fixed="import os\nfrom transformers import TrainingArguments\n"
                      "args = TrainingArguments(\n    'out', bf16=True, dataloader_num_workers=min(8, os.cpu_count() or 1)\n)\n"
                      "if __name__ == '__main__':\n    Trainer(model, args).train()\n",
                message="The Trainer's DataLoader loads batches in the training process; set `dataloader_num_workers="),
        Invalid("from transformers import TrainingArguments as TA\nTrainer(model, TA('out'))\n",
                fixed="import os\n\nfrom transformers import TrainingArguments as TA\n"
                      "Trainer(model, TA('out', dataloader_num_workers=min(8, os.cpu_count() or 1)))\n",
                message="The Trainer's"),
        Invalid("from trl import SFTConfig\nSFTTrainer(model, args=SFTConfig(output_dir='out', dataloader_num_workers=0))\n",
                fixed="from trl import SFTConfig\nSFTTrainer(model, args=SFTConfig(output_dir='out', dataloader_num_workers=2))\n",
                options={"num-workers": 2}),
        # The worker count of a command-line option whose default is 0: the default is fixed.
        Invalid(_OPTION.format(flag="'--num-workers'", default="0"),
                fixed=_OPTION.format(flag="'--num-workers'", default="min(8, os.cpu_count() or 1)").replace(
                    "import argparse\n", "import argparse\nimport os\n"),
                message="unless `--num-workers` is given (it defaults to 0)"),
        Invalid(_OPTION.format(flag="'-j', dest='num_workers'", default="0"),
                fixed=_OPTION.format(flag="'-j', dest='num_workers'", default="4"), options={"num-workers": 4}),
        # A subclass that forwards *args/**kwargs keeps DataLoader's signature (yolov5's InfiniteDataLoader).
        Invalid("from torch.utils.data import DataLoader\nclass Loop(DataLoader):\n    def __init__(self, *args, **kwargs):\n"
                "        super().__init__(*args, **kwargs)\nloader = Loop(ds, batch_size=4)\n",
                fixed="import os\n\nfrom torch.utils.data import DataLoader\nclass Loop(DataLoader):\n"
                      "    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n"
                      "loader = Loop(ds, batch_size=4, num_workers=min(8, os.cpu_count() or 1))\n"),
        # A `**options` dict built in view without a worker count: the keyword is added beside it.
        Invalid("import os\nfrom torch.utils.data import DataLoader\ndef main():\n    kw = dict(batch_size=32, shuffle=True)\n"
                "    return DataLoader(ds, **kw)\n",
                fixed="import os\nfrom torch.utils.data import DataLoader\ndef main():\n    kw = dict(batch_size=32, shuffle=True)\n"
                      "    return DataLoader(ds, **kw, num_workers=min(8, os.cpu_count() or 1))\n"),
        # A module's `**options` dict read in a function (before, only a dict built in the same
        # function was followed, and the loader was not reported): the keyword is added beside it
        # when the dict lacks it; an entry it holds is changed at the top level where it is given
        # (a keyword beside it would raise "got multiple values for keyword argument").
        Invalid("import os\nfrom torch.utils.data import DataLoader\nKW = dict(batch_size=32, shuffle=True)\n"
                "def main():\n    return DataLoader(ds, **KW)\n",
                fixed="import os\nfrom torch.utils.data import DataLoader\nKW = dict(batch_size=32, shuffle=True)\n"
                      "def main():\n    return DataLoader(ds, **KW, num_workers=min(8, os.cpu_count() or 1))\n"),
        Invalid("import os\nfrom torch.utils.data import DataLoader\nKW = {'batch_size': 32, 'num_workers': 0}\n"
                "def main():\n    return DataLoader(ds, **KW)\n",
                fixed="import os\nfrom torch.utils.data import DataLoader\n"
                      "KW = {'batch_size': 32, 'num_workers': min(8, os.cpu_count() or 1)}\n"
                      "def main():\n    return DataLoader(ds, **KW)\n"),
        # ... unpacked by a second loader too (changing it would change that one): reported, no fix.
        Invalid("import os\nfrom torch.utils.data import DataLoader\nKW = {'batch_size': 32, 'num_workers': 0}\n"
                "def main():\n    return DataLoader(ds, **KW)\ndef probe():\n    return DataLoader(ds, **KW)\n",
                fixed=NO_FIX),
        # A variable assigned 0 once: the assignment is fixed, for every loader reading it.
        Invalid("import os\nfrom torch.utils.data import DataLoader\nNUM_WORKERS = 0\ndef main():\n"
                "    train = DataLoader(ds, num_workers=NUM_WORKERS)\n    val = DataLoader(vs, num_workers=NUM_WORKERS)\n",
                fixed="import os\nfrom torch.utils.data import DataLoader\nNUM_WORKERS = min(8, os.cpu_count() or 1)\n"
                      "def main():\n    train = DataLoader(ds, num_workers=NUM_WORKERS)\n"
                      "    val = DataLoader(vs, num_workers=NUM_WORKERS)\n",
                message="in the training process (`NUM_WORKERS` is 0); set `NUM_WORKERS = min(8, os.cpu_count() or 1)`"),
        Invalid("from torch.utils.data import DataLoader\ndef main():\n    workers = 0\n"
                "    return DataLoader(ds, num_workers=workers)\n",
                fixed="from torch.utils.data import DataLoader\ndef main():\n    workers = 2\n"
                      "    return DataLoader(ds, num_workers=workers)\n", options={"num-workers": 2}),
        # A configuration class's default: the default is fixed.
        Invalid(_CONFIG.format(default="0", more=""),
                fixed=_CONFIG.format(default="min(8, os.cpu_count() or 1)", more=""),
                message="unless configured otherwise (`Config.num_workers` defaults to 0); default `Config.num_workers`"),
        Invalid(_CONFIG.format(default="field(default=0, metadata={'help': 'workers'})", more=""),
                fixed=_CONFIG.format(default="field(default=4, metadata={'help': 'workers'})", more=""),
                options={"num-workers": 4}),
        # A configuration built by a command-line parser from the class (tyro, pyrallis, HfArgumentParser).
        Invalid("from dataclasses import dataclass\nfrom torch.utils.data import DataLoader\n@dataclass\nclass Config:\n"
                "    num_workers: int = 0\ncfg = tyro.cli(Config)\nloader = DataLoader(ds, num_workers=cfg.num_workers)\n",
                # `import os` joins the standard-library section, before its `from` imports (isort).
                fixed="import os\nfrom dataclasses import dataclass\nfrom torch.utils.data import DataLoader\n@dataclass\n"
                "class Config:\n    num_workers: int = min(8, os.cpu_count() or 1)\ncfg = tyro.cli(Config)\n"
                "loader = DataLoader(ds, num_workers=cfg.num_workers)\n",
                message="`Config.num_workers` defaults to 0"),
        # ... unpacked from HfArgumentParser's tuple, at the position of the class.
        Invalid("from dataclasses import dataclass\nfrom torch.utils.data import DataLoader\n@dataclass\nclass Data:\n"
                "    num_workers: int = 0\ndef main():\n    model_args, data = HfArgumentParser((ModelArgs, Data))"
                ".parse_args_into_dataclasses()\n    loader = DataLoader(ds, num_workers=data.num_workers)\n",
                message="`Data.num_workers` defaults to 0"),
        Invalid("from torch.utils.data import DataLoader\nclass CFG:\n    num_workers = 0\n"
                "loader = DataLoader(ds, num_workers=CFG.num_workers)\n",
                fixed="import os\n\nfrom torch.utils.data import DataLoader\nclass CFG:\n"
                      "    num_workers = min(8, os.cpu_count() or 1)\nloader = DataLoader(ds, num_workers=CFG.num_workers)\n",
                message="`CFG.num_workers` defaults to 0"),
        # A module with no import at module level: `import os` goes below its docstring (it went
        # above, and the docstring was a docstring no more), with two blank lines above the class.
        Invalid('"""Data."""\nclass CFG:\n    num_workers = 0\ndef main(ds):\n'
                "    from torch.utils.data import DataLoader\n    return DataLoader(ds, num_workers=CFG.num_workers)\n",
                fixed='"""Data."""\n\nimport os\n\n\nclass CFG:\n    num_workers = min(8, os.cpu_count() or 1)\n'
                "def main(ds):\n    from torch.utils.data import DataLoader\n"
                "    return DataLoader(ds, num_workers=CFG.num_workers)\n"),
        # ... below a `__future__` import, which must come first (above it: a SyntaxError).
        Invalid("from __future__ import annotations\nclass CFG:\n    num_workers = 0\ndef main(ds):\n"
                "    from torch.utils.data import DataLoader\n    return DataLoader(ds, num_workers=CFG.num_workers)\n",
                fixed="from __future__ import annotations\nimport os\nclass CFG:\n    num_workers = min(8, os.cpu_count() or 1)\n"
                "def main(ds):\n    from torch.utils.data import DataLoader\n"
                "    return DataLoader(ds, num_workers=CFG.num_workers)\n"),
        # ... at the top of a module without either: two blank lines above the class (it had one).
        Invalid("class CFG:\n    num_workers = 0\ndef main(ds):\n"
                "    from torch.utils.data import DataLoader\n    return DataLoader(ds, num_workers=CFG.num_workers)\n",
                fixed="import os\n\n\nclass CFG:\n    num_workers = min(8, os.cpu_count() or 1)\n"
                "def main(ds):\n    from torch.utils.data import DataLoader\n"
                "    return DataLoader(ds, num_workers=CFG.num_workers)\n"),
    ]

    def check_loader(self, call: cst.Call) -> None:
        ctx = self.ctx
        workers = workers_value(ctx, call)
        if workers != 0 or isinstance(workers, bool):
            return
        if ctx.is_test and (ctx.is_test_without_training or _inspected(ctx, call)
                            or not _feeds_training(ctx, call) and _only_checked(ctx, call)):
            # A test's loader that feeds no training and no model feeds its assertions (values,
            # sharding, seeds), even beside a test that trains, as does one never iterated (its
            # sampler checked); workers would only start processes.
            return
        if queue_fed_builds(ctx, call)[1]:
            return  # the producer filling its queue does the loading, beside training already
        if started_in_processes(ctx, call):
            return  # the script spreads its loading over processes of its own already
        if batches_made_on_device(ctx, call):
            # Workers cannot start CUDA: the copies must leave the dataset or collate_fn first.
            if dataset_held_on_device(ctx, call):
                # Data kept on the GPU on purpose: moving it back to feed workers is one choice of
                # two, not the advice (before, "move those copies into the training loop" was).
                why = ("its dataset holds tensors on the device, which workers cannot use (CUDA does not start in "
                       "forked workers); the data is already on the device, so keep `num_workers=0` or index those "
                       "tensors on the GPU directly instead of a DataLoader; or keep the dataset on the CPU, move "
                       "each batch in the training loop")
            else:
                why = ("its dataset or collate_fn puts them on the device, which workers cannot do; move those copies "
                       "into the training loop")
            self.report(call, f"{subject(ctx, call)} loads batches in the {_process(ctx, call)}, and {why}, then set "
                              "`num_workers`")
            return
        replay = workers_advice(ctx, call)
        if replay is not None:
            self.report(call, f"{subject(ctx, call)} loads batches in the {_process(ctx, call)}; {replay}, then set "
                              f"`num_workers`")
            return
        where = _process(ctx, call)
        self.report(
            call,
            setting_advice(ctx, call, "num_workers", workers_to_set(self),
                           f"{subject(ctx, call)} loads batches in the {where}",
                           "so workers prepare the next batches while the "
                           + ("GPU trains" if where == "training process" else "model runs on the current one")),
            add_workers_fix(self, call),
        )


def _process(ctx, call: cst.Call) -> str:
    """Where the batches are loaded, as the message says it: the training process for a loader
    that feeds training, the main process for one that only evaluates or predicts (`val_loader`,
    a loop with no optimizer step, `predict()`'s loader)."""
    return "training process" if _feeds_training(ctx, call) else "main process"


def _only_checked(ctx, call: cst.Call) -> bool:
    """The passes over the loader (loops, loader_batches, and comprehensions) hand its batches to
    no call that may run a model: the pass's target, and the names bound from it there
    (derived_names), are read only by builtins (`len`, `isinstance`), torch's functions
    (`torch.equal`), a tensor's reads (`b[0].tolist()`), a list's adds (`items.append(batch["x"])`),
    comparisons and assertions, or not at all (`for step, _ in enumerate(dl)`): accelerate's
    sharding and seed checks. Not when no pass over it is seen."""
    passes = [(loop.body, target) for loop, target in loader_batches(ctx, call, shared=True)]
    passes += [(ctx.parent(clause), clause.target) for clause in ctx.loops.comprehensions_over(call, shared=True)]
    for body, target in passes:
        held = {n.value for n in ctx.index.walk(target) if isinstance(n, cst.Name)} - {"_"}
        held = derived_names(ctx, body, held, mentions_any)  # `x = batch["x"]`, then `xs = x.tolist()`
        if any(isinstance(node, cst.Call) and _hands_on(ctx, node, held) for node in ctx.index.walk(body)):
            return False
    return bool(passes)


def _inspected(ctx, call: cst.Call) -> bool:
    """The loader, assigned to a name, is never iterated: no pass over it or draw from it, and
    none of the names it is known by leaves sight (Loops.escapes: handed to a call other than a
    loader wrapper, assigned on, returned, alone or in a container), so only its attributes are
    read (accelerate's `dl = prepare_data_loader(dl, ...)`, then `isinstance(dl.batch_sampler,
    ...)`). A return that callers of the file bind (returned_to) is followed there: names_of
    holds the names they bind (`train_dl, eval_dl = get_dataloaders(...)`)."""
    loops = ctx.loops
    holder = ctx.parent(call)
    names = loops.names_of(call)
    if not (names and isinstance(holder, cst.Assign) and holder.value is call):
        return False
    if any(name.startswith("self.") for name, _scope in names):
        return False  # kept on the object: a subclass in another module may go over it
    if loops.passes_over(call) or loops.next_draws(call) or loops.stray_draws(call):
        return False
    followed = bool(loops.returned_to(call))
    return not any(loops.escapes(name, scope, returns=not followed) for name, scope in names)


def _hands_on(ctx, call: cst.Call, held: set[str]) -> bool:
    """call is handed one of the held names (an argument, or the object of its method) and may do
    more with it than read or collect it (_only_checked)."""
    func = call.func
    method_of_held = isinstance(func, cst.Attribute) and mentions_any(ctx, func.value, held)
    if not (method_of_held or any(mentions_any(ctx, a.value, held) for a in call.args)):
        return False
    qualified = ctx.names.qualified(func) or ""
    if qualified.startswith(("builtins.", "torch.")):
        return False
    if isinstance(func, cst.Attribute):
        return not (func.attr.value in LIST_ADDS and not method_of_held
                    or method_of_held and pure_tensor_method(func.attr.value))
    return True


def _feeds_training(ctx, call: cst.Call) -> bool:
    """The loader feeds training: a Trainer's, or one a loop that steps goes over (is_training_loader)."""
    return builds_trainer_loader(ctx, call) or is_training_loader(ctx, call)
