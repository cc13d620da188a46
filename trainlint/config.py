"""Configuration: `[tool.trainlint]` in pyproject.toml, or trainlint.toml; the nearest file to
each checked file wins, and command-line options override it.

Every key is validated: an unknown key, a wrong type or an unknown rule code is a ConfigError
naming the file, the key and what was expected (the CLI exits 2).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
import os
import re
import sys
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from trainlint import __version__
from trainlint.diagnostics import Applicability
from trainlint.registry import all_rules, get_rule, is_known_selector

if TYPE_CHECKING:
    from trainlint.engine import ActiveRule

CONFIG_FILES = ("trainlint.toml", "pyproject.toml")
TORCH_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")
TARGET_GPUS = ("any", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist",
    "node_modules", "site-packages", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".trainlint_cache",
    ".eggs", "*.egg-info",
)


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] | None = None  # None: the default rule set
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True  # folders are read through git: what .gitignore ignores is not checked
    target_gpu: str = "any"
    # The width a fix may grow a line to before it puts a call's arguments one per line (Black's
    # layout); set it to the project's formatter's (Ruff's and Black's `line-length`).
    line_length: int = 88
    # The oldest PyTorch the code must run on ("2.1"): rules whose finding does not exist there are
    # off, and fixes are spelled with what it has. None: a current PyTorch.
    target_torch: str | None = None
    interval_names: tuple[str, ...] = ()
    rule_options: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()
    # Which fixes --fix may write (Ruff's keys): `fixable` (None: every rule) plus `extend-fixable`,
    # minus `unfixable`; an excluded rule's fix is only shown, as a suggestion. `extend-safe-fixes`
    # / `extend-unsafe-fixes` move a rule's fixes between safe and unsafe.
    fixable: tuple[str, ...] | None = None
    extend_fixable: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()
    extend_safe_fixes: tuple[str, ...] = ()
    extend_unsafe_fixes: tuple[str, ...] = ()
    ignore_noqa: bool = False  # --ignore-noqa (command line only): suppression comments are not honoured
    # How a run behaves when the command line does not say (Ruff's keys); read from the
    # configuration of the folder the run starts in, not per file. None: not set.
    fix: bool | None = None
    fix_only: bool | None = None  # as fix, and leftover findings are not reported
    unsafe_fixes: bool | None = None
    show_fixes: bool | None = None
    output_format: str | None = None
    root: str = "."  # the folder patterns are relative to (the config file's folder)
    config_path: str | None = None

    # -- rules -------------------------------------------------------------------------

    def enabled_codes(self) -> list[str]:
        rules = all_rules()
        # A rule that is off by default is turned on by its own code or "ALL", not by a prefix
        # (`select = ["TL"]` means the default rules; as Ruff's prefixes leave preview rules off).
        def selected(rule, selectors) -> bool:
            if rule.default_enabled:
                return _matches(rule.code, selectors)
            return any(sel in ("ALL", rule.code) for sel in selectors)

        if self.select is None:
            enabled = {r.code for r in rules if r.default_enabled}
        else:
            enabled = {r.code for r in rules if selected(r, self.select)}
        enabled |= {r.code for r in rules if selected(r, self.extend_select)}
        enabled = {c for c in enabled if not _matches(c, self.ignore, specific_over=self.select or ())}
        return sorted(enabled)

    def options_for(self, code: str) -> dict:
        rule = get_rule(code)
        opts = {name: opt.default for name, opt in (rule.options if rule else {}).items()}
        for rule_code, values in self.rule_options:
            if rule_code == code:
                opts.update(dict(values))
        return opts

    def fix_applicability(self, code: str, applicability: Applicability) -> Applicability:
        """A fix of rule `code` as this configuration classes it. A suggestion stays a suggestion
        (it was never meant to be written); listed in both extend lists, a fix is unsafe."""
        if applicability is Applicability.DISPLAY_ONLY:
            return applicability
        if _matches(code, self.unfixable) or (
                self.fixable is not None and not _matches(code, self.fixable + self.extend_fixable)):
            return Applicability.DISPLAY_ONLY
        if _matches(code, self.extend_unsafe_fixes):
            return Applicability.UNSAFE
        if _matches(code, self.extend_safe_fixes):
            return Applicability.SAFE
        return applicability

    def active_rules(self, path: str | None = None) -> list[ActiveRule]:
        return list(_active_rules(self, self._ignored_for(path)))

    def _ignored_for(self, path: str | None) -> tuple[str, ...]:
        if path is None or not self.per_file_ignores:
            return ()
        out: list[str] = []
        for pattern, codes in self.per_file_ignores:
            # `"!src/*" = [...]`: the codes are ignored in the files the glob does not match (Ruff's negation).
            negated = pattern.startswith("!")
            if self.path_matches((pattern[1:] if negated else pattern,), path) != negated:
                out.extend(codes)
        return tuple(out)

    # -- files -------------------------------------------------------------------------

    def relative(self, path: str) -> str:
        try:
            rel = os.path.relpath(path, self.root)  # relpath makes both absolute itself
        except ValueError:
            rel = path
        return rel.replace(os.sep, "/")

    def is_excluded(self, path: str) -> bool:
        return self.path_matches(tuple(self.exclude) + tuple(self.extend_exclude), path)

    def excludes_entry(self, path: str) -> bool:
        """An exclude pattern matches this file or folder itself (its path, or its name for a
        pattern without '/'), not a folder above it: how the entries below a folder named on the
        command line are judged, so that the folder's own name does not exclude them."""
        relative, absolute = _split_globs(_normalised(tuple(self.exclude) + tuple(self.extend_exclude), self.root))
        rel = _fold_case(self.relative(path))
        full = _fold_case(os.path.abspath(path).replace(os.sep, "/"))
        name = rel.rsplit("/", 1)[-1]
        relative = [_fold_case(p.rstrip("/")) for p in relative]
        return any(fnmatch.fnmatchcase(rel, p) or "/" not in p and fnmatch.fnmatchcase(name, p) for p in relative) \
            or any(fnmatch.fnmatchcase(full, _fold_case(p.rstrip("/"))) for p in absolute)

    def path_matches(self, patterns: tuple[str, ...], path: str) -> bool:
        """Does path match a glob: relative globs against the path relative to root, absolute ones
        (written so, or a base configuration's globs rebased by `extend`) against the absolute path."""
        relative, absolute = _split_globs(_normalised(patterns, self.root))
        if relative and glob_matcher(relative)(self.relative(path)):
            return True
        return bool(absolute) and glob_matcher(absolute)(os.path.abspath(path).replace(os.sep, "/"))

    def fingerprint(self) -> str:
        """Stable hash of everything that changes findings (for the cache)."""
        data = {k: v for k, v in self.__dict__.items() if k not in ("root", "config_path") + _RUN_KEYS}
        data["rules"] = [(r.code, r.__module__) for r in all_rules()]
        data["version"] = __version__
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=repr).encode()).hexdigest()[:16]

    def with_overrides(self, **overrides) -> Settings:
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


@lru_cache(maxsize=256)
def _active_rules(settings: Settings, ignored: tuple[str, ...]) -> tuple[ActiveRule, ...]:
    # Imported here, not at the top: the engine imports libcst, which a run answered entirely
    # from the cache never needs.
    from trainlint.engine import ActiveRule

    by_code = {r.code: r for r in all_rules()}
    return tuple(
        ActiveRule(by_code[code], settings.options_for(code))
        for code in settings.enabled_codes()
        if not _matches(code, ignored)
        and torch_at_least(settings.target_torch, by_code[code].requires_torch)
    )


def torch_at_least(target: str | None, version: str | None) -> bool:
    """Whether code for PyTorch `target` (None: a current one) may use what `version` brought."""
    if target is None or version is None:
        return True
    def parts(v: str) -> tuple[int, ...]:
        return (tuple(int(p) for p in v.split(".")) + (0, 0, 0))[:3]

    return parts(target) >= parts(version)


def _matches(code: str, selectors, specific_over=()) -> bool:
    for sel in selectors:
        if sel == "ALL" or code.startswith(sel):
            # A more specific select beats a broader ignore (Ruff's rule): select TL101 + ignore TL1.
            if any(s != "ALL" and s.startswith(sel) and s != sel and code.startswith(s) for s in specific_over):
                continue
            return True
    return False


# Paths here always use "/"; only the case rule of the platform's fnmatch applies (os.path.normcase
# would also turn "/" into "\\" on Windows).
_fold_case = str.lower if os.path.normcase("A") == "a" else str


@lru_cache(maxsize=256)
def _split_globs(patterns: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(globs relative to the root, absolute globs)."""
    absolute = tuple(p for p in patterns if _is_absolute_glob(p))
    return tuple(p for p in patterns if p not in absolute), absolute


@lru_cache(maxsize=256)
def _normalised(patterns: tuple[str, ...], root: str) -> tuple[str, ...]:
    """patterns with `.` and `..` segments resolved, as Ruff does: a relative one becomes absolute
    (joined to root), so `./legacy` means root's `legacy`, and `../x` a folder beside root. They
    were matched as written against paths that never hold such segments, so they matched nothing."""
    return tuple(_normalised_glob(p, root) for p in patterns)


def _normalised_glob(pattern: str, root: str) -> str:
    if not any(part in (".", "..") for part in pattern.rstrip("/").split("/")):
        return pattern
    if not _is_absolute_glob(pattern):
        pattern = os.path.join(os.path.abspath(root), pattern)
    return os.path.normpath(pattern).replace(os.sep, "/")


def _is_absolute_glob(pattern: str) -> bool:
    return os.path.isabs(pattern) or pattern.startswith("/")


@lru_cache(maxsize=256)
def glob_matcher(patterns: tuple[str, ...]):
    """One compiled test for "does the path (relative to the root, with '/') match any of these
    globs": a pattern matches the path itself or a folder above it, and a pattern without '/'
    also matches any one path part. Discovery asks it for every file and folder, so the globs
    become two regular expressions and a set of plain names instead of thousands of fnmatch calls."""
    whole: list[str] = []  # the path itself, or a folder above it
    part_globs: list[str] = []  # a pattern without '/' matching any one path part
    part_names: set[str] = set()  # the same, for patterns without wildcards
    for pattern in patterns:
        pattern = _fold_case(pattern.rstrip("/"))
        whole += [fnmatch.translate(pattern), fnmatch.translate(pattern + "/*")]
        if "/" not in pattern:
            if any(c in pattern for c in "*?["):
                part_globs.append(fnmatch.translate(pattern))
            else:
                part_names.add(pattern)
    whole_re = re.compile("|".join(whole)) if whole else None
    part_re = re.compile("|".join(part_globs)) if part_globs else None

    def matches(rel: str) -> bool:
        rel = _fold_case(rel)
        if whole_re is not None and whole_re.match(rel):
            return True
        if not (part_names or part_re):
            return False
        parts = rel.split("/")
        if not part_names.isdisjoint(parts):
            return True
        return part_re is not None and any(part_re.match(part) for part in parts)

    return matches


# -- loading ------------------------------------------------------------------------------

_CODE_KEYS = ("select", "extend-select", "ignore", "fixable", "extend-fixable", "unfixable", "extend-safe-fixes",
              "extend-unsafe-fixes")
_LIST_KEYS = _CODE_KEYS + ("exclude", "extend-exclude", "interval-names")
_BOOL_KEYS = ("fix", "fix-only", "unsafe-fixes", "show-fixes", "respect-gitignore")
_TOP_KEYS = set(_LIST_KEYS) | set(_BOOL_KEYS) | {"per-file-ignores", "extend-per-file-ignores", "target-gpu", "target-torch",
                                                  "extend", "line-length", "output-format"}
# Settings of the run, not of a file's findings: the cache does not key on them.
_RUN_KEYS = ("fix", "fix_only", "unsafe_fixes", "show_fixes", "output_format", "respect_gitignore")
# Keys whose values a configuration adds to those of the configuration it extends (the others
# replace them); a `select` of its own starts the rule choice over, dropping the base's additions,
# and so does a `fixable` of its own for the base's `extend-fixable`.
_ACCUMULATED = ("extend_select", "ignore", "extend_exclude", "per_file_ignores", "extend_fixable", "unfixable",
                "extend_safe_fixes", "extend_unsafe_fixes", "interval_names")


def did_you_mean(word: str, choices) -> str:
    """`; did you mean `x`?` for the choice closest to a misspelt word, or nothing."""
    import difflib  # only on this error path: a warm run imports nothing it does not use

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.7)
    return f"; did you mean `{close[0]}`?" if close else ""


def unknown_selector(code: str) -> str:
    """The message for a --select/--ignore/`select` entry that matches no rule: codes are upper
    case (as Ruff's), so a lower-case one is pointed at its spelling, else at the closest code."""
    hint = f"; did you mean `{code.upper()}`?" if is_known_selector(code.upper()) else did_you_mean(
        code, [r.code for r in all_rules()])
    return f"unknown rule code or prefix {code!r}{hint}"


def rule_hint(word: str) -> str:
    """`; did you mean ...?` for a word that names no rule (`trainlint rule`, a rule's option
    table), or nothing: a lower-case code is pointed at its spelling, as unknown_selector does,
    else the word at the closest code or name."""
    if get_rule(word.upper()) is not None:
        return f"; did you mean `{word.upper()}`?"
    return did_you_mean(word, [r.code for r in all_rules()] + [r.name for r in all_rules()])


def _err(path: str, key: str, expected: str, got=None) -> ConfigError:
    got_text = "" if got is None else f", got {type(got).__name__} {got!r}"
    return ConfigError(f"{path}: invalid configuration: `{key}`: expected {expected}{got_text}")


def _codes(path: str, key: str, value) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _err(path, key, "a list of rule codes or prefixes (strings)", value)
    for code in value:
        if not is_known_selector(code):
            raise ConfigError(f"{path}: invalid configuration: `{key}`: {unknown_selector(code)}")
    return tuple(value)


def parse_table(table: dict, path: str) -> dict:
    """Validate a `[tool.trainlint]` table; returns Settings keyword arguments."""
    out: dict = {}
    rule_options = []
    for key, value in table.items():
        if key in _CODE_KEYS:
            out[key.replace("-", "_")] = _codes(path, key, value)
        elif key in ("exclude", "extend-exclude", "interval-names"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise _err(path, key, "a list of strings", value)
            out[key.replace("-", "_")] = tuple(value)
        elif key in ("per-file-ignores", "extend-per-file-ignores"):
            # Ruff's `extend-per-file-ignores` adds to `per-file-ignores`: in a file both are read
            # (the settings hold one list), given inline (--config) it adds to the file's.
            if not isinstance(value, dict):
                raise _err(path, key, "a table of glob = [codes]", value)
            out[key.replace("-", "_")] = tuple(
                (pattern, _codes(path, f"{key}.{pattern}", codes)) for pattern, codes in value.items()
            )
        elif key == "extend":
            if not isinstance(value, str):
                raise _err(path, key, "the path of another configuration file (a string)", value)
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise _err(path, key, "true or false", value)
            out[key.replace("-", "_")] = value
        elif key == "output-format":
            from trainlint.reporters import FORMATS

            if not isinstance(value, str) or value not in FORMATS:
                hint = did_you_mean(value, FORMATS) if isinstance(value, str) else ""
                raise ConfigError(str(_err(path, key, "one of " + ", ".join(sorted(FORMATS)), value)) + hint)
            out["output_format"] = value
        elif key == "target-torch":
            if not isinstance(value, str) or not TORCH_VERSION.match(value):
                raise _err(path, key, 'a PyTorch version as "MAJOR.MINOR" (for example "2.1")', value)
            out["target_torch"] = value
        elif key == "line-length":
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 320:
                raise _err(path, key, "an integer from 1 to 320", value)
            out["line_length"] = value
        elif key == "target-gpu":
            if not isinstance(value, str) or value not in TARGET_GPUS:
                raise _err(path, key, "one of " + ", ".join(TARGET_GPUS), value)
            out["target_gpu"] = value
        elif isinstance(value, dict) and get_rule(key) is not None:
            rule = get_rule(key)
            opts = []
            for opt_key, opt_value in value.items():
                option = rule.options.get(opt_key)
                if option is None:
                    known = ", ".join(sorted(rule.options)) or "none"
                    raise ConfigError(
                        f"{path}: invalid configuration: `{key}.{opt_key}`: unknown option of {rule.code} "
                        f"({rule.name})" + (did_you_mean(opt_key, rule.options) or f"; its options: {known}")
                    )
                types = option.type if isinstance(option.type, tuple) else (option.type,)
                if not isinstance(opt_value, option.type) or isinstance(opt_value, bool) and bool not in types:
                    raise _err(path, f"{key}.{opt_key}", _type_name(option.type), opt_value)
                if isinstance(opt_value, float) and not math.isfinite(opt_value):  # TOML's inf and nan
                    raise _err(path, f"{key}.{opt_key}", "a finite number", opt_value)
                if option.minimum is not None and opt_value < option.minimum:
                    raise _err(path, f"{key}.{opt_key}", f"{_type_name(option.type)} of at least {option.minimum}",
                               opt_value)
                opts.append((opt_key, tuple(opt_value) if isinstance(opt_value, list) else opt_value))
            rule_options.append((rule.code, tuple(opts)))
        elif key == "lint":
            raise ConfigError(_lint_section(path, value))
        else:
            if isinstance(value, dict):
                raise ConfigError(f"{path}: invalid configuration: `[{key}]`: unknown rule code or name"
                                  + rule_hint(key))
            raise ConfigError(
                f"{path}: invalid configuration: unknown key `{key}`" + (did_you_mean(key, _TOP_KEYS) or (
                    "; expected one of: " + ", ".join(sorted(_TOP_KEYS)) + ", or a rule's option table"))
            )
    if rule_options:
        out["rule_options"] = tuple(rule_options)
    return out


def _lint_section(path: str, value) -> str:
    """The error for Ruff's `lint` section (`lint.select = [...]`, `[tool.trainlint.lint]`): it
    was read as a rule's option table and called an unknown rule, which did not say what to do."""
    named = [k for k in value if k in _TOP_KEYS] if isinstance(value, dict) else []
    what = ", ".join(f"`{k}`" for k in named) or "the settings"
    if path == "--config":
        where = f"give {what} without the `lint.` prefix (--config 'select = [...]')"
    elif os.path.basename(path) == "pyproject.toml":
        where = f"put {what} directly under [tool.trainlint]"
    else:
        where = f"put {what} at the top level of {os.path.basename(path)}"
    return f"{path}: invalid configuration: `lint`: unknown setting; trainlint has no `lint` section (Ruff's): {where}"


def _type_name(t) -> str:
    names = {int: "an integer", str: "a string", bool: "a boolean", float: "a number", list: "a list"}
    if isinstance(t, tuple):
        return " or ".join(names.get(x, x.__name__) for x in t)
    return names.get(t, t.__name__)


def read_config(path: str) -> dict | None:
    """The trainlint table of a config file (None if a pyproject.toml has none)."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if os.path.basename(path) == "pyproject.toml":
        table = data.get("tool", {}).get("trainlint")
        if table is None:
            return None
    else:
        table = data.get("tool", {}).get("trainlint", data)
        if table is not data and set(data) - {"tool"}:
            # Both places hold settings: one would be ignored without a word.
            raise ConfigError(f"{path}: invalid configuration: settings both at the top level "
                              f"({', '.join(sorted(set(data) - {'tool'}))}) and under [tool.trainlint]; use one")
    if not isinstance(table, dict):
        raise _err(path, "tool.trainlint", "a table", table)
    return table


def _added_per_file_ignores(kwargs: dict) -> dict:
    """A file's `extend-per-file-ignores` joined to its `per-file-ignores` (which add up through
    `extend` anyway: a file's two lists differ only in name)."""
    added = kwargs.pop("extend_per_file_ignores", ())
    if added:
        kwargs["per_file_ignores"] = kwargs.get("per_file_ignores", ()) + added
    return kwargs


def settings_from_file(path: str, root: str | None = None) -> Settings:
    """The settings of a configuration file. root: the folder its relative globs (exclude,
    per-file-ignores) are relative to; None: the file's own folder (a discovered file). A file
    given with --config passes the current folder, as Ruff resolves such a file's paths; the
    files it `extend`s keep their globs relative to their own folders either way."""
    root = os.path.abspath(root) if root is not None else os.path.dirname(os.path.abspath(path))
    kwargs = _settings_kwargs(path, (), root)
    return check_rule_options(Settings(root=root, config_path=path, **kwargs), path)


def check_rule_options(settings: Settings, path: str) -> Settings:
    """settings, once each configured rule's options are checked together as a run reads them
    (options_for: over their defaults, after `extend` and --config merged theirs): TL403's
    `min-init-scale` above its `max-init-scale` is refused."""
    for code, _values in settings.rule_options:
        problem = get_rule(code).options_problem(settings.options_for(code))
        if problem:
            raise ConfigError(f"{path}: invalid configuration: `{code}`: {problem}")
    return settings


def _settings_kwargs(path: str, chain: tuple[str, ...], folder: str | None = None) -> dict:
    """Settings keyword arguments of a configuration file, merged over the file it extends
    (`extend = "../pyproject.toml"`, as in Ruff), whose relative globs stay relative to its own
    folder. folder: what this file's own relative globs are relative to (default: its folder)."""
    table = read_config(path) or {}
    kwargs = _added_per_file_ignores(parse_table(table, path))
    base = table.get("extend")
    if base is None:
        return kwargs
    folder = folder or os.path.dirname(os.path.abspath(path))
    base_path = extended_path(path, base)
    if base_path in chain or base_path == os.path.abspath(path):
        cycle = " -> ".join((*chain, os.path.abspath(path), base_path))
        raise ConfigError(f"{path}: invalid configuration: `extend`: a cycle of configuration files ({cycle})")
    if not os.path.isfile(base_path):
        raise ConfigError(f"{path}: invalid configuration: `extend`: no such configuration file {base_path}")
    inherited = _rebased(_settings_kwargs(base_path, (*chain, os.path.abspath(path))),
                         os.path.dirname(base_path), folder)
    if "select" in kwargs:
        inherited.pop("extend_select", None)
        inherited.pop("ignore", None)
    if "fixable" in kwargs:
        inherited.pop("extend_fixable", None)
    for key, value in kwargs.items():
        if key in _ACCUMULATED and key in inherited:
            inherited[key] = inherited[key] + value
        elif key == "rule_options" and key in inherited:
            options = {code: dict(values) for code, values in inherited[key]}
            for code, values in value:
                options.setdefault(code, {}).update(dict(values))
            inherited[key] = tuple((code, tuple(values.items())) for code, values in options.items())
        else:
            inherited[key] = value
    return inherited


def extended_path(path: str, value: str) -> str:
    """The file `extend = value` in configuration file `path` names (relative to its folder)."""
    folder = os.path.dirname(os.path.abspath(path))
    return os.path.normpath(os.path.join(folder, os.path.expanduser(os.path.expandvars(value))))


def extends_chain(path: str) -> list[str]:
    """The configuration files `path` builds on through `extend`, nearest first."""
    chain: list[str] = []
    while True:
        base = (read_config(path) or {}).get("extend")
        if not isinstance(base, str):
            return chain
        path = extended_path(path, base)
        if path in chain:
            return chain
        chain.append(path)


def _rebased(kwargs: dict, base_folder: str, folder: str) -> dict:
    """A base configuration's globs that name a path (have a '/') made absolute, so they keep
    meaning what they meant in the base's folder; bare names (`build`) match anywhere as before."""
    if base_folder == folder:
        return kwargs

    def rebase(pattern: str) -> str:
        if pattern.startswith("!"):
            return "!" + rebase(pattern[1:])
        if "/" not in pattern.rstrip("/") or _is_absolute_glob(pattern):
            return pattern
        return base_folder.replace(os.sep, "/").rstrip("/") + "/" + pattern

    out = dict(kwargs)
    for key in ("exclude", "extend_exclude"):
        if key in out:
            out[key] = tuple(rebase(p) for p in out[key])
    if "per_file_ignores" in out:
        out["per_file_ignores"] = tuple((rebase(p), codes) for p, codes in out["per_file_ignores"])
    return out


def _quote_hint(pair: str) -> str:
    """`; a string needs quotes: ...` for `key=word` (`target-gpu=ampere`), the likeliest slip: TOML
    reads an unquoted word as neither a string nor anything else."""
    key, _, value = pair.partition("=")
    if not re.fullmatch(r"[A-Za-z_][\w.\-]*", value.strip()):
        return ""
    return f"; a string needs quotes: --config '{key.strip()} = \"{value.strip()}\"'"


def parse_inline(pairs: tuple[str, ...]) -> dict:
    """Settings keyword arguments from `key = value` TOML texts (`--config`), checked as a file's are."""
    table: dict = {}
    for pair in pairs:
        try:
            parsed = tomllib.loads(pair)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"--config {pair!r}: neither a configuration file nor a TOML `key = value` pair ({exc})"
                              + _quote_hint(pair)) from None
        if "extend" in parsed:
            raise ConfigError(f"--config {pair!r}: `extend` names a file; give the file as --config PATH")
        for key, value in parsed.items():
            if isinstance(value, dict) and isinstance(table.get(key), dict):
                table[key].update(value)
            else:
                table[key] = value
    return parse_table(table, "--config") if table else {}


def find_config(directory: str, memo: dict[str, str | None]) -> str | None:
    """The nearest trainlint.toml, or pyproject.toml with a [tool.trainlint] table, in the
    absolute folder `directory` or above. memo: folder -> answer, read and filled for every folder
    on the way up (a run asks for each folder of a tree, and most share all their parents)."""
    visited: list[str] = []
    found: str | None = None
    while True:
        if directory in memo:
            found = memo[directory]
            break
        visited.append(directory)
        found = _config_file_in(directory)
        if found is not None:
            break
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    for folder in visited:
        memo[folder] = found
    return found


def _config_file_in(directory: str) -> str | None:
    for name in CONFIG_FILES:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            if name == "pyproject.toml" and read_config(candidate) is None:
                continue
            return candidate
    return None


class SettingsResolver:
    """Settings for each file: the nearest config (or --config), with CLI overrides on top."""

    def __init__(self, config_path: str | None = None, overrides: dict | None = None, inline: tuple[str, ...] = (),
                 isolated: bool = False) -> None:
        """config_path: one file for every file (--config PATH). inline: `key = value` TOML pairs
        (--config "TL104.min-prefetch-factor = 8"), set on top of every file's configuration.
        isolated: read no configuration file (--isolated)."""
        self.overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
        self.inline = parse_inline(inline)
        self.isolated = isolated
        self.fixed: Settings | None = None
        self._by_dir: dict[str, Settings] = {}
        self._by_file: dict[str, Settings] = {}
        self._config_of: dict[str, str | None] = {}  # find_config's memo
        self._default: Settings | None = None  # for folders without a config file
        if config_path is not None:
            if not os.path.isfile(config_path):
                raise ConfigError(f"{config_path}: no such configuration file")
            # Its relative globs are relative to the current folder, as Ruff reads a file given
            # with --config (they were relative to the file's folder: `--config ci/x.toml` with
            # `extend-exclude = ["src/legacy"]` excluded ci/src/legacy).
            self.fixed = self._apply(settings_from_file(config_path, root=os.getcwd()))

    def _apply(self, settings: Settings) -> Settings:
        inline = dict(self.inline)
        if "rule_options" in inline:  # an option given inline replaces that option, not the rule's others
            merged = {code: dict(values) for code, values in settings.rule_options}
            for code, values in inline.pop("rule_options"):
                merged.setdefault(code, {}).update(dict(values))
            inline["rule_options"] = tuple((code, tuple(values.items())) for code, values in merged.items())
        # --config "extend-per-file-ignores = ..." adds to the file's (where "per-file-ignores" replaces them).
        added_ignores = inline.pop("extend_per_file_ignores", ())
        if "select" in inline and "extend_select" not in inline:
            inline["extend_select"] = ()  # a select given here starts afresh, as `--select` does
        settings = replace(settings, **inline)
        if "rule_options" in self.inline:
            check_rule_options(settings, "--config")
        if added_ignores:
            settings = replace(settings, per_file_ignores=settings.per_file_ignores + added_ignores)
        overrides = dict(self.overrides)
        extend = overrides.pop("extend_select", None)
        ignore = overrides.pop("ignore", None)
        per_file_ignores = overrides.pop("extend_per_file_ignores", None)
        extend_exclude = overrides.pop("extend_exclude", None)
        extend_fixable = overrides.pop("extend_fixable", None)
        unfixable = overrides.pop("unfixable", None)
        if overrides.get("select"):
            # A selection on the command line starts the rule set afresh, as Ruff's does: the
            # config's extend-select goes with its select, and a rule selected here beats the
            # config's ignore of it (or of its prefix).
            chosen = overrides["select"]
            kept = tuple(i for i in settings.ignore if not any(c.startswith(i) or c == "ALL" for c in chosen))
            settings = replace(settings, ignore=kept, extend_select=())
        settings = settings.with_overrides(**overrides)
        if extend:
            settings = replace(settings, extend_select=settings.extend_select + tuple(extend))
        if ignore:
            settings = replace(settings, ignore=settings.ignore + tuple(ignore))
        if per_file_ignores:
            settings = replace(settings, per_file_ignores=settings.per_file_ignores + tuple(per_file_ignores))
        if extend_exclude:
            settings = replace(settings, extend_exclude=settings.extend_exclude + tuple(extend_exclude))
        if extend_fixable:
            settings = replace(settings, extend_fixable=settings.extend_fixable + tuple(extend_fixable))
        if unfixable:
            settings = replace(settings, unfixable=settings.unfixable + tuple(unfixable))
        return settings

    def for_path(self, path: str) -> Settings:
        """Settings for a file, or for the files directly in a folder."""
        if self.fixed is not None:
            return self.fixed
        return self.for_directory(path if os.path.isdir(path) else os.path.dirname(path) or ".")

    def for_directory(self, directory: str) -> Settings:
        """Settings for the files directly in `directory` (no need to ask the disk what it is)."""
        if self.fixed is not None:
            return self.fixed
        directory = os.path.abspath(directory)
        cached = self._by_dir.get(directory)
        if cached is None:
            config = None if self.isolated else find_config(directory, self._config_of)
            if config is None:
                if self._default is None:
                    self._default = self._apply(Settings(root=os.getcwd()))
                cached = self._default
            else:
                cached = self._by_file.get(config)
                if cached is None:
                    cached = self._by_file[config] = self._apply(settings_from_file(config))
            self._by_dir[directory] = cached
        return cached
