"""Linting one text: prefilter, parse once, one batched pass of every enabled rule, suppressions,
positions, diagnostics. Pure: no file I/O, no printing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from trainlint.libcst_import import import_libcst

import_libcst()  # first, so libcst's dataclasses use the kept code; the line below just binds it
import libcst as cst  # noqa: E402

from trainlint.analysis.context import FileContext
from trainlint.analysis.loops import STEP_HOOK_NAMES
from trainlint.analysis.positions import Positions
from trainlint.diagnostics import Applicability, Diagnostic, Edit, Fix
from trainlint.layout import args_joined_on_split_line, last_arg_continued, split_at_brackets
from trainlint.rule import DOCS_URL, Finding, Rule
from trainlint.suppressions import audited_problems, parse_suppressions, unused_codes, without_codes
from trainlint.textpos import LineIndex, edits_overlap


class ParseError(Exception):
    """The text is not valid Python; the message says where and why."""


@dataclass(frozen=True)
class ActiveRule:
    rule: type[Rule]
    options: dict


def parse(text: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        # libcst's position and message are its parser's (for `print "hi"` one row late, with a
        # list of expected tokens); CPython's say what a person fixes. Asked only on this failure path.
        _check_cpython_syntax(text)
        raise ParseError(f"syntax error at line {exc.raw_line}, column {exc.raw_column + 1}: {exc.message} "
                         "(CPython parses this file; libcst, which trainlint reads code with, does not)") from None
    except (RecursionError, MemoryError):
        raise ParseError("too deeply nested to parse") from None
    except Exception as exc:  # libcst's native parser raises a few other types on odd input
        raise ParseError(f"cannot parse: {exc}") from None


def check_syntax(text: str) -> None:
    """Raise ParseError unless trainlint can read the text, for a file no rule needs the tree of.

    The stdlib parser answers about ten times faster than libcst, but only in the syntax of the
    interpreter running trainlint: a file in a newer one (`type Batch = ...` or `def f[T]()`
    under Python 3.11, a t-string under 3.13) is valid code that libcst reads, so libcst decides."""
    try:
        _check_cpython_syntax(text)
    except ParseError:
        parse(text)


def _check_cpython_syntax(text: str) -> None:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        raise ParseError(f"syntax error at line {exc.lineno}, column {exc.offset or 0}: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ParseError(f"cannot parse: {exc}") from None


def select_for_text(rules: list[ActiveRule], text: str) -> list[ActiveRule]:
    """The text prefilter: a rule runs only if one of its trigger strings occurs in the file
    (and, for hot-loop rules, the file mentions a backward or step call at all)."""
    hot = None
    out = []
    for r in rules:
        if r.rule.triggers and not any(t in text if isinstance(t, str) else all(s in text for s in t)
                                       for t in r.rule.triggers):
            continue
        if r.rule.needs_hot_loop:
            if hot is None:
                # A call, not the word: "backward pass" is in many docstrings. A framework's
                # per-step hook (`training_step`) is a hot loop's body without the loop.
                hot = "backward(" in text or ".step(" in text or any(h in text for h in STEP_HOOK_NAMES)
            if not hot:
                continue
        out.append(r)
    return out


def lint_text(text: str, path: str, rules: list[ActiveRule], settings=None) -> list[Diagnostic]:
    # The suppression audit (TL001) runs after the others, on what their findings' suppressions did.
    audit = next((r for r in rules if r.rule.audits_suppressions), None)
    if audit is not None:
        rules = [r for r in rules if r is not audit]
    active = select_for_text(rules, text)
    findings: list[Finding] = []
    ctx = None
    if active:
        module = parse(text)
        ctx = FileContext(path, text, module, settings)
        findings = _run(ctx, active)
    else:
        # No rule needs the tree, but a file that does not parse is still reported; the stdlib
        # parser answers that about ten times faster than libcst.
        check_syntax(text)
    ignore_noqa = getattr(settings, "ignore_noqa", False)
    if not findings and (audit is None or ignore_noqa):
        return []
    suppressions = None if ignore_noqa else ctx.suppressions if ctx is not None else parse_suppressions(text)
    out = _resolve(findings, ctx, path, suppressions) if findings else []
    if audit is not None and suppressions is not None and (suppressions.directives or suppressions.problems):
        enabled = frozenset(r.rule.code for r in rules) | {audit.rule.code}
        out.extend(_unused_suppressions(audit.rule, text, path, suppressions, enabled, settings))
        out.sort(key=Diagnostic.sort_key)
    return out


def _run(ctx: FileContext, active: list[ActiveRule]) -> list[Finding]:
    instances = [r.rule(ctx, r.options) for r in active]
    # One pass: for each node type any rule visits, hand each node (document order) to its visitors.
    visitors: dict[type, list] = {}
    for inst in instances:
        for node_type, method in inst.visited_types().items():
            visitors.setdefault(node_type, []).append(getattr(inst, method))
    for node_type, methods in visitors.items():
        for node in ctx.index.nodes(node_type):
            for method in methods:
                method(node)
    return [f for inst in instances for f in inst.findings]


def _resolve(findings: list[Finding], ctx: FileContext, path: str, suppressions) -> list[Diagnostic]:
    text = ctx.text
    wanted = [f.node for f in findings] + [old for f in findings if f.fix for old, _ in f.fix.replacements]
    positions = Positions(ctx.module, text, wanted, ctx.index.parent)
    out: list[Diagnostic] = []
    seen: set = set()
    for finding in findings:
        start, end = positions.span(finding.node)
        start_loc = positions.location(start)
        if suppressions is not None and suppressions.suppressed(finding.code, start_loc.row):
            continue
        key = (finding.code, start, end, finding.message)
        if key in seen:
            continue
        seen.add(key)
        fix = None
        message = finding.message
        if finding.fix is not None:
            edits = []
            for old, new in finding.fix.replacements:
                edits.append(_edit(ctx, positions, old, new))
            edits.sort(key=lambda e: (e.start, e.end))
            if edits_overlap(edits):
                # A rule's fix whose edits overlap cannot be applied nor shown: the finding stands
                # without one, and says so (its message was written for a fix that would be made).
                message = _not_fixed(message)
            else:
                fix = Fix(_applicability(ctx.settings, finding.code, finding.fix.applicability), finding.fix.message,
                          tuple(e for e in edits if e is not None), finding.fix.follow_up)
        out.append(
            Diagnostic(
                code=finding.code,
                name=finding.name,
                message=message,
                path=path,
                start=start_loc,
                end=positions.location(end),
                start_offset=start,
                end_offset=end,
                fix=fix,
                url=DOCS_URL.format(code=finding.code.lower()),
            )
        )
    out.sort(key=Diagnostic.sort_key)
    return out


def _not_fixed(message: str) -> str:
    """The message of a finding whose fix the engine dropped (its edits overlap): it says why."""
    return message + "; not fixed: trainlint could not make this fix's edits fit together (please report this)"


def _applicability(settings, code: str, applicability: Applicability) -> Applicability:
    return applicability if settings is None else settings.fix_applicability(code, applicability)


def _unused_suppressions(rule: type[Rule], text: str, path: str, suppressions, enabled: frozenset,
                         settings) -> list[Diagnostic]:
    """The audit rule's findings: suppression codes that suppressed nothing (suppressions.unused_codes)."""
    from trainlint.registry import all_rules

    known = frozenset(r.code for r in all_rules()) | enabled
    lines = LineIndex(text)
    out = []
    for directive, unused in unused_codes(suppressions, known, enabled, rule.code):
        start, end, new = without_codes(lines, directive, tuple(code for code, _why in unused))
        message, fix_message = rule.describe(directive, unused)
        edit = Edit(start, end, new, lines.location(start), lines.location(end))
        fix = Fix(_applicability(settings, rule.code, Applicability(rule.fix_applicability)), fix_message, (edit,))
        out.append(Diagnostic(
            code=rule.code, name=rule.name, message=message, path=path,
            start=lines.location(directive.start), end=lines.location(directive.end),
            start_offset=directive.start, end_offset=directive.end, fix=fix, url=rule.url(),
        ))
    # Comments that do not do what they look like: reported without a fix (the rule says why).
    for directive, problem in audited_problems(suppressions, rule.code):
        out.append(Diagnostic(
            code=rule.code, name=rule.name, message=rule.describe_problem(text, directive, problem), path=path,
            start=lines.location(directive.start), end=lines.location(directive.end),
            start_offset=directive.start, end_offset=directive.end, fix=None, url=rule.url(),
        ))
    return out


def _newlines(ctx: FileContext, text: str) -> str:
    """Code a fix wrote as text, its line breaks the file's own: helpers written with `\n` go into
    a CRLF file as CRLF (found by tests/test_properties.py: TL501's helper in a CRLF script)."""
    newline = ctx.module.default_newline
    return text if newline == "\n" else text.replace("\r\n", "\n").replace("\n", newline)


def _inside_call_on_line(ctx: FileContext, positions: Positions, old: cst.CSTNode, start: int) -> bool:
    """old is an argument, not the first, of a call that opens on old's line or spans several
    (`parser.add_argument("-j", default=0, type=int,` with the default replaced): Black would
    split that outer call, not the new one inside it, so the line is left long rather than split at
    the new call's brackets in the middle of the author's layout."""
    holder = ctx.parent(old)
    if not isinstance(holder, cst.Arg):
        return False
    call = ctx.parent(holder)
    if not isinstance(call, cst.Call) or call.args[0] is holder:
        return False
    # (on the call's first line after other arguments, or on a continuation line of a call the
    # author laid out over several)
    opened = positions.inclusive_span(call)[0]
    hand_laid = not isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace)  # not Black's `f(\n`
    return positions.location(opened).row == positions.location(start).row or (
        hand_laid and "\n" in ctx.text[opened:positions.inclusive_span(call)[1]])


def _inside_comprehension_on_line(ctx: FileContext, positions: Positions, old: cst.CSTNode, start: int) -> bool:
    """old is inside a comprehension or generator whose bracket opens on old's line (`x, y =
    (t.cuda() if gpu else t for t in batch)`): Black would split that comprehension at its
    brackets and clauses, not the call inside it, so the line is left long rather than split at the
    new call's brackets (`t.cuda(\n    non_blocking=True\n)`)."""
    for anc in ctx.index.ancestors(old):
        if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return False
        if isinstance(anc, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            opened = positions.inclusive_span(anc)[0]
            return positions.location(opened).row == positions.location(start).row
    return False


def _shares_its_line(ctx: FileContext, node: cst.CSTNode) -> bool:
    """node is in one of several statements joined by `;` on a line: split at the call's brackets,
    the line's next statement would start after the closing bracket (`); y = ...`), as no
    formatter writes it; the author chose a dense line, and it stays one."""
    line = ctx.index.enclosing(node, cst.SimpleStatementLine)
    return line is not None and len(line.body) > 1


def _continuation_indent(ctx: FileContext, positions: Positions, old: cst.CSTNode, start: int) -> str:
    """The indentation of old's line past its statement's (a call on a continuation line, `for b in
    enumerate(\n        DataLoader(...)):`, is laid out from that line's indentation)."""
    line = ctx.text[positions.line_start(positions.location(start).row):start]
    block = ctx.indentation(old)
    return line[len(block):len(line) - len(line.lstrip(" \t"))] if line.startswith(block) else ""


def _edit(ctx: FileContext, positions: Positions, old: cst.CSTNode, new) -> Edit:
    start, end = positions.inclusive_span(old)
    before = ctx.text[start:end]
    if isinstance(new, str):
        return _text_edit(ctx, positions, start, before, new)
    after = ctx.render(new, at=old)
    if isinstance(new, cst.Call) and new.args:
        line_start = positions.line_start(positions.location(start).row)
        line_end = len(ctx.text)
        for terminator in ("\n", "\r"):
            found = ctx.text.find(terminator, end)
            if found != -1:
                line_end = min(line_end, found)
        trailing = line_end - end
        joined = args_joined_on_split_line(new) if "\n" in after else None
        if joined is not None:
            # An argument put beside one that a fix split over lines (`"cuda", enabled=a` / `and
            # not b, init_scale=8192`): laid out again from one line, one argument per line.
            extra = _continuation_indent(ctx, positions, old, start)
            after = ctx.render(split_at_brackets(joined, ctx.module.default_indent, extra, ctx.room(old, extra)), at=old)
        elif "\n" in after:
            # A call laid out by hand over several lines: an argument that made its last line too
            # long starts a line of its own, aligned as the author's (Black would redo it all).
            grown = len(after.rsplit("\n", 1)[-1]) + trailing > ctx.line_length \
                and len(before.rsplit("\n", 1)[-1]) + trailing <= ctx.line_length
            moved = last_arg_continued(new) if grown else None
            if moved is not None:
                after = ctx.render(moved, at=old)
        elif (start - line_start) + len(after) + trailing > ctx.line_length and not _inside_call_on_line(
                ctx, positions, old, start) and not _inside_comprehension_on_line(ctx, positions, old, start) \
                and not _shares_its_line(ctx, old):
            # A call on a continuation line (`for b in enumerate(\n        DataLoader(...)):`) is
            # laid out from that line's indentation, not from its statement's.
            extra = _continuation_indent(ctx, positions, old, start)
            after = ctx.render(split_at_brackets(new, ctx.module.default_indent, extra, ctx.room(old, extra)), at=old)
        if "\n" in after and "\n" not in before:
            moved = _suppression_moved_up(ctx, positions, start, end, after)
            if moved is not None:
                end, after = moved
                before = ctx.text[start:end]
    prefix, suffix = _common_ends(before, after)
    s, e = start + prefix, end - suffix
    return Edit(s, e, after[prefix:len(after) - suffix], positions.location(s), positions.location(e))


def _suppression_moved_up(ctx: FileContext, positions: Positions, start: int, end: int,
                          after: str) -> tuple[int, str] | None:
    """A call that a fix splits over lines leaves its line's comment behind its closing bracket, as
    Black does; a suppression comment there (`# noqa: TL102`, `# trainlint: ignore[...]`) would
    then cover a line where no finding starts, and the next round of fixes would write the fixes it
    suppressed. It goes up to the opening bracket's line instead (`DataLoader(  # noqa: TL102`),
    as one writes it by hand: (the edit's new end, past the comment, and its text), or None when the
    call's line holds no suppression after it."""
    row = positions.location(start).row
    comment = next((d for d in ctx.suppressions.directives
                    if d.row == row and not d.file_level and d.comment_start >= end), None)
    if comment is None:
        return None
    between = ctx.text[end:comment.comment_start]
    if between.strip(" \t)]}:,") or "\\" in between:
        return None  # more code after the call on its line (`f(DataLoader(...), x)  # noqa`)
    cut = after.index("\n")
    first = after[:cut].rstrip("\r")
    return comment.comment_end, (first + "  " + ctx.text[comment.comment_start:comment.comment_end]
                                 + after[len(first):] + between.rstrip(" \t"))


def _common_ends(before: str, after: str) -> tuple[int, int]:
    """How many characters before and after share at the start and at the end: the edit is kept
    minimal, so reviewers and suggestion blocks see only what really changes."""
    prefix = 0
    limit = min(len(before), len(after))
    while prefix < limit and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and before[len(before) - 1 - suffix] == after[len(after) - 1 - suffix]:
        suffix += 1
    return prefix, suffix


def _text_edit(ctx: FileContext, positions: Positions, start: int, before: str, after: str) -> Edit:
    """The edit replacing `before` (at start) with code a rule wrote as text, which often repeats
    the source (a statement rendered, then a line added after it). Only what the fix changes gets
    the file's line breaks: converting the whole text turned the repeated lines' LF into CRLF in a
    file whose first lines end in CRLF and later ones in LF, so TL501's edit after the loop grew
    over the loop's last lines, overlapped its edit of the save call there, and the fix was dropped."""
    prefix, suffix = _common_ends(before, after)
    if prefix and after[prefix - 1] == "\r" and after[prefix:prefix + 1] == "\n":
        prefix -= 1  # a CRLF split between the kept text and the converted one would become CR CR LF
    changed = _newlines(ctx, after[prefix:len(after) - suffix])
    before_changed = before[prefix:len(before) - suffix]
    more, less = _common_ends(before_changed, changed)
    s, e = start + prefix + more, start + len(before) - suffix - less
    return Edit(s, e, changed[more:len(changed) - less], positions.location(s), positions.location(e))
