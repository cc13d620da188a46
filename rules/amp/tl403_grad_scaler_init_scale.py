"""TL403 grad-scaler-init-scale: GradScaler whose `init_scale` is outside the configured range (default
1024..8192)."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.precision import DEVICE_FIRST_SCALERS, GRAD_SCALER
from trainlint.diagnostics import Applicability
from trainlint.rule import Invalid, Option, Rule, Valid



_DEFAULT_INIT_SCALE = 2.0 ** 16


def _fmt(value) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class GradScalerInitScale(Rule):
    code = "TL403"
    name = "grad-scaler-init-scale"
    summary = "GradScaler whose `init_scale` is outside the configured range (default 1024..8192)"
    source = "§4.1"
    fix_applicability = "unsafe"
    default_enabled = False
    triggers = ("GradScaler",)
    options = {
        "min-init-scale": Option(1024, (int, float), "Smallest initial loss scale accepted.", minimum=1),
        "max-init-scale": Option(8192, (int, float), "Largest initial loss scale accepted (not below `min-init-scale`); the fix writes it.", minimum=1),
    }

    @classmethod
    def options_problem(cls, values):
        low, high = values["min-init-scale"], values["max-init-scale"]
        if low > high:  # no scale would be accepted, and the fix would write one below the range
            return f"`min-init-scale` ({low!r}) is above `max-init-scale` ({high!r})"
        return None

    docs = """
## What it does
Off by default (enable with `select`/`extend-select`). Flags a `GradScaler` (any spelling) whose
`init_scale` is outside the configured range, 1024 to 8192 by default. A scaler without
`init_scale` uses PyTorch's default, 65536, and is flagged too. Disabled scalers
(`enabled=False`) and values the file does not settle are left alone; a value written as a name
is read as TL101 describes (`init_scale=args.init_scale` with the option's `default=65536`) and
fixed where it is written.

## Why is this bad?
The dynamic loss scale starts at `init_scale` and halves on every overflow, skipping that step.
65536 usually overflows in the first steps, so the first updates are thrown away while the scale
comes down; a scale far too low underflows small gradients until it grows back (every
`growth_interval` steps). §4.1 measured 1024 to 8192 as the safe starting range.

## Example
```python
scaler = torch.amp.GradScaler("cuda")
```

## Use instead
```python
scaler = torch.amp.GradScaler("cuda", init_scale=8192)
```

## Fix safety
Unsafe: the point of the fix is to skip fewer steps, which changes the results. The scaler
still adapts the scale and still skips steps whose gradients overflow, but which steps those are
changes: where 65536 overflowed and skipped the first step, 8192 takes it, so the weights (and the
loss curve from then on) differ from the original's. An fp16 run with `init_scale=65536` that
skipped its first steps is trained on other updates after the fix.
"""
    valid = [
        Valid("import torch\nscaler = torch.amp.GradScaler('cuda', init_scale=4096)\n"),
        Valid("import torch\nscaler = torch.amp.GradScaler('cuda', 2.0**13)\n"),
        Valid("import torch\nscaler = torch.amp.GradScaler('cuda', init_scale=args.init_scale)\n"),
        # An option whose default is in range.
        Valid("import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
              "parser.add_argument('--init-scale', type=float, default=4096)\nargs = parser.parse_args()\n"
              "scaler = torch.amp.GradScaler('cuda', init_scale=args.init_scale)\n"),
        Valid("import torch\nscaler = torch.amp.GradScaler('cuda', enabled=False)\n"),
        Valid("import torch\nscaler = torch.amp.GradScaler(**scaler_kwargs)\n"),
        Valid("import torch\nscaler = torch.amp.GradScaler('cuda', init_scale=2.**15)\n",
              options={"max-init-scale": 65536}),
    ]
    invalid = [
        Invalid("import torch\nscaler = torch.amp.GradScaler('cuda')\n",
                fixed="import torch\nscaler = torch.amp.GradScaler('cuda', init_scale=8192)\n", message="65536"),
        # Written as names: an option's default, a constant; fixed where they are written.
        Invalid("import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--init-scale', type=float, default=65536.0)\nargs = parser.parse_args()\n"
                "scaler = torch.amp.GradScaler('cuda', init_scale=args.init_scale)\n",
                fixed="import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
                      "parser.add_argument('--init-scale', type=float, default=8192.0)\nargs = parser.parse_args()\n"
                      "scaler = torch.amp.GradScaler('cuda', init_scale=args.init_scale)\n",
                message="`init_scale=args.init_scale` unless `--init-scale` is given (it defaults to 65536.0), which "
                        "overflows and skips the first steps; default `--init-scale` to `8192`"),
        Invalid("import torch\nINIT_SCALE = 2**16\nscaler = torch.amp.GradScaler('cuda', init_scale=INIT_SCALE)\n",
                fixed="import torch\nINIT_SCALE = 8192\nscaler = torch.amp.GradScaler('cuda', init_scale=INIT_SCALE)\n",
                message="(`INIT_SCALE` is 65536)"),
        Invalid("import torch\nscaler = torch.cuda.amp.GradScaler(init_scale=2.**16, enabled=use_amp)\n",
                fixed="import torch\nscaler = torch.cuda.amp.GradScaler(init_scale=8192, enabled=use_amp)\n"),
        Invalid("from torch.amp import GradScaler\nscaler = GradScaler('cuda', 1.0)\n",
                fixed="from torch.amp import GradScaler\nscaler = GradScaler('cuda', 8192)\n"),
        Invalid("from torch.cuda.amp import GradScaler\nscaler = GradScaler(2 ** 20, 2.0)\n",
                fixed="from torch.cuda.amp import GradScaler\nscaler = GradScaler(4096, 2.0)\n",
                options={"max-init-scale": 4096}),
        Invalid("import torch\nscaler = torch.GradScaler(\n    'cuda',\n    growth_interval=100,\n)\n",
                fixed="import torch\nscaler = torch.GradScaler(\n    'cuda',\n    growth_interval=100,\n    init_scale=8192,\n)\n"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qn = ctx.names.qualified(node.func)
        if qn not in GRAD_SCALER:
            return
        prec = ctx.precision
        use = next((s for s in prec.scalers if s.call is node), None)
        if use is None or prec.is_disabled(node, prec.scaler_enabled_index(use)):
            return
        low, high = self.opts["min-init-scale"], self.opts["max-init-scale"]
        arg = ctx.keyword(node, "init_scale")
        if arg is None:
            position = 1 if qn in DEVICE_FIRST_SCALERS else 0
            positional = [a for a in node.args if a.keyword is None]
            if any(a.star for a in node.args):
                return  # *args / **kwargs may carry init_scale
            arg = positional[position] if position < len(positional) else None
        value = _DEFAULT_INIT_SCALE if arg is None else ctx.number(arg.value)
        # Written as a name whose value the file settles (`init_scale=args.init_scale` with the
        # option's default 65536): judged by that value, fixed where it is written.
        source = ctx.sources.of_arg(arg) if value is None else None
        if source is not None and isinstance(source.value, (int, float)) and not isinstance(source.value, bool):
            value = source.value
        if value is None or low <= value <= high:
            return
        side = "overflows and skips the first steps" if value > high else "underflows small gradients until it grows"
        target = f"(start within {_fmt(low)}..{_fmt(high)})"
        if source is not None:
            self.report(node, f"GradScaler starts at `init_scale={ctx.code(arg.value)}` {source.condition()}, which "
                              f"{side}; {source.advice(_fmt(high))} {target}",
                        source.fix(self, _fmt(high), Applicability.UNSAFE))
            return
        given = "the default 65536" if arg is None else f"`init_scale={ctx.code(arg.value)}` ({_fmt(value)})"
        self.report(
            node,
            f"GradScaler starts at {given}, which {side}; set `init_scale={_fmt(high)}` {target}",
            self.fix(Applicability.UNSAFE, f"Set `init_scale={_fmt(high)}`", (node, self._with_scale(node, arg, _fmt(high)))),
        )

    def _with_scale(self, call: cst.Call, arg: cst.Arg | None, value: str) -> cst.Call:
        if arg is not None and arg.keyword is None:
            return call.with_changes(args=[a.with_changes(value=cst.parse_expression(value)) if a is arg else a
                                           for a in call.args])
        return self.ctx.with_keyword(call, "init_scale", value)
