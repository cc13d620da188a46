"""TL401 deprecated-cuda-amp: Deprecated `torch.cuda.amp` / `torch.cpu.amp` API (autocast, GradScaler,
custom_fwd/bwd)."""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.imports import is_reexport, name_uses, named_in_string, string_annotations
from trainlint.analysis.names import CANONICAL
from trainlint.analysis.precision import AUTOCAST, DEPRECATED_AMP, GRAD_SCALER
from trainlint.diagnostics import Applicability
from trainlint.rule import NO_FIX, Invalid, Rule, Valid


_DEPRECATED_MODULES = ("torch.cuda.amp", "torch.cpu.amp")
# torch.cuda.amp.autocast(enabled, dtype, cache_enabled): its positional order is not torch.amp.autocast's
# (device_type, dtype, enabled, cache_enabled), so positional arguments become keywords.
_OLD_AUTOCAST_POSITIONS = ("enabled", "dtype", "cache_enabled")


def _no_space_equal() -> cst.AssignEqual:
    return cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))



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
the same fix to test `torch.amp.GradScaler`, which both pass; so is a type annotation naming the
old class (`scaler: Optional[GradScaler] = GradScaler()`), also within a string annotation
(`"GradScaler | None"`, rewritten in its own quotes) or in the type argument of `typing.cast`
(`cast("GradScaler", s)`), so that the old import can go (a string
annotation with escapes in its text is left, and the import it reads stays). Where that would not hold, the
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
        # The deprecated names imported in a `try:` whose handler exits: `import torch` takes their
        # line there (it went to the top of the file, where a missing torch skipped the script's
        # message, and left `try: pass`).
        Invalid(
            "import sys\ntry:\n    from torch.cuda.amp import GradScaler, autocast\nexcept ImportError:\n"
            "    sys.exit('needs PyTorch')\nscaler = GradScaler()\nwith autocast():\n    y = model(x)\n",
            fixed="import sys\ntry:\n    import torch\nexcept ImportError:\n    sys.exit('needs PyTorch')\n"
            "scaler = torch.amp.GradScaler('cuda')\nwith torch.amp.autocast('cuda'):\n    y = model(x)\n",
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
        # Annotations naming the old class are rewritten with the call: before, `Optional[GradScaler]`
        # kept `from torch.cuda.amp import GradScaler` after the fix (the fixer then removes it).
        Invalid("from typing import Optional\nimport torch\nfrom torch.cuda.amp import GradScaler\n"
                "scaler: Optional[GradScaler] = GradScaler()\n",
                fixed="from typing import Optional\nimport torch\n"
                "scaler: Optional[torch.amp.GradScaler] = torch.amp.GradScaler(\"cuda\")\n"),
        Invalid("import torch\nfrom torch.cuda import amp\ndef step(scaler: amp.GradScaler) -> None:\n    scaler.update()\n"
                "s = amp.GradScaler()\n",
                fixed="import torch\ndef step(scaler: torch.amp.GradScaler) -> None:\n    scaler.update()\n"
                "s = torch.amp.GradScaler(\"cuda\")\n"),
        # String annotations naming the old class are rewritten too, in their own quotes: before, they
        # were left and the import they read removed (`typing.get_type_hints` raised NameError).
        Invalid("import typing\nimport torch\nfrom torch.cuda.amp import GradScaler\n"
                "def step(s: \"GradScaler | None\", t: typing.Optional['GradScaler'] = None) -> 'list[GradScaler]':\n"
                "    pass\nscaler = GradScaler(enabled=False)\n",
                fixed="import typing\nimport torch\n"
                "def step(s: \"torch.amp.GradScaler | None\", t: typing.Optional['torch.amp.GradScaler'] = None) "
                "-> 'list[torch.amp.GradScaler]':\n    pass\nscaler = torch.amp.GradScaler('cuda', enabled=False)\n"),
        Invalid("import torch\nfrom torch.cuda import amp\ndef step(s: 'Optional[amp.GradScaler]'):\n    pass\n"
                "scaler = amp.GradScaler()\n",
                fixed="import torch\ndef step(s: 'Optional[torch.amp.GradScaler]'):\n    pass\n"
                "scaler = torch.amp.GradScaler('cuda')\n"),
        # The type argument of `typing.cast` is read like a string annotation (by type checkers, and by
        # `eval`): before, its string kept the old name and the import it reads was removed.
        Invalid("import typing\nfrom typing import Optional, cast\nimport torch\nfrom torch.cuda.amp import GradScaler\n"
                "scaler = GradScaler()\ns = cast(\"Optional[GradScaler]\", scaler)\n"
                "t = typing.cast(Optional['GradScaler'], scaler)\nu = cast(typ='GradScaler', val=scaler)\n"
                "print('old GradScaler')\n",
                fixed="import typing\nfrom typing import Optional, cast\nimport torch\n"
                "scaler = torch.amp.GradScaler('cuda')\ns = cast(\"Optional[torch.amp.GradScaler]\", scaler)\n"
                "t = typing.cast(Optional['torch.amp.GradScaler'], scaler)\nu = cast(typ='torch.amp.GradScaler', val=scaler)\n"
                "print('old GradScaler')\n"),
        Invalid("from typing import cast\nimport torch\nfrom torch.cuda.amp import GradScaler\n"
                "def make():\n    return cast('GradScaler\\x20', GradScaler())\n",
                fixed="from typing import cast\nimport torch\nfrom torch.cuda.amp import GradScaler\n"
                "def make():\n    return cast('GradScaler\\x20', torch.amp.GradScaler('cuda'))\n"),
        # One whose text has an escape is not rewritten: the import it reads stays.
        Invalid("import torch\nfrom torch.cuda.amp import GradScaler\ndef step(s: 'GradScaler\\x20| None'):\n    pass\n"
                "scaler = GradScaler()\n",
                fixed="import torch\nfrom torch.cuda.amp import GradScaler\ndef step(s: 'GradScaler\\x20| None'):\n"
                "    pass\nscaler = torch.amp.GradScaler('cuda')\n"),
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
                        *self._base_class_tests(tests, new, qn), *extra), ""

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
                            replacement, *self._base_class_tests(tests, new, qn), *extra), ""
        else:
            return None, ""
        return self.fix(Applicability.SAFE, f"Use `torch.amp.{new}` with device `{device}`",
                        (node, cst.parse_expression(code)), *self._base_class_tests(tests, new, qn), *extra), ""

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

    def _base_class_tests(self, tests: list, new: str, qn: str) -> list:
        """The replacements that make the type tests, and the annotations naming the old class
        (`scaler: Optional[GradScaler] = ...`), name torch.amp's: what the fix constructs is an
        instance of that class, and the deprecated import can go once nothing names it (an
        annotation left behind kept `from torch.cuda.amp import GradScaler`)."""
        amp, extra = self._amp()
        annotated = [n for n in self._class_uses.get(qn, {}).get("annotated", ()) if not self._also_bound_to_new_api(n)]
        return [(node, cst.parse_expression(f"{amp}.{new}")) for node in [*tests, *annotated]] + \
            self._string_annotation_rewrites(qn, f"{amp}.{new}")

    def _string_annotation_rewrites(self, qn: str, new_code: str) -> list:
        """The replacements that make string annotations naming the old class (`"GradScaler |
        None"`, `"Optional[GradScaler]"`) name the new one, in the same quotes. Before, they were
        left as they were and the import they read was removed (`typing.get_type_hints` then
        raised NameError). A string that cannot be rewritten (escapes) keeps the import instead
        (named_in_string)."""
        ctx = self.ctx
        out = []
        for string, expr in string_annotations(ctx):
            if expr is None:
                continue
            refs = _references(ctx, expr, qn)
            refs = [r for r in refs if not self._also_bound_to_new_api(r)]
            if not refs:
                continue
            replaced = expr.visit(_Replace(refs, cst.parse_expression(new_code)))
            out.append((string, cst.SimpleString(f"{string.prefix}{string.quote}{ctx.code(replaced)}{string.quote}")))
        return out

    @property
    def _class_uses(self) -> dict[str, dict[str, list]]:
        """References to the AMP classes (torch.amp's and the old ones), by qualified name and kind:
        "calls", "tests" (isinstance/issubclass's class argument, or in its tuple), "compared" (in a
        comparison or a `case` class pattern), "annotated" (in a type annotation), "other"; imports
        are left out."""
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
            if ctx.index.enclosing(node, (cst.Import, cst.ImportFrom)) is not None:
                continue
            if ctx.index.enclosing(node, cst.Annotation) is not None:
                kind = "annotated"
            elif isinstance(parent, cst.Call) and parent.func is node:
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


def _references(ctx, expr: cst.BaseExpression, qn: str) -> list[cst.CSTNode]:
    """The names in expr (parsed from a string annotation) that stand for qn: `GradScaler`,
    `amp.GradScaler`, `torch.cuda.amp.GradScaler` (not the `GradScaler` of `x.GradScaler`)."""
    found: list[cst.CSTNode] = []

    class _Refs(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            if ctx.names.qualified(node) == qn:
                found.append(node)
            else:
                node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if ctx.names.qualified(node) == qn:
                found.append(node)

    expr.visit(_Refs())
    return found


class _Replace(cst.CSTTransformer):
    """Replaces the given nodes (by identity) with one expression."""

    def __init__(self, nodes: list[cst.CSTNode], new: cst.BaseExpression) -> None:
        super().__init__()
        self.nodes = {id(n) for n in nodes}
        self.new = new

    def on_leave(self, original_node, updated_node):
        return self.new if id(original_node) in self.nodes else updated_node
