"""TL4xx: mixed precision (seed article §4.1)."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.names import CANONICAL
from trainlint.analysis.precision import DEPRECATED_AMP, GRAD_SCALER
from trainlint.diagnostics import Applicability
from trainlint.rule import Invalid, Option, Rule, Valid

_DEPRECATED_MODULES = ("torch.cuda.amp", "torch.cpu.amp")
# torch.cuda.amp.autocast(enabled, dtype, cache_enabled): its positional order is not torch.amp.autocast's
# (device_type, dtype, enabled, cache_enabled), so positional arguments become keywords.
_OLD_AUTOCAST_POSITIONS = ("enabled", "dtype", "cache_enabled")
AMPERE_OR_NEWER = ("ampere", "ada", "hopper", "blackwell")
NO_TF32 = ("pascal", "volta", "turing")


def _no_space_equal() -> cst.AssignEqual:
    return cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _target_gpu(ctx) -> str:
    return getattr(ctx.settings, "target_gpu", "any") or "any"


# -- TL401 ----------------------------------------------------------------------------------

class DeprecatedCudaAmp(Rule):
    code = "TL401"
    name = "deprecated-cuda-amp"
    summary = "Deprecated `torch.cuda.amp` / `torch.cpu.amp` API (autocast, GradScaler, custom_fwd/bwd)"
    source = "§4.1"
    fix_applicability = "safe"
    triggers = ("amp",)
    docs = """
## What it does
Flags every spelling of the deprecated device-specific AMP API: `torch.cuda.amp.autocast(...)`,
`torch.cuda.amp.GradScaler(...)`, `from torch.cuda import amp` then `amp.autocast()`,
`from torch.cuda.amp import GradScaler as S`, `torch.cuda.amp.custom_fwd`, and the `torch.cpu.amp`
equivalents, through any import alias.

## Why is this bad?
These entry points are deprecated since PyTorch 2.4: each call emits a `FutureWarning` and they
will be removed. They also hard-code the device, which hides the dtype choice (float16 by
default on CUDA) that §4.1 asks you to make deliberately.

## Example
```python
from torch.cuda import amp

scaler = amp.GradScaler(enabled=use_amp)
with amp.autocast(enabled=use_amp):
    loss = model(x)
```

## Use instead
```python
import torch

scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
with torch.amp.autocast("cuda", enabled=use_amp):
    loss = model(x)
```

## Fix safety
Safe: `torch.amp.autocast("cuda", ...)` and `torch.amp.GradScaler("cuda", ...)` are what the
deprecated names call. All arguments are kept; positional `autocast` arguments become keywords,
since the new signature orders them differently. `import torch` is added when nothing binds
`torch`, and an import of the old API is removed once nothing uses it.
"""
    valid = [
        Valid("import torch\nwith torch.amp.autocast('cuda'):\n    y = model(x)\n"),
        Valid("import torch\nscaler = torch.amp.GradScaler('cuda', enabled=True)\n"),
        Valid("import torch\nwith torch.autocast(device_type='cuda', dtype=torch.bfloat16):\n    y = model(x)\n"),
        Valid("from apex import amp\nmodel, opt = amp.initialize(model, opt)\n"),
        Valid("from torch import amp\nscaler = amp.GradScaler('cuda')\n"),
        Valid("import torch\ncfg.amp.autocast = True\n"),
    ]
    invalid = [
        Invalid(
            "import torch\nwith torch.cuda.amp.autocast():\n    y = model(x)\n",
            fixed="import torch\nwith torch.amp.autocast(\"cuda\"):\n    y = model(x)\n",
        ),
        Invalid(
            "import torch\nscaler = torch.cuda.amp.GradScaler(init_scale=1024, enabled=use_amp)\n",
            fixed="import torch\nscaler = torch.amp.GradScaler(\"cuda\", init_scale=1024, enabled=use_amp)\n",
        ),
        Invalid(
            "import torch.nn as nn\nfrom torch.cuda import amp\n\nscaler = amp.GradScaler()\n"
            "with amp.autocast(enabled=use_amp):\n    y = model(x)\n",
            fixed="import torch.nn as nn\nimport torch\n\nscaler = torch.amp.GradScaler(\"cuda\")\n"
            "with torch.amp.autocast(\"cuda\", enabled=use_amp):\n    y = model(x)\n",
        ),
        Invalid(
            "import torch\nfrom torch.cuda.amp import GradScaler as S, autocast\n"
            "scaler = S(2.0**13)\nwith autocast(True, torch.float16):\n    y = model(x)\n",
            fixed="import torch\nscaler = torch.amp.GradScaler(\"cuda\", 2.0**13)\n"
            "with torch.amp.autocast(\"cuda\", enabled=True, dtype=torch.float16):\n    y = model(x)\n",
        ),
        Invalid(
            "import torch as th\nwith th.cuda.amp.autocast(enabled=amp):\n    y = model(x)\n",
            fixed="import torch as th\nwith th.amp.autocast(\"cuda\", enabled=amp):\n    y = model(x)\n",
        ),
        Invalid(
            "import torch\nclass F(torch.autograd.Function):\n    @staticmethod\n    @torch.cuda.amp.custom_fwd\n"
            "    def forward(ctx, x):\n        return x\n",
            fixed="import torch\nclass F(torch.autograd.Function):\n    @staticmethod\n"
            "    @torch.amp.custom_fwd(device_type=\"cuda\")\n    def forward(ctx, x):\n        return x\n",
        ),
        Invalid(
            "import contextlib\nimport torch\nctx = torch.cuda.amp.autocast if use_amp else contextlib.nullcontext\n",
            fixed="import contextlib\nimport torch\nimport functools\n"
            "ctx = functools.partial(torch.amp.autocast, \"cuda\") if use_amp else contextlib.nullcontext\n",
        ),
        Invalid(
            "import torch\nwith torch.cpu.amp.autocast(dtype=torch.bfloat16):\n    y = model(x)\n",
            fixed="import torch\nwith torch.amp.autocast(\"cpu\", dtype=torch.bfloat16):\n    y = model(x)\n",
        ),
        Invalid("from torch.cuda.amp import autocast\n", fixed=""),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        qn = self.ctx.names.qualified(node.func)
        if qn in DEPRECATED_AMP:
            self._report(node, qn, self._call_fix(node, qn))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.ctx.names.aliases:
            self._reference(node)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                target = self.ctx.dotted(alias.name)
                if target in _DEPRECATED_MODULES:
                    self._unused_import(node, alias, alias.asname.name.value, target)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = self.ctx.dotted(node.module)
        for alias in node.names:
            full = f"{module}.{self.ctx.dotted(alias.name)}"
            full = CANONICAL.get(full, full)
            if full in DEPRECATED_AMP or full in _DEPRECATED_MODULES:
                local = alias.asname.name.value if alias.asname is not None else self.ctx.dotted(alias.name)
                self._unused_import(node, alias, local, full)

    # -- reporting ----------------------------------------------------------------------

    def _report(self, node, qn: str, fix) -> None:
        device, new = DEPRECATED_AMP[qn]
        old = self.ctx.code(node.func if isinstance(node, cst.Call) else node)
        if new in ("autocast", "GradScaler"):
            use = f'torch.amp.{new}("{device}", ...)'
        else:
            use = f'torch.amp.{new}(device_type="{device}")'
        self.report(node, f"`{old}` is deprecated (FutureWarning, to be removed); use `{use}`", fix)

    def _reference(self, node: cst.CSTNode) -> None:
        """A deprecated name used as a value, decorator or annotation rather than called."""
        ctx = self.ctx
        qn = ctx.names.qualified(node)
        if qn not in DEPRECATED_AMP:
            return
        parent = ctx.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            return  # visit_Call
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return  # part of a longer name
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return  # the last part of an Attribute that is itself visited
        if ctx.index.enclosing(node, (cst.Import, cst.ImportFrom)) is not None:
            return
        self._report(node, qn, self._reference_fix(node, qn, parent))

    def _unused_import(self, stmt, alias, local: str, target: str) -> None:
        ctx = self.ctx
        if ctx.path.endswith("__init__.py") or self._is_used(local):
            return
        line = ctx.statement(stmt)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return
        if len(stmt.names) == 1:
            replacement = ctx.remove_statement(line)
        else:
            names = [a for a in stmt.names if a is not alias]
            names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            replacement = (stmt, stmt.with_changes(names=names))
        self.report(
            alias,
            f"`{target}` is deprecated and `{local}` is no longer used; remove the import",
            self.fix(Applicability.SAFE, f"Remove the unused import of `{target}`", replacement),
        )

    def _is_used(self, local: str) -> bool:
        ctx = self.ctx
        for name in ctx.index.nodes(cst.Name):
            if name.value != local:
                continue
            parent = ctx.parent(name)
            if isinstance(parent, (cst.ImportAlias, cst.AsName)):
                continue
            if isinstance(parent, cst.Attribute) and parent.attr is name:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is name:
                continue
            return True
        # `__all__ = ["autocast"]` or a string annotation still needs the name.
        return any(s.evaluated_value == local for s in ctx.index.nodes(cst.SimpleString)
                   if isinstance(s.evaluated_value, str))

    # -- fixes --------------------------------------------------------------------------

    def _amp(self) -> tuple[str, list]:
        return self.ctx.module_name("torch.amp")

    def _call_fix(self, call: cst.Call, qn: str):
        ctx = self.ctx
        device, new = DEPRECATED_AMP[qn]
        if any(a.star == "*" for a in call.args):
            return None  # positions unknown: cannot re-order for the new signature
        amp, extra = self._amp()
        q = ctx.quote
        device_str = cst.SimpleString(f"{q}{device}{q}")
        args = list(call.args)
        if new == "autocast":
            positions = iter(_OLD_AUTOCAST_POSITIONS)
            args = [a.with_changes(keyword=cst.Name(next(positions)), equal=_no_space_equal())
                    if a.keyword is None and not a.star else a for a in args]
        if new in ("autocast", "GradScaler"):
            first = cst.Arg(device_str, comma=_comma() if args else cst.MaybeSentinel.DEFAULT)
            args = [first, *args]
        else:  # custom_fwd / custom_bwd: device_type is keyword-only
            kw = cst.Arg(device_str, keyword=cst.Name("device_type"), equal=_no_space_equal())
            n_pos = sum(1 for a in args if a.keyword is None and not a.star)
            if args and n_pos < len(args):
                kw = kw.with_changes(comma=_comma())
            elif args:
                args[-1] = args[-1].with_changes(comma=_comma())
            args.insert(n_pos, kw)
        new_call = call.with_changes(func=cst.parse_expression(f"{amp}.{new}"), args=args)
        return self.fix(Applicability.SAFE, f"Use `torch.amp.{new}` with device `{device}`", (call, new_call), *extra)

    def _reference_fix(self, node, qn: str, parent):
        ctx = self.ctx
        device, new = DEPRECATED_AMP[qn]
        amp, extra = self._amp()
        q = ctx.quote
        if new in ("custom_fwd", "custom_bwd"):
            if not isinstance(parent, cst.Decorator):
                return None
            code = f"{amp}.{new}(device_type={q}{device}{q})"
        elif new == "GradScaler" and self._is_type_use(node, parent):
            code = f"{amp}.GradScaler"  # the deprecated class derives from it
        elif isinstance(parent, (cst.Arg, cst.Assign, cst.IfExp, cst.Element, cst.Return, cst.DictElement)) \
                and not isinstance(ctx.parent(parent), cst.ClassDef):  # a base class needs the class itself
            functools, extra2 = ctx.module_name("functools")
            extra = extra + extra2
            code = f"{functools}.partial({amp}.{new}, {q}{device}{q})"
        else:
            return None
        return self.fix(Applicability.SAFE, f"Use `torch.amp.{new}` with device `{device}`", (node, code), *extra)

    def _is_type_use(self, node, parent) -> bool:
        if isinstance(parent, cst.Annotation):
            return True
        if isinstance(parent, cst.Arg):
            call = self.ctx.parent(parent)
            if isinstance(call, cst.Call) and self.ctx.dotted(call.func) in ("isinstance", "issubclass") \
                    and len(call.args) == 2 and call.args[1] is parent:
                return True
        return False
