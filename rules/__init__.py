"""The built-in rule pack: one package per family (rules/dataloader/, rules/host_sync/, ...), one
module per rule in it. Installed as `trainlint.rules`."""

from __future__ import annotations

import importlib
import os
import pkgutil

from trainlint.rule import Rule

_FAMILIES = ("noqa", "dataloader", "host_sync", "distributed", "amp", "checkpoint", "compute")


def _modules(family: str) -> list:
    """The family's modules: itself, and when it is a package, every module in its folder. Looked
    up in this folder, not left to the import system: an editable install of another checkout would
    otherwise supply its own modules under this package's name."""
    here = os.path.dirname(os.path.abspath(__file__))
    folder = os.path.join(here, family)
    if os.path.exists(os.path.join(folder, "__init__.py")):
        package = importlib.import_module(f"{__name__}.{family}")
        return [package] + [importlib.import_module(f"{package.__name__}.{info.name}")
                            for info in pkgutil.iter_modules([folder])]
    if os.path.exists(folder + ".py"):
        return [importlib.import_module(f"{__name__}.{family}")]
    return []  # a family not written yet


def _collect() -> list[type[Rule]]:
    rules: list[type[Rule]] = []
    for family in _FAMILIES:
        for module in _modules(family):
            rules.extend(
                obj for obj in vars(module).values()
                if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule
                and obj.__module__ == module.__name__ and hasattr(obj, "code")
            )
    return sorted(rules, key=lambda r: r.code)


RULES = _collect()
