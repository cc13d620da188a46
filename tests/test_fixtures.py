"""Every fixture script under fixtures/ that has `<name>.expected.json` beside it: linting it with
the default rules gives exactly those findings, and fixing it with unsafe fixes (what
`trainlint --fix --unsafe-fixes` writes) gives exactly `<name>.fixed.py`, which lints clean of
fixable findings.

Regenerate after an intended change with TRAINLINT_UPDATE_FIXTURES=1, then review the diff.
"""

import glob
import json
import os

import pytest

from trainlint.api import fix_source, lint_source

from conftest import ROOT

FIXTURES = sorted(
    p for p in glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True)
    if not p.endswith(".fixed.py") and os.path.exists(p[:-3] + ".expected.json")
)
UPDATE = os.environ.get("TRAINLINT_UPDATE_FIXTURES") == "1"


def findings(text: str, path: str) -> list[dict]:
    return [
        {
            "code": d.code,
            "message": d.message,
            "location": {"row": d.start.row, "column": d.start.column},
            "end_location": {"row": d.end.row, "column": d.end.column},
            "fix_applicability": d.fix.applicability.value if d.fix else None,
        }
        for d in lint_source(text, path)
    ]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: os.path.relpath(p, ROOT))
def test_fixture(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    rel = os.path.relpath(path, ROOT)
    found = findings(text, rel)
    fixed = fix_source(text, path=rel, unsafe_fixes=True)
    expected_json, fixed_path = path[:-3] + ".expected.json", path[:-3] + ".fixed.py"
    if UPDATE:
        with open(expected_json, "w", encoding="utf-8") as f:
            json.dump(found, f, indent=2)
            f.write("\n")
        with open(fixed_path, "w", encoding="utf-8") as f:
            f.write(fixed)
    with open(expected_json, encoding="utf-8") as f:
        assert found == json.load(f)
    with open(fixed_path, encoding="utf-8") as f:
        assert fixed == f.read()
    # The fixed script leaves nothing an automatic fix would still change.
    assert fix_source(fixed, path=rel, unsafe_fixes=True) == fixed
