"""FileContext: the shared analyses of one file, as rules see them.

Analyses are computed on first use, once per file, so a file whose enabled rules need only
import names never pays for hot-loop or tensor analysis.
"""

from __future__ import annotations

import re
from functools import cached_property

import libcst as cst

from trainlint.analysis.batches import copies_to_host
from trainlint.analysis.devices import Devices
from trainlint.analysis.distributed import Distributed
from trainlint.analysis.grads import Grads
from trainlint.analysis.imports import (blank_lines_above, guarded_import, insert_stdlib_import,
                                        insert_third_party_import, is_docstring, is_stdlib)
from trainlint.analysis.literals import literal, number
from trainlint.analysis.loops import CLOCKS, Loops
from trainlint.analysis.names import Names, bound_names, dotted
from trainlint.analysis.positions import _OffsetState
from trainlint.analysis.precision import Precision
from trainlint.analysis.settings import Sources
from trainlint.analysis.star_args import star_entries
from trainlint.analysis.tensors import Tensors
from trainlint.analysis.tree import TreeIndex, walk
from trainlint.analysis.variables import Bindings
from trainlint.layout import (
    bracketed, comprehended, comprehension_clauses, fitted, fluent, method_lines, one_arg_per_line, parenthesized,
    rejoined,
)
from trainlint.suppressions import Suppressions, covers, parse_suppressions


# Paths of data-preparation tools: a scripts/ or tools/ folder, or a prep/preprocess/extract/convert/
# featurize/dump/export module.
_OFFLINE_PATH = re.compile(
    r"(^|/)(scripts?|tools)/|(^|/|_|-)(prep|prepare|preprocess\w*|extract\w*|convert\w*|featurize\w*|dump\w*|"
    r"export\w*)[_.-]",
    re.IGNORECASE,
)



# Side streams: work on them, or copies they order, may still run when the host reads its result.
_STREAMS = frozenset({"torch.cuda.stream", "torch.cuda.Stream", "torch.Stream", "torch.cuda.StreamContext",
                      "torch.accelerator.set_stream"})
_HOST_WORDS = re.compile(r"cpu|host|pinned", re.IGNORECASE)


def _element_of_comprehension(holder: cst.CSTNode | None, value: cst.CSTNode, kinds: tuple) -> bool:
    """holder is a comprehension of kinds, in no parentheses of its own, whose element (a dict
    comprehension's value) is value: a call fixed there takes the comprehension along."""
    if not isinstance(holder, kinds) or holder.lpar:
        return False
    return (holder.value if isinstance(holder, cst.DictComp) else holder.elt) is value


class FileContext:
    def __init__(self, path: str, text: str, module: cst.Module, settings) -> None:
        self.path = path
        self.text = text
        self.module = module
        self.settings = settings
        self.index = TreeIndex(module)
        self._scope_calls: dict = {}
        self._star_keys: dict = {}

    @cached_property
    def names(self) -> Names:
        return Names(self.index)

    @property
    def line_length(self) -> int:
        """How wide a line a fix may write (the `line-length` setting; 88, Black's, without one)."""
        return getattr(self.settings, "line_length", 88)

    def fits(self, line: str, at: cst.CSTNode, deeper: int = 0) -> bool:
        """Whether `line`, written as a statement where `at` stands (`deeper` blocks further in),
        stays within line_length."""
        return len(line) <= self.room(at, deeper * self.module.default_indent)

    def room(self, at: cst.CSTNode, level: str = "") -> int:
        """The columns line_length leaves a line indented as `at`'s statement plus `level`."""
        return self.line_length - len(self.indentation(at)) - len(level)

    @cached_property
    def loops(self) -> Loops:
        return Loops(self.index, self.names, tuple(getattr(self.settings, "interval_names", ()) or ()), self.bindings)

    @cached_property
    def bindings(self) -> Bindings:
        """Every variable binding of the file, by name and scope (variables.Bindings)."""
        return Bindings(self.index)

    @cached_property
    def distributed(self) -> Distributed:
        return Distributed(self.index, self.names, self.loops)

    @cached_property
    def grads(self) -> Grads:
        """How the module uses parameters' `.grad` (grads.py)."""
        return Grads(self.index, self.code, self.assigned_values)

    @cached_property
    def tensors(self) -> Tensors:
        return Tensors(self)

    @cached_property
    def sources(self) -> Sources:
        """Where settings written as names get their values (settings.py)."""
        return Sources(self)

    @cached_property
    def _assignments(self) -> dict:
        """(enclosing function, dotted target) -> values assigned to it by plain `=`."""
        table: dict = {}
        for assign in self.index.nodes(cst.Assign):
            scope = self.index.enclosing_function(assign)
            for target in assign.targets:
                name = dotted(target.target)
                if name:
                    table.setdefault((scope, name), []).append(assign.value)
        return table

    def assigned_values(self, expr: cst.BaseExpression, anywhere: bool = False) -> list[cst.BaseExpression]:
        """The values a name (or `self.x`) is assigned in the function expr is in (anywhere: in any
        function, for an attribute set in `__init__` and read elsewhere); [] if unknown."""
        name = dotted(expr)
        if name is None:
            return []
        if anywhere:
            return [value for (_, target), values in self._assignments.items() if target == name for value in values]
        return self._assignments.get((self.index.enclosing_function(expr), name), [])

    def is_builtin_collection(self, expr: cst.BaseExpression, _depth: int = 0) -> bool:
        """A list/tuple/set literal or comprehension, `range(...)`, or `list(...)`/`tuple(...)` of one,
        directly or through names assigned only such values: plain Python objects already in memory,
        with no per-sample work for loader workers to overlap."""
        if _depth > 3:
            return False
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set, cst.ListComp, cst.SetComp)):
            return True
        if isinstance(expr, cst.Call):
            qn = self.names.qualified(expr.func)
            if qn == "builtins.range":
                return True
            if qn in ("builtins.list", "builtins.tuple") and len(expr.args) == 1:
                return self.is_builtin_collection(expr.args[0].value, _depth + 1)
            return False
        if isinstance(expr, cst.Name):
            values = self.assigned_values(expr)
            return bool(values) and all(self.is_builtin_collection(v, _depth + 1) for v in values)
        return False

    @cached_property
    def is_offline_script(self) -> bool:
        """A data-preparation tool that trains nothing: a module without a hot loop whose path says
        it prepares data (see _OFFLINE_PATH). Per-sample decoding or tokenizing here is the offline
        pass that the input-pipeline rules recommend, not something to move elsewhere."""
        return not self.loops.hot_loops and bool(_OFFLINE_PATH.search(self.path.replace("\\", "/")))

    @cached_property
    def suppressions(self) -> Suppressions:
        """The text's suppression comments, parsed once: the engine resolves findings against them,
        a fix that splits a call keeps them on its line, TL601 leaves a file holding one alone."""
        return parse_suppressions(self.text)

    @cached_property
    def _line_suppression_codes(self) -> dict[str, frozenset | None]:
        """Each line suppression comment's text -> the codes it names (None: every code), as
        `suppressions` parsed it. A comment's text alone decides what it suppresses, so a comment
        found in the tree is looked up by its text."""
        out: dict = {}
        for directive in self.suppressions.directives:
            if directive.file_level:
                continue
            key = self.text[directive.comment_start:directive.comment_end]
            codes, before = directive.code_texts(), out.get(key, frozenset())
            out[key] = None if codes is None or before is None else before | codes
        return out

    def suppressed_in(self, stmt: cst.CSTNode, code: str) -> bool:
        """Whether a finding of `code` in stmt would be suppressed by a comment the author wrote:
        one on stmt's own lines (after its code, or on any line of a statement over several, such
        as `print(  # trainlint: ignore[TL202]`), in any form `suppressions` reads (`# noqa`,
        `# noqa: TL201`, `# trainlint: ignore[TL201]`), or the file's own (`# trainlint: noqa:
        TL201`). A fix that moves its neighbours leaves such a line where it is. Asked without
        recording the codes as used (TL001 reports the codes that suppressed no finding); with
        `--ignore-noqa` nothing is suppressed."""
        if getattr(self.settings, "ignore_noqa", False):
            return False
        file_codes = self.suppressions.file_codes
        if file_codes is None or (file_codes and any(covers(c, code) for c in file_codes)):
            return True
        table = self._line_suppression_codes
        if not table:
            return False
        parts = [stmt.body, stmt.trailing_whitespace] if isinstance(stmt, cst.SimpleStatementLine) else [stmt]
        stack = list(parts)
        while stack:
            node = stack.pop()
            if isinstance(node, (list, tuple)):
                stack.extend(node)
            elif isinstance(node, cst.Comment):
                codes = table.get(node.value, False)
                if codes is None or (codes and any(covers(c, code) for c in codes)):
                    return True
            elif isinstance(node, cst.CSTNode):
                stack.extend(node.children)
        return False

    @cached_property
    def is_test(self) -> bool:
        """A test module by its path (`test_*.py`, `*_test.py`, or under a `tests/` folder)."""
        parts = self.path.replace("\\", "/").split("/")
        return parts[-1].startswith("test_") or parts[-1].endswith("_test.py") or "tests" in parts[:-1]

    @property
    def is_test_without_training(self) -> bool:
        """A test module with no hot loop: its loaders feed assertions (values, shapes, sharding),
        not a training run, so the input-pipeline advice for training has nothing to speed up there;
        loader workers would only make the test start processes."""
        return self.is_test and not self.loops.hot_loops

    @cached_property
    def devices(self) -> Devices:
        """Whether the file uses CUDA, and whether its training may run on an accelerator at all (devices.py)."""
        return Devices(self.index, self.names, self.bindings, self.loops)

    @cached_property
    def precision(self) -> Precision:
        return Precision(self.index, self.names, self.bindings)

    def is_version_fallback(self, node: cst.CSTNode) -> bool:
        """node runs only on an old PyTorch or when an import failed (see analysis/gates.py)."""
        from trainlint.analysis.gates import in_version_fallback

        return in_version_fallback(self.index, node)

    def calls_in_scope(self, node: cst.CSTNode) -> list[cst.Call]:
        """Every call in node's function (nested ones included), or in the whole module outside
        functions; collected once per function, however many rules and nodes ask."""
        scope = self.index.enclosing_function(node)
        if scope is None:
            return self.index.nodes(cst.Call)
        calls = self._scope_calls.get(scope)
        if calls is None:
            calls = self._scope_calls[scope] = [n for n in self.index.walk(scope) if isinstance(n, cst.Call)]
        return calls

    def measures_time(self, node: cst.CSTNode) -> bool:
        """node's function (or the module, outside functions) reads a clock: a synchronize there
        is how GPU work is timed (yolov5's `time_sync()`), not an accident. Inside a loop the clock
        must be read in that loop's body: one read before the loop and one after it time the
        whole run, which needs no synchronize on every step."""
        loop = self.loops.innermost_loop(node)
        calls = [c for c in self.index.walk(loop.body) if isinstance(c, cst.Call)] if loop is not None \
            else self.calls_in_scope(node)
        return any(self.is_clock_read(call) or self.times_events(call) for call in calls)

    def is_clock_read(self, call: cst.Call) -> bool:
        """call reads the host's clock (`time.time()`, `time.perf_counter()`)."""
        return self.names.qualified(call.func) in CLOCKS

    def times_events(self, call: cst.Call) -> bool:
        """A CUDA event's timing (`end.record()` of an event made with `torch.cuda.Event(...)`,
        `start.elapsed_time(end)`, `end.synchronize()`): the events are read like a clock, and a
        synchronize before `elapsed_time` is what lets the end event finish first."""
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        if func.attr.value == "elapsed_time" and len(call.args) == 1:
            return True
        if func.attr.value not in ("record", "synchronize", "query"):
            return False
        made = self.assigned_values(func.value) or self.assigned_values(func.value, anywhere=True)
        return any(isinstance(v, cst.Call) and (self.names.qualified(v.func) or dotted(v.func) or "").endswith(".Event")
                   for v in made)

    def orders_async_work(self, node: cst.CSTNode) -> bool:
        """node's function (or the module, outside functions) starts GPU work the host may read
        before it is done: a side stream (`with torch.cuda.stream(s):`, `s.wait_stream(...)`), or a
        copy to the host with `non_blocking=True` (`t.cpu(non_blocking=True)`, `t.to("cpu",
        non_blocking=True)`). A synchronize there may be what makes the host's read correct."""
        for call in self.calls_in_scope(node):
            func = call.func
            method = func.attr.value if isinstance(func, cst.Attribute) else None
            if self.names.qualified(func) in _STREAMS or method in ("wait_stream", "record_stream"):
                return True
            flag = self.keyword(call, "non_blocking")
            if flag is None or literal(flag.value) is False or method not in ("cpu", "to", "copy_"):
                continue
            target = func.value if method == "copy_" else (call.args[0].value if method == "to" and call.args
                                                            and call.args[0] is not flag else None)
            # A copy to a device the file shows to be the CPU (batches.copies_to_host, as TL201 and
            # TL108 read it), else a target whose name says host memory (`pinned_buf.copy_(...)`,
            # `t.to(host_device)`).
            if copies_to_host(self, call) or (target is not None and _HOST_WORDS.search(self.code(target))):
                return True
        return False

    def on_unwaited_side_stream(self, node: cst.CSTNode) -> bool:
        """node runs under `with torch.cuda.stream(s):` in a function (or module) that never makes
        a stream wait for another (`wait_stream`, `wait_event`): what it queues there is ordered
        for the default stream only by finishing before the host goes on (a blocking copy)."""
        under = any(isinstance(anc, cst.With) and any(
            isinstance(item.item, cst.Call) and self.names.qualified(item.item.func) in _STREAMS
            for item in anc.items) for anc in self.index.ancestors(node))
        return under and not any(isinstance(call.func, cst.Attribute) and call.func.attr.value in
                                 ("wait_stream", "wait_event") for call in self.calls_in_scope(node))

    # -- small questions rules ask often ---------------------------------------------------

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.index.parent.get(node)

    def is_per_step(self, node: cst.CSTNode) -> bool:
        """node runs on every training step: every iteration of a hot loop, or once per optimizer
        step under gradient accumulation (what a host sync costs is a stall of each step)."""
        return self.loops.is_per_step(node, optimizer_steps=True)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    @staticmethod
    def keyword(call: cst.Call, name: str) -> cst.Arg | None:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return arg
        return None

    @staticmethod
    def hides_arguments(call: cst.Call) -> bool:
        """`*args` or `**kwargs` may pass any argument (positional ones too): none is known missing,
        and a keyword added beside them may be passed twice."""
        return any(arg.star for arg in call.args)

    def star_keys(self, call: cst.Call) -> frozenset[str] | None:
        """The keys the call's `**options` can pass, when the file shows (star_args.py); once per call."""
        entries = self.star_entries(call)
        return frozenset(entries) if entries is not None else None

    def star_entries(self, call: cst.Call) -> dict[str, list] | None:
        """star_keys' keys with the values the dict is given for each (star_args.py); once per call."""
        if call not in self._star_keys:
            self._star_keys[call] = star_entries(self, call)
        return self._star_keys[call]

    @staticmethod
    def positional(call: cst.Call, index: int) -> cst.Arg | None:
        """The argument passed for the index-th positional parameter; None when fewer are passed or
        a `*args` before it hides which one it is (what rules read is what fixes write)."""
        seen = 0
        for arg in call.args:
            if arg.keyword is not None or arg.star == "**":
                continue
            if arg.star:
                return None
            if seen == index:
                return arg
            seen += 1
        return None

    literal = staticmethod(literal)
    number = staticmethod(number)

    @staticmethod
    def dotted(expr) -> str | None:
        return dotted(expr)

    def with_keyword(self, call: cst.Call, name: str, value: str, position: int | None = None) -> cst.Call:
        """`call` with parameter `name` set to value: a `name=` keyword is replaced if present; when
        the parameter is the callee's `position`-th positional one (0-based, as `positional` counts)
        and the call passes it by position, that argument is replaced in place and stays positional
        (a keyword beside it would be a second value: TypeError); else `name=value` is appended in
        the call's style."""
        value_expr = cst.parse_expression(value)
        existing = self.keyword(call, name)
        if existing is None and position is not None:
            existing = self.positional(call, position)
        if existing is not None:
            args = [a.with_changes(value=value_expr) if a is existing else a for a in call.args]
            at = call.args.index(existing)
        else:
            new_arg = cst.Arg(keyword=cst.Name(name), value=value_expr,
                              equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                    whitespace_after=cst.SimpleWhitespace("")))
            args = _appended(call, new_arg, self.module.default_indent)
            at = len(args) - 1
        return self._one_per_line_if_long(call, call.with_changes(args=self._fitted(call, args, at)))

    def _one_per_line_if_long(self, old: cst.Call, call: cst.Call) -> cst.Call:
        """call, its arguments one per line when they share a line of their own (`f(\n    a, b\n)`)
        that has grown longer than line_length, as Black lays them out then."""
        before, last = call.whitespace_before_args, call.args[-1] if call.args else None
        if last is None or not isinstance(before, cst.ParenthesizedWhitespace) or not before.indent:
            return call
        after = last.comma.whitespace_after if isinstance(last.comma, cst.Comma) else last.whitespace_after_arg
        if not isinstance(after, cst.ParenthesizedWhitespace) or any(
                not isinstance(a.comma, cst.Comma) or isinstance(a.comma.whitespace_after, cst.ParenthesizedWhitespace)
                for a in call.args[:-1]):
            return call
        line = ", ".join(self.code(a.with_changes(comma=cst.MaybeSentinel.DEFAULT,
                                                  whitespace_after_arg=cst.SimpleWhitespace(""))) for a in call.args)
        room = self.room(old, before.last_line.value)
        if len(line) <= room or "\n" in line:
            return call
        return one_arg_per_line(call, self.module.default_indent, after.last_line.value, room - 1)  # 1: the comma

    def call_replacement(self, old: cst.CSTNode, new: cst.Call) -> tuple[cst.CSTNode, cst.CSTNode]:
        """The replacement of old by the call new (the engine wraps a call longer than its line).
        When old is part of an assignment's or a return's value that Black would lay out as a
        whole once the statement no longer fits its line, the value is replaced instead, laid out
        as Black does: a chain of two method calls or more that old starts
        (`(attn @ v).transpose(1, 2).reshape(B, N, C)`, one method call per line, in parentheses),
        a conditional that old is a branch of (in parentheses, split at `if` and `else`), or a list
        or set literal that old is an element of (split at its brackets)."""
        outer = self._outer_call(old, new)
        if outer is not None:
            return outer
        top, links = old, 0
        while isinstance(attr := self.parent(top), cst.Attribute) and attr.value is top \
                and isinstance(call := self.parent(attr), cst.Call) and call.func is attr:
            top, links = call, links + 1
        element = comprehension = False
        if links == 1:
            split = self._splits_method_call(top, old, new)
            if split is not None:
                return split
        if links < 2:
            top = self.parent(old)
            if (isinstance(top, cst.Element) and top.value is old
                    and isinstance(self.parent(top), (cst.List, cst.Set, cst.Tuple))) \
                    or (isinstance(top, cst.DictElement) and top.value is old and isinstance(self.parent(top), cst.Dict)):
                # An element of a list or a dict's value: Black splits the brackets first
                # (transformers' `kwargs_handlers = [DistributedDataParallelKwargs(...)]`, `loaders =
                # {"train": DataLoader(...), ...}`), a tuple's in parentheses (simpletransformers'
                # `labels = batch["labels"].to(device), labels`).
                top, element = self.parent(top), True
                if self._splits_last_call(top, old, new):
                    return old, new
            elif _element_of_comprehension(top, old, (cst.ListComp, cst.SetComp, cst.DictComp)):
                # The element of a comprehension (`{k: v.to(device) for k, v in batch.items()}`):
                # Black splits the comprehension's brackets first.
                comprehension = True
            elif not (isinstance(top, cst.IfExp) and old in (top.body, top.orelse) and not top.lpar):
                return old, new
        holder, stmt = self.parent(top), self.statement(top)
        if comprehension and "\n" in self.code(top):
            return self._comprehension_in_place(top, old, new)
        if element and isinstance(holder, cst.Arg) and holder.value is top:
            if "\n" in self.code(top):
                # Already split at its brackets (a first round of fixes, Black's output): the
                # element has a line of its own, where the engine splits it if it must.
                return old, new
            # A list argument on a line of its own in a call laid out one argument per line
            # (Black's own output): split at its brackets there, as `_fitted` splits an argument.
            call = self.parent(holder)
            at = call.args.index(holder)
            args = [*call.args[:at], holder.with_changes(value=top.deep_replace(old, new)), *call.args[at + 1:]]
            fitted_args = self._fitted(call, args, at)
            return (holder, fitted_args[at]) if fitted_args is not args else (old, new)
        if not isinstance(holder, (cst.Assign, cst.Return)) or holder.value is not top:
            return old, new
        indent = self.module.default_indent
        opening = top.lpar[0].whitespace_after if top.lpar else None
        if isinstance(opening, cst.ParenthesizedWhitespace) and opening.indent \
                and isinstance(top.rpar[-1].whitespace_before, cst.ParenthesizedWhitespace):
            # `x = (\n    (attn @ v).transpose(1, 2).reshape(B, N, C)\n)`: the author's parentheses
            # stay, the chain is laid out inside them.
            bare = top.with_changes(lpar=[], rpar=[])
            level = opening.last_line.value
            room = self.room(stmt, level)
            value = bare.deep_replace(old, new)
            if "\n" in self.code(bare) or len(self.code(value)) <= room:
                return old, new
            return top, method_lines(value, indent, level, room).with_changes(lpar=top.lpar, rpar=top.rpar)
        line = self.code(stmt.with_changes(leading_lines=[])).strip()
        value = top.deep_replace(old, new)
        if "\n" in line or self.fits(line.replace(self.code(top), self.code(value), 1), at=stmt):
            return old, new
        room = self.room(stmt, indent)
        if element:
            return top, bracketed(value, indent, room)
        if comprehension:
            return top, comprehended(value, indent, room)
        return top, fluent(value, indent, room) if links >= 2 else parenthesized(value, indent, room)

    def _splits_method_call(self, chain: cst.Call, old: cst.CSTNode, new: cst.Call):
        """old is the receiver of one method call with arguments (`images.to(device).to(memory_format=
        cl)`) on a statement's line that new makes too long: that call with new in it (or the call
        it is an argument of, as _outer_call takes it), when the line up to its opening bracket
        fits. Black splits a line at its last brackets first, the method call's; the engine then
        splits there. None for anything else (a method call without arguments, whose empty
        brackets Black does not split)."""
        grown = chain.deep_replace(old, new)
        outer = self._outer_call(chain, grown)
        if outer is not None:
            return outer
        stmt = self.statement(chain)
        if not chain.args or not isinstance(stmt, cst.SimpleStatementLine):
            return None
        line = self.code(stmt.with_changes(leading_lines=[])).strip()
        if "\n" in line or self.code(chain) not in line:
            return None
        line = line.replace(self.code(chain), self.code(grown), 1)
        if self.fits(line, at=stmt):
            return None
        head = line.index(self.code(grown)) + len(self.code(grown.func)) + 1
        return (chain, grown) if len(self.indentation(stmt)) + head <= self.line_length else None

    def _splits_last_call(self, collection: cst.BaseExpression, old: cst.CSTNode, new: cst.Call) -> bool:
        """Black leaves a pair assigned without parentheses (`a, b = x.cuda(...), y.cuda(...)`) as it
        is and splits the brackets of the call that ends it, when that call is old and the line up
        to its opening bracket fits (it omits the optional parentheses around one comma)."""
        if not isinstance(collection, cst.Tuple) or collection.lpar or len(collection.elements) != 2 \
                or collection.elements[-1].value is not old:
            return False
        stmt = self.statement(collection)
        line = self.code(stmt.with_changes(leading_lines=[])).strip()
        if "\n" in line or self.code(old) not in line:
            return False
        head = line.index(self.code(old)) + len(self.code(new.func)) + 1
        return len(self.indentation(stmt)) + head <= self.line_length

    def _comprehension_in_place(self, comp: cst.BaseComp, old: cst.CSTNode, new: cst.Call):
        """In a comprehension already split at its brackets, its content on a line of its own (Black's
        layout), a content line new makes too long is split before each `for` and `if`, as Black
        splits it; a content the author spread over lines keeps its layout."""
        opening = (comp.lbracket if isinstance(comp, cst.ListComp) else comp.lbrace).whitespace_after
        value = comp.deep_replace(old, new)
        bare = self.code(value).strip()[1:-1].strip()
        if not (isinstance(opening, cst.ParenthesizedWhitespace) and opening.indent) or "\n" in bare:
            return old, new
        level = opening.last_line.value
        room = self.room(comp, level)
        if len(bare) <= room:
            return old, new
        return comp, comprehension_clauses(value, self.module.default_indent, level, room)

    def _outer_call(self, old: cst.CSTNode, new: cst.Call) -> tuple[cst.CSTNode, cst.CSTNode] | None:
        """When old is an argument of a call written on one line in a simple statement or a
        compound statement's header (`for i, b in enumerate(DataLoader(...)):`), and the line no
        longer fits with new in it: that call, with new in it. The engine then puts its arguments
        one per line and splits new there as Black would (`SFTTrainer(model, args=SFTConfig(...))`),
        instead of splitting new inside a line it does not fit. An element of a list or set that
        is the argument counts as the argument (`Accelerator(kwargs_handlers=[Kwargs(...)])`): the
        list is split at its brackets there; so does the element of a comprehension that is the
        argument (`tuple(t.to(device) for t in batch)`, `torch.stack([t.cuda() for t in xs])`),
        split before `for` and `if` when it does not fit its line."""
        value = old
        while True:
            holder = self.parent(value)
            if (isinstance(holder, cst.Element) and holder.value is value and isinstance(self.parent(holder), (cst.List, cst.Set))) \
                    or (isinstance(holder, cst.DictElement) and holder.value is value and isinstance(self.parent(holder), cst.Dict)):
                value = self.parent(holder)
            elif _element_of_comprehension(holder, value, (cst.GeneratorExp, cst.ListComp, cst.SetComp, cst.DictComp)):
                value = holder  # `tuple(t.to(device) for t in batch)`, `torch.stack([...])`
            else:
                break
        arg = self.parent(value)
        outer = self.parent(arg) if isinstance(arg, cst.Arg) and arg.value is value else None
        stmt = self.statement(old)
        if not isinstance(outer, cst.Call) or stmt is None:
            return None
        # Up to the outermost call on the line that holds it as an argument (`mse_loss(model(x.to(d)),
        # y)`): Black splits a line at its last brackets, that call's, before any inside it.
        while "\n" not in self.code(outer) and isinstance(arg := self.parent(outer), cst.Arg) \
                and arg.value is outer and isinstance(above := self.parent(arg), cst.Call) \
                and "\n" not in self.code(above):
            outer = above
        if "\n" in self.code(outer):
            # Black's layout of a call whose arguments fit a line of their own, which new makes
            # too long (a second round of fixes, or code formatted by Black): Black lays the call
            # out again, one argument per line; the engine does from the call on one line.
            joined = rejoined(outer)
            if joined is None or not isinstance(stmt, cst.SimpleStatementLine):
                return None
            line = self.code(outer).split("\n")[1].rstrip()  # the line of arguments
            if self.fits(line.replace(self.code(old), self.code(new), 1), at=stmt):
                return None
            return outer, joined.deep_replace(old, new)  # old's node is joined's too
        line = self.code(stmt.with_changes(leading_lines=[])).strip()
        if isinstance(stmt, cst.BaseCompoundStatement):
            line = line.split("\n", 1)[0]  # the header, which old is in (a body has statements of its own)
            if self.code(outer) not in line:
                return None
        elif "\n" in line:
            return None
        if self.fits(line.replace(self.code(old), self.code(new), 1), at=stmt):
            return None
        return outer, outer.deep_replace(old, new)

    def _fitted(self, call: cst.Call, args: list[cst.Arg], at: int) -> list[cst.Arg]:
        """args with args[at] split as Black would when it has a line of its own and is longer than
        that line. (A call written on one line is wrapped by the engine, which measures the line.)"""
        before = call.whitespace_before_args if at == 0 else args[at - 1].comma
        before = before.whitespace_after if isinstance(before, cst.Comma) else before
        comma = args[at].comma
        after = comma.whitespace_after if isinstance(comma, cst.Comma) else args[at].whitespace_after_arg
        if not (isinstance(before, cst.ParenthesizedWhitespace) and before.indent
                and isinstance(after, cst.ParenthesizedWhitespace)):
            return args
        level = before.last_line.value
        room = self.room(call, level) - isinstance(comma, cst.Comma)
        return [*args[:at], fitted(args[at], self.module.default_indent, level, room), *args[at + 1:]]

    # -- statement-level edits (fixes that add or remove whole lines) -----------------------

    def statement(self, node: cst.CSTNode) -> cst.SimpleStatementLine | cst.BaseCompoundStatement | None:
        """The statement line (or compound statement) that holds node."""
        for anc in [node, *self.index.ancestors(node)]:
            if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return anc
        return None

    def indentation(self, node: cst.CSTNode) -> str:
        """The indentation libcst writes before node's statement."""
        return "".join(self._indent_tokens(node))

    def column(self, node: cst.CSTNode) -> int:
        """The column where node starts in the file, its line's indentation counted (from its
        statement's code, generated as the file has it)."""
        stmt = self.statement(node)
        state = _OffsetState(default_indent=self.module.default_indent, default_newline=self.module.default_newline)
        state.indent_tokens.extend(self._indent_tokens(stmt))
        stmt._codegen(state)
        text = "".join(state.tokens)
        start = state.syntactic[node][0]
        return start - (max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1)

    def render(self, node: cst.CSTNode, at: cst.CSTNode | None = None) -> str:
        """node's code indented as `at` (default: node itself) stands in the file: what a
        replacement of `at` must produce. The one place fixes turn nodes into text."""
        from libcst._nodes.internal import CodegenState

        state = CodegenState(default_indent=self.module.default_indent, default_newline=self.module.default_newline)
        state.indent_tokens.extend(self._indent_tokens(at if at is not None else node))
        node._codegen(state)
        return "".join(state.tokens)

    def _indent_tokens(self, node: cst.CSTNode) -> list[str]:
        out = []
        for anc in self.index.ancestors(node):
            if isinstance(anc, cst.IndentedBlock):
                out.append(anc.indent if anc.indent is not None else self.module.default_indent)
            elif isinstance(anc, cst.MatchCase):
                # A `match` indents its cases itself (no IndentedBlock holds them): a `case` body
                # is one level deeper than the blocks around it say.
                match = self.parent(anc)
                out.append(match.indent if match.indent is not None else self.module.default_indent)
        out.reverse()
        return out

    def insert_before(self, stmt: cst.CSTNode, code: str) -> tuple[cst.CSTNode, str]:
        """Replacement that puts the line `code` just before stmt (after stmt's own comment lines).
        Its edit is an insertion ending where stmt's code starts, so the same fix may also replace
        nodes inside stmt."""
        full = self.render(stmt)
        own = self._render_without_leading_lines(stmt)
        prefix = full[: len(full) - len(own)]
        return (stmt, prefix + self.indentation(stmt) + code + self.module.default_newline + own)

    def insert_after(self, stmt: cst.CSTNode, code: str) -> tuple[cst.CSTNode, str]:
        """Replacement that puts the line `code` just after the statement line stmt, at its
        indentation."""
        return (stmt, self.render(stmt) + self.indentation(stmt) + code + self.module.default_newline)

    def remove_statement(self, stmt: cst.CSTNode) -> tuple[cst.CSTNode, str]:
        """Replacement that deletes the statement line stmt; comment lines above it stay."""
        return self.remove_statements([stmt])[0]

    def remove_statements(self, stmts) -> list[tuple[cst.CSTNode, object]]:
        """Replacements deleting stmts (each once); a block they would leave empty keeps a `pass`.
        The comment lines above a deleted statement stay; its blank lines stay too, unless the
        statement after it starts with one of its own (no blank line doubles where code went)."""
        out = []
        by_block: dict = {}
        for stmt in dict.fromkeys(stmts):
            by_block.setdefault(self.parent(stmt), []).append(stmt)
        for block, members in by_block.items():
            body = list(block.body)  # a statement line sits in a module or an indented body
            if isinstance(block, cst.IndentedBlock) and len(members) == len(body):
                out.append((members[0], members[0].with_changes(body=[cst.Pass()])))
                out.extend((s, self._leading_text(s, s.leading_lines)) for s in members[1:])
                continue
            for run in _runs(body, set(members)):
                kept: list = []
                for s in run:
                    lines = list(s.leading_lines)
                    while kept and lines and kept[-1].comment is None and lines[0].comment is None:
                        lines.pop(0)  # the statements between two blank lines are gone: one stays
                    kept.extend(lines)
                after = body.index(run[-1]) + 1
                if after < len(body) and _starts_blank(body[after]):
                    while kept and kept[-1].comment is None:
                        kept.pop()
                out.append((run[0], self._leading_text(run[0], kept)))
                out.extend((s, "") for s in run[1:])
        return out

    def block_without(self, stmt: cst.CSTNode) -> tuple[cst.CSTNode, cst.CSTNode]:
        """Replacement of stmt's block (module or indented body) by the block without stmt: its
        comment lines go to the next statement, no blank line doubles, the block does not start
        with one, and a body left empty gets `pass`. Rewriting the block, not only the statement,
        is what lets the next statement's own blank lines go; the edit the engine writes is
        still only the lines that change."""
        block = self.parent(stmt)
        body = list(block.body)
        i = body.index(stmt)
        del body[i]
        if i < len(body):
            body[i] = body[i].with_changes(leading_lines=_joined_leading_lines(
                stmt, body[i], first_in_block=i == 0 and isinstance(block, cst.IndentedBlock)))
        if not body:
            body = [cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=stmt.leading_lines)]
        return (block, block.with_changes(body=body))

    def _leading_text(self, stmt: cst.CSTNode, lines) -> str:
        """The text of `lines` (comment and blank lines) as they would stand above stmt."""
        if not getattr(stmt, "leading_lines", None) and not lines:
            return ""
        full = self.render(stmt.with_changes(leading_lines=list(lines)), at=stmt)
        return full[: len(full) - len(self._render_without_leading_lines(stmt))]

    def _render_without_leading_lines(self, stmt: cst.CSTNode) -> str:
        """stmt's code without the comment/blank lines above it."""
        bare = stmt.with_changes(leading_lines=()) if getattr(stmt, "leading_lines", None) else stmt
        return self.render(bare, at=stmt)

    @cached_property
    def quote(self) -> str:
        """The quote character most string literals of this file use (for strings a fix writes)."""
        single = double = 0
        for node in self.index.nodes(cst.SimpleString):
            q = node.quote
            if q == "'":
                single += 1
            elif q == '"':
                double += 1
        return "'" if single > double else '"'

    def quote_at(self, node: cst.CSTNode) -> str:
        """The quote for a string a fix writes at node: the file's own (`quote`), unless node is
        inside an f-string delimited by that quote, where the same quote only parses from Python
        3.12 on (`f"{torch.amp.GradScaler("cuda")}"`): then the other one."""
        quote = self.quote
        for anc in self.index.ancestors(node):
            if isinstance(anc, cst.FormattedString) and quote in anc.start[-1:] + anc.end[:1]:
                return "'" if quote == '"' else '"'
        return quote

    @cached_property
    def name_values(self) -> frozenset[str]:
        """Every identifier used in the file (to pick a new name that clashes with none)."""
        return frozenset(n.value for n in self.index.nodes(cst.Name))

    def fresh_name(self, *candidates: str) -> str:
        for name in candidates:
            if name not in self.name_values:
                return name
        base = candidates[0]
        i = 2
        while f"{base}_{i}" in self.name_values:
            i += 1
        return f"{base}_{i}"

    def last_import(self) -> cst.CSTNode | None:
        """The last top-level import statement of the leading imports; None when the module has
        none. Simple setup lines between imports (`sys.path.insert(0, ...)`,
        `warnings.filterwarnings(...)`, `os.environ[...] = ...`) do not end them: code inserted
        after the first group would come before the `import torch` below such a line."""
        body = self.module.body
        anchor = None
        for i, stmt in enumerate(body):
            if _is_import(stmt):
                anchor = stmt
            elif anchor is not None and not (_is_setup(stmt) and any(_is_import(later) for later in body[i + 1:i + 4])):
                break
        return anchor

    def insert_after_imports(self, code: str, after: cst.CSTNode | None = None) -> tuple[cst.CSTNode, str]:
        """Replacement that adds the line `code` after the module's imports (after a docstring when
        there are none, else at the top), and after the module-level statement `after` when that
        comes later (the one that binds a name code uses: imports.module_binding)."""
        newline = self.module.default_newline
        is_import = code.startswith(("import ", "from "))
        anchor = self.last_import()
        body = self.module.body
        if after is not None and (anchor is None or body.index(after) > body.index(anchor)):
            anchor = after
        if anchor is None:
            if not body:
                return (self.module, code + newline)
            if not is_docstring(body[0]):
                # Black keeps a blank line between the imports and the code below them.
                blank = is_import and not _starts_blank(body[0]) and not _is_import(body[0])
                gap = _def_gap(code, body[0], 1 if blank else 0, newline, after_import=False)
                return self.insert_before(body[0], code + (newline if blank else "") + gap)
            anchor = body[0]
        # A statement goes below the imports (and anything below a docstring) after a blank line,
        # as Black lays them out; an import joins the import block.
        blank = not is_import or is_docstring(anchor)
        return (anchor, self.render(anchor) + (newline if blank else "") + code + newline + self.def_gap_after(anchor, code))

    def def_gap_after(self, anchor: cst.CSTNode, code: str) -> str:
        """The blank lines to write after `code` inserted just below the module-level statement
        `anchor`, so that a `def` or `class` below keeps PEP 8's two blank lines: those it had
        followed an import (none, or isort's one), and a setting line written between left it
        with fewer."""
        body = list(self.module.body)
        i = next((k for k, stmt in enumerate(body) if stmt is anchor), None)
        if i is None or i + 1 >= len(body):
            return ""
        below = body[i + 1]
        return _def_gap(code, below, blank_lines_above(below), self.module.default_newline, _is_import(anchor))

    def local_names(self, at: cst.CSTNode) -> set[str]:
        """The names the functions around `at` bind (their parameters and assignments): code
        written there that means the module's `os` or `F` must not use a name they rebind."""
        out: set[str] = set()
        for fn in self.index.ancestors(at):
            if isinstance(fn, (cst.FunctionDef, cst.Lambda)):
                out |= bound_names(fn.body) | {p.name.value for p in walk(fn.params) if isinstance(p, cst.Param)}
        return out

    def module_name(self, module: str, at: cst.CSTNode | None = None) -> tuple[str, list]:
        """How to spell `module` here (`torch`, `th`, `F`), and the replacements that add an import when
        nothing binds it (`import torch`; a standard-library module where isort would put it). With
        `at`, the code written there: an alias that a function around it rebinds (`B, F, N, C =
        x.shape` in a video model) is passed over for a longer spelling."""
        names = self.names
        parts = module.split(".")
        shadowed = self.local_names(at) if at is not None else set()
        # The longest bound prefix: `F` for torch.nn.functional, else `nn.functional`, else `torch.nn.functional`.
        for i in range(len(parts), 0, -1):
            alias = names.module_alias(".".join(parts[:i]))
            if alias is not None and alias.split(".")[0] not in shadowed:
                return ".".join([alias, *parts[i:]]), []
        if is_stdlib(parts[0]):
            return module, [insert_stdlib_import(self, parts[0])]
        guarded = guarded_import(self, parts[0])
        if guarded is not None:  # `try: from torch import nn / except ImportError: sys.exit()`
            guard, inner = guarded
            if inner is not None:  # above that line: under the handler, before code in the try that may use it
                return module, [self.insert_before(inner, f"import {parts[0]}")]
            anchor, text = self.insert_after_imports(f"import {parts[0]}", after=guard)
            body = list(self.module.body)
            below = body[body.index(anchor) + 1] if anchor in body and body.index(anchor) + 1 < len(body) else None
            newline = self.module.default_newline
            if below is not None and not _is_import(below) and not _starts_blank(below) \
                    and not text.endswith(newline * 2):
                text += newline  # Black's blank line between an import and the code below it
            return module, [(anchor, text)]
        placed = insert_third_party_import(self, parts[0])
        return module, [placed or self.insert_after_imports(f"import {parts[0]}")]


def _appended(call: cst.Call, new_arg: cst.Arg, indent: str) -> list[cst.Arg]:
    """call's arguments with new_arg last, in the call's own layout. Comments stay where they
    were: one after the last argument stays on its line, those before the closing parenthesis
    stay before it, and none is copied onto the new argument's line."""
    args = list(call.args)
    if not args:
        return [new_arg]
    last = args[-1]
    before_last = args[-2].comma.whitespace_after if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) \
        else call.whitespace_before_args
    # The whitespace that starts an argument's line, when the last argument starts one: ours
    # starts one the same way.
    own_line = before_last.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[]) \
        if isinstance(before_last, cst.ParenthesizedWhitespace) else None
    if isinstance(last.comma, cst.Comma):
        closing = last.comma.whitespace_after  # up to the closing parenthesis (or to nothing)
        if own_line is not None and isinstance(closing, cst.ParenthesizedWhitespace):
            args[-1] = last.with_changes(comma=last.comma.with_changes(
                whitespace_after=own_line.with_changes(first_line=closing.first_line)))
            new_arg = new_arg.with_changes(comma=last.comma.with_changes(
                whitespace_before=cst.SimpleWhitespace(""),
                whitespace_after=closing.with_changes(first_line=cst.TrailingWhitespace())))
        else:  # `f(a, b,)`: same line, trailing comma kept
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            new_arg = new_arg.with_changes(comma=last.comma)
        return [*args, new_arg]
    closing = last.whitespace_after_arg
    if isinstance(closing, cst.ParenthesizedWhitespace) and closing.first_line.comment is None and \
            (own_line is None or len(args) == 1):
        # `f(\n    a, b\n)`, Black's layout of arguments that fit a line of their own: ours joins
        # them there (FileContext.with_keyword puts them one per line when they no longer fit).
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
                                     whitespace_after_arg=cst.SimpleWhitespace(""))
        return [*args, new_arg.with_changes(whitespace_after_arg=closing)]
    if isinstance(closing, cst.ParenthesizedWhitespace):
        # `f(\n    a, b  # note\n)`: the note stays after b; ours goes on a line of its own.
        line = own_line or closing.with_changes(empty_lines=[], last_line=cst.SimpleWhitespace(
            closing.last_line.value + indent))
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=line.with_changes(first_line=closing.first_line)),
                                     whitespace_after_arg=cst.SimpleWhitespace(""))
        new_arg = new_arg.with_changes(whitespace_after_arg=closing.with_changes(first_line=cst.TrailingWhitespace()))
        return [*args, new_arg]
    comma = cst.Comma(whitespace_after=own_line if own_line is not None else cst.SimpleWhitespace(" "))
    args[-1] = last.with_changes(comma=comma, whitespace_after_arg=cst.SimpleWhitespace(""))
    return [*args, new_arg.with_changes(whitespace_after_arg=closing)]


def _runs(body: list, gone: set) -> list[list]:
    """The statements of `gone`, in runs of neighbours in `body`."""
    runs: list[list] = []
    for i, stmt in enumerate(body):
        if stmt in gone:
            if runs and i > 0 and body[i - 1] is runs[-1][-1]:
                runs[-1].append(stmt)
            else:
                runs.append([stmt])
    return runs


def _is_import(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom))


def _is_setup(stmt: cst.CSTNode) -> bool:
    """A line that may sit among a script's imports: a simple statement (`sys.path.insert(...)`),
    or a `try:`/`if` whose block imports (`try: import wandb except ImportError: wandb = None`)."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return True
    if isinstance(stmt, (cst.Try, cst.If)) and isinstance(stmt.body, cst.IndentedBlock):
        return any(_is_import(s) for s in stmt.body.body)
    return False


def _def_gap(code: str, below: cst.CSTNode, blanks: int, newline: str, after_import: bool) -> str:
    """Newlines to add after the inserted `code` when the module-level `below` is a `def` or
    `class` with `blanks` blank lines between them: PEP 8 (and Black) want two. An import that
    joins an import block (after_import) needs none: the block's own gap is below's. One that
    starts the block (after a docstring, at the top) does: it had one blank line, or none."""
    last = code.rstrip().splitlines()[-1] if code.strip() else ""
    if not isinstance(below, (cst.FunctionDef, cst.ClassDef)) or (after_import and last.startswith(("import ", "from "))):
        return ""
    return newline * max(0, 2 - blanks)


def _starts_blank(stmt: cst.CSTNode) -> bool:
    lines = getattr(stmt, "leading_lines", ())
    return bool(lines) and lines[0].comment is None


def _joined_leading_lines(removed: cst.CSTNode, below: cst.CSTNode, first_in_block: bool) -> list[cst.EmptyLine]:
    """The lines above `below` once the statement `removed` just above it is gone: removed's
    comment lines are kept, but no blank line doubles, and a block does not start with one."""
    kept = list(getattr(removed, "leading_lines", ()))
    if _starts_blank(below):
        while kept and kept[-1].comment is None:
            kept.pop()
    lines = [*kept, *below.leading_lines]
    while first_in_block and lines and lines[0].comment is None:
        lines.pop(0)
    return lines
