"""The rule registry: built-in rules (trainlint.rules) and third-party packs (entry points).

A pack is any importable object named by an entry point in the `trainlint.rules` group: a module
with a RULES list, a list of Rule classes, or a single Rule class.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Imported where used: trainlint.rule imports libcst, and a warm (all cached) run must not
    # pay for importing libcst just to start (issue 6: warm <= 10% of cold).
    from trainlint.rule import Rule

ENTRY_POINT_GROUP = "trainlint.rules"
BUILTIN_PACK = "trainlint.rules"  # trainlint's own entry in the group (pyproject.toml)


class RegistryError(Exception):
    pass


def checkout_rules() -> str | None:
    """The rules/ folder beside this engine when it runs from a source checkout (pyproject.toml and
    rules/ next to the trainlint package). It must win over an installed `trainlint.rules`: an editable
    install of another checkout maps that name to its own folder, which would pair this engine with
    another checkout's rules."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folder = os.path.join(root, "rules")
    if os.path.isfile(os.path.join(folder, "__init__.py")) and os.path.isfile(os.path.join(root, "pyproject.toml")):
        return folder
    return None


def _import_builtin():
    loaded = sys.modules.get("trainlint.rules")
    if loaded is not None:
        return loaded
    folder = checkout_rules()
    try:
        if folder is None:
            return importlib.import_module("trainlint.rules")
        raise ModuleNotFoundError("trainlint.rules", name="trainlint.rules")
    except ModuleNotFoundError:
        # Running from a source checkout: the pack lives in ../rules.
        folder = folder or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rules")
        spec = importlib.util.spec_from_file_location(
            "trainlint.rules", os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
        )
        if spec is None or spec.loader is None:
            raise
        module = importlib.util.module_from_spec(spec)
        sys.modules["trainlint.rules"] = module
        spec.loader.exec_module(module)
        return module


def _rules_of(obj, origin: str) -> list[type[Rule]]:
    from trainlint.rule import Rule

    if isinstance(obj, type) and issubclass(obj, Rule):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [r for item in obj for r in _rules_of(item, origin)]
    if hasattr(obj, "RULES"):
        return _rules_of(obj.RULES, origin)
    raise RegistryError(f"rule pack {origin}: expected a Rule class, a list of them or a module with RULES")


@lru_cache(maxsize=1)
def pack_entry_points() -> tuple:
    """The entry points of third-party rule packs (trainlint's own `builtin` one left out)."""
    if not _third_party_pack_declared():
        return ()
    from importlib import metadata

    try:
        entry_points = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # a broken distribution's metadata must not stop linting
        return ()
    return tuple(ep for ep in entry_points if ep.value != BUILTIN_PACK)


def _third_party_pack_declared() -> bool:
    """Whether any distribution on sys.path may declare a pack other than the built-in one.

    A cheap look at the entry_points.txt files of the installed distributions, so that the usual
    case (no third-party pack) never imports importlib.metadata: with what it pulls in that is a
    tenth of a run answered from the cache. It errs towards True (anything it cannot read
    quickly, such as a zip on sys.path); importlib.metadata then gives the exact answer."""
    for entry in sys.path:
        folder = entry or "."
        try:
            with os.scandir(folder) as it:
                names = [e.name for e in it if e.name.endswith((".dist-info", ".egg-info"))]
        except NotADirectoryError:
            return True
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8", errors="replace") as f:
                    declared = f.read()
            except OSError:
                continue
            if ENTRY_POINT_GROUP in declared and _other_packs_in(declared):
                return True
    return False


def _other_packs_in(entry_points_txt: str) -> bool:
    """Whether the group's section of an entry_points.txt names anything but the built-in pack."""
    in_group = False
    for line in entry_points_txt.splitlines():
        line = line.strip()
        if line.startswith("["):
            in_group = line.strip("[] ") == ENTRY_POINT_GROUP
        elif in_group and "=" in line and not line.startswith(("#", ";")):
            if line.split("=", 1)[1].strip() != BUILTIN_PACK:
                return True
    return False


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    rules = list(_rules_of(_import_builtin(), BUILTIN_PACK))
    for ep in pack_entry_points():
        try:
            rules.extend(_rules_of(ep.load(), f"{ep.name} ({ep.value})"))
        except RegistryError:
            raise
        except Exception as exc:
            raise RegistryError(f"rule pack {ep.name} ({ep.value}) failed to load: {exc}") from None
    by_code: dict[str, type[Rule]] = {}
    for rule in rules:
        if rule.code in by_code and by_code[rule.code] is not rule:
            raise RegistryError(f"rule code {rule.code} is defined twice ({by_code[rule.code].__module__}, {rule.__module__})")
        by_code[rule.code] = rule
    return tuple(sorted(by_code.values(), key=lambda r: r.code))


def rules_by_code() -> dict[str, type[Rule]]:
    return {r.code: r for r in all_rules()}


def get_rule(code_or_name: str) -> type[Rule] | None:
    """The rule with this code or name, spelt exactly: a code is upper case here as where
    `--select` and `ignore` read it (as Ruff's codes), so `rule tl101` is refused as they are."""
    for rule in all_rules():
        if rule.code == code_or_name or rule.name == code_or_name:
            return rule
    return None


def is_known_selector(selector: str) -> bool:
    """ALL, a code, or a code prefix (TL, TL1, TL10) that matches at least one rule."""
    if selector == "ALL":
        return True
    return any(rule.code.startswith(selector) for rule in all_rules())
