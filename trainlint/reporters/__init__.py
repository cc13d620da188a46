"""Reporters only format: they receive the run's result and return text. They never re-analyse.

Each reporter is a module in this package with `render(result: RunResult) -> str`;
FORMATS maps the `--output-format` name to that module.
"""

from __future__ import annotations

import importlib

FORMATS = {
    "azure": "trainlint.reporters.azure",
    "concise": "trainlint.reporters.text",
    "full": "trainlint.reporters.text",
    "grouped": "trainlint.reporters.text",
    "json": "trainlint.reporters.json_format",
    "json-lines": "trainlint.reporters.json_format",
    "junit": "trainlint.reporters.junit",
    "github": "trainlint.reporters.github",
    "gitlab": "trainlint.reporters.gitlab",
    "pylint": "trainlint.reporters.pylint",
    "sarif": "trainlint.reporters.sarif",
    "rdjson": "trainlint.reporters.rdjson",
    "rdjsonl": "trainlint.reporters.rdjson",
}


def render(fmt: str, result) -> str:
    if result.statistics and not result.diff_mode:
        module = importlib.import_module("trainlint.reporters.statistics")  # counts, in its own formats
    else:
        module = importlib.import_module(FORMATS[fmt])
    return module.render(result, fmt)
