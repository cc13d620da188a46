"""What a script's command-line options default to, read from its `argparse` calls: a setting
written as `args.num_workers` is the option's default unless the flag is given, so a rule can
judge the run a plain `python train.py` makes.
"""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from trainlint.analysis.devices import setting_literal


class OptionDefault(NamedTuple):
    flag: str  # the option's first flag, `--num-workers`
    value: object  # its default as a literal (False for a `store_true` flag without one), or UNKNOWN
    arg: cst.Arg | None  # the `default=` argument, where a fix can change it
    switch: cst.Call | None = None  # the `add_argument` of a `store_true` switch


def option_default(ctx, expr: cst.BaseExpression) -> OptionDefault | None:
    """The default of the command-line option that expr reads (`args.num_workers`): from the one
    `add_argument` call of the file whose destination is that attribute (`dest=`, else its first
    long option with dashes as underscores). None when a `parser.set_defaults(...)` may set it
    instead (timm's `set_defaults(pin_mem=True)`), or no such option is seen."""
    if not isinstance(expr, cst.Attribute):
        return None
    found = []
    for call in ctx.index.nodes(cst.Call):
        if not isinstance(call.func, cst.Attribute):
            continue
        if call.func.attr.value == "set_defaults" and (
                ctx.hides_arguments(call) or ctx.keyword(call, expr.attr.value) is not None):
            return None
        if call.func.attr.value != "add_argument":
            continue
        if option_destination(ctx, call) == expr.attr.value:
            found.append(call)
    if len(found) != 1:
        return None
    option = found[0]
    flags = [arg.value for arg in option.args if arg.keyword is None]
    flag = ctx.code(flags[0]).strip("'\"") if flags else expr.attr.value
    default = ctx.keyword(option, "default")
    action = ctx.keyword(option, "action")
    if default is not None and action is not None and ctx.literal(action.value) == "store_true":
        # `action="store_true", default=False`: a default of True would leave a flag that can no
        # longer turn it off; the fix makes it a switch with a `--no-` form instead.
        return OptionDefault(flag, ctx.literal(default.value), None, option)
    if default is not None:
        return OptionDefault(flag, setting_literal(ctx, default.value), default)
    if action is not None and ctx.literal(action.value) == "store_true":
        return OptionDefault(flag, False, None, option)
    return None


def option_destination(ctx, call: cst.Call) -> str | None:
    """The attribute an `add_argument` call sets on the parsed namespace: `dest=`, else its first
    long option with dashes as underscores (`--save-steps` -> `save_steps`)."""
    dest = ctx.keyword(call, "dest")
    if dest is not None:
        name = ctx.literal(dest.value)
        return name if isinstance(name, str) else None
    flags = [ctx.literal(arg.value) for arg in call.args if arg.keyword is None]
    longs = [f for f in flags if isinstance(f, str) and f.startswith("--")]
    return longs[0][2:].replace("-", "_") if longs else None


def parsed_options(ctx) -> list[tuple[str, str]]:
    """(namespace, option) for every option the file's `add_argument` calls define, read through
    the name the file binds the parsed namespace to (`args = parser.parse_args()`, or the first
    name of `args, rest = parser.parse_known_args()`): `args.save_steps` exists even where the
    code never reads it. Empty when the file binds no namespace so. Found once per file: every
    per-step finding without an interval of the code's own asks (unread_option)."""
    found = ctx.__dict__.get("_parsed_options")
    if found is not None:
        return found
    namespaces = []
    for assign in _parses(ctx):
        target = assign.targets[0].target
        if isinstance(target, cst.Tuple) and target.elements:
            target = target.elements[0].value
        if isinstance(target, cst.Name) and target.value not in namespaces:
            namespaces.append(target.value)
    found = []
    if len(namespaces) == 1:  # none, or several parsers: which one a name reads is not known
        options = [option_destination(ctx, call) for call in ctx.index.nodes(cst.Call)
                   if isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument"]
        found = [(namespaces[0], name) for name in dict.fromkeys(options) if name]
    ctx.__dict__["_parsed_options"] = found
    return found


def _parses(ctx) -> list[cst.Assign]:
    """The assignments of a parsed command line: `args = parser.parse_args()`, `args, rest =
    parser.parse_known_args()`."""
    return [a for a in ctx.index.nodes(cst.Assign) if isinstance(a.value, cst.Call)
            and isinstance(a.value.func, cst.Attribute)
            and a.value.func.attr.value in ("parse_args", "parse_known_args")]


def sees_namespace(ctx, node: cst.CSTNode, namespace: str) -> bool:
    """Whether code at node reads `namespace` as the parsed command line: the first function
    around it that has the name of its own has it as a parameter (`train(args)`) or parses it
    there; with none, the module parses it at its top level. One parsed only under `if __name__ ==
    "__main__":` counts where the function already reads the name: it does not exist where another
    module imports the function. A name bound otherwise may hold something else."""
    from trainlint.analysis.names import local_names
    from trainlint.analysis.tree import parameter_names

    parses = _parses(ctx)
    fn = outer = ctx.index.enclosing_function(node)
    while fn is not None:
        if namespace in local_names(fn):
            return namespace in parameter_names(fn) or any(ctx.index.enclosing_function(a) is fn for a in parses)
        fn = ctx.index.enclosing_function(fn)
    reads = outer is None or any(isinstance(n, cst.Name) and n.value == namespace for n in ctx.index.walk(outer.body))
    return any(ctx.index.enclosing_function(a) is None and (reads or isinstance(ctx.parent(ctx.parent(a)), cst.Module))
               for a in parses)


def unread_option(ctx, node: cst.CSTNode, pattern) -> str | None:
    """`args.save_steps` for the first option the script defines (add_argument) whose name matches
    pattern, read through a namespace code at node sees (sees_namespace), whatever the code reads."""
    for namespace, option in parsed_options(ctx):
        if pattern.match(option) and sees_namespace(ctx, node, namespace):
            return f"{namespace}.{option}"
    return None
