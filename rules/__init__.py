"""The built-in rule pack, one module per family. Installed as `trainlint.rules`."""

from __future__ import annotations

import importlib
import os

from trainlint.rule import Rule

_FAMILIES = ("noqa", "dataloader", "host_sync", "distributed", "amp", "checkpoint", "compute")


def _collect() -> list[type[Rule]]:
    rules: list[type[Rule]] = []
    here = os.path.dirname(os.path.abspath(__file__))
    for family in _FAMILIES:
        if not os.path.exists(os.path.join(here, f"{family}.py")):
            # A family not written yet. (Checked here, not left to the import: an editable install
            # of another checkout would otherwise supply its module under this package's name.)
            continue
        try:
            module = importlib.import_module(f"{__name__}.{family}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{family}":
                raise
            continue  # a family not written yet
        rules.extend(
            obj for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and obj.__module__ == module.__name__
            and hasattr(obj, "code")
        )
    return sorted(rules, key=lambda r: r.code)


RULES = _collect()
