"""`check --show-settings`: the settings a run would use for a file, without checking anything
(Ruff's option of the same name, for debugging a configuration: which file applies, which rules
are on, what is excluded, which fixes --fix may write)."""

from __future__ import annotations

from dataclasses import fields

from trainlint.config import Settings, extends_chain
from trainlint.registry import get_rule


def show_settings(path: str, settings: Settings) -> list[str]:
    """The settings for one file, as `key = value` lines (TOML-like, keys as the config spells them)."""
    lines = [
        f"file = {_value(path)}",
        f"config = {_value(settings.config_path) if settings.config_path else '(none: defaults)'}",
    ]
    if settings.config_path:
        lines.append(f"extends = {_value(extends_chain(settings.config_path))}")
    active = [r.rule.code for r in settings.active_rules(path)]
    lines.append(f"rules = {_value(active)}")
    for field in fields(Settings):
        if field.name in ("config_path", "rule_options"):
            continue
        value = getattr(settings, field.name)
        if field.name == "per_file_ignores":
            pairs = ", ".join(f"{_value(glob)} = {_value(codes)}" for glob, codes in value)
            text = f"{{ {pairs} }}" if pairs else "{}"
        else:
            text = _value(value)
        lines.append(f"{field.name.replace('_', '-')} = {text}")
    # Every option of every rule that runs here, with the value it runs with; a default says what
    # the option means, as a bare `TL101.num-workers = 0` would mislead (0: chosen at run time).
    configured = {(code, name) for code, options in settings.rule_options for name, _ in options}
    for code in active:
        described = get_rule(code).options
        for name, value in settings.options_for(code).items():
            note = "" if (code, name) in configured else f"  # default: {described[name].description}"
            lines.append(f"{code}.{name} = {_value(value)}{note}")
    return lines


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
