"""The public Python API. Linting never imports torch nor the code it checks."""

from __future__ import annotations

from trainlint.config import ConfigError, Settings, SettingsResolver
from trainlint.diagnostics import Diagnostic, RunResult
from trainlint.engine import ParseError, lint_text
from trainlint.fixer import FixError, fix_text
from trainlint.runner import Mode, run

__all__ = ["lint_source", "fix_source", "lint_paths", "FixError", "ParseError", "ConfigError", "Settings"]


def _settings(settings: Settings | None, select) -> Settings:
    settings = settings or Settings()
    if select is not None:
        settings = settings.with_overrides(select=tuple(select))
    return settings


def lint_source(text: str, path: str = "<string>", settings: Settings | None = None, *, select=None) -> list[Diagnostic]:
    settings = _settings(settings, select)
    return lint_text(text, path, settings.active_rules(path), settings)


def fix_source(text: str, *, select=None, unsafe_fixes: bool = True, path: str = "<string>",
               settings: Settings | None = None) -> str:
    """The text with fixes of the selected rules applied (to a fixed point).

    Raises FixError if the fixed text would not parse, ParseError if the input does not.
    """
    settings = _settings(settings, select)
    return fix_text(text, path, settings.active_rules(path), settings, unsafe_fixes=unsafe_fixes).text


def lint_paths(paths: list[str], settings: Settings | None = None, *, config: str | None = None) -> RunResult:
    if settings is not None:
        resolver = SettingsResolver()
        resolver.fixed = settings
    else:
        resolver = SettingsResolver(config)
    return run(list(paths), resolver, Mode())
