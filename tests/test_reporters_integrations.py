"""github, sarif, rdjson and rdjsonl reporters, on hand-built diagnostics, validated against the
shared schemas."""

from __future__ import annotations

import json

import pytest
from _integration_support import diag, result_of, validator

from trainlint import reporters
from trainlint.diagnostics import Applicability, FileError, FileResult
from trainlint.reporters import github, rdjson, sarif

SOURCE = (
    "import torch\n"
    "# données: ünïcode before the call\n"
    "loader = DataLoader(ds, batch_size=8)  # é\n"
    "for x in loader:\n"
    "    x = x.cuda()\n"
)


def _dataloader_result(path="train.py"):
    call = SOURCE.index("DataLoader(")
    call_end = SOURCE.index(")", call) + 1
    insert_at = call_end - 1
    d1 = diag(
        SOURCE, path, "TL101", call, call_end, "DataLoader without num_workers",
        edits=[(insert_at, insert_at, ", num_workers=2")], name="dataloader-no-workers",
    )
    cuda = SOURCE.index("x.cuda()")
    d2 = diag(SOURCE, path, "TL108", cuda, cuda + len("x.cuda()"), "blocking copy: add non_blocking=True")
    return result_of({path: (SOURCE, [d1, d2])})


def test_formats_are_registered():
    for name in ("github", "sarif", "rdjson", "rdjsonl"):
        assert name in reporters.FORMATS
    assert reporters.render("github", _dataloader_result()).startswith("::error ")


# -- github ------------------------------------------------------------------------------------


def test_github_annotation_fields():
    out = github.render(_dataloader_result()).splitlines()
    assert out[0] == (
        "::error file=train.py,line=3,col=10,endLine=3,endColumn=38,title=TL101"
        "::TL101 DataLoader without num_workers"
    )
    assert out[1].startswith("::error file=train.py,line=5,col=9,endLine=5,endColumn=17,title=TL108::")


def test_github_escaping():
    source = "x = 1\n"
    d = diag(source, "dir,with:odd%name.py", "TL201", 0, 1, "100% bad,\r\nsecond: line")
    out = github.render(result_of({"dir,with:odd%name.py": (source, [d])}))
    assert out == (
        "::error file=dir%2Cwith%3Aodd%25name.py,line=1,col=1,endLine=1,endColumn=2,title=TL201"
        "::TL201 100%25 bad,%0D%0Asecond: line\n"
    )


def test_github_reports_unreadable_files():
    result = result_of({})
    result.files.append(FileResult(path="bad.py", error=FileError("bad.py", "not UTF-8: byte 0xff at 3")))
    assert github.render(result) == "::error file=bad.py,title=trainlint::could not check: not UTF-8: byte 0xff at 3\n"


# -- rdjson ------------------------------------------------------------------------------------


def test_rdjson_valid_and_byte_columns():
    doc = json.loads(rdjson.render(_dataloader_result(), "rdjson"))
    validator("rdjson/DiagnosticResult.json").validate(doc)
    first, second = doc["diagnostics"]
    assert first["code"] == {"value": "TL101", "url": "https://trainlint.dev/rules/TL101"}
    # Line 3 starts with ASCII only, so byte and character columns agree ...
    assert first["location"]["range"] == {"start": {"line": 3, "column": 10}, "end": {"line": 3, "column": 38}}
    assert second["location"]["range"]["start"] == {"line": 5, "column": 9}


def test_rdjson_columns_count_utf8_bytes():
    source = "s = 'é𐐀'; DataLoader(ds)\n"
    start = source.index("DataLoader")
    d = diag(source, "u.py", "TL101", start, start + len("DataLoader(ds)"))
    item = json.loads(rdjson.render(result_of({"u.py": (source, [d])}), "rdjsonl"))
    # 'é' is 2 bytes and '𐐀' 4: the call starts at character 11 but byte 15.
    assert d.start.column == 11
    assert item["location"]["range"]["start"] == {"line": 1, "column": 15}
    assert item["location"]["range"]["end"] == {"line": 1, "column": 15 + len("DataLoader(ds)")}
    validator("rdjson/Diagnostic.json").validate(item)


def test_rdjson_suggestion_covers_whole_lines_of_the_finding():
    doc = json.loads(rdjson.render(_dataloader_result(), "rdjson"))
    first = doc["diagnostics"][0]
    assert first["suggestions"] == [
        {
            "range": {"start": {"line": 3}, "end": {"line": 3}},
            "text": "loader = DataLoader(ds, batch_size=8, num_workers=2)  # é",
        }
    ]
    assert "suggestions" not in doc["diagnostics"][1]


@pytest.mark.parametrize("applicability, says", [
    (Applicability.SAFE, "Fix (safe, applied by `trainlint check --fix`): apply the fix."),
    (Applicability.UNSAFE, "Fix (unsafe: may change behaviour, review before committing; applied by "
                           "`trainlint check --fix --unsafe-fixes`): apply the fix."),
    (Applicability.DISPLAY_ONLY, "Suggested change (never applied automatically): apply the fix."),
])
def test_rdjson_message_says_how_safe_its_suggestion_is(applicability, says):
    # reviewdog posts the suggestion as a block the reviewer accepts with one click: the message is
    # the only place that can say an unsafe fix may change behaviour.
    source = "loader = DataLoader(ds)\n"
    start = source.index("DataLoader")
    at = source.index(")")
    d = diag(source, "s.py", "TL101", start, at + 1, "DataLoader without num_workers",
             edits=[(at, at, ", num_workers=2")], applicability=applicability)
    item = rdjson.diagnostic(d, source)
    assert item["suggestions"][0]["text"] == "loader = DataLoader(ds, num_workers=2)"
    assert item["message"] == "DataLoader without num_workers\n\n" + says
    validator("rdjson/Diagnostic.json").validate(item)


def test_rdjson_message_has_no_fix_note_without_a_suggestion():
    source = "import torch\nloader = DataLoader(ds)\n"
    start = source.index("DataLoader")
    d = diag(source, "o.py", "TL101", start, start + 14, "DataLoader without num_workers",
             edits=[(0, 0, "import os\n")], applicability=Applicability.UNSAFE)
    assert rdjson.diagnostic(d, source)["message"] == "DataLoader without num_workers"


def test_rdjson_multiline_finding_and_crlf():
    source = "loader = DataLoader(\r\n    ds,\r\n)\r\nx = 1\r\n"
    start = source.index("DataLoader")
    end = source.index(")") + 1
    at = source.index("    ds,") + len("    ds,")
    d = diag(source, "m.py", "TL101", start, end, edits=[(at, at, " num_workers=2,")])
    item = rdjson.diagnostic(d, source)
    assert item["location"]["range"] == {"start": {"line": 1, "column": 10}, "end": {"line": 3, "column": 2}}
    assert item["suggestions"] == [
        {
            "range": {"start": {"line": 1}, "end": {"line": 3}},
            "text": "loader = DataLoader(\r\n    ds, num_workers=2,\r\n)",
        }
    ]


def test_rdjson_fix_outside_the_findings_lines_is_not_suggested():
    source = "import torch\nloader = DataLoader(ds)\n"
    start = source.index("DataLoader")
    d = diag(source, "o.py", "TL101", start, start + 14, edits=[(0, 0, "import os\n"), (start + 13, start + 13, ", num_workers=os.cpu_count()")])
    assert "suggestions" not in rdjson.diagnostic(d, source)


def test_rdjson_range_ending_at_column_one_stops_at_previous_line():
    source = "a = (\n  1)\nb = 2\n"
    d = diag(source, "c.py", "TL201", 0, source.index("b"))  # ends at line 3, column 1
    item = rdjson.diagnostic(d, source)
    assert item["location"]["range"]["end"] == {"line": 2, "column": 5}


def test_rdjsonl_one_valid_diagnostic_per_line_with_errors():
    result = _dataloader_result()
    result.files.append(FileResult(path="broken.py", error=FileError("broken.py", "does not parse: line 2")))
    lines = rdjson.render(result, "rdjsonl").splitlines()
    assert len(lines) == 3
    v = validator("rdjson/Diagnostic.json")
    for line in lines:
        v.validate(json.loads(line))
    assert json.loads(lines[2])["location"] == {"path": "broken.py"}


def test_rdjson_schema_rejects_bad_output():
    """The validator is live: a wrong type is caught."""
    import jsonschema

    doc = json.loads(rdjson.render(_dataloader_result(), "rdjson"))
    doc["diagnostics"][0]["location"]["range"]["start"]["line"] = "3"
    with pytest.raises(jsonschema.ValidationError):
        validator("rdjson/DiagnosticResult.json").validate(doc)


# -- sarif -------------------------------------------------------------------------------------


def test_sarif_valid_with_rules_results_and_fixes(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    monkeypatch.chdir(tmp_path)
    result = _dataloader_result("pkg/train.py")
    doc = sarif.build(result, root=tmp_path)
    validator("sarif-2.1.0.json").validate(doc)
    assert doc["$schema"].endswith("sarif-2.1.0.json") and doc["version"] == "2.1.0"
    run = doc["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert {"TL101", "TL108"} <= set(rules)
    for rule in rules.values():
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["help"]["text"] and rule["helpUri"].startswith("https://")
        # text is plain (it was the Markdown again); the Markdown has its own field.
        assert "`" not in rule["help"]["text"] and "###" not in rule["help"]["text"]
    res = run["results"][0]
    assert res["ruleId"] == "TL101" and res["level"] == "error"
    assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == "TL101"
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "pkg/train.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 3, "startColumn": 10, "endLine": 3, "endColumn": 38}
    assert len(res["partialFingerprints"]["trainlint/v1"]) == 32
    (fix,) = res["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "pkg/train.py"
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 3, "startColumn": 37, "endLine": 3, "endColumn": 37},
            "insertedContent": {"text": ", num_workers=2"},
        }
    ]
    assert "fixes" not in run["results"][1]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"


def test_sarif_paths_relative_to_git_root(tmp_path, monkeypatch):
    from _integration_support import init_repo

    repo = init_repo(tmp_path / "repo")
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    doc = json.loads(sarif.render(_dataloader_result("train.py")))
    uri = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "sub/train.py"


def test_sarif_fingerprints_survive_moved_lines(tmp_path):
    before = _dataloader_result()
    shifted = "# a new comment line\n\n" + SOURCE
    call = shifted.index("DataLoader(")
    d = diag(shifted, "train.py", "TL101", call, shifted.index(")", call) + 1)
    after = result_of({"train.py": (shifted, [d])})
    fp = lambda r: sarif.build(r, root=tmp_path)["runs"][0]["results"][0]["partialFingerprints"]
    assert fp(before) == fp(after)


def test_sarif_reports_unreadable_files(tmp_path):
    result = result_of({})
    result.files.append(FileResult(path="bin.py", error=FileError("bin.py", "binary file")))
    doc = sarif.build(result, root=tmp_path)
    validator("sarif-2.1.0.json").validate(doc)
    notes = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert notes[0]["message"]["text"] == "bin.py: binary file"
    # A file that was not analyzed means the execution did not succeed (SARIF 2.1.0, 3.20.14);
    # this said true before.
    assert doc["runs"][0]["invocations"][0]["executionSuccessful"] is False


def test_sarif_execution_successful_without_errors(tmp_path):
    doc = sarif.build(_dataloader_result(), root=tmp_path)
    assert doc["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_sarif_schema_rejects_bad_output(tmp_path):
    import jsonschema

    doc = sarif.build(_dataloader_result(), root=tmp_path)
    doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    with pytest.raises(jsonschema.ValidationError):
        validator("sarif-2.1.0.json").validate(doc)


# -- a file that does not parse: where, in every format --------------------------------------------

SYNTAX = FileError("py2.py", "syntax error at line 2, column 7: Missing parentheses in call to 'print'")


def _syntax_error_result():
    result = result_of({})
    result.files.append(FileResult(path="py2.py", error=SYNTAX, source="# é\nprint 'hi'\n"))
    return result


def test_a_syntax_error_is_located_in_every_format(tmp_path):
    assert github.render(_syntax_error_result()).startswith("::error file=py2.py,line=2,col=7,title=trainlint::")
    (entry,) = json.loads(reporters.render("json", _syntax_error_result()))
    assert entry["code"] is None and entry["location"] == {"row": 2, "column": 7} and entry["fix"] is None
    doc = json.loads(rdjson.render(_syntax_error_result(), "rdjson"))
    validator("rdjson/DiagnosticResult.json").validate(doc)
    assert doc["diagnostics"][0]["location"]["range"] == {"start": {"line": 2, "column": 7}}
    sarif_doc = sarif.build(_syntax_error_result(), root=tmp_path)
    validator("sarif-2.1.0.json").validate(sarif_doc)
    (note,) = sarif_doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 7}
    # The file was not analyzed: not a successful execution (was true, the error only a notification).
    assert sarif_doc["runs"][0]["invocations"][0]["executionSuccessful"] is False


def test_an_error_without_a_place_is_put_at_the_files_start_in_json():
    # As Ruff writes an I/O error (E902): every entry has a location (it was null here).
    assert FileError("bin.py", "binary file").location is None
    (entry,) = json.loads(reporters.render("json", _unlocated()))
    assert entry["location"] == entry["end_location"] == {"row": 1, "column": 1}
    assert entry["code"] is None and entry["message"] == "binary file"


def _unlocated():
    result = result_of({})
    result.files.append(FileResult(path="bin.py", error=FileError("bin.py", "binary file")))
    return result


# -- gitlab ------------------------------------------------------------------------------------

# GitLab's Code Quality report format, as its documentation lists the fields a merge request's
# widget needs (no schema file is published with it): written down here, and checked as a schema.
GITLAB_ISSUE = {
    "type": "object",
    "required": ["description", "check_name", "fingerprint", "severity", "location"],
    "properties": {
        "description": {"type": "string", "minLength": 1},
        "check_name": {"type": "string", "minLength": 1},
        "fingerprint": {"type": "string", "minLength": 1},
        "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
        "location": {
            "type": "object",
            "required": ["path", "lines"],
            "properties": {
                "path": {"type": "string", "pattern": "^[^/]"},
                "lines": {"type": "object", "required": ["begin"],
                          "properties": {"begin": {"type": "integer", "minimum": 1},
                                         "end": {"type": "integer", "minimum": 1}}},
            },
        },
    },
}


def test_gitlab_code_quality_issues(tmp_path, monkeypatch):
    import jsonschema
    from trainlint.reporters import gitlab

    monkeypatch.setenv("CI_PROJECT_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    result = _dataloader_result("src/train.py")
    result.files += _syntax_error_result().files
    issues = json.loads(reporters.render("gitlab", result))
    jsonschema.validate(issues, {"type": "array", "items": GITLAB_ISSUE})
    assert [(i["check_name"], i["location"]["path"], i["location"]["lines"]) for i in issues] == [
        ("trainlint/TL101", "src/train.py", {"begin": 3, "end": 3}),
        ("trainlint/TL108", "src/train.py", {"begin": 5, "end": 5}),
        ("trainlint/file-error", "py2.py", {"begin": 2, "end": 2}),
    ]
    assert len({i["fingerprint"] for i in issues}) == 3
    # The fingerprint is SARIF's: lines added above a finding keep it the same GitLab issue.
    shifted = "# a new comment line\n\n" + SOURCE
    call = shifted.index("DataLoader(")
    moved = result_of({"src/train.py": (shifted, [diag(shifted, "src/train.py", "TL101", call,
                                                       shifted.index(")", call) + 1)])})
    assert gitlab.issues(moved)[0]["fingerprint"] == issues[0]["fingerprint"]
    assert gitlab.issues(moved)[0]["location"]["lines"] == {"begin": 5, "end": 5}


# -- azure, junit ------------------------------------------------------------------------------


def test_azure_logging_commands_escape_what_the_agent_reads():
    from trainlint.reporters import azure

    source = "x = 1\n"
    d = diag(source, "a;b].py", "TL201", 0, 1, "100% bad;\r\nnext]")
    result = result_of({"a;b].py": (source, [d])})
    result.files += _syntax_error_result().files
    assert azure.render(result).splitlines() == [
        "##vso[task.logissue type=error;sourcepath=a%3Bb%5D.py;linenumber=1;columnnumber=1;code=TL201;]"
        "100%AZP25 bad;%0D%0Anext]",
        "##vso[task.logissue type=error;sourcepath=py2.py;linenumber=2;columnnumber=7;]could not check: "
        "syntax error at line 2, column 7: Missing parentheses in call to 'print'",
    ]


def test_junit_is_xml_with_a_failure_per_finding_and_an_error_per_unchecked_file():
    import xml.etree.ElementTree as ET

    result = _dataloader_result("src/train.py")
    result.files += _syntax_error_result().files
    root = ET.fromstring(reporters.render("junit", result))
    assert (root.tag, root.get("tests"), root.get("failures"), root.get("errors")) == ("testsuites", "3", "2", "1")
    suites = {s.get("name"): s for s in root}
    assert [c.get("name") for c in suites["src/train.py"]] == ["TL101 at 3:10", "TL108 at 5:9"]
    failure = suites["src/train.py"][0].find("failure")
    assert failure.get("type") == "TL101" and failure.text.startswith("src/train.py:3:10: TL101 ")
    assert suites["py2.py"][0].find("error").get("message").startswith("syntax error at line 2")
    empty = ET.fromstring(reporters.render("junit", result_of({})))
    assert (empty.get("tests"), empty.get("failures")) == ("1", "0")  # never an empty report


def test_junit_stays_xml_with_control_characters_in_a_file_name():
    # XML 1.0 forbids most control characters even as references: `esc\x1bname.py` (or a name
    # that is not UTF-8, a lone surrogate) made the report unreadable to every XML parser.
    import xml.etree.ElementTree as ET

    source = "x = 1\n"
    name = "esc\x1bname\udcff.py"
    result = result_of({name: (source, [diag(source, name, "TL201", 0, 1, "bad\x07 bell")])})
    root = ET.fromstring(reporters.render("junit", result).encode("utf-8"))
    case = root[0][0]
    assert case.get("classname") == "esc\\x1bname\\udcff.py"
    assert case.find("failure").get("message") == "bad\\x07 bell"


# -- a fix whose edits overlap ---------------------------------------------------------------


def test_full_format_shows_a_fix_with_overlapping_edits_as_no_fix():
    # A rule's bug (two edits of one text) must not crash the report: the finding stands, no fix rows.
    call = SOURCE.index("DataLoader(")
    d = diag(SOURCE, "train.py", "TL101", call, call + 10, "DataLoader without num_workers",
             edits=[(call, call + 10, "Loader"), (call + 5, call + 12, "X")], name="dataloader-no-workers")
    out = reporters.render("full", result_of({"train.py": (SOURCE, [d])}))
    assert "DataLoader without num_workers" in out and "help: apply the fix" in out
    assert " + " not in out and " - " not in out


def test_engine_drops_a_fix_whose_edits_overlap():
    import libcst as cst

    from trainlint.diagnostics import Applicability as A
    from trainlint.engine import ActiveRule, lint_text
    from trainlint.rule import Rule

    class Overlapping(Rule):
        code, name, summary = "TL999", "overlapping", "a rule whose fix overlaps itself"

        def visit_Call(self, node: cst.Call) -> None:
            self.report(node, "a call", self.fix(A.SAFE, "overlap", (node, "a()"), (node.func, "b")))

    found = lint_text("f(x)\n", "case.py", [ActiveRule(Overlapping, {})])
    assert [(d.code, d.fix) for d in found] == [("TL999", None)]
    assert "TL999" in reporters.render("full", result_of({"case.py": ("f(x)\n", found)}))


def test_sarif_writes_a_file_name_that_is_not_utf8_as_its_bytes(tmp_path):
    # The name's byte 0xff (kept by Python as the surrogate U+DCFF) crashed the report with
    # UnicodeEncodeError; the URI names the file's own bytes, percent-encoded.
    result = _dataloader_result(str(tmp_path / "bad\udcff.py"))
    data = sarif.build(result, root=tmp_path)
    validator("sarif-2.1.0.json").validate(data)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in data["runs"][0]["results"]}
    assert uris == {"bad%FF.py"}
