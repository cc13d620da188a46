"""Black's layout for the code fixes write, when it does not fit its line.

A fix builds its new code on one line. When that line is longer than `line-length`, the engine
splits the call at its brackets as Black does (`split_at_brackets`): the arguments on one line of
their own one level deeper, or one per line with a trailing comma (`one_arg_per_line`) when they
do not fit there; an argument still too long is split as Black splits a line inside brackets:
- at its operators of lowest priority, each starting a line (`enabled=use_amp` / `and not (...)`;
  `or` and `and` rank alike, then comparisons, then `+ -`, then `* / // % @`);
- a conditional expression inside parentheses of its own, `if` and `else` starting lines;
- a comprehension that is an assignment's or a return's value at its brackets, its content on a
  line of its own, else split before each `for` and `if` (`comprehended`);
- otherwise at the brackets that end it (Black's right-hand split): a call's arguments or a
  parenthesised expression on a line of their own one level deeper (one per line, with a trailing
  comma, when they do not fit there); a list, set, dict or tuple literal's elements one per line
  with a trailing comma (a sole element without one on a line of its own), as Black explodes a
  collection it splits.
Each piece still too long is split the same way. Code a user wrote over several lines keeps its
layout: an argument added to a call laid out by hand that no longer fits the line it joined
starts a line of its own, aligned as the author's lines of arguments are (`last_arg_continued`);
a call whose head a fix lengthens or shortens (TL501's `_trainlint_async_save(torch.save, ...`
around a comment, or around a collection kept exploded by a trailing comma) keeps the lines aligned under
its parenthesis aligned (`head_grown`); an argument the author split over lines with neither is joined
and laid out afresh;
only a call in Black's own layout, its arguments on one line of their own, that a fixed argument
makes too long is laid out again from one line (`rejoined`), as Black does. So is a call that fixes, one
after another, left with arguments beside one split over lines (`"cuda", enabled=a` / `and not
b, init_scale=8192`: `args_joined_on_split_line`), one argument per line. Indentation strings here are relative to the enclosing block's: the engine renders the
nodes where they stand, which adds the block's own.
"""

from __future__ import annotations

import re

import libcst as cst

# Operators Black splits before, by priority class: a chain of one class is split at all of them.
_CLASSES = (
    (cst.Or, cst.And),
    (cst.Equal, cst.NotEqual, cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual,
     cst.In, cst.NotIn, cst.Is, cst.IsNot),
    (cst.BitOr,),
    (cst.BitXor,),
    (cst.BitAnd,),
    (cst.LeftShift, cst.RightShift),
    (cst.Add, cst.Subtract),
    (cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.MatrixMultiply),
)


def one_arg_per_line(call: cst.Call, indent: str, closing: str, width: int) -> cst.Call:
    """Each argument on a line of its own, `indent` past the enclosing block's indentation plus
    `closing`, the closing parenthesis at `closing`, and a trailing comma. `width`: the room an
    argument's line leaves it (without the comma); an argument longer than that is split.

    A sole argument written without a comma gets none: Black splits such a call at its brackets
    (`enumerate(\n    DataLoader(...)\n)`), which adds no comma, as a split at commas does."""
    level = closing + indent
    if len(call.args) == 1 and not isinstance(call.args[0].comma, cst.Comma):
        arg = fitted(call.args[0], indent, level, width + 1)  # no comma to leave room for
        return call.with_changes(whitespace_before_args=newline(level),
                                 args=[arg.with_changes(whitespace_after_arg=newline(closing))])
    args = []
    for i, arg in enumerate(call.args):
        arg = fitted(arg, indent, level, width)
        after = level if i < len(call.args) - 1 else closing
        args.append(arg.with_changes(comma=cst.Comma(whitespace_after=newline(after)),
                                     whitespace_after_arg=cst.SimpleWhitespace("")))
    return call.with_changes(whitespace_before_args=newline(level), args=args)


def split_at_brackets(call: cst.Call, indent: str, level: str, width: int) -> cst.Call:
    """A call too long for its line as Black splits it at its brackets: the arguments on one line
    of their own one `indent` deeper, or one per line with a trailing comma when they do not fit
    there (or the call already ends in a comma); `width`: the room at `level`."""
    return _split_last_bracket(call, 0, 0, indent, level, width)


def last_arg_continued(call: cst.Call) -> cst.Call | None:
    """call with its last argument on a line of its own, started as the author's nearest earlier
    line of arguments is (a call laid out by hand, `DataLoader(ds, batch_size=8,` /
    `                   num_workers=2)`: the continuation lines stay aligned); None when no
    earlier argument starts a line, or the last one already does."""
    args = list(call.args)
    if len(args) < 2 or not isinstance(args[-2].comma, cst.Comma) \
            or isinstance(args[-2].comma.whitespace_after, cst.ParenthesizedWhitespace):
        return None
    starts = [call.whitespace_before_args, *(a.comma.whitespace_after for a in args[:-2] if isinstance(a.comma, cst.Comma))]
    breaks = [w for w in starts if isinstance(w, cst.ParenthesizedWhitespace)]
    if not breaks:
        return None
    line = breaks[-1].with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    args[-2] = args[-2].with_changes(comma=args[-2].comma.with_changes(whitespace_after=line))
    return call.with_changes(args=args)


def head_grown(call: cst.Call, paren: int, grown: int, moved: int, block: int) -> cst.Call:
    """call, laid out by hand with its first argument right after the opening parenthesis (at
    column `paren`) and lines aligned under it, after its head changed: the parenthesis moved
    `grown` columns (back, when negative) and what follows it on its line `moved` columns (more
    than `grown` where an argument was put first). Each line keeps its alignment (`torch.save(state,`
    / `           path)` as `_trainlint_async_save(torch.save, state,` / `                      path)`):
    a line starting an argument, or holding the closing parenthesis, at or past the parenthesis
    moves `grown` columns; the lines inside an argument move with the line it starts on, as
    aligned to what that line holds. Lines before the parenthesis (indented from the block, not
    aligned) stay. `block`: the width of the indentation the engine writes before each indented
    line. A call whose arguments start on a line of their own is returned as it is: none is
    aligned under the head."""
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return call

    def aligned(ws, by: int):
        """ws, a line break whose next line is at or past the parenthesis, moved `by` columns."""
        if not isinstance(ws, cst.ParenthesizedWhitespace) or by == 0:
            return ws
        value = ws.last_line.value
        if (block if ws.indent else 0) + len(value) < paren or value.strip(" "):
            return ws
        return ws.with_changes(last_line=cst.SimpleWhitespace(" " * max(0, len(value) + by)))

    class _Shift(cst.CSTTransformer):
        def __init__(self, by: int) -> None:
            super().__init__()
            self.by = by

        def leave_ParenthesizedWhitespace(self, original, updated):
            return aligned(updated, self.by)

    args = []
    shift = moved  # of the line the current argument starts on: the parenthesis' own at first
    for arg in call.args:
        before = args[-1].comma.whitespace_after if args and isinstance(args[-1].comma, cst.Comma) else None
        if isinstance(before, cst.ParenthesizedWhitespace):  # the argument starts a line
            value = before.last_line.value
            shift = grown if (block if before.indent else 0) + len(value) >= paren else 0
            args[-1] = args[-1].with_changes(comma=args[-1].comma.with_changes(whitespace_after=aligned(before, shift)))
        inner = arg.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=cst.SimpleWhitespace(""))
        inner = inner.visit(_Shift(shift))
        comma = arg.comma
        if isinstance(comma, cst.Comma):
            comma = comma.with_changes(whitespace_before=aligned(comma.whitespace_before, grown))
        args.append(inner.with_changes(comma=comma, whitespace_after_arg=aligned(arg.whitespace_after_arg, grown)))
    return call.with_changes(args=args)


def rejoined(call: cst.Call) -> cst.Call | None:
    """call written as Black writes a call too long for its line whose arguments fit one line of
    their own (`run(\n    model, DataLoader(ds), opt\n)`: no trailing comma, no comment), put back
    on one line; None for any other layout. When a fix makes that line of arguments too long,
    Black lays the call out again from one line (one argument per line), which the engine does
    with this call."""
    args = call.args
    if not args or not isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace) \
            or isinstance(args[-1].comma, cst.Comma) \
            or not isinstance(args[-1].whitespace_after_arg, cst.ParenthesizedWhitespace):
        return None
    breaks = (call.whitespace_before_args, args[-1].whitespace_after_arg)
    if any(b.first_line.comment is not None or b.empty_lines for b in breaks):
        return None
    inner = [a.whitespace_after_arg for a in args[:-1]] + [a.comma.whitespace_after for a in args[:-1]]
    if not all(isinstance(w, cst.SimpleWhitespace) for w in inner) or any("\n" in code(a.value) for a in args):
        return None
    return call.with_changes(whitespace_before_args=cst.SimpleWhitespace(""),
                             args=[*args[:-1], args[-1].with_changes(whitespace_after_arg=cst.SimpleWhitespace(""))])


def args_joined_on_split_line(call: cst.Call) -> cst.Call | None:
    """call laid out as no formatter writes it, which fixes made in turn: Black's split at its
    brackets (`GradScaler(\n    enabled=a\n    and not b\n)`, one argument over several lines),
    then an argument put before or after it on the same lines (`"cuda", enabled=a` / `and not b,
    init_scale=8192`). Put back on one line, for the engine to lay out again as Black does (one
    argument per line); None for any other layout, or one with a comment or a triple-quoted string
    (joining its lines would change it)."""
    args = call.args
    if len(args) < 2 or not isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace) \
            or isinstance(args[-1].comma, cst.Comma) \
            or not isinstance(args[-1].whitespace_after_arg, cst.ParenthesizedWhitespace) \
            or not any("\n" in code(a.value) for a in args):
        return None
    if any(isinstance(a.comma, cst.Comma) and isinstance(a.comma.whitespace_after, cst.ParenthesizedWhitespace)
           for a in args[:-1]):
        return None  # an argument that starts a line of its own: laid out by hand
    text = code(call)
    if "#" in text or '"""' in text or "\'\'\'" in text:
        return None
    text = re.sub(r"([(\[{])\s*\n\s*", r"\1", text)
    text = re.sub(r",?\s*\n\s*([)\]}])", r"\1", text)
    text = re.sub(r"\s*\n\s*", " ", text)
    try:
        joined = cst.parse_expression(text)
    except cst.ParserSyntaxError:
        return None
    return joined if isinstance(joined, cst.Call) else None


def fitted(arg: cst.Arg, indent: str, level: str, width: int) -> cst.Arg:
    """arg, on a line of its own at `level` inside a call's brackets, split when it is longer
    than `width`."""
    head = len(arg.star) + (len(arg.keyword.value) + 1 if arg.keyword is not None else 0)
    return arg.with_changes(value=_fit(arg.value, head, 0, indent, level, width))


def parenthesized(expr: cst.BaseExpression, indent: str, width: int) -> cst.BaseExpression:
    """expr inside parentheses, its content on lines of its own one `indent` deeper (Black's
    layout of an assignment's right-hand side too long for its line); `width`: the room a line
    one level deeper leaves."""
    return _inside_parentheses(expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]),
                               indent, "", width + len(indent))


def bracketed(collection: cst.BaseExpression, indent: str, width: int) -> cst.BaseExpression:
    """A list, set or tuple literal as Black lays out an assignment's value too long for its line
    (`_split_collection`): a sole element on a line of its own one `indent` deeper, more than one
    element one per line with a trailing comma; `width`: the room a line one level deeper leaves."""
    return _split_collection(collection, indent, "", width + len(indent))


def comprehended(comp: cst.BaseComp, indent: str, width: int) -> cst.BaseComp:
    """A list, set or dict comprehension as Black lays out an assignment's value too long for its
    line (`batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}`): its content on
    one line of its own one `indent` deeper, or split before each `for` and `if` when it does not
    fit there; `width`: the room a line one level deeper leaves."""
    return _split_comprehension(comp, indent, "", width + len(indent))


def fluent(chain: cst.Call, indent: str, width: int) -> cst.Call:
    """A method chain (`f(x).transpose(1, 2).reshape(b, n)`) as Black lays out an assignment's
    value too long for its line: inside parentheses, on one line of its own one `indent` deeper
    if it fits `width` there, else one method call per line (`method_lines`)."""
    if len(code(chain)) <= width:
        return parenthesized(chain, indent, width)
    return method_lines(chain, indent, indent, width).with_changes(
        lpar=[cst.LeftParen(whitespace_after=newline(indent))], rpar=[cst.RightParen(whitespace_before=newline(""))])


def method_lines(chain: cst.Call, indent: str, level: str, width: int) -> cst.Call:
    """A method chain inside brackets, one method call per line at `level` (`width` the room
    there), the call it starts from split as an argument is."""
    func = getattr(chain, "func", None)
    if isinstance(chain, cst.Call) and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
        dot = func.dot.with_changes(whitespace_before=newline(level))
        return chain.with_changes(func=func.with_changes(value=method_lines(func.value, indent, level, width), dot=dot))
    return _fit(chain, 0, 0, indent, level, width)


def code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def newline(indent: str) -> cst.ParenthesizedWhitespace:
    """A line break inside brackets, the next line indented `indent` past the block."""
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), empty_lines=[], indent=True, last_line=cst.SimpleWhitespace(indent)
    )


def _fit(expr: cst.BaseExpression, head: int, tail: int, indent: str, level: str, room: int) -> cst.BaseExpression:
    """expr laid out as Black lays out the line `head` + expr + `tail` (their lengths) that starts
    at `level` inside brackets, when that line is longer than `room`."""
    text = code(expr)
    if "\n" in text or head + len(text) + tail <= room:
        return expr
    if isinstance(expr, cst.IfExp) and not expr.lpar:
        # Black parenthesises a conditional it splits.
        expr = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    if expr.lpar:
        return _inside_parentheses(expr, indent, level, room)
    group = _class_of(expr)
    if group is not None:
        return _split_chain(expr, group, head, tail, indent, level, room)
    return _split_last_bracket(expr, head, tail, indent, level, room)


def _inside_parentheses(expr: cst.BaseExpression, indent: str, level: str, room: int) -> cst.BaseExpression:
    inner, inner_room = level + indent, room - len(indent)
    content = expr.with_changes(lpar=[], rpar=[])
    text = code(content)
    if isinstance(content, cst.IfExp) and len(text) > inner_room and "\n" not in text:
        line = newline(inner)
        content = content.with_changes(
            body=_fit(content.body, 0, 0, indent, inner, inner_room),
            test=_fit(content.test, len("if "), 0, indent, inner, inner_room),
            orelse=_fit(content.orelse, len("else "), 0, indent, inner, inner_room),
            whitespace_before_if=line, whitespace_before_else=line)
    else:
        content = _fit(content, 0, 0, indent, inner, inner_room)
    return content.with_changes(
        lpar=[expr.lpar[0].with_changes(whitespace_after=newline(inner)), *expr.lpar[1:]],
        rpar=[*expr.rpar[:-1], expr.rpar[-1].with_changes(whitespace_before=newline(level))])


def _class_of(expr: cst.BaseExpression) -> tuple | None:
    """The priority class of expr's own operator, when expr is an operator chain without parentheses."""
    if expr.lpar:
        return None
    if isinstance(expr, (cst.BooleanOperation, cst.BinaryOperation)):
        operator = expr.operator
    elif isinstance(expr, cst.Comparison):
        operator = expr.comparisons[0].operator
    else:
        return None
    return next((group for group in _CLASSES if isinstance(operator, group)), None)


def _split_chain(expr, group: tuple, head: int, tail: int, indent: str, level: str, room: int):
    """A line break before every operator of `group` in the chain expr; each operand fitted."""
    if _class_of(expr) is not group:
        return _fit(expr, head, tail, indent, level, room)
    if isinstance(expr, cst.Comparison):
        left = _split_chain(expr.left, group, head, 0, indent, level, room)
        targets = []
        for i, target in enumerate(expr.comparisons):
            operator = target.operator
            last = i == len(expr.comparisons) - 1
            comparator = _split_chain(target.comparator, group, len(code(operator).lstrip()), tail if last else 0,
                                      indent, level, room)
            targets.append(target.with_changes(operator=operator.with_changes(whitespace_before=newline(level)),
                                               comparator=comparator))
        return expr.with_changes(left=left, comparisons=targets)
    operator = expr.operator.with_changes(whitespace_before=newline(level))
    return expr.with_changes(
        left=_split_chain(expr.left, group, head, 0, indent, level, room),
        operator=operator,
        right=_split_chain(expr.right, group, len(code(expr.operator).lstrip()), tail, indent, level, room))


def _split_last_bracket(expr, head: int, tail: int, indent: str, level: str, room: int):
    """Black's right-hand split: the brackets that end expr hold their content one level deeper;
    expr unchanged when it does not end in brackets with something inside."""
    if expr.lpar:
        return _inside_parentheses(expr, indent, level, room)
    if isinstance(expr, cst.Call) and expr.args:
        inner_room = room - len(indent)
        body = ", ".join(code(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for arg in expr.args)
        if len(body) > inner_room or expr.args[-1].comma is not cst.MaybeSentinel.DEFAULT:
            return one_arg_per_line(expr, indent, level, inner_room - 1)  # 1: the comma
        last = expr.args[-1].with_changes(whitespace_after_arg=newline(level))
        return expr.with_changes(whitespace_before_args=newline(level + indent), args=[*expr.args[:-1], last])
    if isinstance(expr, cst.UnaryOperation):
        operand = _split_last_bracket(expr.expression, head + len(code(expr.operator)), tail, indent, level, room)
        return expr.with_changes(expression=operand)
    if isinstance(expr, (cst.List, cst.Set, cst.Dict)) and expr.elements:
        return _split_collection(expr, indent, level, room)
    if isinstance(expr, (cst.ListComp, cst.SetComp, cst.DictComp)):
        return _split_comprehension(expr, indent, level, room)
    if isinstance(expr, cst.GeneratorExp):
        return comprehension_clauses(expr, indent, level, room)  # a call's sole argument, its brackets split
    return expr


def _split_collection(expr, indent: str, level: str, room: int):
    """A list, set, dict or tuple literal split at its brackets as Black splits a collection: a
    sole element without a comma on a line of its own one level deeper (split in turn when still
    too long), more than one element (or a trailing comma) one per line with a trailing comma.
    A tuple without parentheses gets them."""
    inner = level + indent
    elements = expr.elements
    opening, closing = _brackets(expr)
    first = opening.with_changes(whitespace_after=newline(inner))
    if len(elements) == 1 and elements[0].comma is cst.MaybeSentinel.DEFAULT:
        elements = [elements[0].with_changes(
            value=_fit(elements[0].value, _head(elements[0]), 0, indent, inner, room - len(indent)))]
        return _with_brackets(expr, first, closing.with_changes(whitespace_before=newline(level)), elements=elements)
    elements = [element.with_changes(value=_fit(element.value, _head(element), 1, indent, inner, room - len(indent)),
                                     comma=cst.Comma(whitespace_after=newline(inner if i < len(elements) - 1 else level)))
                for i, element in enumerate(elements)]
    return _with_brackets(expr, first, closing.with_changes(whitespace_before=cst.SimpleWhitespace("")), elements=elements)


def _bracket_fields(expr) -> tuple[str, str]:
    """The fields of a list's, set's, dict's or comprehension's opening and closing brackets."""
    return ("lbracket", "rbracket") if isinstance(expr, (cst.List, cst.ListComp)) else ("lbrace", "rbrace")


def _brackets(expr) -> tuple[cst.CSTNode, cst.CSTNode]:
    """A collection's opening and closing brackets (a tuple's outer parentheses, new ones if none)."""
    if isinstance(expr, cst.Tuple):
        return (expr.lpar[0], expr.rpar[-1]) if expr.lpar else (cst.LeftParen(), cst.RightParen())
    opening, closing = _bracket_fields(expr)
    return getattr(expr, opening), getattr(expr, closing)


def _with_brackets(expr, opening, closing, **changes):
    """expr with its brackets (`_brackets`) replaced, and the other changes."""
    if isinstance(expr, cst.Tuple):
        return expr.with_changes(lpar=[opening, *expr.lpar[1:]], rpar=[*expr.rpar[:-1], closing], **changes)
    return expr.with_changes(**dict(zip(_bracket_fields(expr), (opening, closing))), **changes)


def _split_comprehension(expr: cst.BaseComp, indent: str, level: str, room: int) -> cst.BaseComp:
    """A comprehension's brackets split, its content one level deeper: on one line when it fits,
    else split by `comprehension_clauses`."""
    inner, inner_room = level + indent, room - len(indent)
    opening, closing = _brackets(expr)
    if len(code(expr)) - 2 > inner_room:
        expr = comprehension_clauses(expr, indent, inner, inner_room)
    return _with_brackets(expr, opening.with_changes(whitespace_after=newline(inner)),
                          closing.with_changes(whitespace_before=newline(level)))


def comprehension_clauses(expr: cst.BaseComp, indent: str, level: str, room: int) -> cst.BaseComp:
    """A comprehension's content, inside brackets already split, at `level` (`room` the columns
    left there): one line for the element and one for each `for` and `if` clause (no trailing
    comma: there are no elements to separate), the element split in turn when still too long."""
    line = newline(level)
    clauses, clause = [], expr.for_in
    while clause is not None:
        clauses.append(clause)
        clause = clause.inner_for_in
    inner_for = None  # rebuilt innermost first: each `for` holds the next one
    for clause in reversed(clauses):
        ifs = [test.with_changes(whitespace_before=line) for test in clause.ifs]
        inner_for = clause.with_changes(whitespace_before=line, ifs=ifs, inner_for_in=inner_for)
    if isinstance(expr, cst.DictComp):
        return expr.with_changes(value=_fit(expr.value, len(code(expr.key)) + 2, 0, indent, level, room),
                                 for_in=inner_for)
    return expr.with_changes(elt=_fit(expr.elt, 0, 0, indent, level, room), for_in=inner_for)


def _head(element: cst.BaseElement | cst.BaseDictElement) -> int:
    """The length of what comes before an element's value on its line: `key: `, `*`, `**`."""
    if isinstance(element, cst.DictElement):
        return len(code(element.key)) + 2
    if isinstance(element, cst.StarredDictElement):
        return 2
    return 1 if isinstance(element, cst.StarredElement) else 0
