"""TL303 data-parallel: `nn.DataParallel`: single-process multi-GPU training."""

from __future__ import annotations

import libcst as cst

from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Rule, Valid


def _never_run(ctx, wrap: cst.Call) -> bool:
    """The file uses the wrapper but never runs it: it is known by names (Loops.names_of: where it is
    assigned, and where a caller of the file binds what a function returns), none of them is
    called (`model(x)`, `model.forward(x)`) where it holds the wrapper, and none leaves sight
    (Loops.escapes: handed to a call other than a module-local function the names follow it
    into, assigned on, or returned where no caller of the file binds it; also through the module
    methods that hand it back, `return model.to(device)`, and inside a container, `return model,
    opt`). Only the wrapped
    model's parts are then run through it, if anything (fairseq's featurizer calls
    `self.model.feature_extractor(x)`, which DataParallel does not forward)."""
    loops = ctx.loops
    names = loops.names_of(wrap)
    if not names:
        return False
    home = ctx.index.enclosing_function(wrap)
    kept = bool(loops.returned_to(wrap))  # the function's return is bound by a caller of the file
    for name, scope in names:
        if loops.escapes(name, scope, returns=not (kept and scope is home), making=wrap):
            return False
    for call in ctx.index.nodes(cst.Call):
        spelled = ctx.dotted(call.func)
        if spelled and any(spelled in (name, f"{name}.forward", f"{name}.__call__") and loops.in_sight(call, name, scope)
                           for name, scope in names):
            return False
    # The file uses it, only never runs it (`self.model.feature_extractor(x)`): a wrapper it only
    # keeps (`self.model = DataParallel(...)` in a base class) may be run by a subclass elsewhere.
    return any(isinstance(node.value, (cst.Name, cst.Attribute)) and any(
        ctx.dotted(node.value) == name and loops.in_sight(node, name, scope) for name, scope in names)
        for node in ctx.index.nodes(cst.Attribute) if not ctx.index.contains(wrap, node))


# `torch.nn.parallel.data_parallel(module, inputs, ...)`: DataParallel's work as one call.
_FUNCTIONAL_DATA_PARALLEL = frozenset({"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"})


class DataParallelUsed(Rule):
    code = "TL303"
    name = "data-parallel"
    summary = "`nn.DataParallel`: single-process multi-GPU training"
    source = "§4.3"
    fix_applicability = "suggestion"
    triggers = ("DataParallel", "data_parallel")
    docs = """
## What it does
Flags construction of `torch.nn.DataParallel` (any import alias) and calls of its functional
form, `torch.nn.parallel.data_parallel(module, inputs)`, which does the same work on every call.
References such as `isinstance(model, nn.DataParallel)` are not flagged, nor is a wrapper the
file uses but never runs: only the wrapped model's parts are called through it
(`self.model.feature_extractor(x)`, which DataParallel does not forward), no name it is known by
is called, and none is handed on, assigned on or returned beyond the file's sight (itself,
through a method that hands back the module: `return model.to(device)`, `model.cuda()`, or
inside a tuple, list or dict: `return model, optimizer`). A wrapper
the file only keeps (`self.net = nn.DataParallel(net)` in a base class) is flagged: a subclass
elsewhere may run it.

## Why is this bad?
`DataParallel` runs one Python process for all GPUs: every step it scatters the batch from
GPU 0, replicates the model to every GPU, gathers the outputs back on GPU 0 and reduces the
gradients there, all under one GIL. GPU 0 becomes the bottleneck and the other GPUs wait.
`DistributedDataParallel` runs one process per GPU and overlaps the gradient all-reduce with
the backward; PyTorch recommends it even on a single machine.

## Example
```python
model = nn.DataParallel(model).cuda()
```

## Use instead
Launch with `torchrun --nproc-per-node NUM_GPUS train.py`, and in the script:
```python
dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
model = torch.nn.parallel.DistributedDataParallel(model.to(local_rank), device_ids=[local_rank])
loader = DataLoader(ds, batch_size=per_gpu_batch, sampler=DistributedSampler(ds))
```

## Fix safety
A suggestion only, never written: the switch also needs the launcher, the process group, a
`DistributedSampler`, per-rank batch sizes and rank-0-only logging and saving.
"""
    valid = [
        Valid("import torch\nmodel = torch.nn.parallel.DistributedDataParallel(model)\n"),
        Valid("from torch import nn\nif isinstance(model, nn.DataParallel):\n    model = model.module\n"),
        Valid("from torch import nn\nWRAPPERS = (nn.DataParallel, nn.parallel.DistributedDataParallel)\n"),
        Valid("from mylib import DataParallel\nmodel = DataParallel(model)\n"),
        # A wrapper never run: only the wrapped model's parts are called through it (fairseq's
        # featurizer; DataParallel forwards only its own forward), the wrapper built in a method
        # whose result the file keeps.
        Valid("from torch import nn\nclass Featurizer:\n    def __init__(self):\n        self.model = self.load()\n"
              "    def load(self):\n        model = build()\n        if self.parallel:\n            model = nn.DataParallel(model)\n"
              "        return model\n    def run(self, x):\n        return self.model.feature_extractor(x)\n"),
        # The same returned through `.cuda()`, which hands back the module itself.
        Valid("from torch import nn\nclass Featurizer:\n    def __init__(self):\n        self.model = self.load()\n"
              "    def load(self):\n        model = build()\n        if self.parallel:\n            model = nn.DataParallel(model)\n"
              "        return model.cuda()\n    def run(self, x):\n        return self.model.feature_extractor(x)\n"),
        Valid("from torch import nn\nmodel = nn.DataParallel(build())\nmodel = model.cuda().eval()\n"
              "feats = model.module.features(x)\n"),
        # Returned in a tuple that the file's caller unpacks, and never run there either.
        Valid("import torch\nfrom torch import nn\ndef build(cfg):\n    model = nn.DataParallel(Net())\n"
              "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    return model, opt\n"
              "def main(cfg):\n    model, opt = build(cfg)\n    n = model.module.num_layers\n"),
    ]
    invalid = [
        Invalid("import torch\nmodel = torch.nn.DataParallel(model)\nloss = model(x).sum()\n", fixed=NO_FIX,
                message="copies the model to each on every call and gathers the outputs (and in training the "
                        "gradients) on GPU 0; use `torch.nn.parallel.DistributedDataParallel`"),
        Invalid("from torch import nn\nif torch.cuda.device_count() > 1:\n    model = nn.DataParallel(model, device_ids=[0, 1])\n"
                "out = model(x)\n", fixed=NO_FIX),
        Invalid("from torch.nn import DataParallel as DP\nnet = DP(net).cuda()\n", fixed=NO_FIX),
        # A module-level name assigned the class once stands for it, as an import alias does.
        Invalid("import torch.nn as nn\nDP = nn.DataParallel\nnet = DP(net).cuda()\n", fixed=NO_FIX),
        Invalid("from torch.nn.parallel import DataParallel\nmodel = DataParallel(model)\ntrain(model, loader)\n", fixed=NO_FIX),
        # Run through another name, or handed to a function of the file that calls it.
        Invalid("from torch import nn\nclass Runner:\n    def __init__(self, net):\n        self.net = nn.DataParallel(net)\n"
                "    def step(self, x):\n        return self.net(x)\n", fixed=NO_FIX),
        Invalid("from torch import nn\ndef run(m, x):\n    return m(x)\nmodel = nn.DataParallel(model)\nrun(model, x)\n",
                fixed=NO_FIX),
        # Kept and never used here: a subclass in another module may run it.
        Invalid("from torch import nn\nclass Base:\n    def __init__(self, net):\n        self.net = nn.DataParallel(net)\n",
                fixed=NO_FIX),
        # Returned by a function no caller of the file binds: another module may call it.
        Invalid("from torch import nn\ndef build(net):\n    net = nn.DataParallel(net)\n    return net\n", fixed=NO_FIX),
        # The same beside other values, in a tuple or a dict: only its parameters are read here.
        Invalid("import torch\nfrom torch import nn\ndef build(cfg):\n    model = nn.DataParallel(Net())\n"
                "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    return model, opt\n", fixed=NO_FIX),
        Invalid("import torch\nfrom torch import nn\ndef build(cfg):\n    model = nn.DataParallel(Net())\n"
                "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    return {'model': model, 'opt': opt}\n",
                fixed=NO_FIX),
        # The same through a module method that hands back the module itself (`.to()`, `.cuda()`).
        Invalid("import torch.nn as nn\ndef build(device):\n    model = nn.Linear(10, 2)\n    model = nn.DataParallel(model)\n"
                "    return model.to(device)\n", fixed=NO_FIX),
        Invalid("import torch\nfrom torch import nn\ndef build():\n    model = Net()\n    if torch.cuda.device_count() > 1:\n"
                "        model = nn.DataParallel(model)\n    return model.cuda().float()\n"
                "def main():\n    model = build()\n    for x in loader:\n        model(x).sum().backward()\n",
                fixed=NO_FIX),
        Invalid("from torch import nn\nclass Runner:\n    def __init__(self, net):\n        self.net = nn.DataParallel(net)\n"
                "        self.trainer = Trainer(self.net.cuda())\n    def info(self):\n        return self.net.module.name\n",
                fixed=NO_FIX),
        # The functional form replicates the module on every call.
        Invalid("import torch\nout = torch.nn.parallel.data_parallel(model, x, device_ids=[0, 1])\n", fixed=NO_FIX,
                message="`data_parallel` replicates"),
        Invalid("from torch.nn.parallel import data_parallel\nout = data_parallel(model, x)\n", fixed=NO_FIX),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.names.qualified(node.func) in _FUNCTIONAL_DATA_PARALLEL:
            self.report(node, "`data_parallel` replicates the module to every GPU on each call, from one process, "
                              "and gathers the outputs (and in training the gradients) on the first; use "
                              "`torch.nn.parallel.DistributedDataParallel` with one process per GPU, launched with "
                              "`torchrun --nproc-per-node <gpus>`")
            return
        if not ctx.names.is_a(node.func, "torch.nn.DataParallel") or _never_run(ctx, node):
            return
        # Said of every call, training or not: an evaluation pass copies the model and gathers
        # outputs as well, only without gradients.
        self.report(node, "`DataParallel` drives all GPUs from one process, copies the model to each on every "
                          "call and gathers the outputs (and in training the gradients) on GPU 0; use "
                          "`torch.nn.parallel.DistributedDataParallel` with one process per GPU, launched with "
                          "`torchrun --nproc-per-node <gpus>`", self._suggestion(node))

    def _suggestion(self, node: cst.Call):
        ctx = self.ctx
        model = ctx.positional(node, 0)
        torch = ctx.names.module_alias("torch")
        if model is None or torch is None:
            return None
        code = (f"{torch}.nn.parallel.DistributedDataParallel({ctx.code(model.value)}, "
                f"device_ids=[{torch}.cuda.current_device()])")
        return self.fix(Applicability.DISPLAY_ONLY, "Use DistributedDataParallel (launch with torchrun)",
                        (node, cst.parse_expression(code)))
