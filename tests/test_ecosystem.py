"""scripts/ecosystem.py's precision count over the triage rows of docs/ecosystem.md."""

import importlib.util
import os

_SPEC = importlib.util.spec_from_file_location(
    "ecosystem", os.path.join(os.path.dirname(__file__), "..", "scripts", "ecosystem.py"))
ecosystem = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ecosystem)


def _finding(package, path, line, code="TL201", message="`.item()` waits"):
    return {"package": package, "path": path, "line": line, "column": 1, "code": code, "message": message}


def test_rows_of_packages_outside_the_snapshot_are_left_out():
    # A `--role train` snapshot must not count the speed set's rows as fixed (gone) findings.
    snapshot = {"packages": {"a-1": {}}, "findings": [_finding("a-1", "x.py", 3)]}
    triage = [("TL201", "a-1/x.py:3", "TP", ""), ("TL201", "a-1/x.py:9", "FP", "fixed"),
              ("TL201", "b-2/y.py:5", "FP", "another set")]
    row = ecosystem.precision(snapshot, triage)["TL201"]
    assert (row["TP"], row["FP"], row["gone_TP"], row["gone_FP"]) == (1, 0, 0, 1)
    snapshot["packages"]["b-2"] = {}
    snapshot["findings"].append(_finding("b-2", "y.py", 5))
    row = ecosystem.precision(snapshot, triage)["TL201"]
    assert (row["TP"], row["FP"], row["gone_TP"], row["gone_FP"]) == (1, 1, 0, 1)
