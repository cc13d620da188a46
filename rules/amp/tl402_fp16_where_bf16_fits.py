"""TL402 fp16-where-bf16-fits: float16 autocast paired with a GradScaler where bfloat16 needs no loss
scaling."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.distributed import one_line
from trainlint.analysis.imports import guarded_import, module_binding, remove_unused_imports
from trainlint.analysis.precision import UNKNOWN
from trainlint.diagnostics import Applicability
from trainlint import layout
from trainlint.rule import NO_FIX, Invalid, Rule, Valid, target_allows

from .targets import BEFORE_AMPERE, target_gpu


AMPERE_OR_NEWER = ("ampere", "ada", "hopper", "blackwell")



_BF16_CHECK = "{torch}.cuda.is_bf16_supported(including_emulation=False)"
# The same question for a target-torch older than 2.4, which has no including_emulation= (and
# whose 2.3 answers True for emulated bfloat16): native bfloat16 is compute capability 8.0+.
# get_device_capability() raises where CUDA is not available (is_bf16_supported says False).
_BF16_CHECK_BEFORE_2_4 = "{torch}.cuda.is_available() and {torch}.cuda.get_device_capability() >= (8, 0)"


def _bf16_check(ctx, torch: str, negated: bool = False) -> str:
    if target_allows(ctx, "2.4"):
        check = _BF16_CHECK.format(torch=torch)
        return f"not {check}" if negated else check
    check = _BF16_CHECK_BEFORE_2_4.format(torch=torch)
    return f"not ({check})" if negated else check


def _how_float16(ctx, use) -> str:
    """How the float16 autocast use gets float16: as written, or as CUDA's default (no dtype, `None`,
    or a name bound only to None: `AMP_DTYPE = None`, which is no `torch.float16`)."""
    expr = ctx.precision.autocast_dtype_expr(use)
    if expr is None:
        return "implicitly (CUDA's default)"
    if ctx.precision.dtypes(expr, none="None") == {"None"}:
        return f"implicitly (`{one_line(ctx.code(expr))}` is None: CUDA's default)"
    return "as `torch.float16`"


# Scaler methods the Ampere fix rewrites: scale(x) -> x, step(opt) -> opt.step(); update/unscale_ go.
_SCALER_DROPPED = ("update", "unscale_")

_CHOICE_LINE = ("amp_dtype = (\n    torch.bfloat16\n    if torch.cuda.is_bf16_supported(including_emulation=False)\n"
                "    else torch.float16\n)\n")


_NANOGPT_CTX = ("from contextlib import nullcontext\nimport torch\ndevice_type = {device_type}\nctx = {ctx}\n"
                "scaler = torch.amp.GradScaler({scaler})\nfor x, y in loader:\n"
                "    with ctx:\n        loss = model(x, y)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n"
                "    scaler.update()\n")
_CUDA_OR_CPU = "'cuda' if 'cuda' in device else 'cpu'"
_CUDA_MPS_OR_CPU = "'cuda' if 'cuda' in device else 'mps' if 'mps' in device else 'cpu'"
# The fix's choice where the branch runs on CUDA only, and (indented four more) where it may not.
_NANOGPT_CHOICE = ("            torch.bfloat16\n            if torch.cuda.is_bf16_supported(including_emulation=False)\n"
                   "            else torch.float16\n")
_NANOGPT_CUDA_CHOICE = ("            (\n" + _NANOGPT_CHOICE.replace("            ", "                ")
                        + "            )\n            if device_type == 'cuda'\n            else torch.float16\n")


def _nanogpt(device_type: str, ctx: str, choice: str | None = None) -> str:
    """A rule case in nanoGPT's layout: `device_type = {device_type}`, the autocast context made
    once (`ctx = {ctx}`, `{autocast}` in it the float16 autocast), a scaler, `with ctx:` in the
    loop; choice: the fixed case, with the dtype the fix writes (laid out over lines)."""
    if choice is None:
        autocast = "torch.amp.autocast(device_type=device_type, dtype=torch.float16)"
        scaler = "'cuda', enabled=device_type == 'cuda'"
    else:
        autocast = ("torch.amp.autocast(\n        device_type=device_type,\n        dtype=(\n" + choice
                    + "        ),\n    )")
        scaler = ("\n    'cuda',\n    enabled=device_type == 'cuda'\n"
                  "    and not torch.cuda.is_bf16_supported(including_emulation=False),\n")
    return _NANOGPT_CTX.format(device_type=device_type, ctx=ctx.format(autocast=autocast), scaler=scaler)


# Two training stages, each with its own scaler: {choose} the first, whose dtype may be bfloat16;
# the second hard-codes float16.
_TWO_STAGES = ("import torch\n{choose}    for x in batches:\n        with torch.autocast('cuda', dtype=amp_dtype):\n"
               "            loss = model(x).mean()\n        scaler.scale(loss).backward()\n        scaler.step(opt)\n"
               "        scaler.update()\ndef finetune(model, opt, batches):\n    scaler = torch.amp.GradScaler('cuda')\n"
               "    for x in batches:\n        with torch.autocast('cuda', dtype=torch.float16):\n"
               "            loss = model(x).mean()\n        scaler.scale(loss).backward()\n        scaler.step(opt)\n"
               "        scaler.update()\n")
# Two stages that both hard-code float16.
_FP16_STAGES = "import torch\n" + _TWO_STAGES[_TWO_STAGES.index("def finetune"):].replace("finetune", "pretrain", 1) \
    + _TWO_STAGES[_TWO_STAGES.index("def finetune"):]
_CHOOSING_STAGE = ("def pretrain(model, opt, batches):\n"
                   "    amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16\n"
                   "    scaler = torch.amp.GradScaler('cuda', enabled=amp_dtype == torch.float16)\n")
_HANDED_STAGE = ("def pretrain(model, opt, batches, amp_dtype, use_amp):\n"
                 "    scaler = torch.amp.GradScaler('cuda', enabled=use_amp and amp_dtype == torch.float16)\n")

# The choice made at module level, read by the first stage alone: directly, or through another name.
_MODULE_CHOICE = ("amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16\n"
                  "def pretrain(model, opt, batches):\n"
                  "    scaler = torch.amp.GradScaler('cuda', enabled=amp_dtype == torch.float16)\n")
_THROUGH_NAMES = ("USE_BF16 = torch.cuda.is_bf16_supported()\n"
                  "def pick_dtype():\n    return torch.bfloat16 if USE_BF16 else torch.float16\n"
                  "def pretrain(model, opt, batches):\n    amp_dtype = pick_dtype()\n"
                  "    scaler = torch.amp.GradScaler('cuda', enabled=amp_dtype == torch.float16)\n")
# Two trainer classes, each with its scaler made in `__init__` and its autocast in `train_step`:
# {choose} the first's `__init__`, whose dtype may be bfloat16; the second hard-codes float16.
_TWO_TRAINERS = ("import torch\nclass Pretrainer:\n    def __init__(self, model, opt):\n"
                 "        self.model, self.opt = model, opt\n{choose}"
                 "    def train_step(self, x):\n        with torch.autocast('cuda', dtype=self.amp_dtype):\n"
                 "            loss = self.model(x).mean()\n        self.scaler.scale(loss).backward()\n"
                 "        self.scaler.step(self.opt)\n        self.scaler.update()\n"
                 "class Finetuner:\n    def __init__(self, model, opt):\n        self.model, self.opt = model, opt\n"
                 "        self.scaler = torch.amp.GradScaler('cuda')\n"
                 "    def train_step(self, x):\n        with torch.autocast('cuda', dtype=torch.float16):\n"
                 "            loss = self.model(x).mean()\n        self.scaler.scale(loss).backward()\n"
                 "        self.scaler.step(self.opt)\n        self.scaler.update()\n")
_RESUMED = "class Resumed(Finetuner):\n    def state(self):\n        return self.scaler.state_dict()\n"
_DISABLED = "        self.scaler = torch.amp.GradScaler('cuda', enabled=False)\n"
_SAVING = "class Saving:\n    def state(self):\n        return self.scaler.state_dict()\n"
_CHOOSING_INIT = ("        self.amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16\n"
                  "        self.scaler = torch.amp.GradScaler('cuda', enabled=self.amp_dtype == torch.float16)\n")


def _float16_stage_fixed(other_stage: str) -> str:
    """_TWO_STAGES beside other_stage, with the fix on its float16 stage: a dtype chosen at run time
    and the stage's scaler enabled only for float16."""
    return _TWO_STAGES.format(choose=other_stage).replace(
        "    scaler = torch.amp.GradScaler('cuda')\n",
        "    autocast_dtype = (\n        torch.bfloat16\n"
        "        if torch.cuda.is_bf16_supported(including_emulation=False)\n        else torch.float16\n    )\n"
        "    scaler = torch.amp.GradScaler('cuda', enabled=autocast_dtype == torch.float16)\n").replace(
        "dtype=torch.float16):", "dtype=autocast_dtype):")


def _finetuner_on_ampere(text: str, scaler: str) -> str:
    """text holding _TWO_TRAINERS, with the Ampere fix on its Finetuner alone: bfloat16, its steps
    without the scaler, and its scaler's line replaced by scaler ("" drops it)."""
    head, tail = text.split("class Finetuner", 1)
    return head + "class Finetuner" + tail.replace("        self.scaler = torch.amp.GradScaler('cuda')\n", scaler).replace(
        "dtype=torch.float16):", "dtype=torch.bfloat16):").replace(
        "        self.scaler.scale(loss).backward()\n        self.scaler.step(self.opt)\n        self.scaler.update()\n",
        "        loss.backward()\n        self.opt.step()\n")


class Fp16WhereBf16Fits(Rule):
    code = "TL402"
    name = "fp16-where-bf16-fits"
    summary = "float16 autocast paired with a GradScaler where bfloat16 needs no loss scaling"
    source = "§4.1"
    fix_applicability = "unsafe"
    # A GradScaler, or a framework's float16 setting as written literally (what the rule needs).
    triggers = ("GradScaler", "fp16=True", "16-mixed", "precision=16", "precision='16'", 'precision="16"',
                'mixed_precision="fp16"', "mixed_precision='fp16'")
    docs = """
## What it does
Flags a float16 autocast region (an explicit `dtype=torch.float16`, or no dtype or `dtype=None` on
CUDA, whose default is float16; also opened through a name bound to autocast or to
`functools.partial(torch.amp.autocast, "cuda")`, where the fix passes `dtype=` at the call, or
used as a decorator, `@torch.autocast("cuda")` above a module's `forward` or a function the
training step calls) in a file that also trains with a `GradScaler` (or FSDP's `ShardedGradScaler`);
and the framework settings
that do the same inside the framework: `fp16=True` in transformers' `TrainingArguments` (and
trl's or sentence-transformers' subclasses), Lightning's `precision="16-mixed"` (or `16`) for a
`Trainer` or `Fabric`, accelerate's `Accelerator(mixed_precision="fp16")`. A file that already
chooses bfloat16 when the GPU supports it (it asks `torch.cuda.is_bf16_supported()`, the autocast
of its training step can be bfloat16, or its scaler is enabled by dtype; a bfloat16 autocast in
evaluation chooses nothing for training) is not flagged; where each scaler is made in a function
holding its own training autocasts (a `pretrain()` stage and a `finetune()` stage), or in a class
whose methods hold them (a trainer class: the scaler made in `__init__`, the autocast in
`train_step`), a choice is for the stages it is made in or that read it, directly or through the
module's names (`AMP_DTYPE = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16`
read in `pretrain()` alone, or through a `pick_dtype()` it calls), and a stage hard-coding float16
beside it is flagged (its fix leaves the other stage's scaler as it is); a choice read by other code
too (the module's own statements, a `main()` that may hand it in) is for every stage. Nor is a
setting whose value is not written literally (`fp16=args.fp16`: the user's choice) or that has
`bf16=` beside it, nor one that trains on the CPU (`accelerator="cpu"`, where Lightning runs
bfloat16 itself), nor a setting in a test file (it tests the float16 path). With `target-gpu`
older than Ampere (pascal, volta, turing) the rule is off: float16 with a scaler is the right
choice there.

A `with autocast(...)` in a module's `forward` pairs with the loop's scaler as the decorator
does; so does an autocast object made once and entered in the step (`self.autocast_ctx =
torch.autocast("cuda", dtype=torch.float16)` in `__init__`, then `with self.autocast_ctx:`; nanoGPT's
`ctx = nullcontext() if ... else torch.amp.autocast(...)`, then `with ctx:`), whose fix sets the
dtype where it is made. The choice is made once, in a variable just before the first scaler
(at module level, before any statement above it that calls a function of the file reading it,
`warm = step(x0)`, but never above the statement that imports torch), when every autocast and scaler the fix touches runs after it and sees it (later in the same
function; for a scaler made in `__init__`, a `self.` attribute the class's other methods read); else
(a scaler made in another method or function, `reset_scaler()`, `make_scaler()`) it is written
where each is used. When the autocasts already take their float16 from one variable of their
own (`AMP_DTYPE = torch.float16`, then `dtype=AMP_DTYPE`), bound once, above the first scaler in
the block the choice goes into, and read nowhere else, that assignment becomes the choice, and the
scaler's `enabled=` reads the variable (with an Ampere target-gpu, wherever it is bound, it becomes
`torch.bfloat16`); a module constant read in the function that makes the
scaler is left as it is (the choice there would ask the GPU at import, in every process importing
the file). An autocast whose device is chosen at run time (`device_type=dev.type`) gets the GPU's dtype
choice on CUDA only and keeps its own dtype elsewhere; in a branch that runs on CUDA only (`if
device_type == "cuda"`, or the `else` of `device_type == "cpu"` where `device_type` can only be
"cuda" or "cpu", as in nanoGPT) it gets the choice alone.

## Why is this bad?
On Ampere and newer GPUs bfloat16 runs at the same tensor-core speed as float16 but has float32's
exponent range, so gradients do not underflow and no loss scaling is needed: no `GradScaler`, no
skipped steps after overflows, no scale warm-up. float16 with a scaler is only worth keeping on
GPUs without bfloat16 (before Ampere).

## Example
```python
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
```

## Use instead
Choose at run time, and keep the scaler only for float16:
```python
amp_dtype = (
    torch.bfloat16
    if torch.cuda.is_bf16_supported(including_emulation=False)
    else torch.float16
)
scaler = torch.amp.GradScaler("cuda", enabled=amp_dtype == torch.float16)
for x, y in loader:
    with torch.autocast("cuda", dtype=amp_dtype):
        loss = model(x, y)
    ...
```
A framework's setting is chosen the same way: `TrainingArguments(..., fp16=not bf16_ok,
bf16=bf16_ok)`, `L.Trainer(precision="bf16-mixed" if bf16_ok else "16-mixed")`,
`Accelerator(mixed_precision="bf16" if bf16_ok else "fp16")`, with `bf16_ok` the check above
(the framework drops its scaler in bfloat16).
With `target-gpu = "ampere"` (or ada, hopper, blackwell) in the configuration, plain bfloat16:
```python
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x, y)
    loss.backward()
    optimizer.step()
```

## Fix safety
Unsafe: bfloat16 has fewer mantissa bits than float16, so numerics change (the loss curve should
match closely; check it). `including_emulation=False` matters: plain `is_bf16_supported()` is
also true on older GPUs that only emulate bfloat16, slowly (with `target-torch` older than 2.4,
which lacks the argument, the check is `torch.cuda.is_available() and
torch.cuda.get_device_capability() >= (8, 0)`). The target-gpu fix removes the
scaler's calls (`scaler.scale(loss).backward()` becomes `loss.backward()`, `scaler.step(opt)`
becomes `opt.step()`, `scaler.update()` and `scaler.unscale_(opt)` go) and the scaler itself
when nothing else uses it; a scaler still referenced elsewhere (checkpoints) is kept, disabled.
An autocast entered through a name bound to it or else to a null context (`ctx = torch.autocast
if use_amp else contextlib.nullcontext`) is reported without a fix: a `dtype=` given where it is
called would raise TypeError on the null context's path.
Nor is a file fixed whose float16 autocast is a decorator (`@torch.autocast("cuda")` above
`def forward`), except for an Ampere target-gpu (plain `dtype=torch.bfloat16` on it): its
arguments are evaluated where the function is defined, at import, before a run-time check can
choose the dtype, and fixing the other autocasts alone would turn the scaler off on a bfloat16
GPU while the decorated function still runs in float16. Likewise no fix when another autocast
of the training step has a dtype the fix cannot read (`dtype=cfg.amp_dtype`, maybe float16): it
would stay as it is while every scaler is turned off on a bfloat16 GPU.
"""
    _LOOP = ("import torch\n{pre}scaler = torch.amp.GradScaler({sargs})\nfor x, y in loader:\n"
             "    with torch.autocast({aargs}):\n        loss = model(x, y)\n"
             "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n")
    valid = [
        Valid(_LOOP.format(pre="", sargs="'cuda'", aargs="'cuda', dtype=torch.bfloat16")),
        Valid(_LOOP.format(pre="amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16\n",
                           sargs="'cuda', enabled=amp_dtype == torch.float16", aargs="'cuda', dtype=amp_dtype")),
        Valid(_LOOP.format(pre="", sargs="'cuda', enabled=False", aargs="'cuda', dtype=torch.float16")),
        Valid("import torch\nwith torch.autocast('cuda', dtype=torch.float16):\n    y = model(x)\n"),
        Valid(_LOOP.format(pre="", sargs="'cuda'", aargs="'cuda', dtype=args.dtype")),
        Valid(_LOOP.format(pre="", sargs="'cuda'", aargs="'cpu'")),
        Valid(_LOOP.format(pre="DT = {'fp16': torch.float16, 'bf16': torch.bfloat16}[args.precision]\n",
                           sargs="'cuda'", aargs="'cuda', dtype=DT")),
        # A framework's precision setting the script chooses, or that is not float16 with a scaler.
        Valid("from transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=cli.fp16)\n"),
        Valid("from transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=True, bf16=cli.bf16)\n"),
        Valid("import lightning as L\ntrainer = L.Trainer(precision='bf16-mixed')\nfabric = L.Fabric(precision='16-true')\n"),
        Valid("from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='no')\n"),
        Valid("import lightning as L\ntrainer = L.Trainer(accelerator='cpu', precision='16-mixed')\n"),
        Valid("from mylib import TrainingArguments\nargs = TrainingArguments(fp16=True)\n"),
        # A GPU before Ampere, as the configuration says: float16 with a scaler is right there.
        Valid(_LOOP.format(pre="", sargs="'cuda'", aargs="'cuda', dtype=torch.float16"), settings={"target_gpu": "turing"}),
        Valid("from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='fp16')\n",
              settings={"target_gpu": "volta"}),
        # An autocast object made once but entered only in evaluation, not in the training step.
        Valid("import torch\nscaler = torch.amp.GradScaler('cuda')\nctx = torch.autocast('cuda', dtype=torch.float16)\nfor x, y in loader:\n    loss = model(x, y)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\ndef evaluate(x):\n    with ctx:\n        return model(x)\n"),
        # Autocast through a partial of it that already runs in bfloat16.
        Valid(("import functools\n" + _LOOP.replace("torch.autocast({aargs})", "autocast_ctx()"))
              .format(pre="autocast_ctx = functools.partial(torch.amp.autocast, 'cuda', dtype=torch.bfloat16)\n",
                      sargs="'cuda'")),
        # The training step itself may run in bfloat16 (one branch of it): the script chooses.
        Valid("import torch\nscaler = torch.amp.GradScaler('cuda')\nfor x, y in loader:\n    if args.bf16:\n"
              "        with torch.autocast('cuda', dtype=torch.bfloat16):\n            loss = model(x, y)\n"
              "    else:\n        with torch.autocast('cuda', dtype=torch.float16):\n            loss = model(x, y)\n"
              "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n"),
        # Two stages, and a choice made outside them, handed in: it may be for either (here the second
        # runs float16 only where bfloat16 is not supported, its model cast to bfloat16 otherwise).
        Valid(_TWO_STAGES.format(choose=_HANDED_STAGE).replace(
            "def finetune(model, opt, batches):\n    scaler = torch.amp.GradScaler('cuda')\n",
            "def finetune(model, opt, batches, bf16):\n    scaler = torch.amp.GradScaler('cuda', enabled=not bf16)\n").replace(
            "dtype=torch.float16)", "dtype=torch.float16, enabled=not bf16)")
            + "def main(model, opt, batches):\n    bf16 = torch.cuda.is_bf16_supported()\n"
              "    pretrain(model, opt, batches, torch.bfloat16 if bf16 else torch.float16, True)\n"
              "    finetune(model.bfloat16() if bf16 else model, opt, batches, bf16)\n"),
        # A choice made at module level and read by a stage, but also by the module's own code, which
        # hands it to the other stage (its scaler enabled by it): it may be for either.
        Valid(_TWO_STAGES.format(choose=_MODULE_CHOICE).replace(
            "def finetune(model, opt, batches):\n    scaler = torch.amp.GradScaler('cuda')\n",
            "def finetune(model, opt, batches, bf16):\n    scaler = torch.amp.GradScaler('cuda', enabled=not bf16)\n")
            + "if __name__ == '__main__':\n    pretrain(model, opt, batches)\n"
              "    finetune(model, opt, batches, amp_dtype == torch.bfloat16)\n"),
        # ... or by a function the file does not call (an entry point: it may hand it in).
        Valid(_TWO_STAGES.format(choose=_MODULE_CHOICE).replace(
            "def finetune(model, opt, batches):\n    scaler = torch.amp.GradScaler('cuda')\n",
            "def finetune(model, opt, batches, bf16):\n    scaler = torch.amp.GradScaler('cuda', enabled=not bf16)\n")
            + "def main():\n    pretrain(model, opt, batches)\n"
              "    finetune(model, opt, batches, amp_dtype == torch.bfloat16)\n"),
        # A trainer class reading a module's choice: the class chooses.
        Valid("import torch\nAMP_DTYPE = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16\n"
              + _TWO_TRAINERS[_TWO_TRAINERS.index("class Finetuner"):].replace("torch.float16", "AMP_DTYPE").replace(
                  "GradScaler('cuda')", "GradScaler('cuda', enabled=AMP_DTYPE == torch.float16)")),
        # A dtype that is bfloat16 or None (the device's default): chosen at run time.
        Valid(_LOOP.format(pre="amp_dtype = torch.bfloat16 if args.bf16 else None\n", sargs="'cuda'",
                           aargs="'cuda', dtype=amp_dtype")),
    ]
    invalid = [
        # An autocast object made once and entered in the step (`with self.autocast_ctx:`, `with ctx:`,
        # nanoGPT's `ctx = nullcontext() if ... else torch.amp.autocast(...)`): before, only a
        # `with torch.autocast(...):` written in the step was seen. The dtype is set where it is made.
        Invalid('import torch\nclass Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(8, 1).cuda()\n        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)\n        self.scaler = torch.amp.GradScaler("cuda")\n        self.autocast_ctx = torch.autocast("cuda", dtype=torch.float16)\n    def fit(self):\n        for step in range(10):\n            x = torch.randn(8, 8, device="cuda")\n            with self.autocast_ctx:\n                loss = self.model(x).pow(2).mean()\n            self.opt.zero_grad()\n            self.scaler.scale(loss).backward()\n            self.scaler.step(self.opt)\n            self.scaler.update()\n',
                fixed='import torch\nclass Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(8, 1).cuda()\n        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)\n        amp_dtype = (\n            torch.bfloat16\n            if torch.cuda.is_bf16_supported(including_emulation=False)\n            else torch.float16\n        )\n        self.scaler = torch.amp.GradScaler("cuda", enabled=amp_dtype == torch.float16)\n        self.autocast_ctx = torch.autocast("cuda", dtype=amp_dtype)\n    def fit(self):\n        for step in range(10):\n            x = torch.randn(8, 8, device="cuda")\n            with self.autocast_ctx:\n                loss = self.model(x).pow(2).mean()\n            self.opt.zero_grad()\n            self.scaler.scale(loss).backward()\n            self.scaler.step(self.opt)\n            self.scaler.update()\n'),
        Invalid("import torch\nscaler = torch.amp.GradScaler('cuda')\nctx = torch.autocast('cuda', dtype=torch.float16)\nfor x, y in loader:\n    with ctx:\n        loss = model(x, y)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n",
                fixed="import torch\namp_dtype = (\n    torch.bfloat16\n    if torch.cuda.is_bf16_supported(including_emulation=False)\n    else torch.float16\n)\nscaler = torch.amp.GradScaler('cuda', enabled=amp_dtype == torch.float16)\nctx = torch.autocast('cuda', dtype=amp_dtype)\nfor x, y in loader:\n    with ctx:\n        loss = model(x, y)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n"),
        Invalid("from contextlib import nullcontext\nimport torch\nctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=torch.float16)\nscaler = torch.amp.GradScaler('cuda')\nfor x, y in loader:\n    with ctx:\n        loss = model(x, y)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n",
                fixed="from contextlib import nullcontext\nimport torch\nctx = (\n    nullcontext()\n    if device_type == 'cpu'\n    else torch.amp.autocast(\n        device_type=device_type,\n        dtype=(\n            (\n                torch.bfloat16\n                if torch.cuda.is_bf16_supported(including_emulation=False)\n                else torch.float16\n            )\n            if device_type == 'cuda'\n            else torch.float16\n        ),\n    )\n)\nscaler = torch.amp.GradScaler(\n    'cuda', enabled=not torch.cuda.is_bf16_supported(including_emulation=False)\n)\nfor x, y in loader:\n    with ctx:\n        loss = model(x, y)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n"),
        # In the `else` of `device_type == 'cpu'` where device_type is "cuda" or "cpu" (nanoGPT): the
        # branch runs on CUDA only, and the fix wrote a redundant `... if device_type == 'cuda' else
        # torch.float16` around the choice.
        Invalid(_nanogpt(_CUDA_OR_CPU, "nullcontext() if device_type == 'cpu' else {autocast}"),
                fixed=_nanogpt(_CUDA_OR_CPU, "(\n    nullcontext()\n    if device_type == 'cpu'\n    else {autocast}\n)",
                               _NANOGPT_CHOICE)),
        # So in the branch of `device_type == 'cuda'`, whatever else device_type may be.
        Invalid(_nanogpt("args.device", "{autocast} if device_type == 'cuda' else nullcontext()"),
                fixed=_nanogpt("args.device", "(\n    {autocast}\n    if device_type == 'cuda'\n    else nullcontext()\n)",
                               _NANOGPT_CHOICE)),
        # The `else` of `== 'cpu'` where device_type may be "mps" too: the choice stays CUDA's only.
        Invalid(_nanogpt(_CUDA_MPS_OR_CPU, "nullcontext() if device_type == 'cpu' else {autocast}"),
                fixed=_nanogpt(_CUDA_MPS_OR_CPU, "(\n    nullcontext()\n    if device_type == 'cpu'\n    else {autocast}\n)",
                               _NANOGPT_CUDA_CHOICE)),
        # A module-level call above the scaler runs a function whose autocast reads `amp_dtype`: the
        # definition goes above that call (it went right above the scaler: NameError at the warm-up).
        Invalid("import torch\ndef step(x):\n    with torch.autocast('cuda'):\n        return model(x)\n"
                "warm = step(x0)\nscaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    loss = step(x)\n"
                "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n",
                fixed="import torch\ndef step(x):\n    with torch.autocast('cuda', dtype=amp_dtype):\n        return model(x)\n"
                + _CHOICE_LINE + "warm = step(x0)\nscaler = torch.amp.GradScaler('cuda', enabled=amp_dtype == torch.float16)\n"
                "for x in loader:\n    loss = step(x)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n"
                "    scaler.update()\n"),
        # ... but not above the `try:` that imports torch (the call is in it, below `import sys`):
        # the definition reads torch, NameError at import; the choice is written inline instead.
        Invalid("import sys\ndef step(x):\n    with torch.autocast('cuda'):\n        return model(x)\n"
                "try:\n    import torch\n    warm = step(x0)\nexcept ImportError:\n    sys.exit('needs PyTorch')\n"
                "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    loss = step(x)\n"
                "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n",
                fixed="import sys\ndef step(x):\n    with torch.autocast(\n        'cuda',\n        dtype=(\n"
                "            torch.bfloat16\n            if torch.cuda.is_bf16_supported(including_emulation=False)\n"
                "            else torch.float16\n        ),\n    ):\n        return model(x)\n"
                "try:\n    import torch\n    warm = step(x0)\nexcept ImportError:\n    sys.exit('needs PyTorch')\n"
                "scaler = torch.amp.GradScaler(\n    'cuda', enabled=not torch.cuda.is_bf16_supported(including_emulation=False)\n)\n"
                "for x in loader:\n    loss = step(x)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n"
                "    scaler.update()\n"),
        # torch's modules imported only in a `try:` whose handler exits: the `import torch` the fix
        # needs goes in the try, above them (at the top of the file a missing torch raised
        # ImportError before the script's message), and a call in the try sees it.
        Invalid("import sys\ntry:\n    from torch.amp import GradScaler, autocast\nexcept ImportError:\n"
                "    sys.exit('needs PyTorch')\nscaler = GradScaler('cuda')\nfor x in loader:\n"
                "    with autocast('cuda'):\n        loss = model(x)\n    scaler.scale(loss).backward()\n"
                "    scaler.step(opt)\n    scaler.update()\n",
                fixed="import sys\ntry:\n    import torch\n    from torch.amp import GradScaler, autocast\n"
                "except ImportError:\n    sys.exit('needs PyTorch')\n" + _CHOICE_LINE
                + "scaler = GradScaler('cuda', enabled=amp_dtype == torch.float16)\nfor x in loader:\n"
                "    with autocast('cuda', dtype=amp_dtype):\n        loss = model(x)\n    scaler.scale(loss).backward()\n"
                "    scaler.step(opt)\n    scaler.update()\n"),
        Invalid("import sys\ndef step(x):\n    with autocast('cuda'):\n        return model(x)\n"
                "try:\n    from torch.amp import GradScaler, autocast\n    warm = step(x0)\nexcept ImportError:\n"
                "    sys.exit('needs PyTorch')\nscaler = GradScaler('cuda')\nfor x in loader:\n    loss = step(x)\n"
                "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n",
                fixed="import sys\ndef step(x):\n    with autocast(\n        'cuda',\n        dtype=(\n"
                "            torch.bfloat16\n            if torch.cuda.is_bf16_supported(including_emulation=False)\n"
                "            else torch.float16\n        ),\n    ):\n        return model(x)\n"
                "try:\n    import torch\n    from torch.amp import GradScaler, autocast\n    warm = step(x0)\n"
                "except ImportError:\n    sys.exit('needs PyTorch')\n"
                "scaler = GradScaler(\n    'cuda', enabled=not torch.cuda.is_bf16_supported(including_emulation=False)\n)\n"
                "for x in loader:\n    loss = step(x)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n"
                "    scaler.update()\n"),
        # ... and above a method's caller (`Trainer().warmup()` runs `fit`, whose autocast reads it).
        Invalid("import torch\nclass Trainer:\n    def fit(self, x):\n        with torch.autocast('cuda'):\n"
                "            return model(x)\n    def warmup(self):\n        self.fit(x0)\nTrainer().warmup()\n"
                "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    loss = Trainer().fit(x)\n"
                "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n",
                fixed="import torch\nclass Trainer:\n    def fit(self, x):\n        with torch.autocast('cuda', dtype=amp_dtype):\n"
                "            return model(x)\n    def warmup(self):\n        self.fit(x0)\n" + _CHOICE_LINE
                + "Trainer().warmup()\nscaler = torch.amp.GradScaler('cuda', enabled=amp_dtype == torch.float16)\n"
                "for x in loader:\n    loss = Trainer().fit(x)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n"
                "    scaler.update()\n"),
        # A name that is autocast or else a null context: reported, no fix (`ctx(dtype=...)` would fail
        # on the other path).
        Invalid(("import contextlib\nimport functools\n" + _LOOP.replace("torch.autocast({aargs})", "ctx()"))
                .format(pre="ctx = functools.partial(torch.amp.autocast, 'cuda') if use_amp else contextlib.nullcontext\n",
                        sargs="'cuda'"), fixed=NO_FIX),
        Invalid(("import contextlib\n" + _LOOP.replace("torch.autocast({aargs})", "ctx('cuda')"))
                .format(pre="ctx = torch.autocast if use_amp else contextlib.nullcontext\n", sargs="'cuda'"),
                fixed=NO_FIX, message="autocast runs in float16 implicitly"),
        # ... and the message says why (it said nothing of the missing fix).
        Invalid(("import contextlib\n" + _LOOP.replace("torch.autocast({aargs})", "ctx('cuda')"))
                .format(pre="ctx = torch.autocast if use_amp else contextlib.nullcontext\n", sargs="'cuda'"),
                fixed=NO_FIX, message="; not fixed: `ctx` is autocast or a null context, which takes no `dtype=`"),
        Invalid(
            _LOOP.format(pre="", sargs="'cuda'", aargs="'cuda', dtype=torch.float16"),
            fixed=_LOOP.format(
                pre=_CHOICE_LINE,
                sargs="'cuda', enabled=amp_dtype == torch.float16", aargs="'cuda', dtype=amp_dtype"),
        ),
        # FSDP's ShardedGradScaler is a GradScaler (same arguments up to enabled=).
        Invalid(
            "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n"
            + _LOOP.format(pre="", sargs="", aargs="'cuda', dtype=torch.float16").replace(
                "torch.amp.GradScaler", "ShardedGradScaler"),
            fixed="from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n"
            + _LOOP.format(pre=_CHOICE_LINE, sargs="enabled=amp_dtype == torch.float16",
                           aargs="'cuda', dtype=amp_dtype").replace("torch.amp.GradScaler", "ShardedGradScaler"),
        ),
        # A target-torch before 2.4 has no including_emulation=: compute capability says the same.
        Invalid(
            _LOOP.format(pre="", sargs="'cuda'", aargs="'cuda', dtype=torch.float16"),
            fixed=_LOOP.format(
                pre=_CHOICE_LINE.replace("torch.cuda.is_bf16_supported(including_emulation=False)",
                                         "torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)"),
                sargs="'cuda', enabled=amp_dtype == torch.float16", aargs="'cuda', dtype=amp_dtype"),
            message="get_device_capability() >= (8, 0)", settings={"target_torch": "2.3"},
        ),
        Invalid(
            _LOOP.format(pre="", sargs="enabled=args.amp", aargs="'cuda', enabled=args.amp"),
            fixed=_LOOP.format(
                pre=_CHOICE_LINE,
                sargs="enabled=args.amp and amp_dtype == torch.float16",
                aargs="'cuda', enabled=args.amp, dtype=amp_dtype"),
            message="bfloat16",
        ),
        # A device chosen at run time: the GPU's dtype choice applies on CUDA only (on the CPU,
        # bfloat16 had become float16).
        Invalid("import torch\ndev = torch.device('cuda' if ok else 'cpu')\nscaler = torch.amp.GradScaler('cuda')\n"
                "for x in loader:\n    with torch.autocast(device_type=dev.type):\n        loss = model(x)\n"
                "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n",
                fixed="import torch\ndev = torch.device('cuda' if ok else 'cpu')\namp_dtype = (\n    torch.bfloat16\n"
                      "    if torch.cuda.is_bf16_supported(including_emulation=False)\n    else torch.float16\n)\n"
                      "scaler = torch.amp.GradScaler('cuda', enabled=amp_dtype == torch.float16)\nfor x in loader:\n"
                      "    with torch.autocast(\n        device_type=dev.type, dtype=amp_dtype if dev.type == 'cuda' else None\n"
                      "    ):\n        loss = model(x)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n"
                      "    scaler.update()\n"),
        # A `with` autocast in a module's forward runs under the step's model call, as the
        # decorator does.
        Invalid("import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
                "        with torch.autocast('cuda'):\n            return self.fc(x)\n"
                "def main(model, loader, opt):\n    scaler = torch.amp.GradScaler('cuda')\n    for x, y in loader:\n"
                "        loss = model(x).sum()\n        scaler.scale(loss).backward()\n        scaler.step(opt)\n"
                "        scaler.update()\n", message="autocast runs in float16 implicitly"),
        # ... the GradScaler its import brought in goes too; autocast stays imported.
        Invalid(
            "import torch\nfrom torch.amp import GradScaler, autocast\nscaler = GradScaler()\nfor x, y in loader:\n"
            "    with autocast('cuda'):\n        loss = model(x, y)\n    scaler.scale(loss).backward()\n"
            "    scaler.step(opt)\n    scaler.update()\n",
            settings={"target_gpu": "ampere"},
            fixed="import torch\nfrom torch.amp import autocast\nfor x, y in loader:\n"
                  "    with autocast('cuda', dtype=torch.bfloat16):\n        loss = model(x, y)\n    loss.backward()\n"
                  "    opt.step()\n",
        ),
        Invalid(
            _LOOP.format(pre="", sargs="'cuda'", aargs="'cuda', dtype=torch.half"),
            settings={"target_gpu": "ampere"},
            fixed="import torch\nfor x, y in loader:\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
                  "        loss = model(x, y)\n    loss.backward()\n    opt.step()\n",
        ),
        Invalid(
            "import torch\nfrom torch.cuda.amp import GradScaler, autocast\nclass Trainer:\n"
            "    def __init__(self):\n        self.scaler = GradScaler()\n"
            "    def step(self, x):\n        with autocast():\n            loss = self.model(x)\n"
            "        self.scaler.scale(loss).backward()\n        self.scaler.unscale_(self.opt)\n"
            "        self.scaler.step(self.opt)\n        self.scaler.update()\n"
            "    def save(self):\n        return {'scaler': self.scaler.state_dict()}\n",
            settings={"target_gpu": "hopper"},
            fixed="import torch\nfrom torch.cuda.amp import GradScaler, autocast\nclass Trainer:\n"
            "    def __init__(self):\n        self.scaler = GradScaler(enabled=False)\n"
            "    def step(self, x):\n        with autocast(dtype=torch.bfloat16):\n            loss = self.model(x)\n"
            "        loss.backward()\n"
            "        self.opt.step()\n"
            "    def save(self):\n        return {'scaler': self.scaler.state_dict()}\n",
        ),
        # A positional `enabled` is replaced where it stands (a keyword beside it raises TypeError).
        Invalid(
            "import torch\nscaler = torch.cuda.amp.GradScaler(1024.0, 2.0, 0.5, 2000, True)\n"
            "def step(x):\n    with torch.autocast('cuda'):\n        loss = model(x)\n"
            "    scaler.scale(loss).backward()\n    return scaler.state_dict()\n",
            settings={"target_gpu": "hopper"},
            fixed="import torch\nscaler = torch.cuda.amp.GradScaler(1024.0, 2.0, 0.5, 2000, False)\n"
            "def step(x):\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n        loss = model(x)\n"
            "    loss.backward()\n    return scaler.state_dict()\n",
        ),
        Invalid(
            "import torch\nclass Trainer:\n    def __init__(self):\n        self.scaler = torch.amp.GradScaler()\n"
            "    def step(self, x):\n        with torch.autocast('cuda'):\n            loss = self.model(x)\n"
            "        self.scaler.scale(loss).backward()\n",
            fixed="import torch\nclass Trainer:\n    def __init__(self):\n"
            "        self.amp_dtype = (\n            torch.bfloat16\n"
            "            if torch.cuda.is_bf16_supported(including_emulation=False)\n"
            "            else torch.float16\n        )\n"
            "        self.scaler = torch.amp.GradScaler(enabled=self.amp_dtype == torch.float16)\n"
            "    def step(self, x):\n        with torch.autocast('cuda', dtype=self.amp_dtype):\n"
            "            loss = self.model(x)\n        self.scaler.scale(loss).backward()\n",
        ),
        Invalid(
            "import torch\ndef make():\n    return torch.amp.GradScaler()\n"
            "def step(x):\n    with torch.autocast('cuda'):\n        return model(x)\n",
            fixed="import torch\ndef make():\n"
            "    return torch.amp.GradScaler(\n"
            "        enabled=not torch.cuda.is_bf16_supported(including_emulation=False)\n"
            "    )\n"
            "def step(x):\n    with torch.autocast(\n        'cuda',\n"
            "        dtype=(\n            torch.bfloat16\n            if torch.cuda.is_bf16_supported(including_emulation=False)\n"
            "            else torch.float16\n        ),\n"
            "    ):\n        return model(x)\n",
        ),
        # The same before 2.4: the two-part check is grouped where it is negated and and-ed.
        Invalid(
            "import torch\ndef make():\n    return torch.amp.GradScaler(enabled=use_amp)\n"
            "def step(x):\n    with torch.autocast('cuda'):\n        return model(x)\n",
            fixed="import torch\ndef make():\n"
            "    return torch.amp.GradScaler(\n        enabled=use_amp\n        and not (\n"
            "            torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)\n        )\n    )\n"
            "def step(x):\n    with torch.autocast(\n        'cuda',\n"
            "        dtype=(\n            torch.bfloat16\n"
            "            if torch.cuda.is_available()\n            and torch.cuda.get_device_capability() >= (8, 0)\n"
            "            else torch.float16\n        ),\n    ):\n        return model(x)\n",
            settings={"target_torch": "2.3"},
        ),
        # Autocast through a name bound to a partial of it (TL401's fix of an aliased autocast): the
        # dtype goes to the call, whose keywords come on top of the partial's.
        Invalid(
            ("import functools\n" + _LOOP.replace("torch.autocast({aargs})", "autocast_ctx()"))
            .format(pre="autocast_ctx = functools.partial(torch.amp.autocast, 'cuda')\n", sargs="'cuda'"),
            fixed=("import functools\n" + _LOOP.replace("torch.autocast({aargs})", "autocast_ctx(dtype=amp_dtype)"))
            .format(pre="autocast_ctx = functools.partial(torch.amp.autocast, 'cuda')\n" + _CHOICE_LINE,
                    sargs="'cuda', enabled=amp_dtype == torch.float16"),
        ),
        # The call's first positional argument is the dtype after the partial's device: replaced there.
        Invalid(
            ("from functools import partial\n" + _LOOP.replace("torch.autocast({aargs})", "amp_ctx(torch.float16)"))
            .format(pre="amp_ctx = partial(torch.autocast, 'cuda')\n", sargs="'cuda'"),
            fixed=("from functools import partial\n" + _LOOP.replace("torch.autocast({aargs})", "amp_ctx(amp_dtype)"))
            .format(pre="amp_ctx = partial(torch.autocast, 'cuda')\n" + _CHOICE_LINE,
                    sargs="'cuda', enabled=amp_dtype == torch.float16"),
        ),
        # float16 passed by position in the partial: a dtype at the call would be a second value.
        Invalid(
            ("from functools import partial\n" + _LOOP.replace("torch.autocast({aargs})", "amp_ctx()"))
            .format(pre="amp_ctx = partial(torch.autocast, 'cuda', torch.float16)\n", sargs="'cuda'"),
            fixed=("from functools import partial\n" + _LOOP.replace("torch.autocast({aargs})", "amp_ctx()"))
            .format(pre="amp_ctx = partial(torch.autocast, 'cuda', torch.float16)\n", sargs="'cuda'"),
            message="as `torch.float16`",
        ),
        # The scaler made in a method `__init__` calls after making the autocast object: before, the fix set
        # `self.amp_dtype` in that method and `__init__` read it first (AttributeError). Inline now.
        Invalid('import torch\nclass Trainer:\n    def __init__(self):\n        self.ctx = torch.autocast("cuda", dtype=torch.float16)\n        self.reset_scaler()\n    def reset_scaler(self):\n        self.scaler = torch.amp.GradScaler("cuda")\n    def fit(self, x):\n        for step in range(4):\n            with self.ctx:\n                loss = self.model(x)\n            self.scaler.scale(loss).backward()\n',
                fixed='import torch\nclass Trainer:\n    def __init__(self):\n        self.ctx = torch.autocast(\n            "cuda",\n            dtype=(\n                torch.bfloat16\n                if torch.cuda.is_bf16_supported(including_emulation=False)\n                else torch.float16\n            ),\n        )\n        self.reset_scaler()\n    def reset_scaler(self):\n        self.scaler = torch.amp.GradScaler(\n            "cuda", enabled=not torch.cuda.is_bf16_supported(including_emulation=False)\n        )\n    def fit(self, x):\n        for step in range(4):\n            with self.ctx:\n                loss = self.model(x)\n            self.scaler.scale(loss).backward()\n'),
        # A second scaler in another method: before, it got `__init__`'s local `amp_dtype` (NameError);
        # an attribute set in `__init__` is seen by both.
        Invalid('import torch\nclass Trainer:\n    def __init__(self):\n        self.scaler = torch.amp.GradScaler("cuda")\n        self.ctx = torch.autocast("cuda", dtype=torch.float16)\n    def reset_scaler(self):\n        self.scaler = torch.amp.GradScaler("cuda")\n    def fit(self, x):\n        for step in range(4):\n            with self.ctx:\n                loss = self.model(x)\n            self.scaler.scale(loss).backward()\n',
                fixed='import torch\nclass Trainer:\n    def __init__(self):\n        self.amp_dtype = (\n            torch.bfloat16\n            if torch.cuda.is_bf16_supported(including_emulation=False)\n            else torch.float16\n        )\n        self.scaler = torch.amp.GradScaler(\n            "cuda", enabled=self.amp_dtype == torch.float16\n        )\n        self.ctx = torch.autocast("cuda", dtype=self.amp_dtype)\n    def reset_scaler(self):\n        self.scaler = torch.amp.GradScaler(\n            "cuda", enabled=self.amp_dtype == torch.float16\n        )\n    def fit(self, x):\n        for step in range(4):\n            with self.ctx:\n                loss = self.model(x)\n            self.scaler.scale(loss).backward()\n'),
        # A scaler made in another function (`make_scaler()`): no variable both can see, so the choice is
        # written inline (before, `make_scaler` got `train`'s local name: NameError).
        Invalid('import torch\ndef train(x):\n    scaler = torch.amp.GradScaler("cuda")\n    for step in range(4):\n        with torch.autocast("cuda"):\n            loss = model(x)\n        scaler.scale(loss).backward()\ndef make_scaler():\n    return torch.amp.GradScaler("cuda")\n',
                fixed='import torch\ndef train(x):\n    scaler = torch.amp.GradScaler(\n        "cuda", enabled=not torch.cuda.is_bf16_supported(including_emulation=False)\n    )\n    for step in range(4):\n        with torch.autocast(\n            "cuda",\n            dtype=(\n                torch.bfloat16\n                if torch.cuda.is_bf16_supported(including_emulation=False)\n                else torch.float16\n            ),\n        ):\n            loss = model(x)\n        scaler.scale(loss).backward()\ndef make_scaler():\n    return torch.amp.GradScaler(\n        "cuda", enabled=not torch.cuda.is_bf16_supported(including_emulation=False)\n    )\n'),
        # `__init__` runs a method making the autocast object (through another) before the scaler: an
        # attribute set before the scaler would be read first. Inline.
        Invalid('import torch\nclass Trainer:\n    def __init__(self):\n        self.setup()\n        self.scaler = torch.amp.GradScaler("cuda")\n    def setup(self):\n        self.make_ctx()\n    def make_ctx(self):\n        self.ctx = torch.autocast("cuda", dtype=torch.float16)\n    def fit(self, x):\n        for step in range(4):\n            with self.ctx:\n                loss = self.model(x)\n            self.scaler.scale(loss).backward()\n',
                fixed='import torch\nclass Trainer:\n    def __init__(self):\n        self.setup()\n        self.scaler = torch.amp.GradScaler(\n            "cuda", enabled=not torch.cuda.is_bf16_supported(including_emulation=False)\n        )\n    def setup(self):\n        self.make_ctx()\n    def make_ctx(self):\n        self.ctx = torch.autocast(\n            "cuda",\n            dtype=(\n                torch.bfloat16\n                if torch.cuda.is_bf16_supported(including_emulation=False)\n                else torch.float16\n            ),\n        )\n    def fit(self, x):\n        for step in range(4):\n            with self.ctx:\n                loss = self.model(x)\n            self.scaler.scale(loss).backward()\n'),
        # A method `__init__` runs first that holds no use does not stop the attribute.
        Invalid('import torch\nclass Trainer:\n    def __init__(self):\n        self.model = self.build()\n        self.scaler = torch.amp.GradScaler("cuda")\n    def build(self):\n        with torch.autocast("cuda"):\n            return Net()\n    def fit(self, x):\n        for step in range(4):\n            with torch.autocast("cuda"):\n                loss = self.model(x)\n            self.scaler.scale(loss).backward()\n',
                fixed='import torch\nclass Trainer:\n    def __init__(self):\n        self.model = self.build()\n        self.amp_dtype = (\n            torch.bfloat16\n            if torch.cuda.is_bf16_supported(including_emulation=False)\n            else torch.float16\n        )\n        self.scaler = torch.amp.GradScaler(\n            "cuda", enabled=self.amp_dtype == torch.float16\n        )\n    def build(self):\n        with torch.autocast("cuda"):\n            return Net()\n    def fit(self, x):\n        for step in range(4):\n            with torch.autocast("cuda", dtype=self.amp_dtype):\n                loss = self.model(x)\n            self.scaler.scale(loss).backward()\n'),
        # A function's own `import torch` (TL501's save helper) binds nothing outside it: the
        # module's name for torch is `th`.
        Invalid(
            "import torch as th\ndef save(obj):\n    import torch\n    torch.save(obj, 'ckpt.pt')\n"
            "def train(x):\n    scaler = th.amp.GradScaler()\n    with th.autocast('cuda'):\n        loss = model(x)\n"
            "    scaler.scale(loss).backward()\n",
            fixed="import torch as th\ndef save(obj):\n    import torch\n    torch.save(obj, 'ckpt.pt')\n"
            "def train(x):\n    amp_dtype = (\n        th.bfloat16\n"
            "        if th.cuda.is_bf16_supported(including_emulation=False)\n        else th.float16\n    )\n"
            "    scaler = th.amp.GradScaler(enabled=amp_dtype == th.float16)\n"
            "    with th.autocast('cuda', dtype=amp_dtype):\n        loss = model(x)\n"
            "    scaler.scale(loss).backward()\n",
        ),
        # A bfloat16 autocast in evaluation does not choose the training step's dtype: the step's float16
        # autocast, whose loss the scaler scales, is still reported (the file was taken for choosing).
        Invalid("import torch\n@torch.no_grad()\ndef evaluate(model, batches):\n"
                "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        return [model(x) for x in batches]\n"
                "def train(model, opt, batches):\n    scaler = torch.amp.GradScaler('cuda')\n    for x in batches:\n"
                "        with torch.autocast('cuda', dtype=torch.float16):\n            loss = model(x).mean()\n"
                "        scaler.scale(loss).backward()\n        scaler.step(opt)\n        scaler.update()\n",
                fixed="import torch\n@torch.no_grad()\ndef evaluate(model, batches):\n"
                "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        return [model(x) for x in batches]\n"
                "def train(model, opt, batches):\n    amp_dtype = (\n        torch.bfloat16\n"
                "        if torch.cuda.is_bf16_supported(including_emulation=False)\n        else torch.float16\n    )\n"
                "    scaler = torch.amp.GradScaler('cuda', enabled=amp_dtype == torch.float16)\n    for x in batches:\n"
                "        with torch.autocast('cuda', dtype=amp_dtype):\n            loss = model(x).mean()\n"
                "        scaler.scale(loss).backward()\n        scaler.step(opt)\n        scaler.update()\n"),
        # Another training autocast whose dtype the fix cannot read (it may be float16): the fix would
        # turn off the scaler on a bfloat16 GPU for it too, which left float16 unscaled. No fix.
        Invalid("import torch\ndef pretrain(model, opt, batches, cfg):\n    scaler = torch.amp.GradScaler('cuda')\n"
                "    for x in batches:\n        with torch.autocast('cuda', dtype=cfg.amp_dtype):\n"
                "            loss = model(x).mean()\n        scaler.scale(loss).backward()\n        scaler.step(opt)\n"
                "        scaler.update()\n"
                "def finetune(model, opt, batches):\n    scaler = torch.amp.GradScaler('cuda')\n    for x in batches:\n"
                "        with torch.autocast('cuda', dtype=torch.float16):\n            loss = model(x).mean()\n"
                "        scaler.scale(loss).backward()\n        scaler.step(opt)\n        scaler.update()\n",
                fixed=NO_FIX, message="not fixed: the training step's autocast `torch.autocast('cuda', "
                                      "dtype=cfg.amp_dtype)` has a dtype the fix cannot read"),
        # Two training stages, each with its own scaler: the one that chooses its dtype (asks
        # `is_bf16_supported()`, or its scaler is enabled by dtype) does not choose for the other, which
        # hard-codes float16 (the whole file was taken for choosing). The fix touches that stage alone.
        Invalid(_TWO_STAGES.format(choose=_CHOOSING_STAGE),
                fixed=_float16_stage_fixed(_CHOOSING_STAGE),
                message="autocast runs in float16 as `torch.float16` with a GradScaler"),
        # ... also beside a stage whose dtype is handed in, its scaler enabled by it: that autocast's
        # unread dtype is no reason to withhold the fix, which leaves its scaler as it is.
        Invalid(_TWO_STAGES.format(choose=_HANDED_STAGE),
                fixed=_float16_stage_fixed(_HANDED_STAGE)),
        # A choice made at module level counts for the stages that read it, directly or through the names
        # they read (`amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else ...` read in
        # pretrain() alone): the stage hard-coding float16 beside it is reported (the file was taken for
        # choosing).
        Invalid(_TWO_STAGES.format(choose=_MODULE_CHOICE), fixed=_float16_stage_fixed(_MODULE_CHOICE)),
        Invalid(_TWO_STAGES.format(choose=_THROUGH_NAMES), fixed=_float16_stage_fixed(_THROUGH_NAMES)),
        # A trainer class is one stage (its scaler made in `__init__`, its autocast in `train_step`): a class
        # that chooses does not choose for another that hard-codes float16.
        Invalid(_TWO_TRAINERS.format(choose=_CHOOSING_INIT), fixed=_TWO_TRAINERS.format(choose=_CHOOSING_INIT).replace(
            "        self.scaler = torch.amp.GradScaler('cuda')\n",
            "        self.autocast_dtype = (\n            torch.bfloat16\n"
            "            if torch.cuda.is_bf16_supported(including_emulation=False)\n            else torch.float16\n"
            "        )\n        self.scaler = torch.amp.GradScaler(\n"
            "            'cuda', enabled=self.autocast_dtype == torch.float16\n        )\n").replace(
            "dtype=torch.float16):", "dtype=self.autocast_dtype):")),
        # With target-gpu ampere the float16 class trains in bfloat16 without its scaler; the other's stays.
        Invalid(_TWO_TRAINERS.format(choose=_CHOOSING_INIT), settings={"target_gpu": "ampere"},
                fixed=_finetuner_on_ampere(_TWO_TRAINERS.format(choose=_CHOOSING_INIT), "")),
        # With target-gpu ampere the float16 stage trains in bfloat16 without its scaler; the other's stays.
        Invalid(_TWO_STAGES.format(choose=_CHOOSING_STAGE), settings={"target_gpu": "ampere"},
                fixed=_TWO_STAGES.format(choose=_CHOOSING_STAGE).replace(
                    "    scaler = torch.amp.GradScaler('cuda')\n", "").replace(
                    "dtype=torch.float16):", "dtype=torch.bfloat16):").replace(
                    "        scaler.scale(loss).backward()\n        scaler.step(opt)\n        scaler.update()\n",
                    "        loss.backward()\n        opt.step()\n", 2).replace(
                    "        loss.backward()\n        opt.step()\n",
                    "        scaler.scale(loss).backward()\n        scaler.step(opt)\n        scaler.update()\n", 1)),
        # ... but a class of the file deriving from it (or one it derives from) may read its
        # `self.scaler`: kept, disabled.
        Invalid(_TWO_TRAINERS.format(choose=_CHOOSING_INIT) + _RESUMED, settings={"target_gpu": "ampere"},
                fixed=_finetuner_on_ampere(_TWO_TRAINERS.format(choose=_CHOOSING_INIT) + _RESUMED, _DISABLED)),
        Invalid(_SAVING + _TWO_TRAINERS.format(choose=_CHOOSING_INIT).replace(
                    "class Finetuner:", "class Finetuner(Saving):"),
                settings={"target_gpu": "ampere"}, message="drop the GradScaler",
                fixed=_finetuner_on_ampere(_SAVING + _TWO_TRAINERS.format(choose=_CHOOSING_INIT).replace(
                    "class Finetuner:", "class Finetuner(Saving):"), _DISABLED)),
        # Both stages in float16: each stage's `scaler` is a variable of its own function, so the other's
        # is no reference that keeps it (both were kept, disabled).
        Invalid(_FP16_STAGES, settings={"target_gpu": "ampere"},
                fixed=_FP16_STAGES.replace("    scaler = torch.amp.GradScaler('cuda')\n", "").replace(
                    "dtype=torch.float16):", "dtype=torch.bfloat16):").replace(
                    "        scaler.scale(loss).backward()\n        scaler.step(opt)\n        scaler.update()\n",
                    "        loss.backward()\n        opt.step()\n")),
        # ... nor one in a prediction function whose dtype can be bfloat16, beside CUDA's default in the step.
        Invalid("import torch\nPRED_DTYPE = torch.bfloat16 if fast else torch.float32\ndef predict(x):\n"
                "    with torch.autocast('cuda', dtype=PRED_DTYPE):\n        return model(x)\n"
                + _LOOP.format(pre="", sargs="'cuda'", aargs="'cuda'").replace("import torch\n", ""),
                message="autocast runs in float16 implicitly"),
        # `dtype=None` is the device's default, float16 on CUDA, as when no dtype is given: the fix replaces
        # it (it was taken for an unknown dtype and not reported).
        Invalid(_LOOP.format(pre="", sargs="'cuda'", aargs="'cuda', dtype=None"),
                fixed=_LOOP.format(pre=_CHOICE_LINE, sargs="'cuda', enabled=amp_dtype == torch.float16",
                                   aargs="'cuda', dtype=amp_dtype"),
                message="autocast runs in float16 implicitly"),
        # ... also through a name bound to None: the message said it ran "as `torch.float16`".
        Invalid(_LOOP.format(pre="AMP_DTYPE = None\n", sargs="'cuda'", aargs="'cuda', dtype=AMP_DTYPE"),
                fixed=_LOOP.format(pre=_CHOICE_LINE.replace("amp_dtype", "AMP_DTYPE"),
                                   sargs="'cuda', enabled=AMP_DTYPE == torch.float16", aargs="'cuda', dtype=AMP_DTYPE"),
                message="autocast runs in float16 implicitly (`AMP_DTYPE` is None: CUDA's default)"),
        # A variable that only gives the autocast its dtype, bound above the scaler in the same block
        # (a script's constant, a function's local): the choice is set there, where float16 was, and
        # the autocast keeps reading it (the fix defined `amp_dtype` beside it and left it unread).
        Invalid(_LOOP.format(pre="AMP_DTYPE = torch.float16  # half the activation memory\n", sargs="'cuda'",
                             aargs="'cuda', dtype=AMP_DTYPE"),
                fixed=_LOOP.format(pre=_CHOICE_LINE.replace("amp_dtype", "AMP_DTYPE").replace(
                                       "\n)\n", "\n)  # half the activation memory\n"),
                                   sargs="'cuda', enabled=AMP_DTYPE == torch.float16", aargs="'cuda', dtype=AMP_DTYPE")),
        Invalid("import torch\ndef train(loader):\n    amp_dtype = torch.float16\n    scaler = torch.amp.GradScaler('cuda')\n"
                "    for x in loader:\n        with torch.autocast('cuda', dtype=amp_dtype):\n            loss = model(x)\n"
                "        scaler.scale(loss).backward()\n",
                fixed="import torch\ndef train(loader):\n    amp_dtype = (\n        torch.bfloat16\n"
                      "        if torch.cuda.is_bf16_supported(including_emulation=False)\n        else torch.float16\n"
                      "    )\n    scaler = torch.amp.GradScaler('cuda', enabled=amp_dtype == torch.float16)\n"
                      "    for x in loader:\n        with torch.autocast('cuda', dtype=amp_dtype):\n            loss = model(x)\n"
                      "        scaler.scale(loss).backward()\n"),
        # With target-gpu ampere the variable becomes bfloat16 (the autocast got `dtype=torch.bfloat16`
        # and the variable was left unread); as everywhere, the scaler goes.
        Invalid("import torch\nAMP_DTYPE = torch.float16\ndef train(loader):\n    scaler = torch.amp.GradScaler('cuda')\n"
                "    for x in loader:\n        with torch.autocast('cuda', dtype=AMP_DTYPE):\n            loss = model(x)\n"
                "        scaler.scale(loss).backward()\n", settings={"target_gpu": "ampere"},
                fixed="import torch\nAMP_DTYPE = torch.bfloat16\ndef train(loader):\n"
                      "    for x in loader:\n        with torch.autocast('cuda', dtype=AMP_DTYPE):\n            loss = model(x)\n"
                      "        loss.backward()\n"),
        # ... not one read elsewhere too (the choice would change that as well), nor a module constant
        # read in the function that makes the scaler: set to the choice, it would ask the GPU at
        # import, in every process importing the file (a spawned loader worker too).
        Invalid(_LOOP.format(pre="AMP_DTYPE = torch.float16\nprint(AMP_DTYPE)\n", sargs="'cuda'",
                             aargs="'cuda', dtype=AMP_DTYPE"),
                fixed=_LOOP.format(pre="AMP_DTYPE = torch.float16\nprint(AMP_DTYPE)\n" + _CHOICE_LINE,
                                   sargs="'cuda', enabled=amp_dtype == torch.float16", aargs="'cuda', dtype=amp_dtype")),
        Invalid("import torch\nAMP_DTYPE = torch.float16\ndef train(loader):\n    scaler = torch.amp.GradScaler('cuda')\n"
                "    for x in loader:\n        with torch.autocast('cuda', dtype=AMP_DTYPE):\n            loss = model(x)\n"
                "        scaler.scale(loss).backward()\n",
                fixed="import torch\nAMP_DTYPE = torch.float16\ndef train(loader):\n    amp_dtype = (\n        torch.bfloat16\n"
                      "        if torch.cuda.is_bf16_supported(including_emulation=False)\n        else torch.float16\n"
                      "    )\n    scaler = torch.amp.GradScaler('cuda', enabled=amp_dtype == torch.float16)\n"
                      "    for x in loader:\n        with torch.autocast('cuda', dtype=amp_dtype):\n            loss = model(x)\n"
                      "        scaler.scale(loss).backward()\n"),
        Invalid(_LOOP.format(pre="", sargs="'cuda'", aargs="'cuda', None"),
                fixed=_LOOP.format(pre=_CHOICE_LINE, sargs="'cuda', enabled=amp_dtype == torch.float16",
                                   aargs="'cuda', amp_dtype")),
        Invalid(_LOOP.format(pre="", sargs="'cuda'", aargs="'cuda', dtype=None"), settings={"target_gpu": "ampere"},
                fixed="import torch\nfor x, y in loader:\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
                      "        loss = model(x, y)\n    loss.backward()\n    opt.step()\n"),
        # ... in a partial of autocast too: the call's `dtype=` overrides the partial's.
        Invalid(
            ("import functools\n" + _LOOP.replace("torch.autocast({aargs})", "autocast_ctx()"))
            .format(pre="autocast_ctx = functools.partial(torch.amp.autocast, 'cuda', dtype=None, enabled=use_amp)\n",
                    sargs="'cuda', enabled=use_amp"),
            fixed=("import functools\n" + _LOOP.replace("torch.autocast({aargs})", "autocast_ctx(dtype=amp_dtype)"))
            .format(pre="autocast_ctx = functools.partial(torch.amp.autocast, 'cuda', dtype=None, enabled=use_amp)\n"
                    + _CHOICE_LINE, sargs="'cuda', enabled=use_amp and amp_dtype == torch.float16"),
        ),
    ]

    # Autocast as a decorator of the model's forward: the model call in the step runs under it.
    _DECORATED = ("import torch\nclass Net(torch.nn.Module):\n    @{deco}\n    def forward(self, x):\n"
                  "        return self.l(x)\n{pre}scaler = torch.amp.GradScaler({sargs})\nfor x, y in loader:\n"
                  "    {step}\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n")
    valid += [
        Valid(_DECORATED.format(deco="torch.autocast('cuda', dtype=torch.bfloat16)", pre="", sargs="'cuda'",
                                step="loss = model(x, y)")),
        # A decorated prediction function the training step does not call.
        Valid("import torch\n@torch.autocast('cuda')\ndef predict(x):\n    return model(x)\n"
              "scaler = torch.amp.GradScaler('cuda')\nfor x, y in loader:\n    loss = model(x, y)\n"
              "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n"),
    ]
    invalid += [
        # The decorator's arguments are evaluated where forward is defined, at import: reported, no fix.
        Invalid(_DECORATED.format(deco="torch.autocast('cuda')", pre="", sargs="'cuda'", step="loss = model(x, y)"),
                fixed=NO_FIX, message="autocast decorating `forward` runs it in float16 implicitly"),
        Invalid(_DECORATED.format(deco="torch.cuda.amp.autocast(enabled=USE_AMP)", pre="", sargs="'cuda'",
                                  step="loss = model(x, y)"), fixed=NO_FIX, message="not fixed"),
        # Beside a float16 `with`, fixing the `with` alone would turn the scaler off on a bfloat16 GPU
        # while forward still runs in float16: no fix for either.
        Invalid(_DECORATED.format(deco="torch.autocast('cuda')", pre="", sargs="'cuda'",
                                  step="with torch.autocast('cuda', dtype=torch.float16):\n        loss = model(x, y)"),
                fixed=NO_FIX, message="not fixed: the autocast decorating `forward`"),
        # target-gpu ampere: the decorator can say bfloat16 as well.
        Invalid(_DECORATED.format(deco="torch.autocast('cuda')", pre="", sargs="'cuda'",
                                  step="with torch.autocast('cuda', dtype=torch.float16):\n        loss = model(x, y)"),
                settings={"target_gpu": "ampere"},
                fixed="import torch\nclass Net(torch.nn.Module):\n    @torch.autocast('cuda', dtype=torch.bfloat16)\n"
                      "    def forward(self, x):\n        return self.l(x)\nfor x, y in loader:\n"
                      "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        loss = model(x, y)\n"
                      "    loss.backward()\n    opt.step()\n"),
    ]

    invalid += [
        # A framework's float16 setting: the framework pairs float16 autocast with a GradScaler.
        Invalid("from transformers import TrainingArguments\nargs = TrainingArguments(\n    'out',\n    fp16=True,\n)\n",
                fixed="import torch\nfrom transformers import TrainingArguments\nargs = TrainingArguments(\n"
                "    'out',\n    fp16=not torch.cuda.is_bf16_supported(including_emulation=False),\n"
                "    bf16=torch.cuda.is_bf16_supported(including_emulation=False),\n)\n",
                message="`fp16=True` trains under a float16 autocast with a GradScaler"),
        Invalid("from trl import SFTConfig\nconfig = SFTConfig(output_dir='out', fp16=True)\n",
                fixed="from trl import SFTConfig\nconfig = SFTConfig(output_dir='out', bf16=True)\n",
                settings={"target_gpu": "ampere"}, message="target-gpu is ampere, so use `bf16=True`"),
        Invalid("import torch\nimport lightning as L\ntrainer = L.Trainer(max_epochs=3, precision='16-mixed')\n",
                fixed="import torch\nimport lightning as L\ntrainer = L.Trainer(\n    max_epochs=3,\n    precision=(\n"
                "        'bf16-mixed'\n        if torch.cuda.is_bf16_supported(including_emulation=False)\n"
                "        else '16-mixed'\n    ),\n)\n"),
        # Several settings: one fix changes them all.
        Invalid("import torch\nfrom accelerate import Accelerator\nimport pytorch_lightning as pl\n"
                "accelerator = Accelerator(mixed_precision='fp16')\ntrainer = pl.Trainer(precision=16)\n",
                fixed="import torch\nfrom accelerate import Accelerator\nimport pytorch_lightning as pl\n"
                "accelerator = Accelerator(mixed_precision='bf16')\ntrainer = pl.Trainer(precision=\"bf16-mixed\")\n",
                settings={"target_gpu": "hopper"}),
        # `**kwargs` may pass `bf16=` too: reported, no fix.
        Invalid("from transformers import TrainingArguments\nargs = TrainingArguments(**base, fp16=True)\n", fixed=NO_FIX),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        # A GPU before Ampere (target-gpu pascal, volta, turing) has no fast bfloat16: float16 with a
        # scaler is the right choice there.
        if target_gpu(self.ctx) in BEFORE_AMPERE:
            return
        if not self.ctx.precision.chooses_bf16:
            self._check_frameworks()
        self._check_autocasts()

    # -- a framework's float16 setting -------------------------------------------------

    def _check_frameworks(self) -> None:
        """`TrainingArguments(fp16=True)`, Lightning's `precision="16-mixed"`, accelerate's
        `mixed_precision="fp16"`: the framework pairs a float16 autocast with a GradScaler. One fix
        changes them all: once one asks `is_bf16_supported()`, the file counts as choosing."""
        ctx = self.ctx
        if ctx.is_test:
            return  # a test that sets float16 tests the float16 path (accelerate's test_script.py)
        uses = [u for u in ctx.precision.framework_fp16 if not self._chooses_beside(u)]
        if not uses:
            return
        ampere = target_gpu(ctx) in AMPERE_OR_NEWER
        torch, extra = ctx.module_name("torch")
        check = None if ampere else _bf16_check(ctx, torch)
        edits = [edit for use in uses for edit in self._framework_edits(use, check)]
        fix = None
        if edits:
            message = "Train in bfloat16" if ampere else "Use bfloat16 where the GPU supports it"
            fix = self.fix(Applicability.UNSAFE, message, *([] if ampere else extra), *edits)
        for use in uses:
            setting = f"{use.arg.keyword.value}={ctx.code(use.arg.value)}"
            if use.framework == "transformers":
                advice = "`bf16=True`" if ampere else f"`bf16={check}, fp16=not {check}`"
            else:
                advice = f"`{use.arg.keyword.value}={self._bf16_value(use, check)}`"
            where = f"target-gpu is {target_gpu(ctx)}, so use" if ampere else "on Ampere or newer use bfloat16:"
            self.report(use.arg, f"`{setting}` trains under a float16 autocast with a GradScaler; {where} {advice} "
                                 f"(float32's range, no loss scaling)", fix)

    def _chooses_beside(self, use) -> bool:
        """A `bf16=` keyword beside `fp16=True` that is not literally False: the script chooses
        (`bf16=args.bf16`)."""
        bf16 = self.ctx.keyword(use.call, "bf16") if use.framework == "transformers" else None
        return bf16 is not None and self.ctx.literal(bf16.value) is not False

    def _bf16_value(self, use, check: str | None) -> str:
        """The bfloat16 value of a Lightning or accelerate setting: plain, or chosen by `check`."""
        value = use.arg.value
        quote = value.quote if isinstance(value, cst.SimpleString) else '"'
        name = "bf16-mixed" if use.framework == "lightning" else "bf16"
        plain = f"{quote}{name}{quote}"
        return plain if check is None else f"{plain} if {check} else {self.ctx.code(value)}"

    def _framework_edits(self, use, check: str | None) -> list:
        """The edits that make one setting bfloat16 (check None: plainly, for an Ampere target)."""
        ctx = self.ctx
        call, arg = use.call, use.arg
        if ctx.hides_arguments(call):
            return []  # `**kwargs` may pass `bf16=` too
        if use.framework != "transformers":
            # The whole call, so that one made too long is laid out one argument per line.
            return [(call, ctx.with_keyword(call, arg.keyword.value, self._bf16_value(use, check)))]
        if check is None:
            if ctx.keyword(call, "bf16") is not None:
                return []  # `bf16=False` beside it: two edits a reader should make
            return [(call, call.with_changes(args=[a.with_changes(keyword=cst.Name("bf16")) if a is arg else a
                                                   for a in call.args]))]
        return [(call, ctx.with_keyword(ctx.with_keyword(call, "fp16", f"not {check}"), "bf16", check))]

    # -- float16 autocast with a GradScaler in the file's own code ---------------------

    def _check_autocasts(self) -> None:
        ctx = self.ctx
        prec = ctx.precision
        scalers = [s for s in prec.active_scalers() if s.device != "cpu"]
        if not scalers:
            return
        # Where the module trains, only autocasts of the training step pair with the scaler;
        # evaluation and prediction autocasts beside them do not (simpletransformers' evaluate(),
        # predict()). A module that trains elsewhere (no step here) keeps every autocast.
        trains_here = bool(ctx.loops.step_calls)
        paired = [a for a in prec.autocasts
                  if a.device != "cpu" and not prec.autocast_is_disabled(a)
                  and (not trains_here or self._in_training_step(a))]
        paired, scalers, stages = self._unchosen(paired, scalers)
        autocasts = [a for a in paired if prec.autocast_dtypes(a) == {"float16"}]
        if not autocasts:
            return
        ampere = target_gpu(ctx) in AMPERE_OR_NEWER
        decorator = next((a for a in autocasts if a.decorates is not None), None)
        note = ""
        optional = next((a for a in autocasts if a.optional), None)
        # A training autocast whose dtype is not known (`dtype=cfg.amp_dtype`) stays as it is, yet the
        # fix turns off (or drops) every scaler on a bfloat16 GPU: that one would run float16 unscaled.
        unread = next((a for a in paired if UNKNOWN in prec.autocast_dtypes(a)), None)
        if unread is not None:
            fix = None
            note = (f"; not fixed: the training step's autocast `{one_line(ctx.code(unread.call))}` has a dtype the "
                    f"fix cannot read, maybe float16, and the fix would turn off the GradScaler it may need "
                    f"(choose its dtype and the scaler's `enabled=` together by hand)")
        elif optional is not None:
            # A name bound to autocast or else to a null context (`ctx = torch.autocast if use_amp else
            # contextlib.nullcontext`): `ctx("cuda", dtype=...)` would raise TypeError on the null
            # context's path. Reported, no fix; the message says why (it said nothing).
            fix = None
            name = one_line(ctx.code(optional.call.func))
            note = (f"; not fixed: `{name}` is autocast or a null context, which takes no `dtype=` (choose the "
                    f"dtype where `{name}` is bound, and the scaler's `enabled=` with it, by hand)")
        elif decorator is not None and not ampere:
            # `@torch.autocast("cuda")` above `def forward`: its arguments are evaluated where the
            # function is defined, at import, where asking the GPU about bfloat16 would initialize
            # CUDA. Fixing the other autocasts alone would turn the scaler off on a bfloat16 GPU while
            # the decorated function still runs in float16. Reported, no fix.
            fix = None
            name = decorator.decorates.name.value
            note = (f"; not fixed: the autocast decorating `{name}` takes its `dtype=` where `{name}` is defined, at "
                    f"import, before a run-time check can choose it (choose it and the scaler's `enabled=` together "
                    f"by hand)")
        else:
            fix = self._ampere_fix(autocasts, scalers, stages) if ampere else self._runtime_fix(autocasts, scalers)
            if fix is None:
                note = "; not fixed: the autocast's or the scaler's arguments are not ones the fix can rewrite"
        for use in autocasts:
            how = _how_float16(ctx, use)
            what = (f"autocast decorating `{use.decorates.name.value}` runs it" if use.decorates is not None
                    else "autocast runs")
            if ampere:
                message = (f"{what} in float16 {how} with a GradScaler; target-gpu is {target_gpu(ctx)}, so use "
                           f"`dtype=torch.bfloat16` and drop the GradScaler (bfloat16 has float32's range, no loss scaling){note}")
            else:
                message = (f"{what} in float16 {how} with a GradScaler; on Ampere or newer use bfloat16 (float32's "
                           f"range, no loss scaling): `dtype=torch.bfloat16 if {_bf16_check(ctx, 'torch')} else "
                           f"torch.float16`, scaler enabled only for float16{note}")
            self.report(use.call, message, fix)

    def _unchosen(self, paired, scalers):
        """The training autocasts and scalers of the file's part that does not choose its dtype, and
        that part's functions or classes (None: the whole file). The file chooses where the step can
        run in bfloat16 (a dtype chosen at run time, a branch of its own; a bfloat16 autocast in
        evaluation chooses nothing), where it asks `is_bf16_supported()`, or where a scaler is
        enabled by dtype. Where each scaler is made in a function that also holds its own training
        autocasts (two stages, `pretrain()` and `finetune()`), or in a class whose methods hold them
        (a trainer class: the scaler made in `__init__`, the autocast in `train_step`), a choice is
        for the stages it is made in or that read it (a module's `AMP_DTYPE` read in `pretrain()`
        alone): the other's float16 autocast was left unreported because the file chose somewhere.
        A choice made or read anywhere else (`main()` handing it in) may be for any of them
        (Precision.bf16_choosing_parts)."""
        prec = self.ctx.precision
        bf16 = [a.call for a in paired if prec.may_run_bf16(a)]
        if not bf16 and not prec.bf16_choices:
            return paired, scalers, None
        stages = {prec.part(s.call) for s in scalers}
        # An autocast outside those parts (a module's `forward`, a decorator) pairs with any of their
        # scalers.
        if None in stages or any(a.decorates is not None or prec.part(a.call) not in stages for a in paired):
            return [], [], None
        chosen = prec.bf16_choosing_parts(stages, bf16)
        if chosen is None:
            return [], [], None
        stages -= chosen
        return ([a for a in paired if prec.part(a.call) in stages], [s for s in scalers if prec.part(s.call) in stages],
                stages)

    def _in_training_step(self, use) -> bool:
        """The autocast region takes part in every training step. A decorated function's region is
        its body: a module's `forward` runs under the model call of the step; another function when
        the step calls it (or it runs the step itself)."""
        loops = self.ctx.loops
        if use.decorates is None:
            # `with autocast(...):` in a module's `forward` runs under the step's model call too.
            fn = self.ctx.index.enclosing_function(use.call)
            in_forward = fn is not None and fn.name.value == "forward" and self.ctx.index.enclosing_class(fn) is not None
            return in_forward or loops.in_training_step(use.call) or self._entered_in_training_step(use.call)
        if use.decorates.name.value == "forward":
            return True
        return loops.in_training_step(use.decorates.body)

    def _entered_in_training_step(self, call: cst.Call) -> bool:
        """The autocast object call makes is kept and entered in the training step: made once
        (`self.autocast_ctx = torch.autocast("cuda", dtype=torch.float16)` in `__init__`, a
        module-level `ctx = ...`, maybe one arm of `nullcontext() if ... else torch.amp.autocast(...)`)
        and opened by `with self.autocast_ctx:` in the loop. Its dtype is the one given where it is
        made, so the fix sets it there. (Before, only a `with torch.autocast(...):` written in the
        step was seen.)"""
        ctx = self.ctx
        value: cst.CSTNode = call
        parent = ctx.parent(value)
        while isinstance(parent, cst.IfExp):
            value, parent = parent, ctx.parent(parent)
        if not isinstance(parent, cst.Assign) or parent.value is not value:
            return False
        names = {ctx.dotted(t.target) for t in parent.targets} - {None}
        fn = ctx.index.enclosing_function(parent)
        cls = ctx.index.enclosing_class(parent)
        for item in ctx.index.nodes(cst.WithItem):
            name = ctx.dotted(item.item)
            if name not in names or not ctx.loops.in_training_step(item):
                continue
            if name.startswith("self."):
                if cls is not None and ctx.index.enclosing_class(item) is cls:
                    return True
            elif fn is None or ctx.index.enclosing_function(item) is fn:
                return True  # a module's name (read from its functions too), or the function's own
        return False

    # -- the run-time choice ------------------------------------------------------------

    def _runtime_fix(self, autocasts, scalers):
        ctx = self.ctx
        prec = ctx.precision
        torch, extra = ctx.module_name("torch")
        check = _bf16_check(ctx, torch)
        choice = f"{torch}.bfloat16 if {check} else {torch}.float16"
        var, define_at = self._shared_variable(autocasts, scalers)
        # The autocasts read their float16 through a variable of their own (`AMP_DTYPE =
        # torch.float16`) bound where the choice would go: the choice is set there instead, and
        # the name stays (a new variable beside it left it unread).
        constant = self._dtype_variable(autocasts, define_at) if var and not var.startswith("self.") else None
        if constant is not None:
            var = constant.targets[0].target.value
        replacements = list(extra)
        new_scalers = {}
        for use in scalers:
            positional_enabled = ctx.keyword(use.call, "enabled") is None and \
                prec.is_disabled(use.call, prec.scaler_enabled_index(use)) is False and \
                len([a for a in use.call.args if a.keyword is None]) > prec.scaler_enabled_index(use)
            if positional_enabled:
                return None
            only_fp16 = f"{var} == {torch}.float16" if var else _bf16_check(ctx, torch, negated=True)
            new_scalers[use.call] = ctx.with_keyword(use.call, "enabled", _and(ctx, use.call, only_fp16))
        dtype_code = var or choice
        for use in autocasts if constant is None else []:  # else they read the variable already
            this_dtype = dtype_code
            if use.device is None and use.partial is None:
                # A device chosen at run time (`device_type=dev.type`): the GPU's choice applies on
                # CUDA only; elsewhere autocast keeps its own default (bfloat16 on the CPU).
                device = ctx.keyword(use.call, "device_type") or next(
                    (a for a in use.call.args if a.keyword is None and not a.star), None)
                if device is not None and not _cuda_only_at(ctx, use.call, device.value):
                    q = ctx.quote_at(use.call)
                    before = prec.autocast_dtype_expr(use)  # elsewhere the dtype it had (None: the default)
                    other = ctx.code(before) if before is not None else "None"
                    this_dtype = (f"{dtype_code if var else f'({choice})'} if {ctx.code(device.value)} == {q}cuda{q} "
                                  f"else {other}")
            new_call = _set_dtype(ctx, use, this_dtype)
            if new_call is None:
                return None
            replacements.append((use.call, new_call))
        if constant is not None:
            replacements.append((constant, _assignment(ctx, ctx.parent(constant), var, choice)))
        elif var:
            replacements.append(ctx.insert_before(define_at, _assignment(ctx, define_at, var, choice)))
        # Each scaler call is its own replacement (the insertion above ends before the first one
        # starts), so the engine wraps it when `enabled=` makes its line too long.
        replacements.extend((use.call, new_scalers[use.call]) for use in scalers)
        return self.fix(Applicability.UNSAFE, "Use bfloat16 where the GPU supports it; keep the scaler for float16 only",
                        *replacements)

    def _shared_variable(self, autocasts, scalers) -> tuple[str | None, cst.CSTNode | None]:
        """A variable (or `self.` attribute) for the dtype, and the statement it is defined just
        before: the first scaler's, when every use the fix writes it in (each autocast, each other
        scaler's `enabled=`) sees it bound by the time it runs; (None, None) means write the choice
        inline (it names only the module's torch). At module level, a statement above the scaler
        that calls a function of the file reading the variable runs it first: the definition goes
        above the first such statement (_module_definition_point); it raised NameError there.
        Before, only the autocasts were checked, and a `self.` attribute was defined in whichever
        method made the first scaler: one made in `reset_scaler()` left `__init__`'s autocast reading
        the attribute before it was set, and a second scaler in another function got the first's
        local name (AttributeError, NameError)."""
        ctx = self.ctx
        anchor = scalers[0]
        stmt = ctx.statement(anchor.call)
        if stmt is None:
            return None, None
        fn = ctx.index.enclosing_function(anchor.call)
        if ctx.parent(stmt) is not (fn.body if fn is not None else ctx.module):
            return None, None  # created under a condition: the variable would not always exist
        uses = [use.call for use in autocasts] + [use.call for use in scalers[1:]]
        name = ctx.fresh_name("amp_dtype", "autocast_dtype")
        if all(self._sees_local(fn, stmt, anchor.call, call) for call in uses):
            define_at = stmt if fn is not None else _module_definition_point(ctx, stmt, uses)
            return (name, define_at) if define_at is not None else (None, None)
        target = None
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign):
            target = ctx.dotted(stmt.body[0].targets[0].target)
        if target and target.startswith("self.") and self._sees_attribute(fn, stmt, anchor.call, uses):
            return f"self.{name}", stmt
        return None, None

    def _dtype_variable(self, autocasts, define_at=None) -> cst.Assign | None:
        """The assignment of the one variable every autocast the fix writes (all on CUDA) takes its
        dtype from (`AMP_DTYPE = torch.float16`, `dtype=AMP_DTYPE`), when it is the variable's one
        binding in the file, nothing else reads it, and (when the fix defines its choice, before
        define_at) it stands above define_at in the same block: given the new dtype there, it
        changes those autocasts alone. None otherwise: a module constant read in the function that
        makes the scaler stays, since given the choice it would ask the GPU at import, in every
        process that imports the file (a spawned loader worker too)."""
        ctx = self.ctx
        exprs = [ctx.precision.autocast_dtype_expr(use) for use in autocasts]
        if any(use.device != "cuda" for use in autocasts) or not all(isinstance(e, cst.Name) for e in exprs) \
                or len({e.value for e in exprs}) != 1:
            return None
        name = exprs[0].value
        scopes = ctx.bindings.of(name)
        assigns = [a for a in ctx.index.nodes(cst.Assign)
                   if any(isinstance(t.target, cst.Name) and t.target.value == name for t in a.targets)]
        if scopes is None or sum(len(found) for found in scopes.values()) != 1 or len(assigns) != 1:
            return None
        assign = assigns[0]
        stmt, block = ctx.parent(assign), ctx.parent(define_at) if define_at is not None else None
        if len(assign.targets) != 1 or len(stmt.body) != 1:
            return None
        if define_at is not None and (ctx.parent(stmt) is not block
                                      or list(block.body).index(stmt) > list(block.body).index(define_at)):
            return None
        reads = {id(n) for n in ctx.index.nodes(cst.Name) if n.value == name and n is not assign.targets[0].target
                 and not _inside_attribute_chain(ctx, n) and getattr(ctx.parent(n), "keyword", None) is not n}
        return assign if reads == {id(e) for e in exprs} else None

    def _after(self, stmt, anchor: cst.Call, call: cst.Call) -> bool:
        """call runs after a variable inserted before stmt (the statement that makes anchor)."""
        order = self._call_order
        return self.ctx.index.contains(stmt, call) or order[call] > order[anchor]

    @property
    def _call_order(self) -> dict:
        cached = getattr(self, "_order", None)
        if cached is None:
            cached = self._order = {c: i for i, c in enumerate(self.ctx.index.nodes(cst.Call))}
        return cached

    def _sees_local(self, fn, stmt, anchor: cst.Call, call: cst.Call) -> bool:
        """A plain variable defined before stmt is bound where call is: later in the same function,
        or, for a module-level one, later at module level or in any function (read when it runs)."""
        fn_call = self.ctx.index.enclosing_function(call)
        if fn is None:
            return fn_call is not None or self._after(stmt, anchor, call)
        return fn_call is fn and self._after(stmt, anchor, call)

    def _sees_attribute(self, fn, stmt, anchor: cst.Call, uses: list) -> bool:
        """A `self.` attribute set before stmt is set before every use reads it: stmt is in the
        class's `__init__` body, before which it calls no method of its own (one could read the
        attribute first), and each use is later in `__init__` or in another method of the class
        taking `self`. A scaler made in another method (`reset_scaler()`) may run after the
        uses: `__init__`'s autocast object would read the attribute before it is set."""
        ctx = self.ctx
        cls = _method_class(ctx, fn)
        if cls is None or fn.name.value != "__init__":
            return False
        run_first = _methods_run_by(ctx, cls, fn.body.body[:fn.body.body.index(stmt)])
        for call in uses:
            fn_call = ctx.index.enclosing_function(call)
            if fn_call is fn:
                if not self._after(stmt, anchor, call):
                    return False
            elif _method_class(ctx, fn_call) is not cls or fn_call.name.value in run_first:
                return False
        return True

    # -- target-gpu ampere or newer: plain bf16, no scaler --------------------------------

    def _ampere_fix(self, autocasts, scalers, stages=None):
        """stages: the functions whose scalers go (None: every scaler of the file); a stage that
        chooses its dtype keeps its own."""
        ctx = self.ctx
        torch, extra = ctx.module_name("torch")
        replacements = list(extra)
        constant = self._dtype_variable(autocasts)
        if constant is not None:  # `AMP_DTYPE = torch.float16` read by the autocasts alone
            replacements.append((constant.value, cst.parse_expression(f"{torch}.bfloat16")))
        for use in autocasts if constant is None else []:
            new_call = _set_dtype(ctx, use, f"{torch}.bfloat16")
            if new_call is None:
                return None
            replacements.append((use.call, new_call))
        names = ctx.precision.scaler_names
        handled: set = set()
        removed: list[cst.CSTNode] = []
        for call in ctx.index.nodes(cst.Call):
            func = call.func
            if not isinstance(func, cst.Attribute) or ctx.dotted(func.value) not in names \
                    or (stages is not None and not any(ctx.index.contains(fn, call) for fn in stages)):
                continue
            method = func.attr.value
            if method == "scale" and len(call.args) == 1 and not call.args[0].keyword:
                replacements.append((call, _atom(call.args[0].value)))
            elif method == "step" and call.args and not call.args[0].keyword and not call.args[0].star:
                opt = call.args[0].value
                rest = list(call.args[1:])
                replacements.append((call, cst.Call(func=cst.Attribute(_atom(opt), cst.Name("step")), args=rest)))
            elif method in _SCALER_DROPPED:
                stmt = ctx.parent(ctx.parent(call))
                if not (isinstance(ctx.parent(call), cst.Expr) and isinstance(stmt, cst.SimpleStatementLine)
                        and len(stmt.body) == 1):
                    return None
                removed.append(stmt)
            else:
                continue
            handled.add(func.value)
        # The scaler itself: removed when nothing else refers to it, else kept disabled.
        for use in scalers:
            stmt = ctx.statement(use.call)
            target = None
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign) \
                    and stmt.body[0].value is use.call and len(stmt.body[0].targets) == 1:
                target = ctx.dotted(stmt.body[0].targets[0].target)
            # A function's own variable is seen in that function alone: another stage's `scaler` is
            # another variable (it kept this one, disabled). So is a `self.` attribute in its class,
            # when no class of the file derives from it or it from one: another trainer class's
            # `self.scaler` is another object's.
            fn = ctx.index.enclosing_function(use.call)
            scope = fn if fn is not None and target is not None and ctx.bindings.binds(fn, target) else None
            part = ctx.precision.part(use.call)
            if target is not None and target.startswith("self.") and isinstance(part, cst.ClassDef) \
                    and not _related_class(ctx, part):
                scope = part
            others = [n for n in ctx.index.nodes(cst.Attribute) + ctx.index.nodes(cst.Name)
                      if target is not None and ctx.dotted(n) == target and n not in handled
                      and (scope is None or ctx.index.contains(scope, n))
                      and not _is_target_of(ctx, n, stmt) and not _inside_attribute_chain(ctx, n)]
            if target is not None and not others:
                removed.append(stmt)
            else:
                replacements.append((use.call, ctx.with_keyword(use.call, "enabled", "False",
                                                                position=ctx.precision.scaler_enabled_index(use))))
        replacements.extend(ctx.remove_statements(removed))
        # `from torch.amp import GradScaler, autocast`: the class goes with the scaler it made.
        written = " ".join(ctx.code(new) if isinstance(new, cst.CSTNode) else str(new) for _old, new in replacements)
        replacements.extend(remove_unused_imports(ctx, [*removed, *(old for old, _new in replacements)], written))
        return self.fix(Applicability.UNSAFE, "Train in bfloat16 without a GradScaler", *replacements)


def _cuda_only_at(ctx, node: cst.CSTNode, device: cst.BaseExpression) -> bool:
    """node runs only where device is "cuda": in the branch of a conditional (an `if` or `... if
    ... else ...`, up to node's function) that tests it is (`if device_type == "cuda"`), or that
    it is not "cpu" where it can be nothing else (nanoGPT's `nullcontext() if device_type == "cpu"
    else torch.amp.autocast(device_type=device_type, ...)`, with `device_type = "cuda" if "cuda" in
    device else "cpu"`). There the fix's `... if device_type == "cuda" else torch.float16` around
    the dtype was a second test of what the branch already knows. An `else` of `== "cpu"` alone
    does not exclude MPS or XPU, so a device whose values are not known keeps the test."""
    code = ctx.code(device)
    child = node
    for anc in ctx.index.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test:
            compared = _compared_device(ctx, anc.test, code)
            if compared is not None:
                value, equal = compared
                taken = equal == (child is anc.body)  # the branch runs where device == value
                if taken and value == "cuda":
                    return True
                if not taken and value == "cpu" and _device_values(ctx, device) == {"cuda", "cpu"}:
                    return True
        child = anc
    return False


def _compared_device(ctx, test: cst.BaseExpression, code: str) -> tuple[str, bool] | None:
    """(value, True) for a test `code == "value"` (either side), (value, False) for `!=`; None
    for any other test."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    op = test.comparisons[0].operator
    if not isinstance(op, (cst.Equal, cst.NotEqual)):
        return None
    left, right = test.left, test.comparisons[0].comparator
    for side, other in ((left, right), (right, left)):
        value = ctx.literal(other)
        if isinstance(value, str) and ctx.code(side) == code:
            return value, isinstance(op, cst.Equal)
    return None


def _device_values(ctx, device: cst.BaseExpression) -> set[str] | None:
    """The strings a variable read as device can hold, when every binding of it is a string
    literal or a conditional of such (`"cuda" if "cuda" in device else "cpu"`); None when any is
    not, or for anything but a plain name."""
    if not isinstance(device, cst.Name):
        return None
    bindings = ctx.bindings.seen_from(device)
    if not bindings:
        return None
    values: set[str] = set()
    for kind, value in bindings:
        if kind != "assign" or value is None:
            return None
        options = _string_options(ctx, value)
        if options is None:
            return None
        values |= options
    return values


def _string_options(ctx, expr: cst.BaseExpression) -> set[str] | None:
    """The strings expr is: a string literal, or either branch of a conditional of them."""
    if isinstance(expr, cst.IfExp):
        body, orelse = _string_options(ctx, expr.body), _string_options(ctx, expr.orelse)
        return None if body is None or orelse is None else body | orelse
    value = ctx.literal(expr)
    return {value} if isinstance(value, str) else None


def _module_definition_point(ctx, stmt: cst.CSTNode, uses: list) -> cst.CSTNode | None:
    """The module-level statement to define a module variable read in uses before: stmt (the
    first scaler's), or the first statement above it that calls a function of the file that reads
    the variable (_readers: `warmup = step(x0)` above `scaler = ...`, step's autocast reading
    `amp_dtype`), which would run before it was bound; None when that statement comes before the
    last import or is (or precedes) the statement that binds torch (imports.module_binding): the
    definition reads torch, and above `try: import torch / forward(x0) / except ImportError:
    sys.exit()` below `import sys` it raised NameError."""
    body = list(ctx.module.body)
    at = body.index(stmt)
    readers = _readers(ctx, uses)
    for call in ctx.index.nodes(cst.Call):
        if ctx.index.enclosing(call, (cst.FunctionDef, cst.Lambda)) is not None or _callee(ctx, call) not in readers:
            continue
        top = _top_statement(ctx, call)
        if top is not None and body.index(top) < at:
            at = body.index(top)
    if at == body.index(stmt):
        return stmt
    last = ctx.last_import()
    if last is not None and last in body and at <= body.index(last):
        return None
    torch, extra = ctx.module_name("torch")
    # The fix imports torch itself: among the imports, or after the `try:` that imports from torch
    # (imports.guarded_import), where module_name puts it.
    binder = (guarded_import(ctx, "torch") or (None,))[0] if extra else module_binding(ctx, torch.split(".")[0])[0]
    if extra and binder is None:
        return body[at]
    if binder is None or at <= body.index(binder):
        return None
    return body[at]


def _readers(ctx, uses: list) -> set[str]:
    """The names of the file's functions and classes (and methods, called as `x.name(...)`) whose
    call may run one of uses: those uses are in, those that call one of them, and so on, and the
    class a method is in (its construction may run it)."""
    def names_around(node) -> set[str]:
        return {a.name.value for a in ctx.index.ancestors(node) if isinstance(a, (cst.FunctionDef, cst.ClassDef))}

    names: set[str] = set()
    for call in uses:
        names |= names_around(call)
    calls = [c for c in ctx.index.nodes(cst.Call) if ctx.index.enclosing_function(c) is not None]
    while True:
        more = set()
        for call in calls:
            if _callee(ctx, call) in names:
                more |= names_around(call)
        if more <= names:
            return names
        names |= more


def _callee(ctx, call: cst.Call) -> str | None:
    """The last name of what call calls (`step` of `step(x)` and of `trainer.step(x)`)."""
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    return func.attr.value if isinstance(func, cst.Attribute) else None


def _top_statement(ctx, node: cst.CSTNode) -> cst.CSTNode | None:
    """The module-level statement node is in."""
    for anc in ctx.index.ancestors(node):
        if ctx.parent(anc) is ctx.module:
            return anc
    return None


def _method_class(ctx, fn) -> cst.ClassDef | None:
    """The class fn is an instance method of (defined in its body, first parameter `self`, no
    staticmethod/classmethod); None otherwise."""
    if fn is None:
        return None
    block = ctx.parent(fn)
    cls = ctx.parent(block) if block is not None else None
    if not isinstance(cls, cst.ClassDef) or not fn.params.params or fn.params.params[0].name.value != "self":
        return None
    if any(ctx.dotted(d.decorator) in ("staticmethod", "classmethod") for d in fn.decorators):
        return None
    return cls


def _methods_run_by(ctx, cls: cst.ClassDef, stmts) -> set[str]:
    """The names of cls's methods that stmts call through `self.` (`self.model = self.build()`),
    and those these call in turn: they run before what follows stmts."""
    methods = {f.name.value: f for f in cls.body.body if isinstance(f, cst.FunctionDef)}
    calls = ctx.index.nodes(cst.Call)

    def called_in(nodes) -> set[str]:
        return {c.func.attr.value for c in calls
                if isinstance(c.func, cst.Attribute) and isinstance(c.func.value, cst.Name)
                and c.func.value.value == "self" and any(ctx.index.contains(n, c) for n in nodes)}

    seen: set[str] = set()
    todo = called_in(stmts)
    while todo:
        name = todo.pop()
        if name in seen or name not in methods:
            continue
        seen.add(name)
        todo |= called_in([methods[name]])
    return seen


def _related_class(ctx, cls: cst.ClassDef) -> bool:
    """Some other class of the file derives from cls, or cls from it: its methods may use cls's
    attributes (a checkpoint mixin saving `self.scaler`)."""
    def derives(sub: cst.ClassDef, base: cst.ClassDef) -> bool:
        return any((ctx.dotted(arg.value) or "").rsplit(".", 1)[-1] == base.name.value for arg in sub.bases)

    return any(derives(other, cls) or derives(cls, other) for other in ctx.index.nodes(cst.ClassDef) if other is not cls)


def _is_target_of(ctx, node, stmt) -> bool:
    return stmt is not None and ctx.index.contains(stmt, node)


def _inside_attribute_chain(ctx, node) -> bool:
    """node is the `.attr` part of an Attribute (`x.scaler`'s `scaler`), not a use of a name."""
    parent = ctx.parent(node)
    return isinstance(parent, cst.Attribute) and parent.attr is node


def _atom(expr: cst.BaseExpression) -> cst.BaseExpression:
    """expr, parenthesised unless it can stand before `.attr` as it is (`(loss / n).backward()`)."""
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _set_dtype(ctx, use, code: str) -> cst.Call | None:
    """The autocast call with its dtype set to code (in place when given positionally); None when
    a `functools.partial` the call goes through passes the dtype by position, which the call
    cannot override."""
    call = use.call
    position = ctx.precision.dtype_position(use)
    if position is None:
        return None
    if ctx.keyword(call, "dtype") is None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if len(positional) > position:
            target = positional[position]
            return call.with_changes(args=[a.with_changes(value=cst.parse_expression(code)) if a is target else a
                                           for a in call.args])
    return ctx.with_keyword(call, "dtype", code)


def _assignment(ctx, stmt, var: str, value: str) -> str:
    """`var = value`, its value parenthesised over lines of its own as Black lays out an
    assignment longer than a line."""
    line = f"{var} = {value}"
    if ctx.fits(line, at=stmt):
        return line
    deeper = ctx.module.default_indent
    expr = layout.parenthesized(cst.parse_expression(value), deeper, ctx.room(stmt, deeper))
    return f"{var} = " + layout.code(expr).replace("\n", ctx.module.default_newline + ctx.indentation(stmt))


def _and(ctx, call: cst.Call, condition: str) -> str:
    """`condition`, and-ed with the call's existing `enabled=` expression if any."""
    arg = ctx.keyword(call, "enabled")
    if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "True"):
        return condition
    existing = ctx.code(arg.value)
    if not isinstance(arg.value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Comparison)):
        existing = f"({existing})"
    return f"{existing} and {condition}"
