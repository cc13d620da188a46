"""TL404 fp32-matmul-without-tf32: CUDA training in float32 with no autocast and no TF32 setting."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.imports import guarded_import, module_binding, third_party_import_place
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Rule, Valid

from .targets import BEFORE_AMPERE, target_gpu



class Fp32MatmulWithoutTf32(Rule):
    code = "TL404"
    name = "fp32-matmul-without-tf32"
    summary = "CUDA training in float32 with no autocast and no TF32 setting"
    source = "§4.1, §6.1"
    fix_applicability = "unsafe"
    default_enabled = False
    triggers = ("cuda",)
    needs_hot_loop = True
    docs = """
## What it does
Off by default. Flags a training loop (a hot loop with backward/step) in a file that moves work
to CUDA but neither runs under autocast (also through a name bound to autocast or to
`functools.partial(torch.amp.autocast, "cuda")`, or else to `contextlib.nullcontext`), nor
converts the model to half/bfloat16 (a `dtype=` other than an integer, bool or float32 one,
torch's, numpy's or Python's, counts as such), nor leaves precision to a framework
(`mixed_precision=`, `precision=`), nor sets float32 matmul precision (`torch.set_float32_matmul_precision`,
`torch.backends.cuda.matmul.allow_tf32`/`fp32_precision`, or the generic
`torch.backends.fp32_precision` it inherits). cuDNN's settings (`torch.backends.cudnn.allow_tf32`,
`torch.backends.cudnn.conv.fp32_precision`) do not count: they cover convolutions only
(`cudnn.allow_tf32` is True by default), not matmuls.
Not flagged when `target-gpu` is pascal, volta or turing, which have no TF32.
The fix writes the setting line after the imports and after the statement that imports torch:
after a whole `try:` importing it (in its body or `else:`) whose handlers exit or raise, after an
`if` importing it in every branch, a `with` block importing it, a `match` importing it in every
case. A file that imports only torch's submodules, in such a `try:` (`from torch import nn`), gets
`import torch` in the try, above them, and the setting after the try. Where torch is imported only on some paths (an `if` without an
`else`, a handler setting `torch = None`, `with contextlib.suppress(ImportError):`), the finding
has no fix.

## Why is this bad?
By default PyTorch computes float32 matmuls in full float32, which uses a fraction of an Ampere+
GPU's tensor-core throughput. TF32 keeps float32 storage and range, rounds matmul inputs to a
10-bit mantissa, and is typically several times faster for matmul-bound models.

## Example
```python
import torch

model = Net().cuda()
for x, y in loader:
    loss = model(x.cuda(), y.cuda())
    loss.backward()
    opt.step()
```

## Use instead
```python
import torch

torch.set_float32_matmul_precision("high")
```
(or train under `torch.autocast("cuda", dtype=torch.bfloat16)`).

## Fix safety
Unsafe: TF32 rounds matmul inputs, so results change in the last bits of float32 precision
(usually invisible in the loss curve; check models that need full float32, e.g. some
physics or long-horizon recurrences).
"""
    _SRC = ("import torch\n{pre}model = Net().cuda()\nfor x, y in loader:\n"
            "    loss = model(x.cuda(), y.cuda())\n    loss.backward()\n    opt.step()\n")
    _LOOP = "model = Net().cuda()\nfor x in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n"
    valid = [
        Valid(_SRC.format(pre="torch.set_float32_matmul_precision('high')\n")),
        Valid(_SRC.format(pre="torch.backends.cuda.matmul.allow_tf32 = True\n")),
        Valid(_SRC.format(pre="torch.backends.cuda.matmul.fp32_precision = 'tf32'\n")),
        Valid(_SRC.format(pre="torch.backends.fp32_precision = 'tf32'\n")),
        Valid(_SRC.replace("loss = model", "with torch.autocast('cuda', dtype=torch.bfloat16):\n        loss = model")
              .format(pre="")),
        Valid(_SRC.format(pre="").replace("Net().cuda()", "Net().cuda().half()")),
        Valid("import torch\nmodel = Net()\nfor x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n"
              "    opt.step()\n"),
        Valid(_SRC.format(pre=""), settings={"target_gpu": "volta"}),
        Valid(_SRC.format(pre="accelerator = Accelerator(mixed_precision='bf16')\n")),
        Valid(_SRC.format(pre="").replace("Net().cuda()", "Net(dtype=cfg.dtype).cuda()")),
        # Autocast through a name bound to a partial of it (TL401's fix of an aliased autocast).
        Valid(("import functools\n" + _SRC.replace("loss = model", "with autocast_ctx():\n        loss = model"))
              .format(pre="autocast_ctx = functools.partial(torch.amp.autocast, 'cuda')\n")),
        Valid(("from functools import partial\n" + _SRC.replace("loss = model", "with amp_ctx():\n        loss = model"))
              .format(pre="amp_ctx = partial(torch.autocast, device_type='cuda')\n")),
        Valid(("import contextlib\nimport functools\n" + _SRC.replace("loss = model", "with ctx():\n        loss = model"))
              .format(pre="ctx = functools.partial(torch.amp.autocast, 'cuda') if use_amp else contextlib.nullcontext\n")),
        Valid(("import functools\n" + _SRC.replace("loss = model",
                                                     "with autocast_ctx(dtype=torch.bfloat16):\n        loss = model"))
              .format(pre="autocast_ctx = functools.partial(torch.amp.autocast, 'cuda')\n")),
        # Autocast as a decorator of the model's forward.
        Valid(_SRC.format(pre="class Net(torch.nn.Module):\n    @torch.autocast('cuda', dtype=torch.bfloat16)\n"
                              "    def forward(self, x, y):\n        return self.l(x)\n")),
    ]
    invalid = [
        # Imports continued after a `sys.path` line or a `try:` import: the line goes after them all
        # (before `import torch` it was a NameError).
        Invalid("import os\nimport sys\nsys.path.insert(0, os.getcwd())\ntry:\n    import wandb\nexcept ImportError:\n"
                "    wandb = None\nimport torch\nmodel = Net().cuda()\nfor x in loader:\n    model(x.cuda()).sum().backward()\n"
                "    opt.step()\n",
                fixed="import os\nimport sys\nsys.path.insert(0, os.getcwd())\ntry:\n    import wandb\nexcept ImportError:\n"
                "    wandb = None\nimport torch\n\ntorch.set_float32_matmul_precision(\"high\")\nmodel = Net().cuda()\n"
                "for x in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n"),
        Invalid(_SRC.format(pre=""), fixed=_SRC.format(pre="\ntorch.set_float32_matmul_precision(\"high\")\n"),
                message='torch.set_float32_matmul_precision("high")'),
        # torch imported in a `try:` whose handler exits, below `import sys`: the line goes after
        # the whole try (after `import sys` it ran before torch was bound: NameError at import).
        Invalid("import sys\ntry:\n    import torch\nexcept ImportError:\n    sys.exit('needs PyTorch')\n" + _LOOP,
                fixed="import sys\ntry:\n    import torch\nexcept ImportError:\n    sys.exit('needs PyTorch')\n\n"
                      "torch.set_float32_matmul_precision(\"high\")\n" + _LOOP),
        Invalid("import os\ntry:\n    import torch as th\nexcept ImportError as e:\n    raise SystemExit(str(e))\n"
                + _LOOP.replace("x.cuda()", "x.to('cuda')"),
                fixed="import os\ntry:\n    import torch as th\nexcept ImportError as e:\n    raise SystemExit(str(e))\n\n"
                      "th.set_float32_matmul_precision(\"high\")\n" + _LOOP.replace("x.cuda()", "x.to('cuda')")),
        # torch imported under a module-level `if` in every branch: after the if (it went above it).
        Invalid("import os\nif os.environ.get('X'):\n    import torch\nelse:\n    import torch\n" + _LOOP,
                fixed="import os\nif os.environ.get('X'):\n    import torch\nelse:\n    import torch\n\n"
                      "torch.set_float32_matmul_precision(\"high\")\n" + _LOOP),
        # torch bound in a try's `else:`, in a `with` block, in every case of a `match` with a
        # catch-all case: after the statement (these were reported without a fix).
        Invalid("import sys\ntry:\n    import numpy\nexcept ImportError:\n    sys.exit('x')\nelse:\n    import torch\n"
                + _LOOP,
                fixed="import sys\ntry:\n    import numpy\nexcept ImportError:\n    sys.exit('x')\nelse:\n    import torch\n\n"
                      "torch.set_float32_matmul_precision(\"high\")\n" + _LOOP),
        Invalid("import warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter('ignore')\n    import torch\n"
                + _LOOP,
                fixed="import warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter('ignore')\n"
                      "    import torch\n\ntorch.set_float32_matmul_precision(\"high\")\n" + _LOOP),
        Invalid("import sys\nmatch sys.platform:\n    case 'win32':\n        import torch\n    case _:\n        import torch\n"
                + _LOOP,
                fixed="import sys\nmatch sys.platform:\n    case 'win32':\n        import torch\n    case _:\n"
                      "        import torch\n\ntorch.set_float32_matmul_precision(\"high\")\n" + _LOOP),
        Invalid("import sys\nmatch sys.platform:\n    case 'win32':\n        import torch\n    case 'linux':\n"
                "        import torch\n" + _LOOP, fixed=NO_FIX,
                message="not fixed: `torch` is imported only on some paths (under a `match` with no case"),
        Invalid("import contextlib\nwith contextlib.suppress(ImportError):\n    import torch\n" + _LOOP, fixed=NO_FIX,
                message="not fixed: `torch` is imported only on some paths (under a `with` that suppresses"),
        # Only torch's submodules imported, in a `try:` whose handler exits: `import torch` goes in
        # the try, the setting after it (at the top, a missing torch raised ImportError before the
        # script's own message).
        Invalid("import sys\ntry:\n    from torch import nn\nexcept ImportError:\n    sys.exit('needs PyTorch')\n"
                "model = nn.Linear(4, 4).cuda()\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
                fixed="import sys\ntry:\n    import torch\n    from torch import nn\nexcept ImportError:\n"
                      "    sys.exit('needs PyTorch')\n\ntorch.set_float32_matmul_precision(\"high\")\n"
                      "model = nn.Linear(4, 4).cuda()\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n"),
        # ... imported deeper than the try's own lines (a `with` block): `import torch` after it.
        Invalid("import warnings\nwith warnings.catch_warnings():\n    from torch import nn\n"
                "model = nn.Linear(4, 4).cuda()\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n",
                fixed="import warnings\nwith warnings.catch_warnings():\n    from torch import nn\nimport torch\n\n"
                      "torch.set_float32_matmul_precision(\"high\")\n"
                      "model = nn.Linear(4, 4).cuda()\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n"),
        # Imported on some paths only (an `if` without an else, a handler that binds None): no
        # place sees torch bound on every path, so no fix, and the message says why.
        Invalid("import os\nif os.environ.get('X'):\n    import torch\n" + _LOOP, fixed=NO_FIX,
                message="not fixed: `torch` is imported only on some paths (under an `if`)"),
        Invalid("import sys\ntry:\n    import torch\nexcept ImportError:\n    torch = None\n" + _LOOP, fixed=NO_FIX,
                message="not fixed: `torch` is imported only on some paths"),
        # `import torch` below other code: the line goes after it, not after the first imports.
        Invalid("import os\nos.environ['X'] = '1'\nA = 1\nB = 2\nC = 3\nimport torch\n" + _LOOP,
                fixed="import os\nos.environ['X'] = '1'\nA = 1\nB = 2\nC = 3\nimport torch\n\n"
                      "torch.set_float32_matmul_precision(\"high\")\n" + _LOOP),
        # cuDNN's TF32 flags cover convolutions (allow_tf32 is already True by default): matmuls stay float32.
        Invalid(_SRC.format(pre="torch.backends.cudnn.allow_tf32 = True\n"),
                fixed=_SRC.format(pre="\ntorch.set_float32_matmul_precision(\"high\")\n"
                                      "torch.backends.cudnn.allow_tf32 = True\n")),
        Invalid(_SRC.format(pre="torch.backends.cudnn.conv.fp32_precision = 'tf32'\n"),
                fixed=_SRC.format(pre="\ntorch.set_float32_matmul_precision(\"high\")\n"
                                      "torch.backends.cudnn.conv.fp32_precision = 'tf32'\n")),
        # Integer and float32 dtypes of the data pipeline (numpy's, Python's, strings) lower nothing.
        Invalid(_SRC.format(pre="import numpy as np\nids = np.zeros(8, dtype=np.int64)\nmask = np.ones(8, dtype=bool)\n"
                                "w = torch.ones(8, dtype=torch.float)\nlabels = df.to_numpy(dtype='int64')\n"),
                fixed=_SRC.format(pre="import numpy as np\n\ntorch.set_float32_matmul_precision(\"high\")\n"
                                      "ids = np.zeros(8, dtype=np.int64)\nmask = np.ones(8, dtype=bool)\n"
                                      "w = torch.ones(8, dtype=torch.float)\nlabels = df.to_numpy(dtype='int64')\n")),
        # A partial of something else is no autocast.
        Invalid(("import functools\n" + _SRC.replace("loss = model", "with ctx():\n        loss = model"))
                .format(pre="ctx = functools.partial(torch.enable_grad)\n"),
                fixed=("import functools\n" + _SRC.replace("loss = model", "with ctx():\n        loss = model"))
                .format(pre="\ntorch.set_float32_matmul_precision(\"high\")\nctx = functools.partial(torch.enable_grad)\n")),
        Invalid('"""Train."""\nimport torch\nimport torch.nn as nn\n\ndevice = "cuda"\nmodel.to(device)\n'
                'for batch in loader:\n    opt.zero_grad()\n    model(batch.to(device)).sum().backward()\n    opt.step()\n',
                fixed='"""Train."""\nimport torch\nimport torch.nn as nn\n\ntorch.set_float32_matmul_precision("high")\n\n'
                'device = "cuda"\nmodel.to(device)\nfor batch in loader:\n    opt.zero_grad()\n'
                '    model(batch.to(device)).sum().backward()\n    opt.step()\n'),
        # A `def` or `class` right below keeps PEP 8's two blank lines under the inserted line (it had
        # none, or the one after the imports, so the setting line was glued to the def).
        Invalid("import torch as th\ndef train():\n    model = Net().to('cuda:0')\n    for x in loader:\n"
                "        model(x).backward()\n        optimizer.step()\n",
                fixed="import torch as th\n\nth.set_float32_matmul_precision(\"high\")\n\n\ndef train():\n"
                "    model = Net().to('cuda:0')\n    for x in loader:\n        model(x).backward()\n        optimizer.step()\n"),
        Invalid(_SRC.format(pre=""), fixed=_SRC.format(pre="\ntorch.set_float32_matmul_precision(\"high\")\n"),
                settings={"target_gpu": "ampere"}),
        Invalid("import torch\n\n# The model.\nclass Net(torch.nn.Module):\n    pass\n\n\n" + _SRC.format(pre="")[len("import torch\n"):],
                fixed="import torch\n\ntorch.set_float32_matmul_precision(\"high\")\n\n\n# The model.\n"
                "class Net(torch.nn.Module):\n    pass\n\n\n" + _SRC.format(pre="")[len("import torch\n"):]),
        Invalid("import torch\n\n\n@dataclass\nclass Cfg:\n    lr: float = 1e-3\n\n\n" + _SRC.format(pre="")[len("import torch\n"):],
                fixed="import torch\n\ntorch.set_float32_matmul_precision(\"high\")\n\n\n@dataclass\nclass Cfg:\n"
                "    lr: float = 1e-3\n\n\n" + _SRC.format(pre="")[len("import torch\n"):]),
        # `import torch` added too, with the setting below it: the same two lines above the class.
        Invalid("from torch import nn\nclass Net(nn.Module):\n    pass\nmodel = Net().cuda()\nfor x in loader:\n"
                "    model(x).sum().backward()\n    opt.step()\n",
                fixed="import torch\nfrom torch import nn\n\ntorch.set_float32_matmul_precision(\"high\")\n\n\n"
                "class Net(nn.Module):\n    pass\nmodel = Net().cuda()\nfor x in loader:\n"
                "    model(x).sum().backward()\n    opt.step()\n"),
        Invalid("from torch import nn\nmodel = nn.Linear(4, 4).cuda()\nfor x in loader:\n    model(x).sum().backward()\n"
                "    opt.step()\n",
                fixed="import torch\nfrom torch import nn\n\ntorch.set_float32_matmul_precision(\"high\")\n"
                "model = nn.Linear(4, 4).cuda()\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n"),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        ctx = self.ctx
        if target_gpu(ctx) in BEFORE_AMPERE or ctx.is_test:
            return  # no TF32 on the target; tests often pin float32 numerics on purpose
        prec = ctx.precision
        if not ctx.loops.hot_loops or not ctx.devices.uses_cuda or prec.lowers_precision or prec.sets_tf32:
            return
        site = next((c for c in ctx.loops.step_calls if ctx.loops.in_hot_loop(c)), None)
        if site is None:
            return
        torch, extra = ctx.module_name("torch")
        line = f'{torch}.set_float32_matmul_precision("high")'
        last, newline = ctx.last_import(), ctx.module.default_newline
        place = third_party_import_place(ctx, "torch") if extra else None
        guarded = guarded_import(ctx, "torch") if extra else None
        if guarded is not None:
            # torch's modules are imported only in a `try:` whose handlers exit (`from torch import
            # nn`): `import torch` goes in it (module_name), the setting after it.
            guard, inner = guarded
            replacements = [*extra, ctx.insert_after_imports(line, after=guard)] if inner is not None \
                else [ctx.insert_after_imports(f"import torch{newline * 2}{line}", after=guard)]
        elif extra and (place is None or (place[0] != "before" and place[1] is last)):
            # `import torch` goes after the imports too: one insertion, with Black's blank line
            # between it and the setting (and isort's above it, starting a section of its own).
            code = f"import torch{newline * 2}{line}"
            if place is not None and place[0] == "section":
                replacements = [(last, ctx.render(last) + newline + code + newline + ctx.def_gap_after(last, code))]
            else:
                replacements = [ctx.insert_after_imports(code)]
        else:  # `import torch` where isort puts it among the imports, the setting after them
            # and after the statement that binds torch (a `try:` import below `import sys`).
            binder, why = module_binding(ctx, torch.split(".")[0]) if not extra else (None, None)
            if why is not None:
                replacements = None
            else:
                replacements = [*extra, ctx.insert_after_imports(line, after=binder)]
        message = ("CUDA training runs float32 matmuls at full float32 precision (no autocast, no TF32); add "
                   "`torch.set_float32_matmul_precision(\"high\")` after the imports to use TF32 tensor cores "
                   "(Ampere+), or train under autocast in bfloat16")
        if replacements is None:
            self.report(site, f"{message}; not fixed: {why}, where the setting line would not always see it")
            return
        self.report(site, message, self.fix(Applicability.UNSAFE, "Enable TF32 matmuls", *replacements))
