"""The command line end to end, through click's runner and real files."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from _cli import run_cli
from click.testing import CliRunner

from trainlint import __version__
from trainlint.cli import cli

BAD = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n"
GOOD = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4, prefetch_factor=4)\n"




@pytest.fixture
def project(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text(GOOD)
    return tmp_path


def test_default_command_is_check(project):
    a = run_cli(["bad.py"], project)
    b = run_cli(["check", "bad.py"], project)
    assert a.exit_code == b.exit_code == 1
    assert a.output == b.output
    assert "bad.py:2:10: TL104 [*]" in a.output


def test_no_paths_means_current_folder(project):
    result = run_cli([], project)
    assert result.exit_code == 1
    assert "bad.py" in result.output and "good.py" not in result.output


def test_exit_zero_and_clean_exit(project):
    assert run_cli(["good.py"], project).exit_code == 0
    assert "All checks passed!" in run_cli(["good.py"], project).output
    assert run_cli(["--exit-zero", "bad.py"], project).exit_code == 0


def test_fix_writes_safe_fixes_only(project):
    (project / "mixed.py").write_text("from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8, shuffle=True, num_workers=2)\n")
    result = run_cli(["--fix", "mixed.py"], project)
    text = (project / "mixed.py").read_text()
    assert "prefetch_factor=4" in text  # TL104 is safe
    assert "drop_last" not in text  # TL105 is unsafe
    assert result.exit_code == 1  # TL105 remains
    run_cli(["--fix", "--unsafe-fixes", "mixed.py"], project)
    assert "drop_last=True" in (project / "mixed.py").read_text()


def test_diff_writes_nothing(project):
    result = run_cli(["--diff", "bad.py"], project)
    assert "+loader = DataLoader(ds, num_workers=4, prefetch_factor=4)" in result.output
    assert (project / "bad.py").read_text() == BAD
    assert result.exit_code == 1


def test_select_ignore_and_prefixes(project):
    assert run_cli(["--select", "TL2", "bad.py"], project).exit_code == 0
    assert run_cli(["--ignore", "TL104", "bad.py"], project).exit_code == 0
    assert run_cli(["--select", "ALL", "--ignore", "TL1", "bad.py"], project).exit_code == 0
    assert run_cli(["--select", "TL1", "--extend-select", "TL2", "bad.py"], project).exit_code == 1
    bad = run_cli(["--select", "XX999", "bad.py"], project)
    assert bad.exit_code == 2 and "unknown rule code" in bad.output
    typo = run_cli(["--select", "TL1O4", "bad.py"], project)
    assert typo.exit_code == 2 and "did you mean `TL104`?" in typo.output
    empty = run_cli(["--select", "", "bad.py"], project)  # an unset `--select "$RULES"` checks nothing and passes
    assert empty.exit_code == 2 and "'--select': expected rule codes or prefixes (ALL for all), got an empty value" in empty.output
    lower = run_cli(["--select", "tl104", "bad.py"], project)
    assert lower.exit_code == 2 and "unknown rule code or prefix 'tl104'; did you mean `TL104`?" in lower.output


def test_statistics_and_show_fixes(project):
    stats = run_cli(["--statistics", "bad.py"], project)
    assert stats.output.split() == ["1", "TL104", "[*]", "dataloader-shallow-prefetch"]
    shown = run_cli(["--fix", "--show-fixes", "bad.py"], project)
    assert "- bad.py:\n    1 × TL104 (dataloader-shallow-prefetch)" in shown.output


def test_statistics_as_json_and_formats_without_them(project):
    data = json.loads(run_cli(["--statistics", "--output-format", "json", "bad.py"], project).output)
    assert data == [{"code": "TL104", "name": "dataloader-shallow-prefetch", "count": 1, "fixable": True}]
    sarif = run_cli(["--statistics", "--output-format", "sarif", "bad.py"], project)
    assert sarif.exit_code == 2 and "--statistics prints in the output formats concise, full, json" in sarif.output


def test_json_output_is_ruff_compatible(project):
    result = run_cli(["--output-format", "json", "bad.py"], project)
    data = json.loads(result.output)
    assert len(data) == 1
    item = data[0]
    assert item["code"] == "TL104"
    assert item["location"] == {"row": 2, "column": 10}
    assert item["end_location"]["row"] == 2
    assert item["filename"] == str(project / "bad.py")
    assert item["fix"]["applicability"] == "safe"
    edit = item["fix"]["edits"][0]
    assert edit["content"] == ", prefetch_factor=4"
    assert edit["location"] == edit["end_location"] == {"row": 2, "column": 38}
    assert item["url"].endswith("#tl104")
    lines = run_cli(["--output-format", "json-lines", "bad.py"], project).output.splitlines()
    assert [json.loads(line)["code"] for line in lines] == ["TL104"]


def test_full_output_shows_source_and_fix(project):
    out = run_cli(["--output-format", "full", "bad.py"], project).output
    assert "2 | loader = DataLoader(ds, num_workers=4)" in out
    assert "help: Set `prefetch_factor=4` (safe fix)" in out
    assert "  2 - loader = DataLoader(ds, num_workers=4)\n  2 + loader = DataLoader(ds, num_workers=4, prefetch_factor=4)\n" in out


def test_full_output_shows_a_suggestion_as_code(tmp_path):
    # A suggestion is never written, so this is the only place its code shows besides JSON and reviews.
    (tmp_path / "dp.py").write_text("import torch\n\nmodel = torch.nn.DataParallel(net)\nprint(model)\n")
    out = run_cli(["--output-format", "full", "--no-cache", "dp.py"], tmp_path).output
    assert "(display-only fix)\n  3 - model = torch.nn.DataParallel(net)\n  3 + model = torch.nn.parallel." in out
    assert "  5 + )\n\n" in out  # the last changed row; the unchanged `print(model)` is not shown
    assert "print(model)" not in out


def test_full_output_aligns_the_rows_of_every_hunk_of_a_fix(tmp_path):
    # TL101's fix adds `import os` at the top (rows 1-2) and rewrites the call (rows 9-10 and on):
    # one fix, two hunks, one column for the signs.
    (tmp_path / "t.py").write_text("from torch.utils.data import DataLoader\n" + "\n" * 6
                                   + "loader = DataLoader(ds, batch_size=32, shuffle=True)\n")
    out = run_cli(["--output-format", "full", "--select", "TL101", "--no-cache", "t.py"], tmp_path).output
    assert "   1 + import os\n   2 +\n   8 - loader = DataLoader(" in out
    assert "  10 + loader = DataLoader(" in out


def test_grouped_and_pylint_formats(project):
    (project / "more.py").write_text(BAD + "\n" * 8 + "loader2 = DataLoader(ds, num_workers=2)\n")
    grouped = run_cli(["--output-format", "grouped", "--no-cache", "bad.py", "more.py"], project)
    assert grouped.exit_code == 1
    assert grouped.output.startswith(
        "bad.py:\n  2:10 TL104 [*] Workers keep only 2 batches each in flight; set `prefetch_factor=4`")
    # Positions are aligned within a file; a blank line ends each file's group, then the summary.
    assert "\nmore.py:\n   2:10 TL104 [*] " in grouped.output and "\n  11:11 TL104 [*] " in grouped.output
    assert "\n\nFound 3 errors.\n" in grouped.output
    pylint = run_cli(["--output-format", "pylint", "--no-cache", "bad.py", "more.py"], project)
    assert pylint.exit_code == 1
    assert pylint.output.splitlines() == [
        "bad.py:2: [TL104] Workers keep only 2 batches each in flight; set `prefetch_factor=4` so uneven "
        "batches do not drain the queue",
        "more.py:2: [TL104] Workers keep only 2 batches each in flight; set `prefetch_factor=4` so uneven "
        "batches do not drain the queue",
        "more.py:11: [TL104] Workers keep only 2 batches each in flight; set `prefetch_factor=4` so uneven "
        "batches do not drain the queue",
    ]


def test_quiet_prints_findings_only(project):
    out = run_cli(["-q", "bad.py"], project).output
    assert out.startswith("bad.py:2:10") and "Found" not in out


def test_missing_path_and_unparsable_file(project):
    (project / "broken.py").write_text("def f(:\n")
    result = run_cli(["broken.py", "nope.py", "bad.py"], project)
    assert result.exit_code == 2
    assert "broken.py: error: syntax error at line 1" in result.output
    assert "nope.py: error: no such file or directory" in result.output
    assert "bad.py:2:10: TL104" in result.output  # the run went on
    assert "Traceback" not in result.output
    assert "2 files could not be checked." in result.stdout  # the summary counts them


def test_run_where_no_file_parses_still_closes_with_a_count(project):
    (project / "broken.py").write_text("def f(:\n")
    result = run_cli(["broken.py"], project)
    assert result.exit_code == 2
    assert result.stdout.splitlines() == ["1 file could not be checked."]
    fixed = run_cli(["--fix", "broken.py"], project)
    assert fixed.stdout.splitlines() == ["1 file could not be checked or fixed."]
    assert run_cli(["-q", "broken.py"], project).stdout == ""  # --quiet: findings only


def test_force_exclude(project):
    (project / "pyproject.toml").write_text('[tool.trainlint]\nextend-exclude = ["bad.py"]\n')
    assert run_cli(["bad.py"], project).exit_code == 1  # named explicitly: checked
    assert run_cli(["--force-exclude", "bad.py"], project).exit_code == 0
    assert run_cli(["."], project).exit_code == 0  # discovered: excluded


def test_a_named_folder_is_checked_even_if_excluded(project):
    # Ruff's rule: excludes keep discovery out of a folder, not a folder the user names (unless
    # --force-exclude); inside it they still apply, entry by entry.
    (project / "pyproject.toml").write_text('[tool.trainlint]\nextend-exclude = ["old", "skip_*.py"]\n')
    (project / "old" / "sub").mkdir(parents=True)
    for name in ("old/a.py", "old/sub/b.py", "old/skip_c.py"):
        (project / name).write_text(BAD)
    (project / "build").mkdir()
    (project / "build" / "d.py").write_text(BAD)

    def shown(*args):
        return run_cli(["--show-files", *args], project).stdout.split()

    assert shown("old") == ["old/a.py", "old/sub/b.py"]
    assert shown("build") == ["build/d.py"]  # a default exclude
    assert shown("old/sub") == ["old/sub/b.py"]  # below an excluded folder
    assert shown("--force-exclude", "old") == []
    assert "old/a.py" not in shown(".") and "build/d.py" not in shown(".")
    assert run_cli(["old"], project).exit_code == 1


def test_a_mistyped_output_format_names_the_closest(project):
    # As a mistyped subcommand: the closest value is named, rather than left to find in the list.
    check = run_cli(["--output-format", "jsn", "bad.py"], project)
    assert check.exit_code == 2 and "'jsn' is not one of 'azure', 'concise'," in check.output
    assert check.output.rstrip().endswith("'sarif'; did you mean 'json'?")
    rule = run_cli(["rule", "TL101", "--output-format", "jsno"], project)
    assert rule.exit_code == 2 and "'jsno' is not one of 'text', 'json'; did you mean 'json'?" in rule.output
    review = run_cli(["review", "--output-format", "sarf"], project)
    assert review.exit_code == 2 and "did you mean 'sarif'?" in review.output
    nothing_close = run_cli(["--output-format", "xml", "bad.py"], project)  # no guess: the list alone
    assert nothing_close.exit_code == 2 and nothing_close.output.rstrip().endswith("'sarif'.")


def test_a_mistyped_command_is_refused_as_one(project):
    result = run_cli(["chekc"], project)
    assert result.exit_code == 2 and "unrecognized subcommand 'chekc'; did you mean 'check'?" in result.output
    assert "use `trainlint --help`" in run_cli(["help"], project).output
    # A word that is a path, or like no command, is still a path to check.
    (project / "chekc").mkdir()
    assert run_cli(["chekc"], project).exit_code == 0
    assert "train: error: no such file or directory" in run_cli(["train"], project).output


def test_rule_named_like_a_path_here_says_how_to_check_it(project):
    """`trainlint rule` in a project with a `rule/` folder (meant as `trainlint [PATHS]`), or
    `trainlint rule bad.py`: the error says how to check that path."""
    assert "to check" not in run_cli(["rule"], project).output
    (project / "rule").mkdir()
    result = run_cli(["rule"], project)
    assert result.exit_code == 2 and "to check `rule`, run `trainlint check rule`" in result.output
    result = run_cli(["rule", "bad.py"], project)
    assert result.exit_code == 2 and "to check `bad.py`, run `trainlint check bad.py`" in result.output


def test_options_before_the_subcommand_are_the_subcommands(project):
    """`trainlint --isolated check bad.py`, as Ruff takes its global options before the
    subcommand: the options go to the command named after them (they made `check` a path to
    check, a missing file)."""
    plain = run_cli(["check", "--isolated", "--select", "TL104", "bad.py"], project)
    for args in (["--isolated", "check", "bad.py"], ["--isolated", "--select", "TL104", "check", "bad.py"],
                 ["--select=TL104", "--isolated", "check", "bad.py"]):
        result = run_cli(args, project)
        assert (result.exit_code, result.output) == (plain.exit_code, plain.output), args
    assert run_cli(["-q", "check", "bad.py"], project).output == run_cli(["check", "-q", "bad.py"], project).output
    assert run_cli(["--exit-zero", "check", "bad.py"], project).exit_code == 0
    # Without a subcommand after them, the words are paths, as before.
    assert "check: error: no such file or directory" not in run_cli(["--isolated", "bad.py"], project).output
    assert run_cli(["--isolated", "bad.py"], project).exit_code == 1


def test_an_absolute_path_inside_the_current_folder_is_shown_relative(project, tmp_path_factory):
    assert run_cli([str(project / "bad.py")], project).output.startswith("bad.py:2:10: TL104")
    assert run_cli([str(project)], project).output.startswith("bad.py:2:10: TL104")
    elsewhere = tmp_path_factory.mktemp("elsewhere")  # outside it: absolute, as given
    assert run_cli([str(project / "bad.py")], elsewhere).output.startswith(f"{project / 'bad.py'}:2:10: TL104")


def test_rule_command(project):
    out = run_cli(["rule", "TL101"], project).output
    assert out.startswith("# dataloader-no-workers (TL101)")
    assert "## Why is this bad?" in out and "Fix: unsafe" in out
    assert "num-workers" in out
    listed = json.loads(run_cli(["rule", "--all", "--output-format", "json"], project).output)
    assert {"TL101", "TL201"} <= {r["code"] for r in listed}
    unknown = run_cli(["rule", "TL999"], project)
    assert unknown.exit_code == 2 and "unknown rule code or name 'TL999'; `trainlint rule --all` lists them" in unknown.output
    # Codes are upper case here as in --select (which refuses `tl101`, as Ruff does): refused, spelling given.
    lower = run_cli(["rule", "tl101"], project)
    assert lower.exit_code == 2 and "unknown rule code or name 'tl101'; did you mean `TL101`?" in lower.output
    assert "did you mean `per-step-host-sync`?" in run_cli(["rule", "per-step-hostsync"], project).output
    by_name = run_cli(["rule", "per-step-host-sync"], project)
    assert "(TL201)" in by_name.output
    # A prefix (valid in --select) was "unknown rule code ...; did you mean `TL601`?": it lists its rules.
    prefix = run_cli(["rule", "TL1"], project)
    assert prefix.exit_code == 0 and prefix.output.startswith("TL1 is a prefix that selects")
    assert "  TL101 dataloader-no-workers " in prefix.output and "TL201" not in prefix.output
    as_json = json.loads(run_cli(["rule", "TL10", "--output-format", "json"], project).output)
    assert [r["code"] for r in as_json][:2] == ["TL101", "TL102"]
    every = run_cli(["rule", "ALL"], project)  # as in --select; it was "unknown rule code"
    assert every.exit_code == 0 and every.output.startswith("ALL selects every rule")
    assert "  TL101 " in every.output and "  TL602 " in every.output
    both = run_cli(["rule", "TL101", "--all"], project)  # the code was silently dropped
    assert both.exit_code == 2 and "give a rule code or --all, not both" in both.output


def test_no_cache_flag_is_accepted(project):
    assert run_cli(["--no-cache", "good.py"], project).exit_code == 0
    # -n is its short form, as Ruff's: nothing is read from or written to the cache.
    assert run_cli(["-n", "--cache-dir", "c", "bad.py"], project).exit_code == 1
    assert not (project / "c").exists()


def test_version():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and result.output == f"trainlint {__version__}\n"  # as `ruff 0.x.y`
    short = CliRunner().invoke(cli, ["-V"])  # as Ruff's -V
    assert short.exit_code == 0 and short.output == result.output


def test_show_files_lists_what_a_check_would_read(project):
    (project / "pyproject.toml").write_text('[tool.trainlint]\nextend-exclude = ["good.py"]\n')
    result = run_cli(["--show-files"], project)
    assert result.exit_code == 0 and result.output == "bad.py\n"
    assert run_cli(["--show-files", "missing.py"], project).exit_code == 2


def test_gitignored_files_are_left_out_unless_asked(project):
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".gitignore").write_text("generated/\n")
    (project / "generated").mkdir()
    (project / "generated" / "copy.py").write_text(BAD)
    assert run_cli(["--show-files"], project).output == "bad.py\ngood.py\n"
    everything = "bad.py\ngenerated/copy.py\ngood.py\n"
    assert run_cli(["--show-files", "--no-respect-gitignore"], project).output == everything
    (project / "pyproject.toml").write_text("[tool.trainlint]\nrespect-gitignore = false\n")
    assert run_cli(["--show-files"], project).output == everything
    assert run_cli(["--show-files", "--respect-gitignore"], project).output == "bad.py\ngood.py\n"
    # A file named on the command line is checked, ignored or not (as an excluded one is).
    assert "generated/copy.py:2:10: TL104" in run_cli(["generated/copy.py"], project).output


def test_show_settings_names_the_config_and_the_rules(project):
    (project / "sub").mkdir()
    (project / "sub" / "train.py").write_text(BAD)
    (project / "sub" / "trainlint.toml").write_text('ignore = ["TL104"]\nunfixable = ["TL102"]\n[TL101]\nnum-workers = 4\n')
    out = run_cli(["--show-settings", "sub/train.py"], project).output.splitlines()
    assert out[0] == 'file = "sub/train.py"'
    assert out[1] == f'config = "{project / "sub" / "trainlint.toml"}"'
    rules = next(line for line in out if line.startswith("rules = "))
    assert '"TL101"' in rules and '"TL104"' not in rules
    assert 'unfixable = ["TL102"]' in out and "TL101.num-workers = 4" in out
    # Every option of the rules that run, with its value; an option left alone says it is the default.
    assert "TL202.log-every = 100  # default: The interval the fix uses when the script defines none." in out
    assert not any(line.startswith("TL104.") for line in out)  # TL104 does not run here
    # Without a configuration file: the defaults, said so.
    out = run_cli(["--show-settings", "bad.py"], project).output
    assert "TL101.num-workers = 0  # default: The value the fix writes; 0 means `min(8, os.cpu_count() or 1)`" in out
    assert "config = (none: defaults)" in out and '"TL104"' in out
    assert "\nper-file-ignores = {}\n" in out
    # An unset key says what it stands for, not a bare "(default)".
    assert "(default)" not in out
    assert "\nfixable = [\"ALL\"]  # default: every rule's fixes\n" in out
    assert "\ntarget-torch = (none)  # default: a current PyTorch\n" in out
    assert '\nselect = ["TL101", "TL102", ' in out and "]  # default: the rules on by default\n" in out


def test_show_settings_gives_the_whole_runs_keys_as_the_run_uses_them(project):
    # fix, output-format, ...: the command line's, else those of the folder the run starts in; a
    # file's own configuration saying `fix = true` is not what the run does (it printed that, and
    # `fix = (default)` under --fix).
    (project / "sub").mkdir()
    (project / "sub" / "train.py").write_text(BAD)
    (project / "sub" / "trainlint.toml").write_text('fix = true\noutput-format = "json"\n')
    run_keys = ["# for the whole run (the command line, else the configuration of the folder it starts in):",
                "fix = false", "fix-only = false", "unsafe-fixes = false", "show-fixes = false"]
    out = run_cli(["--show-settings", "sub/train.py"], project).output.splitlines()
    assert out[-6:] == [*run_keys, 'output-format = "concise"']
    out = run_cli(["--show-settings", "--fix", "--output-format", "full", "sub/train.py"], project).output.splitlines()
    assert out[-6:] == [run_keys[0], "fix = true", *run_keys[2:], 'output-format = "full"']


def test_output_file_takes_the_report(project, tmp_path):
    report = tmp_path / "out" / "nested" / "report.sarif"  # its folders are made
    result = run_cli(["--output-format", "sarif", "-o", str(report), "bad.py"], project)
    assert result.exit_code == 1 and result.output == ""
    assert json.loads(report.read_text())["runs"][0]["results"][0]["ruleId"] == "TL104"
    (tmp_path / "a_file").write_text("")
    blocked = run_cli(["--output-file", str(tmp_path / "a_file" / "r.json"), "bad.py"], project)
    assert blocked.exit_code == 2 and "cannot write the report" in blocked.output


def test_silent_prints_nothing_and_keeps_the_exit_code(project, tmp_path):
    # As Ruff's -s/--silent: not even the findings; the exit code still says there were some.
    for flag in ("-s", "--silent"):
        found = run_cli([flag, "bad.py"], project)
        assert found.exit_code == 1 and found.output == ""
    assert run_cli(["-s", "good.py"], project).exit_code == 0
    diff = run_cli(["-s", "--diff", "bad.py"], project)  # neither the patch nor its summary
    assert diff.exit_code == 1 and diff.output == "" and (project / "bad.py").read_text() == BAD
    missing = run_cli(["-s", "bad.py", "nope.py"], project)  # the file that could not be checked: exit 2, unsaid
    assert missing.exit_code == 2 and missing.output == ""
    # A report asked for in a file is still written: -s only keeps the terminal quiet.
    report = tmp_path / "report.json"
    written = run_cli(["-s", "--output-format", "json", "-o", str(report), "bad.py"], project)
    assert written.exit_code == 1 and written.output == ""
    assert [d["code"] for d in json.loads(report.read_text())] == ["TL104"]
    # So is the fixed source an editor waits for on standard output.
    fixed = run_cli(["-s", "--fix", "--stdin-filename", "bad.py"], project, input=BAD)
    assert fixed.exit_code == 0 and fixed.output == GOOD
    # What the user must correct is still said.
    usage = run_cli(["-s", "--select", "XX9", "bad.py"], project)
    assert usage.exit_code == 2 and "unknown rule code" in usage.output
    watch = run_cli(["-s", "--watch", "bad.py"], project)
    assert watch.exit_code == 2 and "--watch" in watch.output and "--silent" in watch.output


@pytest.mark.parametrize("source", [
    BAD.encode().rstrip(b"\n"),  # no newline at the end
    BAD.encode().replace(b"\n", b"\r"),  # old Mac line endings: one line, as patch tools read it
    b"\x0c\n" + BAD.encode() + b"# page\x0cbreak\n",  # form feeds, which str.splitlines splits at
    "# \u2028 a line separator\n".encode() + BAD.encode(),
], ids=["no-final-newline", "cr-only", "form-feed", "line-separator"])
def test_the_diff_applies_to_any_line_endings(tmp_path, source):
    """--diff's patch, applied by `git apply`, gives the bytes --fix writes: lines end at \\n only
    (splitlines split at \\r, form feeds and Unicode separators, and a last line without a newline
    ran into the next: `git apply` said "corrupt patch")."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for side in ("a", "b"):
        (tmp_path / side / "train.py").write_bytes(source)
    proc = subprocess.run([sys.executable, "-m", "trainlint", "check", "--no-cache", "--diff", "train.py"],
                          cwd=tmp_path / "a", capture_output=True)
    assert proc.returncode == 1 and proc.stdout, proc.stderr
    subprocess.run(["git", "apply", "-p0", "-"], input=proc.stdout, cwd=tmp_path / "a", check=True)
    subprocess.run([sys.executable, "-m", "trainlint", "check", "--no-cache", "--fix", "train.py"], cwd=tmp_path / "b",
                   capture_output=True)
    assert (tmp_path / "a" / "train.py").read_bytes() == (tmp_path / "b" / "train.py").read_bytes() != source


def test_the_diff_of_a_name_with_spaces_applies_with_git_and_patch(tmp_path):
    """The header of a name with a space ends with a tab, as git writes it: GNU patch read the
    name up to the space and asked which file to patch."""
    (tmp_path / "my runs").mkdir()
    (tmp_path / "my runs" / "train v2.py").write_text(BAD)
    proc = subprocess.run([sys.executable, "-m", "trainlint", "check", "--no-cache", "--diff", "my runs"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.stdout.startswith("--- my runs/train v2.py\t\n+++ my runs/train v2.py\t\n"), proc.stdout
    appliers = [["git", "apply", "-p0", "-"]] + ([["patch", "-p0", "--batch"]] if shutil.which("patch") else [])
    for command in appliers:
        (tmp_path / "my runs" / "train v2.py").write_text(BAD)
        subprocess.run(command, input=proc.stdout, cwd=tmp_path, text=True, check=True, capture_output=True)
        assert (tmp_path / "my runs" / "train v2.py").read_text() == GOOD


def test_unsafe_fixes_count_as_available_when_asked(project):
    (project / "mixed.py").write_text("from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8, shuffle=True, num_workers=2)\n")
    plain = run_cli(["--select", "TL104,TL105", "mixed.py"], project).output
    assert "TL105 The last" in plain and "[*] 1 fixable with the `--fix` option." in plain
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option." in plain
    unsafe = run_cli(["--select", "TL104,TL105", "--unsafe-fixes", "mixed.py"], project).output
    assert "TL105 [*] The last" in unsafe and "[*] 2 fixable with the `--fix` option (with `--unsafe-fixes`)." in unsafe
    assert "hidden" not in unsafe
    stats = run_cli(["--select", "TL105", "--unsafe-fixes", "--statistics", "mixed.py"], project).output
    assert "TL105\t[*] " in stats


def test_diff_prints_only_the_patch_on_standard_output(project):
    proc = subprocess.run([sys.executable, "-m", "trainlint", "check", "--no-cache", "--diff", "bad.py", "good.py"],
                          cwd=project, capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout.startswith("--- bad.py\n+++ bad.py\n") and "TL104" not in proc.stdout
    assert proc.stderr == "Would fix 1 error.\n"
    # The patch applies: standard output is fit for `git apply -p0` (or `patch -p0`).
    subprocess.run(["git", "apply", "-p0", "-"], input=proc.stdout, cwd=project, text=True, check=True)
    assert (project / "bad.py").read_text() == GOOD
    again = subprocess.run([sys.executable, "-m", "trainlint", "check", "--no-cache", "--diff", "bad.py"],
                           cwd=project, capture_output=True, text=True)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "No errors would be fixed.\n")


def test_exit_zero_covers_files_that_cannot_be_checked_not_usage_errors(project):
    (project / "broken.py").write_text("def f(:\n")
    assert run_cli(["broken.py", "bad.py"], project).exit_code == 2
    zero = run_cli(["-e", "broken.py", "bad.py"], project)  # -e is --exit-zero, as in Ruff
    assert zero.exit_code == 0 and "broken.py: error: syntax error at line 1" in zero.output
    assert "bad.py:2:10: TL104" in zero.output
    assert run_cli(["--exit-zero", "--select", "XX1", "bad.py"], project).exit_code == 2
    (project / "pyproject.toml").write_text("[tool.trainlint]\nselect = 3\n")
    assert run_cli(["--exit-zero", "bad.py"], project).exit_code == 2


def test_exit_non_zero_on_fix(project):
    assert run_cli(["--fix", "--exit-non-zero-on-fix", "good.py"], project).exit_code == 0
    fixed = run_cli(["--fix", "--exit-non-zero-on-fix", "bad.py"], project)
    assert (project / "bad.py").read_text() == GOOD
    assert fixed.exit_code == 1 and "(1 fixed, 0 remaining)" in fixed.output
    (project / "bad.py").write_text(BAD)
    assert run_cli(["--fix", "bad.py"], project).exit_code == 0


def test_fix_only_reports_what_it_fixed_not_what_is_left(project):
    # bad.py has a safe fix (TL104); left.py only an unsafe one (TL101), so it stays a finding.
    left = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, prefetch_factor=4)\n"
    (project / "left.py").write_text(left)
    result = run_cli(["--fix-only", "bad.py", "left.py"], project)
    assert (project / "bad.py").read_text() == GOOD and (project / "left.py").read_text() == left
    assert result.exit_code == 0  # the TL101 finding left in left.py is neither shown nor counted
    assert result.stdout.splitlines() == ["Fixed 1 error."]
    assert run_cli(["--fix-only", "left.py"], project).stdout.splitlines() == ["No errors fixed."]
    assert run_cli(["left.py"], project).exit_code == 1  # it is still there for a plain check
    (project / "bad.py").write_text(BAD)
    on_fix = run_cli(["--fix-only", "--exit-non-zero-on-fix", "--show-fixes", "bad.py"], project)
    assert on_fix.exit_code == 1 and on_fix.stdout.splitlines() == [
        "Fixed 1 error.", "Fixed 1 error:", "- bad.py:", "    1 × TL104 (dataloader-shallow-prefetch)"]
    (project / "bad.py").write_text(BAD)
    as_json = run_cli(["--fix-only", "--output-format", "json", "bad.py", "left.py"], project)
    assert as_json.exit_code == 0 and json.loads(as_json.stdout) == []
    (project / "bad.py").write_text(BAD)
    diff = run_cli(["--fix-only", "--diff", "bad.py"], project)  # --diff still writes nothing
    assert diff.exit_code == 1 and "+loader = DataLoader(ds, num_workers=4, prefetch_factor=4)" in diff.stdout
    assert (project / "bad.py").read_text() == BAD
    assert run_cli(["--fix-only", "--no-fix", "bad.py"], project).exit_code == 1  # --no-fix wins: a check
    stats = run_cli(["--fix-only", "--statistics", "bad.py"], project)
    assert stats.exit_code == 2 and "--statistics would count none" in stats.output
    (project / "pyproject.toml").write_text("[tool.trainlint]\nfix-only = true\n")
    assert run_cli(["bad.py", "left.py"], project).exit_code == 0 and (project / "bad.py").read_text() == GOOD
    assert run_cli(["--no-fix-only", "left.py"], project).exit_code == 1  # the command line wins


def test_exclude_replaces_the_configured_patterns(project):
    (project / "pyproject.toml").write_text('[tool.trainlint]\nexclude = ["bad.py"]\n')
    (project / "build").mkdir()
    (project / "build" / "gen.py").write_text(BAD)
    assert run_cli(["--show-files"], project).output == "build/gen.py\ngood.py\n"  # the default list is replaced
    assert run_cli(["--show-files", "--exclude", "good.py"], project).output == "bad.py\nbuild/gen.py\n"
    both = run_cli(["--show-files", "--exclude", "good.py", "--extend-exclude", "build"], project)
    assert both.output == "bad.py\n"


def test_add_noqa_refuses_diff_fix_and_baseline_and_writes_nothing(project):
    for flags in (["--diff"], ["--fix"], ["--fix-only"], ["--baseline", "b.json"]):
        result = run_cli(["--add-noqa", *flags, "bad.py"], project)
        assert result.exit_code == 2 and f"--add-noqa cannot go with {flags[0]}" in result.output
        assert (project / "bad.py").read_text() == BAD
    assert not (project / "b.json").exists()


def test_a_path_without_python_files_is_said(project):
    (project / "empty").mkdir()
    (project / "empty" / "notes.txt").write_text("x\n")
    result = run_cli(["empty"], project)
    assert result.exit_code == 0 and "warning: No Python files found under the given path(s)" in result.output
    assert "warning" not in run_cli(["good.py"], project).output


def test_ignore_noqa_reports_and_fixes_suppressed_findings(project):
    quiet = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)  # noqa: TL104\n"
    (project / "quiet.py").write_text(quiet)
    (project / "whole.py").write_text("# trainlint: noqa\n" + BAD)
    assert run_cli(["quiet.py", "whole.py"], project).exit_code == 0  # with the cache on: written here
    loud = run_cli(["--ignore-noqa", "quiet.py", "whole.py"], project)  # and not reused here
    assert loud.exit_code == 1 and "quiet.py:2:10: TL104" in loud.output and "whole.py:3:10: TL104" in loud.output
    assert run_cli(["quiet.py"], project).exit_code == 0
    run_cli(["--fix", "--ignore-noqa", "quiet.py"], project)
    assert "prefetch_factor=4)  # noqa: TL104" in (project / "quiet.py").read_text()


def test_configuration_sets_fix_unsafe_fixes_and_output_format(project):
    (project / "mixed.py").write_text("from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8, shuffle=True, num_workers=2)\n")
    (project / "pyproject.toml").write_text('[tool.trainlint]\nunsafe-fixes = true\noutput-format = "json"\n')
    shown = run_cli(["mixed.py"], project)
    items = json.loads(shown.stdout)
    assert {i["code"] for i in items} == {"TL104", "TL105"}
    concise = run_cli(["--no-unsafe-fixes", "--output-format", "concise", "mixed.py"], project).output
    assert "1 hidden fix can be enabled" in concise
    (project / "pyproject.toml").write_text('[tool.trainlint]\nfix = true\nunsafe-fixes = true\n')
    assert run_cli(["--no-fix", "mixed.py"], project).exit_code == 1
    assert "drop_last" not in (project / "mixed.py").read_text()
    run_cli(["mixed.py"], project)
    assert "drop_last=True" in (project / "mixed.py").read_text() and "prefetch_factor=4" in (project / "mixed.py").read_text()
    (project / "pyproject.toml").write_text('[tool.trainlint]\nfix = "yes"\n')
    bad = run_cli(["mixed.py"], project)
    assert bad.exit_code == 2 and "`fix`: expected true or false" in bad.output
    (project / "pyproject.toml").write_text('[tool.trainlint]\noutput-format = "xml"\n')
    bad_format = run_cli(["mixed.py"], project).output
    assert "`output-format`: expected one of " in bad_format and "concise" in bad_format and "xml" in bad_format


def test_inline_config_pairs_and_isolated(project):
    (project / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL104"]\n[tool.trainlint.TL104]\nmin-prefetch-factor = 4\n')
    assert run_cli(["bad.py"], project).exit_code == 0
    # A pair set on top of the file's configuration: the key is replaced, the rest kept.
    assert run_cli(["--config", "ignore = []", "bad.py"], project).exit_code == 1
    eight = run_cli(["--config", "ignore = []", "--config", "TL104.min-prefetch-factor = 8", "good.py"], project)
    assert eight.exit_code == 1 and "prefetch_factor=8" in eight.output
    assert run_cli(["--isolated", "bad.py"], project).exit_code == 1  # the pyproject's ignore is not read
    bad = run_cli(["--config", "TL104.no-such-option = 1", "bad.py"], project)
    assert bad.exit_code == 2 and "--config: invalid configuration: `TL104.no-such-option`" in bad.output
    # An interval of 0 was accepted, and TL201's fix wrote `step % 0` (ZeroDivisionError when run).
    zero = run_cli(["--config", "TL201.log-every = 0", "bad.py"], project)
    assert zero.exit_code == 2 and "--config: invalid configuration: `TL201.log-every`: expected an integer of at " \
                                   "least 1, got int 0" in zero.output
    garbled = run_cli(["--config", "select ==", "bad.py"], project)
    assert garbled.exit_code == 2 and "neither a configuration file nor a TOML" in garbled.output
    assert "quotes" not in garbled.output
    unquoted = run_cli(["--config", "target-gpu=ampere", "bad.py"], project)
    assert unquoted.exit_code == 2 and "a string needs quotes: --config 'target-gpu = \"ampere\"'" in unquoted.output
    (project / "other.toml").write_text('ignore = ["TL1"]\n')
    assert run_cli(["--config", "other.toml", "bad.py"], project).exit_code == 0
    assert run_cli(["--config", "other.toml", "--config", "ignore = []", "bad.py"], project).exit_code == 1
    assert run_cli(["--isolated", "--config", "other.toml", "bad.py"], project).exit_code == 2


def test_target_torch_turns_off_what_an_older_pytorch_lacks(project):
    (project / "old_amp.py").write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    assert run_cli(["--select", "TL401", "old_amp.py"], project).exit_code == 1
    assert run_cli(["--select", "TL401", "--target-torch", "2.2", "old_amp.py"], project).exit_code == 0
    (project / "pyproject.toml").write_text('[tool.trainlint]\ntarget-torch = "2.3"\n')
    assert run_cli(["--select", "TL401", "old_amp.py"], project).exit_code == 0
    assert run_cli(["--select", "TL401", "--target-torch", "2.4", "old_amp.py"], project).exit_code == 1
    (project / "pyproject.toml").write_text('[tool.trainlint]\ntarget-torch = 2.3\n')
    bad = run_cli(["old_amp.py"], project)
    assert bad.exit_code == 2 and '`target-torch`: expected a PyTorch version as "MAJOR.MINOR"' in bad.output
    assert run_cli(["--target-torch", "two", "old_amp.py"], project).exit_code == 2


def test_line_length_decides_when_a_fix_wraps_a_call(project):
    # 81 characters before the fix: `, prefetch_factor=4` takes the line past 88, not past 120.
    (project / "wide.py").write_text(
        "from torch.utils.data import DataLoader\n"
        "train_loader = DataLoader(train_dataset, batch_size=args.batch_size, num_workers=8)\n")
    # Split at its brackets, the arguments on a line of their own, as Black splits it.
    assert "+    train_dataset, batch_size=args.batch_size, num_workers=8, prefetch_factor=4\n+)" in run_cli(
        ["--diff", "--no-cache", "wide.py"], project).output
    one_line = "+train_loader = DataLoader(train_dataset, batch_size=args.batch_size, num_workers=8, prefetch_factor=4)\n"
    assert one_line in run_cli(["--diff", "--no-cache", "--line-length", "120", "wide.py"], project).output
    (project / "pyproject.toml").write_text("[tool.trainlint]\nline-length = 120\n")
    assert one_line in run_cli(["--diff", "--no-cache", "wide.py"], project).output
    assert run_cli(["--line-length", "0", "wide.py"], project).exit_code == 2


def test_colours_only_where_asked(project):
    plain = subprocess.run([sys.executable, "-m", "trainlint", "check", "--no-cache", "bad.py"], cwd=project,
                           capture_output=True, text=True)
    assert "\x1b[" not in plain.stdout and "bad.py:2:10: TL104 [*] " in plain.stdout  # a pipe: plain text
    env = dict(os.environ, FORCE_COLOR="1")
    env.pop("NO_COLOR", None)
    forced = subprocess.run([sys.executable, "-m", "trainlint", "check", "--no-cache", "bad.py"], cwd=project,
                            capture_output=True, text=True, env=env)
    assert "\x1b[1mbad.py\x1b[0m:2:10: \x1b[31m\x1b[1mTL104\x1b[0m" in forced.stdout
    assert forced.stdout.splitlines()[-2] == "Found 1 error."  # summary lines stay plain (and -q can find them)
    env["NO_COLOR"] = "1"
    assert "\x1b[" not in subprocess.run([sys.executable, "-m", "trainlint", "check", "--no-cache", "bad.py"],
                                         cwd=project, capture_output=True, text=True, env=env).stdout
    env.pop("NO_COLOR")
    report = project / "report.txt"
    subprocess.run([sys.executable, "-m", "trainlint", "check", "--no-cache", "-o", str(report), "bad.py"],
                   cwd=project, env=env)
    assert "\x1b[" not in report.read_text() and "bad.py:2:10: TL104" in report.read_text()


def test_show_fixes_with_diff_lists_the_fixes_it_would_make(project):
    result = run_cli(["--diff", "--show-fixes", "bad.py"], project)
    assert result.exit_code == 1
    assert "Would fix 1 error:\n- bad.py:\n    1 × TL104 (dataloader-shallow-prefetch)\n" in result.output
    assert "Fixed" not in result.output
    assert (project / "bad.py").read_text() == BAD


def test_statistics_keep_the_names_in_one_column(project):
    (project / "mixed.py").write_text("from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8, shuffle=True, num_workers=2)\n")
    stats = run_cli(["--select", "TL104,TL105", "--statistics", "mixed.py"], project).output
    assert stats == "    1\tTL104\t[*] dataloader-shallow-prefetch\n    1\tTL105\t[ ] dataloader-ragged-last-batch\n"
    alone = run_cli(["--select", "TL105", "--statistics", "mixed.py"], project).output
    assert alone == "    1\tTL105\tdataloader-ragged-last-batch\n"  # nothing fixable: no markers at all


def test_top_level_help_lists_every_command_whole_and_says_check_is_the_default(project):
    out = CliRunner().invoke(cli, ["--help"], terminal_width=80).output
    assert "`trainlint [PATHS]` is `trainlint check [PATHS]`" in out
    commands = out.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in commands] == ["check", "clean", "review", "rule", "server", "verify"]
    assert not any(line.endswith("...") for line in commands)  # click cuts a long first sentence


def test_check_help_lists_every_option_once_in_a_named_section():
    import click

    from trainlint.cli import check

    text = CliRunner().invoke(cli, ["check", "--help"]).output
    titles = [line[:-1] for line in text.splitlines() if line and not line.startswith(" ") and line.endswith(":")]
    assert titles == ["Fixes", "Rule selection", "File selection", "Reporting", "Configuration and running"]
    flags = [p.opts[-1] for p in check.get_params(click.Context(check)) if isinstance(p, click.Option)]
    for flag in flags:
        assert len(re.findall(rf"(?m)^  (?:-\w, )?{re.escape(flag)}\b(?! ?-)", text)) == 1, flag


BASELINED = """import torch
from torch.utils.data import DataLoader


def main(ds, model, opt):
    for x in DataLoader(ds, batch_size=8):
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
"""


def test_baseline_with_fix_leaves_recorded_findings_alone(tmp_path):
    # The safe TL102 fix of a baselined finding rewrote line 6, and the baselined TL101 there
    # then counted as new: exit 1. Recorded findings are not fixed (as `# noqa` ones).
    (tmp_path / "train.py").write_text(BASELINED)
    assert run_cli(["--baseline", "b.json"], tmp_path).exit_code == 0
    for extra in (["--diff"], ["--fix"], ["--fix", "--unsafe-fixes"]):
        result = run_cli(["--baseline", "b.json", *extra], tmp_path)
        assert result.exit_code == 0 and "TL10" not in result.output, (extra, result.output)
    assert (tmp_path / "train.py").read_text() == BASELINED


def test_baseline_matches_a_recorded_finding_whose_line_a_fix_of_a_new_one_rewrote(tmp_path):
    # Only TL101 is recorded; TL102 is new and its fix adds pin_memory=True to TL101's line: the
    # TL101 finding is matched by the line as it was before the fix, not reported as new.
    (tmp_path / "train.py").write_text(BASELINED)
    assert run_cli(["--select", "TL101", "--baseline", "b.json"], tmp_path).exit_code == 0
    diff = run_cli(["--baseline", "b.json", "--diff"], tmp_path)
    assert "pin_memory=True" in diff.output and "TL101" not in diff.output
    fixed = run_cli(["--baseline", "b.json", "--fix"], tmp_path)
    assert fixed.exit_code == 0 and "TL101" not in fixed.output, fixed.output
    assert "DataLoader(ds, batch_size=8, pin_memory=True)" in (tmp_path / "train.py").read_text()
    # The baseline follows the line the fix rewrote: the next plain run, which reads the fixed
    # text, still knows the finding (it was "new" there, on every run after).
    entries = json.loads((tmp_path / "b.json").read_text())["findings"]
    assert [f["code"] for f in entries] == ["TL101"]
    again = run_cli(["--baseline", "b.json"], tmp_path)
    assert again.exit_code == 0 and "TL101" not in again.output, again.output
    assert json.loads((tmp_path / "b.json").read_text())["findings"][0]["fingerprint"] == entries[0]["fingerprint"]


def test_suppression_comment_warnings_on_stderr(tmp_path):
    """A file-level `# trainlint: noqa` after code hid the whole file's findings and `# noqa TL101`
    every rule's on its line, both silently: each is warned about (file:line) on standard error,
    on a run answered from the cache too; not with --silent nor --ignore-noqa."""
    (tmp_path / "eol.py").write_text(
        "from torch.utils.data import DataLoader\n"
        "def main(ds, model, val_ds):\n"
        "    dbg = DataLoader(ds, batch_size=8)  # trainlint: noqa\n"
        "    for x in DataLoader(val_ds, batch_size=64):\n"
        "        model(x.cuda()).sum().backward()\n"
        "    y = DataLoader(ds)  # noqa TL101\n")
    args = ["--isolated", "--select", "TL101", "--cache-dir", str(tmp_path / "cache"), "eol.py"]
    for _ in range(2):  # the second run reads the cache
        result = run_cli(args, tmp_path)
        assert result.exit_code == 1
        assert [line.split(" ")[0] for line in result.stdout.splitlines() if "TL101" in line] == [
            "eol.py:3:11:", "eol.py:4:14:"]
        assert "warning: Unexpected `# trainlint: noqa` directive at eol.py:3, after code" in result.stderr
        assert "warning: Invalid `# noqa` directive on eol.py:6: expected `:`" in result.stderr
    assert "warning" not in run_cli(args + ["--silent"], tmp_path).stderr
    assert "warning" not in run_cli(args + ["--ignore-noqa"], tmp_path).stderr
