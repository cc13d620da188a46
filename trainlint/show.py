"""`check --show-settings`: the settings a run would use for a file, without checking anything
(Ruff's option of the same name, for debugging a configuration: which file applies, which rules
are on, what is excluded, which fixes --fix may write)."""

from __future__ import annotations

from dataclasses import fields

from trainlint.config import Settings, extends_chain
from trainlint.registry import all_rules, get_rule

# What an unset (None) key stands for, said rather than a bare "(default)": (value, meaning).
_UNSET = {
    "select": (None, "the rules on by default"),  # the value: their codes
    "fixable": (["ALL"], "every rule's fixes"),
    "target_torch": ("(none)", "a current PyTorch"),
}


def show_settings(path: str, settings: Settings, run: dict | None = None) -> list[str]:
    """The settings for one file, as `key = value` lines (TOML-like, keys as the config spells them).
    run: the keys that hold for the whole run (fix, output-format, ...) as this run resolved them,
    listed last: a file's own configuration may set them, but the run does what the command line
    says, else the configuration of the folder it starts in."""
    run = run or {}
    lines = [
        f"file = {_value(path)}",
        f"config = {_value(settings.config_path) if settings.config_path else '(none: defaults)'}",
    ]
    if settings.config_path:
        lines.append(f"extends = {_value(extends_chain(settings.config_path))}")
    active = [r.rule.code for r in settings.active_rules(path)]
    lines.append(f"rules = {_value(active)}")
    for field in fields(Settings):
        if field.name not in ("config_path", "rule_options") and field.name not in run:
            lines.append(f"{field.name.replace('_', '-')} = {_setting(field.name, getattr(settings, field.name))}")
    # Every option of every rule that runs here, with the value it runs with; a default says what
    # the option means, as a bare `TL101.num-workers = 0` would mislead (0: chosen at run time).
    configured = {(code, name) for code, options in settings.rule_options for name, _ in options}
    for code in active:
        described = get_rule(code).options
        for name, value in settings.options_for(code).items():
            note = "" if (code, name) in configured else f"  # default: {described[name].description}"
            lines.append(f"{code}.{name} = {_value(value)}{note}")
    if run:
        lines.append("# for the whole run (the command line, else the configuration of the folder it starts in):")
        lines += [f"{name.replace('_', '-')} = {_value(value)}" for name, value in run.items()]
    return lines


def _setting(name: str, value) -> str:
    if name == "per_file_ignores":
        pairs = ", ".join(f"{_value(glob)} = {_value(codes)}" for glob, codes in value)
        return f"{{ {pairs} }}" if pairs else "{}"
    if value is None and name in _UNSET:
        shown, meaning = _UNSET[name]
        if name == "select":
            shown = [r.code for r in all_rules() if r.default_enabled]
        return f"{shown if isinstance(shown, str) else _value(shown)}  # default: {meaning}"
    return _value(value)


def _value(value) -> str:
    if value is None:
        return "(default)"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
