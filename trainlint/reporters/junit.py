"""JUnit XML (`junit`): what CI systems without a linter format of their own (Jenkins, GitLab's
test reports, Azure's test tab) show as test results. One test suite per checked file that has
findings or could not be checked: a failing test case per finding (named by its code and place),
an erroring one for a file that could not be checked. A run with nothing to report is one passing
case, so the report is never empty.
"""

from __future__ import annotations

import re
from collections import defaultdict
from xml.sax import saxutils


from trainlint.diagnostics import RunResult
from trainlint.notebook import cell_maps


# Characters XML 1.0 does not allow at all, not even as character references: a control
# character in a file's name (or a lone surrogate from a name that is not UTF-8) made the report
# unreadable to every XML parser. They are written as Python writes them, `\x1b`.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    return _NOT_XML.sub(lambda m: repr(m.group())[1:-1], text)


def escape(text: str) -> str:
    return saxutils.escape(_xml_safe(text))


def quoteattr(text: str) -> str:
    return saxutils.quoteattr(_xml_safe(text))


def render(result: RunResult, fmt: str = "junit") -> str:
    cells = cell_maps(result)
    cases: dict[str, list[str]] = defaultdict(list)
    failures: dict[str, int] = defaultdict(int)
    for d in result.diagnostics:
        place = f"{d.start.row}:{d.start.column}"
        if d.path in cells:  # a notebook: its cell and the row in it
            cell, row = cells[d.path].locate(d.start.row)
            place = f"cell {cell}:{row}:{d.start.column}"
        failures[d.path] += 1
        cases[d.path].append(
            f'    <testcase name={quoteattr(f"{d.code} at {place}")} classname={quoteattr(d.path)}>\n'
            f'      <failure message={quoteattr(d.message)} type={quoteattr(d.code)}>'
            f'{escape(f"{d.path}:{place}: {d.code} {d.message}")}</failure>\n    </testcase>')
    for error in result.errors:
        cases[error.path].append(
            f'    <testcase name="file could not be checked" classname={quoteattr(error.path)}>\n'
            f'      <error message={quoteattr(error.reason)}>{escape(error.reason)}</error>\n    </testcase>')
    suites = [
        f'  <testsuite name={quoteattr(path)} tests="{len(items)}" failures="{failures[path]}" '
        f'errors="{len(items) - failures[path]}">\n' + "\n".join(items) + "\n  </testsuite>"
        for path, items in cases.items()
    ]
    if not suites:
        suites.append('  <testsuite name="trainlint" tests="1" failures="0" errors="0">\n'
                      '    <testcase name="trainlint" classname="trainlint"/>\n  </testsuite>')
    tests = sum(len(items) for items in cases.values())
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuites name="trainlint" tests="{max(tests, 1)}" failures="{sum(failures.values())}" '
            f'errors="{tests - sum(failures.values())}">\n' + "\n".join(suites) + "\n</testsuites>\n")
