"""TL4xx: mixed precision (seed article §4.1)."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.imports import (
    is_reexport, name_uses, named_in_string, remove_unused_imports, third_party_import_place,
)
from trainlint.analysis.names import CANONICAL
from trainlint.analysis.precision import AUTOCAST, DEPRECATED_AMP, DEVICE_FIRST_SCALERS, GRAD_SCALER
from trainlint.diagnostics import Applicability
from trainlint import layout
from trainlint.rule import NO_FIX, Invalid, Option, Rule, Valid, target_allows

_DEPRECATED_MODULES = ("torch.cuda.amp", "torch.cpu.amp")
# torch.cuda.amp.autocast(enabled, dtype, cache_enabled): its positional order is not torch.amp.autocast's
# (device_type, dtype, enabled, cache_enabled), so positional arguments become keywords.
_OLD_AUTOCAST_POSITIONS = ("enabled", "dtype", "cache_enabled")
AMPERE_OR_NEWER = ("ampere", "ada", "hopper", "blackwell")
BEFORE_AMPERE = ("pascal", "volta", "turing")


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
    requires_torch = "2.4"  # torch.cuda.amp's FutureWarnings; torch.amp.GradScaler itself is 2.3
    # Every deprecated spelling reaches the API through one of these (`torch.cuda.amp.autocast`,
    # `from torch.cuda import amp`, `import torch.cuda as tc`); plain "amp" matched "example".
    triggers = ("cuda.amp", "cpu.amp", "cuda import", "cpu import", "torch.cuda as", "torch.cpu as")
    docs = """
## What it does
Flags every spelling of the deprecated device-specific AMP API: `torch.cuda.amp.autocast(...)`,
`torch.cuda.amp.GradScaler(...)`, `from torch.cuda import amp` then `amp.autocast()`,
`from torch.cuda.amp import GradScaler as S`, `torch.cuda.amp.custom_fwd`, and the `torch.cpu.amp`
equivalents, through any import alias. A class named only in a type annotation, a type test
(`isinstance(s, torch.cuda.amp.GradScaler)`) or a type comparison constructs nothing and warns
nothing, so it is not flagged itself.

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
`torch`, and an import of the old API is removed once nothing uses it, except where the module
exports it: in an `__init__.py`, a name in `__all__`, or an explicit re-export (`from torch.cuda.amp
import autocast as autocast`). trainlint reads one file at a time, so a plain module that another
one imports the name from (`from common import autocast`) should say so in one of these ways.
The old classes subclass torch.amp's, so what the fix constructs is not an instance of the old
class: `isinstance(s, torch.cuda.amp.GradScaler)` (or `issubclass`) in the module is rewritten in
the same fix to test `torch.amp.GradScaler`, which both pass. Where that would not hold, the
call is reported without a fix: the module compares the type (`type(s) is
torch.cuda.amp.GradScaler`), or it also uses another GradScaler class (`torch.amp.GradScaler("cpu")`),
which the base-class test would let through too (the same for autocast). A name bound to the
old class (`Scaler = torch.cuda.amp.GradScaler`) is bound to
`functools.partial(torch.amp.GradScaler, "cuda")` instead, which can be called alike but is no
class: where the module uses the name as one (`isinstance(s, Scaler)`, a comparison, a base
class, `Scaler.__name__`), it is reported without a fix. The old class already given to
`functools.partial(...)` gets the device among the partial's arguments
(`functools.partial(torch.amp.autocast, "cuda", dtype=...)`), autocast's arguments by position
becoming keywords as in a call. A name bound to the old autocast and called with arguments by
position (`amp_ctx(True)`: `enabled` there, `dtype` after the new one's device) is reported
without a fix.
"""
    valid = [
        Valid("import torch\nwith torch.amp.autocast('cuda'):\n    y = model(x)\n"),
        Valid("import torch\nscaler = torch.amp.GradScaler('cuda', enabled=True)\n"),
        # Not deprecated before PyTorch 2.4 (and torch.amp.GradScaler is not there before 2.3).
        Valid("import torch\nscaler = torch.cuda.amp.GradScaler()\nwith torch.cuda.amp.autocast():\n    y = model(x)\n",
              settings={"target_torch": "2.2"}),
        Valid("import torch\nwith torch.autocast(device_type='cuda', dtype=torch.bfloat16):\n    y = model(x)\n"),
        Valid("from apex import amp\nmodel, opt = amp.initialize(model, opt)\n"),
        Valid("from torch import amp\nscaler = amp.GradScaler('cuda')\n"),
        Valid("import torch\ncfg.amp.autocast = True\n"),
        # Old-PyTorch arms of version gates are deliberate fallbacks (ultralytics, accelerate).
        Valid("import torch\nscaler = torch.amp.GradScaler('cuda') if TORCH_2_4 else torch.cuda.amp.GradScaler()\n"),
        Valid("import torch\nif is_torch_version('>=', '2.4.0'):\n    from torch.amp import GradScaler\nelse:\n"
              "    from torch.cuda.amp import GradScaler\ndef save(scaler: GradScaler):\n    pass\n"),
        Valid("try:\n    from torch.amp import autocast\nexcept ImportError:\n    from torch.cuda.amp import autocast\n"
              "with autocast('cuda'):\n    y = model(x)\n"),
        Valid("if new_torch:\n    from torch.amp import GradScaler\nelse:\n    from torch.cuda.amp import GradScaler\n"
              "def save(scaler: GradScaler = None):\n    s = GradScaler()\n"),
        Valid("import torch\ndef restore(scaler: torch.cuda.amp.GradScaler) -> torch.cuda.amp.GradScaler:\n"
              "    assert isinstance(scaler, torch.cuda.amp.GradScaler)\n"),
        Valid("import torch\ndef is_cuda_scaler(s):\n    return type(s) is torch.cuda.amp.GradScaler\n"),
    ]
    invalid = [
        # Inside an f-string delimited by the file's quote, the device is written in the other one
        # (the same quote there parses only from Python 3.12 on).
        # An explicit re-export (`as` the same name) stays for the modules importing it from here.
        Invalid("import torch\nfrom torch.cuda.amp import autocast as autocast\nwith autocast():\n    y = f(x)\n",
                fixed="import torch\nfrom torch.cuda.amp import autocast as autocast\nwith torch.amp.autocast(\"cuda\"):\n"
                      "    y = f(x)\n"),
        Invalid('import torch\nprint(f"scaler: {torch.cuda.amp.GradScaler(enabled=False)}")\n',
                fixed='import torch\nprint(f"scaler: {torch.amp.GradScaler(\'cuda\', enabled=False)}")\n'),
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
            fixed="import torch\nimport torch.nn as nn\n\nscaler = torch.amp.GradScaler(\"cuda\")\n"
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
            fixed="import contextlib\nimport functools\nimport torch\n"
            "ctx = (\n    functools.partial(torch.amp.autocast, \"cuda\") if use_amp else contextlib.nullcontext\n)\n",
        ),
        Invalid(
            "import torch\nwith torch.cpu.amp.autocast(dtype=torch.bfloat16):\n    y = model(x)\n",
            fixed="import torch\nwith torch.amp.autocast(\"cpu\", dtype=torch.bfloat16):\n    y = model(x)\n",
        ),
        Invalid("from torch.cuda.amp import autocast\n", fixed=""),
        Invalid(
            "import torch\ndef evaluate(args):\n    if args.fp16:\n        from torch.cuda import amp\n"
            "    with amp.autocast():\n        pass\n",
            fixed="import torch\ndef evaluate(args):\n    if args.fp16:\n        pass\n"
            "    with torch.amp.autocast(\"cuda\"):\n        pass\n",
        ),
        # The import opened its block: the next statement moves up without its blank line.
        Invalid(
            "import torch\ndef train(args):\n    if args.fp16:\n        from torch.cuda import amp\n\n"
            "        scaler = amp.GradScaler()\n    return scaler\n",
            fixed="import torch\ndef train(args):\n    if args.fp16:\n        scaler = torch.amp.GradScaler(\"cuda\")\n"
            "    return scaler\n",
        ),
        # Not a version gate: sentence-transformers picks the device, not the PyTorch version.
        Invalid("import torch\nif device_type == 'cuda':\n    scaler = torch.cuda.amp.GradScaler()\n",
                fixed="import torch\nif device_type == 'cuda':\n    scaler = torch.amp.GradScaler('cuda')\n"),
        # torch.cuda.amp.GradScaler subclasses torch.amp.GradScaler: a type test against the old class
        # would be False for the new one's instances, so it tests the base class (True for both).
        Invalid("import torch\nscaler = torch.cuda.amp.GradScaler(enabled=False)\n"
                "print(isinstance(scaler, torch.cuda.amp.GradScaler))\n",
                fixed="import torch\nscaler = torch.amp.GradScaler(\"cuda\", enabled=False)\n"
                "print(isinstance(scaler, torch.amp.GradScaler))\n"),
        Invalid("from torch.cuda.amp import GradScaler\nclass Scaler(GradScaler):\n    pass\n"
                "scaler = GradScaler()\nassert issubclass(type(scaler), (GradScaler, dict))\n",
                fixed="import torch\nfrom torch.cuda.amp import GradScaler\nclass Scaler(GradScaler):\n    pass\n"
                "scaler = torch.amp.GradScaler(\"cuda\")\nassert issubclass(type(scaler), (torch.amp.GradScaler, dict))\n"),
        # A type compared, or a test that would then also hold for a scaler the module makes otherwise:
        # reported, no fix.
        Invalid("import torch\nscaler = torch.cuda.amp.GradScaler()\nassert type(scaler) is torch.cuda.amp.GradScaler\n",
                fixed=NO_FIX, message="compares the type"),
        Invalid("import torch\nscalers = [torch.cuda.amp.GradScaler(), torch.amp.GradScaler('cpu')]\n"
                "cuda_scalers = [s for s in scalers if isinstance(s, torch.cuda.amp.GradScaler)]\n",
                fixed=NO_FIX, message="which the `torch.amp.GradScaler` used here passes too"),
        # A name bound to the old class and used as one: a functools.partial is no class.
        Invalid("import torch\nScaler = torch.cuda.amp.GradScaler\ns = Scaler(enabled=False)\nprint(isinstance(s, Scaler))\n",
                fixed=NO_FIX, message="`isinstance(s, Scaler)` uses it as a class"),
        # Already the function of a partial: the device joins the partial's arguments. A partial
        # binding arguments by position: they would land on other parameters after the device.
        Invalid("import functools\nimport torch\nctx = functools.partial(torch.cuda.amp.autocast, dtype=torch.float16)\n",
                fixed="import functools\nimport torch\nctx = functools.partial(torch.amp.autocast, \"cuda\", dtype=torch.float16)\n"),
        Invalid("from functools import partial\nimport torch\nctx = partial(torch.cuda.amp.autocast)\n",
                fixed="from functools import partial\nimport torch\nctx = partial(torch.amp.autocast, \"cuda\")\n"),
        Invalid("import functools\nimport torch\nctx = functools.partial(torch.cuda.amp.autocast, True)\n",
                fixed="import functools\nimport torch\nctx = functools.partial(torch.amp.autocast, \"cuda\", enabled=True)\n"),
        Invalid("import functools\nimport torch\nmake = functools.partial(torch.cuda.amp.GradScaler, 1024.0)\n",
                fixed="import functools\nimport torch\nmake = functools.partial(torch.amp.GradScaler, \"cuda\", 1024.0)\n"),
        # The bound name called with autocast's arguments by position: `enabled` there, `dtype`
        # after the device. (GradScaler's positions are the same after the device.)
        Invalid("import torch\namp_ctx = torch.cuda.amp.autocast\nwith amp_ctx(True):\n    pass\n",
                fixed=NO_FIX, message="`amp_ctx(True)` passes arguments by position"),
        Invalid("import torch\nScaler = torch.cuda.amp.GradScaler\ns = Scaler(1024.0)\n",
                fixed="import functools\n\nimport torch\nScaler = functools.partial(torch.amp.GradScaler, \"cuda\")\n"
                "s = Scaler(1024.0)\n"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        qn = self.ctx.names.qualified(node.func)
        if qn in DEPRECATED_AMP and not self._also_bound_to_new_api(node.func):
            self._report(node, qn, *self._call_fix(node, qn))

    def _also_bound_to_new_api(self, func) -> bool:
        """`GradScaler` imported from torch.amp on one path and torch.cuda.amp on another (a version
        check or try/except): the module already uses the new API where it exists."""
        head = (self.ctx.dotted(func) or "").split(".", 1)[0]
        return head in self._version_switched

    @property
    def _version_switched(self) -> set[str]:
        cached = getattr(self, "_switched", None)
        if cached is None:
            bound: dict[str, set[str]] = {}
            for node in self.ctx.index.nodes(cst.ImportFrom):
                if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
                    continue
                module = self.ctx.dotted(node.module)
                for alias in node.names:
                    local = alias.asname.name.value if alias.asname is not None else self.ctx.dotted(alias.name)
                    full = f"{module}.{self.ctx.dotted(alias.name)}"
                    bound.setdefault(local, set()).add(CANONICAL.get(full, full))
            cached = self._switched = {
                local for local, targets in bound.items()
                if targets & set(DEPRECATED_AMP) and targets - set(DEPRECATED_AMP) - set(_DEPRECATED_MODULES)
            }
        return cached

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

    def _report(self, node, qn: str, fix, note: str = "") -> None:
        if self.ctx.is_version_fallback(node):
            return  # the old-PyTorch arm of a version gate (ultralytics, accelerate): deliberate
        device, new = DEPRECATED_AMP[qn]
        old = self.ctx.code(node.func if isinstance(node, cst.Call) else node)
        if new in ("autocast", "GradScaler"):
            use = f'torch.amp.{new}("{device}", ...)'
        else:
            use = f'torch.amp.{new}(device_type="{device}")'
        self.report(node, f"`{old}` is deprecated (FutureWarning, to be removed); use `{use}`{note}", fix)

    def _reference(self, node: cst.CSTNode) -> None:
        """A deprecated name used as a value, decorator or annotation rather than called."""
        ctx = self.ctx
        qn = ctx.names.qualified(node)
        if qn not in DEPRECATED_AMP or self._also_bound_to_new_api(node):
            return
        parent = ctx.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            return  # visit_Call
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return  # part of a longer name
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return  # the last part of an Attribute that is itself visited
        if ctx.index.enclosing(node, (cst.Import, cst.ImportFrom, cst.Annotation)) is not None:
            return  # imports are handled on their own; type annotations never construct, so never warn
        if self._is_type_use(node, parent) or node in self._class_uses.get(qn, {}).get("compared", ()):
            return  # isinstance(s, torch.cuda.amp.GradScaler), `type(s) is ...` construct nothing either
        self._report(node, qn, *self._reference_fix(node, qn, parent))

    def _unused_import(self, stmt, alias, local: str, target: str) -> None:
        ctx = self.ctx
        if ctx.path.endswith("__init__.py") or local in self._version_switched or self._is_used(local) \
                or ctx.is_version_fallback(stmt) or is_reexport(alias):
            return
        line = ctx.statement(stmt)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return
        if len(stmt.names) == 1:
            block = ctx.parent(line)
            others = [s for s in getattr(block, "body", ()) if s is not line and not self._is_deprecated_import(s)]
            if isinstance(block, cst.IndentedBlock) and not others:
                # `if args.fp16:\n    from torch.cuda import amp`: the block must keep a statement.
                replacement = (line, line.with_changes(body=[cst.Pass()]))
            elif isinstance(block, cst.IndentedBlock) and block.body[0] is line:
                # The block's first statement: the next one moves up without its blank lines
                # (`if args.fp16:\n    from torch.cuda import amp\n\n    scaler = ...`).
                replacement = ctx.block_without(line)
            else:
                replacement = ctx.remove_statement(line)
        else:
            names = [a for a in stmt.names if a is not alias]
            names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            replacement = (stmt, stmt.with_changes(names=names))
        self.report(
            alias,
            f"`{target}` is deprecated and `{local}` is no longer used; remove the import",
            # Mostly what the rewrites of the names' uses leave behind, a round later: counted as
            # fixed only when the import was unused from the start (fixer._follow_ups).
            self.fix(Applicability.SAFE, f"Remove the unused import of `{target}`", replacement, follow_up=True),
        )

    def _is_deprecated_import(self, stmt) -> bool:
        """A statement line that only imports the deprecated API (it may go in the same round)."""
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
            return False
        node = stmt.body[0]
        if isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
            return (self.ctx.dotted(node.module) or "").startswith(("torch.cuda.amp", "torch.cpu.amp")) or \
                self.ctx.dotted(node.module) in ("torch.cuda", "torch.cpu") and not isinstance(node.names, cst.ImportStar) \
                and all(self.ctx.dotted(a.name) == "amp" for a in node.names)
        return False

    def _is_used(self, local: str) -> bool:
        return bool(name_uses(self.ctx, local)) or named_in_string(self.ctx, local)

    # -- fixes --------------------------------------------------------------------------

    def _amp(self) -> tuple[str, list]:
        return self.ctx.module_name("torch.amp")

    def _call_fix(self, call: cst.Call, qn: str):
        """The fix of a call of the old API and a note for the message (why there is none)."""
        ctx = self.ctx
        device, new = DEPRECATED_AMP[qn]
        if any(a.star == "*" for a in call.args):
            return None, ""  # positions unknown: cannot re-order for the new signature
        tests, note = self._type_tests(qn, call)
        if tests is None:
            return None, note
        amp, extra = self._amp()
        q = ctx.quote_at(call)
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
        return self.fix(Applicability.SAFE, f"Use `torch.amp.{new}` with device `{device}`", (call, new_call),
                        *self._base_class_tests(tests, new), *extra), ""

    def _reference_fix(self, node, qn: str, parent):
        ctx = self.ctx
        device, new = DEPRECATED_AMP[qn]
        amp, extra = self._amp()
        q = ctx.quote_at(node)
        tests: list = []
        if new in ("custom_fwd", "custom_bwd"):
            if not isinstance(parent, cst.Decorator):
                return None, ""
            code = f"{amp}.{new}(device_type={q}{device}{q})"
        elif isinstance(parent, (cst.Arg, cst.Assign, cst.IfExp, cst.Element, cst.Return, cst.DictElement)) \
                and not isinstance(ctx.parent(parent), cst.ClassDef):  # a base class needs the class itself
            tests, note = self._type_tests(qn, node)
            if tests is None:
                return None, note
            class_use = self._bound_name_used_as_class(node)
            if class_use is not None:
                return None, (f"; not fixed: `{ctx.code(class_use)}` uses it as a class, which the "
                              f"`functools.partial` the fix would bind is not")
            if new == "autocast" and (called := self._bound_name_called_by_position(node)) is not None:
                return None, (f"; not fixed: `{ctx.code(called)}` passes arguments by position, which "
                              f"`torch.amp.autocast` reads as other parameters after its device")
            partial = self._partial_of(parent)
            if partial is not None:
                # Already the function of a partial: the device joins its arguments (no partial
                # of a partial), and autocast's positional ones become keywords as in a call.
                device_arg = parent.with_changes(value=cst.parse_expression(f"{q}{device}{q}"))
                first = cst.Arg(cst.parse_expression(f"{amp}.{new}"),
                                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                if device_arg.comma is cst.MaybeSentinel.DEFAULT and len(partial.args) > 1:
                    device_arg = device_arg.with_changes(comma=first.comma)
                rest = list(partial.args[1:])
                if new == "autocast":
                    if any(a.star for a in rest):
                        return None, ""  # positions unknown
                    positions = iter(_OLD_AUTOCAST_POSITIONS)
                    rest = [a.with_changes(keyword=cst.Name(next(positions)), equal=_no_space_equal())
                            if a.keyword is None else a for a in rest]
                replacement = (partial, partial.with_changes(args=[first, device_arg, *rest]))
            else:
                functools, extra2 = ctx.module_name("functools")
                extra = extra + extra2
                replacement = (node, cst.parse_expression(f"{functools}.partial({amp}.{new}, {q}{device}{q})"))
            return self.fix(Applicability.SAFE, f"Use `torch.amp.{new}` with device `{device}`",
                            replacement, *self._base_class_tests(tests, new), *extra), ""
        else:
            return None, ""
        return self.fix(Applicability.SAFE, f"Use `torch.amp.{new}` with device `{device}`",
                        (node, cst.parse_expression(code)), *self._base_class_tests(tests, new), *extra), ""

    def _partial_of(self, parent) -> cst.Call | None:
        """The `functools.partial(...)` call whose function argument `parent` is."""
        call = self.ctx.parent(parent) if isinstance(parent, cst.Arg) else None
        if isinstance(call, cst.Call) and call.args and call.args[0] is parent and parent.keyword is None \
                and not parent.star and self.ctx.names.qualified(call.func) == "functools.partial":
            return call
        return None

    # -- the old classes' other uses ----------------------------------------------------
    #
    # torch.cuda.amp.GradScaler (and autocast, and the torch.cpu.amp ones) subclass torch.amp's
    # class: what the fix constructs instead is not an instance of the old class. A type test
    # against the old class would turn False; against the base class it holds for both.

    def _type_tests(self, qn: str, replaced: cst.CSTNode) -> tuple[list | None, str]:
        """For a fix that makes `qn` construct torch.amp's class instead: the isinstance/issubclass
        references to `qn` to test the base class in the same fix; None (and why, for the message)
        when the module's other uses of the class would change: a type compared (`type(s) is ...`),
        or a test the base class would also pass for a scaler the module makes otherwise
        (`torch.amp.GradScaler("cpu")` beside it)."""
        ctx = self.ctx
        new = DEPRECATED_AMP[qn][1]
        if new not in ("autocast", "GradScaler"):
            return [], ""
        uses = self._class_uses
        compared = [n for n in uses.get(qn, {}).get("compared", ()) if not self._also_bound_to_new_api(n)]
        if compared:
            where = ctx.index.enclosing(compared[0], (cst.Comparison, cst.MatchClass))
            return None, (f"; not fixed: `{ctx.code(where)}` compares the type, which a `torch.amp.{new}` is not")
        tests = [n for n in uses.get(qn, {}).get("tests", ()) if not self._also_bound_to_new_api(n)]
        if any(ctx.index.contains(replaced, n) for n in tests):
            return None, ""
        if tests:
            family = GRAD_SCALER if new == "GradScaler" else AUTOCAST
            others = sorted(q for q in family if q != qn and any(uses.get(q, {}).get(kind) for kind in
                                                                 ("calls", "tests", "compared", "other")))
            if others:
                test = ctx.index.enclosing(tests[0], cst.Call)
                return None, (f"; not fixed: `{ctx.code(test)}` would have to test the base class "
                              f"`torch.amp.{new}`, which the `{others[0]}` used here passes too")
        return tests, ""

    def _base_class_tests(self, tests: list, new: str) -> list:
        amp, extra = self._amp()
        return [(node, cst.parse_expression(f"{amp}.{new}")) for node in tests]

    @property
    def _class_uses(self) -> dict[str, dict[str, list]]:
        """References to the AMP classes (torch.amp's and the old ones), by qualified name and kind:
        "calls", "tests" (isinstance/issubclass's class argument, or in its tuple), "compared" (in a
        comparison or a `case` class pattern), "other"; imports and annotations are left out."""
        cached = getattr(self, "_uses", None)
        if cached is not None:
            return cached
        ctx = self.ctx
        classes = set(GRAD_SCALER) | set(AUTOCAST)
        out: dict[str, dict[str, list]] = {}
        for node in [*ctx.index.nodes(cst.Attribute), *ctx.index.nodes(cst.Name)]:
            parent = ctx.parent(node)
            if isinstance(parent, cst.Attribute) and (parent.attr is node or parent.value is node):
                continue  # part of a longer name
            qn = ctx.names.qualified(node)
            if qn not in classes:
                continue
            if ctx.index.enclosing(node, (cst.Import, cst.ImportFrom, cst.Annotation)) is not None:
                continue
            if isinstance(parent, cst.Call) and parent.func is node:
                kind = "calls"
            elif self._is_type_test(node, parent):
                kind = "tests"
            elif ctx.index.enclosing(node, (cst.Comparison, cst.MatchClass)) is not None:
                kind = "compared"
            else:
                kind = "other"
            out.setdefault(qn, {}).setdefault(kind, []).append(node)
        self._uses = out
        return out

    def _bound_name_uses(self, node):
        """(use, its parent) for each use of the name an assignment binds the old class to
        (`Scaler = torch.cuda.amp.GradScaler`, maybe in a conditional expression)."""
        ctx = self.ctx
        parent = ctx.parent(node)
        while isinstance(parent, cst.IfExp):
            parent = ctx.parent(parent)
        if not isinstance(parent, cst.Assign):
            return
        names = {ctx.dotted(t.target) for t in parent.targets} - {None}
        for use in [*ctx.index.nodes(cst.Name), *ctx.index.nodes(cst.Attribute)]:
            if ctx.dotted(use) not in names or any(use is t.target for t in parent.targets):
                continue
            above = ctx.parent(use)
            if isinstance(above, cst.Attribute) and above.attr is use:
                continue  # `self.Scaler`'s `Scaler`
            yield use, above

    def _bound_name_used_as_class(self, node) -> cst.CSTNode | None:
        """Where the name bound to the old class is used as a class rather than called: a type
        test, a comparison, a base class, an attribute (`Scaler.__name__`); None when nowhere."""
        ctx = self.ctx
        for use, above in self._bound_name_uses(node):
            if isinstance(above, cst.Attribute) and above.value is use:
                return above
            if self._is_type_test(use, above) or isinstance(above, cst.Arg) and isinstance(ctx.parent(above), cst.ClassDef):
                return ctx.index.enclosing(use, (cst.Call, cst.ClassDef))
            where = ctx.index.enclosing(use, (cst.Comparison, cst.MatchClass))
            if where is not None:
                return where
        return None

    def _bound_name_called_by_position(self, node) -> cst.Call | None:
        """A call of the name bound to the old autocast that passes arguments by position
        (`amp_ctx(True)`: `enabled` there, `dtype` after torch.amp.autocast's device)."""
        for use, above in self._bound_name_uses(node):
            if isinstance(above, cst.Call) and above.func is use and any(a.keyword is None for a in above.args):
                return above
        return None

    def _is_type_test(self, node, parent) -> bool:
        """node is isinstance/issubclass's class argument, or an element of its tuple."""
        if isinstance(parent, cst.Element) and isinstance(self.ctx.parent(parent), cst.Tuple):
            parent = self.ctx.parent(self.ctx.parent(parent))
            if not isinstance(parent, cst.Arg):
                return False
        return self._is_type_use(node, parent) and isinstance(parent, cst.Arg)

    def _is_type_use(self, node, parent) -> bool:
        if isinstance(parent, cst.Annotation):
            return True
        if isinstance(parent, cst.Arg):
            call = self.ctx.parent(parent)
            if isinstance(call, cst.Call) and self.ctx.dotted(call.func) in ("isinstance", "issubclass") \
                    and len(call.args) == 2 and call.args[1] is parent:
                return True
        return False


# -- TL402 ----------------------------------------------------------------------------------

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

# Scaler methods the Ampere fix rewrites: scale(x) -> x, step(opt) -> opt.step(); update/unscale_ go.
_SCALER_DROPPED = ("update", "unscale_")


_CHOICE_LINE = ("amp_dtype = (\n    torch.bfloat16\n    if torch.cuda.is_bf16_supported(including_emulation=False)\n"
                "    else torch.float16\n)\n")


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
Flags a float16 autocast region (an explicit `dtype=torch.float16`, or no dtype on CUDA, whose
default is float16; also opened through a name bound to autocast or to
`functools.partial(torch.amp.autocast, "cuda")`, where the fix passes `dtype=` at the call, or
used as a decorator, `@torch.autocast("cuda")` above a module's `forward` or a function the
training step calls) in a file that also trains with a `GradScaler` (or FSDP's `ShardedGradScaler`);
and the framework settings
that do the same inside the framework: `fp16=True` in transformers' `TrainingArguments` (and
trl's or sentence-transformers' subclasses), Lightning's `precision="16-mixed"` (or `16`) for a
`Trainer` or `Fabric`, accelerate's `Accelerator(mixed_precision="fp16")`. A file that already
chooses bfloat16 when the GPU supports it (it asks `torch.cuda.is_bf16_supported()`, its autocast
dtype can be bfloat16, or its scaler is enabled by dtype) is not flagged, nor is a setting whose
value is not written literally (`fp16=args.fp16`: the user's choice) or that has `bf16=` beside it,
nor one that trains on the CPU (`accelerator="cpu"`, where Lightning runs bfloat16 itself), nor a
setting in a test file (it tests the float16 path). With `target-gpu` older than Ampere (pascal,
volta, turing) the rule is off: float16 with a scaler is the right choice there.

A `with autocast(...)` in a module's `forward` pairs with the loop's scaler as the decorator
does. An autocast whose device is chosen at run time (`device_type=dev.type`) gets the GPU's dtype
choice on CUDA only and keeps its own dtype elsewhere.

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
GPU while the decorated function still runs in float16.
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
        # Autocast through a partial of it that already runs in bfloat16.
        Valid(("import functools\n" + _LOOP.replace("torch.autocast({aargs})", "autocast_ctx()"))
              .format(pre="autocast_ctx = functools.partial(torch.amp.autocast, 'cuda', dtype=torch.bfloat16)\n",
                      sargs="'cuda'")),
    ]
    invalid = [
        # A name that is autocast or else a null context: reported, no fix (`ctx(dtype=...)` would fail
        # on the other path).
        Invalid(("import contextlib\nimport functools\n" + _LOOP.replace("torch.autocast({aargs})", "ctx()"))
                .format(pre="ctx = functools.partial(torch.amp.autocast, 'cuda') if use_amp else contextlib.nullcontext\n",
                        sargs="'cuda'"), fixed=NO_FIX),
        Invalid(("import contextlib\n" + _LOOP.replace("torch.autocast({aargs})", "ctx('cuda')"))
                .format(pre="ctx = torch.autocast if use_amp else contextlib.nullcontext\n", sargs="'cuda'"),
                fixed=NO_FIX, message="autocast runs in float16 implicitly"),
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
        if self.ctx.precision.chooses_bf16 or _target_gpu(self.ctx) in BEFORE_AMPERE:
            return
        self._check_frameworks()
        self._check_autocasts()

    # -- a framework's float16 setting -------------------------------------------------

    def _check_frameworks(self) -> None:
        """`TrainingArguments(fp16=True)`, Lightning's `precision="16-mixed"`, accelerate's
        `mixed_precision="fp16"`: the framework pairs a float16 autocast with a GradScaler. One fix
        changes them all: once one asks `is_bf16_supported()`, the file counts as choosing."""
        ctx = self.ctx
        if _is_test_file(ctx.path):
            return  # a test that sets float16 tests the float16 path (accelerate's test_script.py)
        uses = [u for u in ctx.precision.framework_fp16 if not self._chooses_beside(u)]
        if not uses:
            return
        ampere = _target_gpu(ctx) in AMPERE_OR_NEWER
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
            where = f"target-gpu is {_target_gpu(ctx)}, so use" if ampere else "on Ampere or newer use bfloat16:"
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
        autocasts = [a for a in prec.autocasts
                     if a.device != "cpu" and not prec.autocast_is_disabled(a)
                     and prec.autocast_dtypes(a) == {"float16"}
                     and (not trains_here or self._in_training_step(a))]
        if not autocasts:
            return
        ampere = _target_gpu(ctx) in AMPERE_OR_NEWER
        decorator = next((a for a in autocasts if a.decorates is not None), None)
        note = ""
        if any(a.optional for a in autocasts):
            # A name bound to autocast or else to a null context (`ctx = torch.autocast if use_amp else
            # contextlib.nullcontext`): `ctx("cuda", dtype=...)` would raise TypeError on the null
            # context's path. Reported, no fix.
            fix = None
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
            fix = self._ampere_fix(autocasts, scalers) if ampere else self._runtime_fix(autocasts, scalers)
        for use in autocasts:
            how = "implicitly (CUDA's default)" if prec.autocast_dtype_expr(use) is None else "as `torch.float16`"
            what = (f"autocast decorating `{use.decorates.name.value}` runs it" if use.decorates is not None
                    else "autocast runs")
            if ampere:
                message = (f"{what} in float16 {how} with a GradScaler; target-gpu is {_target_gpu(ctx)}, so use "
                           f"`dtype=torch.bfloat16` and drop the GradScaler (bfloat16 has float32's range, no loss scaling)")
            else:
                message = (f"{what} in float16 {how} with a GradScaler; on Ampere or newer use bfloat16 (float32's "
                           f"range, no loss scaling): `dtype=torch.bfloat16 if {_bf16_check(ctx, 'torch')} else "
                           f"torch.float16`, scaler enabled only for float16{note}")
            self.report(use.call, message, fix)

    def _in_training_step(self, use) -> bool:
        """The autocast region takes part in every training step. A decorated function's region is
        its body: a module's `forward` runs under the model call of the step; another function when
        the step calls it (or it runs the step itself)."""
        loops = self.ctx.loops
        if use.decorates is None:
            # `with autocast(...):` in a module's `forward` runs under the step's model call too.
            fn = self.ctx.index.enclosing_function(use.call)
            in_forward = fn is not None and fn.name.value == "forward" and self.ctx.index.enclosing_class(fn) is not None
            return in_forward or loops.in_training_step(use.call)
        if use.decorates.name.value == "forward":
            return True
        return loops.in_training_step(use.decorates.body)

    # -- the run-time choice ------------------------------------------------------------

    def _runtime_fix(self, autocasts, scalers):
        ctx = self.ctx
        prec = ctx.precision
        torch, extra = ctx.module_name("torch")
        check = _bf16_check(ctx, torch)
        choice = f"{torch}.bfloat16 if {check} else {torch}.float16"
        var = self._shared_variable(autocasts, scalers[0])
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
        for use in autocasts:
            this_dtype = dtype_code
            if use.device is None and use.partial is None:
                # A device chosen at run time (`device_type=dev.type`): the GPU's choice applies on
                # CUDA only; elsewhere autocast keeps its own default (bfloat16 on the CPU).
                device = ctx.keyword(use.call, "device_type") or next(
                    (a for a in use.call.args if a.keyword is None and not a.star), None)
                if device is not None:
                    q = ctx.quote_at(use.call)
                    before = prec.autocast_dtype_expr(use)  # elsewhere the dtype it had (None: the default)
                    other = ctx.code(before) if before is not None else "None"
                    this_dtype = (f"{dtype_code if var else f'({choice})'} if {ctx.code(device.value)} == {q}cuda{q} "
                                  f"else {other}")
            new_call = _set_dtype(ctx, use, this_dtype)
            if new_call is None:
                return None
            replacements.append((use.call, new_call))
        if var:
            stmt = ctx.statement(scalers[0].call)
            replacements.append(ctx.insert_before(stmt, _assignment(ctx, stmt, var, choice)))
        # Each scaler call is its own replacement (the insertion above ends before the first one
        # starts), so the engine wraps it when `enabled=` makes its line too long.
        replacements.extend((use.call, new_scalers[use.call]) for use in scalers)
        return self.fix(Applicability.UNSAFE, "Use bfloat16 where the GPU supports it; keep the scaler for float16 only",
                        *replacements)

    def _shared_variable(self, autocasts, scaler) -> str | None:
        """A variable (or `self.` attribute) for the dtype, defined just before the first scaler, when
        every autocast can see it; None means write the choice inline."""
        ctx = self.ctx
        index = ctx.index
        stmt = ctx.statement(scaler.call)
        if stmt is None:
            return None
        fn = index.enclosing_function(scaler.call)
        block = ctx.parent(stmt)
        home = fn.body if fn is not None else ctx.module
        if block is not home:
            return None  # created under a condition: the variable would not always exist
        order = {c: i for i, c in enumerate(index.nodes(cst.Call))}
        target = None
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign):
            target = ctx.dotted(stmt.body[0].targets[0].target)
        cls = index.enclosing_class(fn) if fn is not None else None
        use_self = False
        for use in autocasts:
            fn_a = index.enclosing_function(use.call)
            if fn is None and fn_a is None and order[use.call] < order[scaler.call]:
                return None
            if fn is None:
                continue  # a module-level variable, read by functions when they run
            if fn_a is fn and order[use.call] > order[scaler.call]:
                continue
            if target and target.startswith("self.") and cls is not None and fn_a is not None \
                    and index.enclosing_class(fn_a) is cls:
                use_self = True
                continue
            return None
        name = ctx.fresh_name("amp_dtype", "autocast_dtype")
        return f"self.{name}" if use_self else name

    # -- target-gpu ampere or newer: plain bf16, no scaler --------------------------------

    def _ampere_fix(self, autocasts, scalers):
        ctx = self.ctx
        torch, extra = ctx.module_name("torch")
        replacements = list(extra)
        for use in autocasts:
            new_call = _set_dtype(ctx, use, f"{torch}.bfloat16")
            if new_call is None:
                return None
            replacements.append((use.call, new_call))
        names = ctx.precision.scaler_names
        handled: set = set()
        removed: list[cst.CSTNode] = []
        for call in ctx.index.nodes(cst.Call):
            func = call.func
            if not isinstance(func, cst.Attribute) or ctx.dotted(func.value) not in names:
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
            others = [n for n in ctx.index.nodes(cst.Attribute) + ctx.index.nodes(cst.Name)
                      if target is not None and ctx.dotted(n) == target and n not in handled
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


def _is_test_file(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    return parts[-1].startswith("test_") or parts[-1].endswith("_test.py") or "tests" in parts[:-1]


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


# -- TL403 ----------------------------------------------------------------------------------

_DEFAULT_INIT_SCALE = 2.0 ** 16


def _fmt(value) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class GradScalerInitScale(Rule):
    code = "TL403"
    name = "grad-scaler-init-scale"
    summary = "GradScaler whose `init_scale` is outside the configured range (default 1024..8192)"
    source = "§4.1"
    fix_applicability = "safe"
    default_enabled = False
    triggers = ("GradScaler",)
    options = {
        "min-init-scale": Option(1024, (int, float), "Smallest initial loss scale accepted.", minimum=1),
        "max-init-scale": Option(8192, (int, float), "Largest initial loss scale accepted; the fix writes it.", minimum=1),
    }
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
Safe: only the starting point of the dynamic scale changes; the scaler still adapts it, and
steps with overflowing gradients are still skipped.
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
                        source.fix(self, _fmt(high), Applicability.SAFE))
            return
        given = "the default 65536" if arg is None else f"`init_scale={ctx.code(arg.value)}` ({_fmt(value)})"
        self.report(
            node,
            f"GradScaler starts at {given}, which {side}; set `init_scale={_fmt(high)}` {target}",
            self.fix(Applicability.SAFE, f"Set `init_scale={_fmt(high)}`", (node, self._with_scale(node, arg, _fmt(high)))),
        )

    def _with_scale(self, call: cst.Call, arg: cst.Arg | None, value: str) -> cst.Call:
        if arg is not None and arg.keyword is None:
            return call.with_changes(args=[a.with_changes(value=cst.parse_expression(value)) if a is arg else a
                                           for a in call.args])
        return self.ctx.with_keyword(call, "init_scale", value)


# -- TL404 ----------------------------------------------------------------------------------

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
        Invalid("import torch as th\ndef train():\n    model = Net().to('cuda:0')\n    for x in loader:\n"
                "        model(x).backward()\n        optimizer.step()\n",
                fixed="import torch as th\n\nth.set_float32_matmul_precision(\"high\")\ndef train():\n"
                "    model = Net().to('cuda:0')\n    for x in loader:\n        model(x).backward()\n        optimizer.step()\n"),
        Invalid(_SRC.format(pre=""), fixed=_SRC.format(pre="\ntorch.set_float32_matmul_precision(\"high\")\n"),
                settings={"target_gpu": "ampere"}),
        Invalid("from torch import nn\nmodel = nn.Linear(4, 4).cuda()\nfor x in loader:\n    model(x).sum().backward()\n"
                "    opt.step()\n",
                fixed="import torch\nfrom torch import nn\n\ntorch.set_float32_matmul_precision(\"high\")\n"
                "model = nn.Linear(4, 4).cuda()\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n"),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        ctx = self.ctx
        if _target_gpu(ctx) in BEFORE_AMPERE or _is_test_file(ctx.path):
            return  # no TF32 on the target; tests often pin float32 numerics on purpose
        prec = ctx.precision
        if not ctx.loops.hot_loops or not prec.uses_cuda or prec.lowers_precision or prec.sets_tf32:
            return
        site = next((c for c in ctx.loops.step_calls if ctx.loops.in_hot_loop(c)), None)
        if site is None:
            return
        torch, extra = ctx.module_name("torch")
        line = f'{torch}.set_float32_matmul_precision("high")'
        last, newline = ctx.last_import(), ctx.module.default_newline
        place = third_party_import_place(ctx, "torch") if extra else None
        if extra and (place is None or (place[0] != "before" and place[1] is last)):
            # `import torch` goes after the imports too: one insertion, with Black's blank line
            # between it and the setting (and isort's above it, starting a section of its own).
            code = f"import torch{newline * 2}{line}"
            if place is not None and place[0] == "section":
                replacements = [(last, ctx.render(last) + newline + code + newline)]
            else:
                replacements = [ctx.insert_after_imports(code)]
        else:  # `import torch` where isort puts it among the imports, the setting after them
            replacements = [*extra, ctx.insert_after_imports(line)]
        self.report(
            site,
            "CUDA training runs float32 matmuls at full float32 precision (no autocast, no TF32); add "
            "`torch.set_float32_matmul_precision(\"high\")` after the imports to use TF32 tensor cores "
            "(Ampere+), or train under autocast in bfloat16",
            self.fix(Applicability.UNSAFE, "Enable TF32 matmuls", *replacements),
        )
