"""Configuration: discovery (nearest file wins), validation errors, options reaching rules."""

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from _cli import run_cli
from trainlint.config import ConfigError, SettingsResolver, settings_from_file

LOADER = "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"




@pytest.mark.parametrize(
    "table,expected",
    [
        ("selec = ['TL1']", "unknown key `selec`; did you mean `select`?"),
        ("xyzzy = 1", "unknown key `xyzzy`; expected one of: exclude, extend,"),
        ("select = ['TL1O1']", "unknown rule code or prefix 'TL1O1'; did you mean `TL101`?"),
        ("[tool.trainlint.TL101]\nnum-worker = 4", "unknown option of TL101 (dataloader-no-workers); did you mean "
                                                   "`num-workers`?"),
        ("[tool.trainlint.TL1O1]\nnum-workers = 4", "unknown rule code or name; did you mean `TL101`?"),
        ("[tool.trainlint.tl101]\nnum-workers = 4", "`[tl101]`: unknown rule code or name; did you mean `TL101`?"),
        ("select = 'TL1'", "`select`: expected a list of rule codes"),
        ("select = ['TL999']", "unknown rule code or prefix 'TL999'"),
        ("ignore = ['tl1']", "unknown rule code or prefix 'tl1'; did you mean `TL1`?"),  # codes are upper case
        ("target-gpu = 'tpu'", "`target-gpu`: expected one of any"),
        ("output-format = 'jsn'", "`output-format`: expected one of azure, concise, full, github, gitlab, grouped, "
                                  "json, json-lines, junit, pylint, rdjson, rdjsonl, sarif, got str 'jsn'; did you mean `json`?"),
        ("[tool.trainlint.TL101]\nnum-workers = 'four'", "`TL101.num-workers`: expected an integer"),
        ("[tool.trainlint.TL101]\nlimit = 4", "unknown option of TL101 (dataloader-no-workers); its options: "
                                                "num-workers"),
        ("[tool.trainlint.TL999]\nx = 1", "unknown rule code or name"),
        ("per-file-ignores = { 'tests/*' = 'TL1' }", "expected a list of rule codes"),
        ("extend-per-file-ignores = { 'tests/*' = ['TL999'] }",
         "`extend-per-file-ignores.tests/*`: unknown rule code or prefix 'TL999'"),
        ("extend-per-file-ignores = ['tests/*']", "`extend-per-file-ignores`: expected a table of glob = [codes]"),
        ("line-length = '120'", "`line-length`: expected an integer from 1 to 320, got str '120'"),
        ("line-length = 0", "`line-length`: expected an integer from 1 to 320, got int 0"),
        ("line-length = true", "`line-length`: expected an integer from 1 to 320"),
        # An interval below 1 was accepted, and the fix wrote `if step % 0 == 0:` (ZeroDivisionError).
        ("[tool.trainlint.TL201]\nlog-every = 0", "`TL201.log-every`: expected an integer of at least 1, got int 0"),
        ("[tool.trainlint.TL202]\nlog-every = -5", "`TL202.log-every`: expected an integer of at least 1, got int -5"),
        ("[tool.trainlint.TL203]\nlog-every = 0", "`TL203.log-every`: expected an integer of at least 1"),
        ("[tool.trainlint.TL501]\nsave-every = 0", "`TL501.save-every`: expected an integer of at least 1"),
        # A negative worker count or prefetch factor, or a loss scale below 1, written by a fix,
        # makes DataLoader or GradScaler raise when the fixed script runs.
        ("[tool.trainlint.TL101]\nnum-workers = -2", "`TL101.num-workers`: expected an integer of at least 0, got int -2"),
        ("[tool.trainlint.TL104]\nmin-prefetch-factor = 0", "`TL104.min-prefetch-factor`: expected an integer of at least 1"),
        ("[tool.trainlint.TL403]\nmax-init-scale = 0.5", "`TL403.max-init-scale`: expected an integer or a number of at least 1"),
        # A boolean passed for a number (True is an int to Python), and TOML's inf and nan, were
        # accepted: the fix wrote `init_scale=True` or `init_scale=nan`.
        ("[tool.trainlint.TL403]\nmax-init-scale = true", "`TL403.max-init-scale`: expected an integer or a number, "
                                                          "got bool True"),
        ("[tool.trainlint.TL403]\nmax-init-scale = nan", "`TL403.max-init-scale`: expected a finite number, got float nan"),
        ("[tool.trainlint.TL403]\nmin-init-scale = inf", "`TL403.min-init-scale`: expected a finite number, got float inf"),
        # A list where a name is expected stopped the run with an internal error (unhashable list).
        ("output-format = []", "`output-format`: expected one of azure, concise"),
        ("target-gpu = ['ampere']", "`target-gpu`: expected one of any"),
        # Ruff's `lint` section was called an unknown rule (`[lint]`: unknown rule code or name).
        ("lint.select = ['TL1']", "`lint`: unknown setting; trainlint has no `lint` section (Ruff's): put `select` "
                                  "directly under [tool.trainlint]"),
        ("[tool.trainlint.lint]\nignore = ['TL1']\nper-file-ignores = {}",
         "`lint`: unknown setting; trainlint has no `lint` section (Ruff's): put `ignore`, `per-file-ignores` directly"),
    ],
)
def test_bad_config_exits_2_naming_file_and_key(tmp_path, table, expected):
    if not table.startswith("[tool"):
        table = "[tool.trainlint]\n" + table
    (tmp_path / "pyproject.toml").write_text(table + "\n")
    (tmp_path / "a.py").write_text(LOADER)
    result = run_cli(["a.py"], tmp_path)
    assert result.exit_code == 2
    assert "pyproject.toml" in result.output and expected in result.output


def test_lint_section_inline_and_in_trainlint_toml(tmp_path):
    """Ruff's `lint.` prefix, given inline or in trainlint.toml, names the key and where settings go
    (it was "`[lint]`: unknown rule code or name")."""
    (tmp_path / "a.py").write_text(LOADER)
    result = run_cli(["--config", "lint.select = ['TL2']", "a.py"], tmp_path)
    assert result.exit_code == 2
    assert "--config: invalid configuration: `lint`: unknown setting" in result.output
    assert "give `select` without the `lint.` prefix" in result.output
    (tmp_path / "trainlint.toml").write_text("[lint]\nselect = ['TL1']\n")
    result = run_cli(["a.py"], tmp_path)
    assert result.exit_code == 2
    assert "put `select` at the top level of trainlint.toml" in result.output, result.output


def test_invalid_toml(tmp_path):
    (tmp_path / "trainlint.toml").write_text("select = [\n")
    (tmp_path / "a.py").write_text(LOADER)
    result = run_cli(["a.py"], tmp_path)
    assert result.exit_code == 2 and "trainlint.toml: invalid TOML" in result.output


def test_trainlint_toml_with_settings_in_two_places(tmp_path):
    (tmp_path / "trainlint.toml").write_text("select = ['TL201']\n[tool.trainlint]\nselect = ['TL101']\n")
    (tmp_path / "a.py").write_text(LOADER)
    result = run_cli(["a.py"], tmp_path)
    assert result.exit_code == 2
    assert "settings both at the top level (select) and under [tool.trainlint]; use one" in result.output
    (tmp_path / "trainlint.toml").write_text("[tool.trainlint]\nselect = ['TL101']\n")  # one place: fine
    assert run_cli(["a.py"], tmp_path).exit_code == 1


def test_nearest_config_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\nignore = ['TL101']\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "trainlint.toml").write_text("select = ['TL101']\n")
    (tmp_path / "a.py").write_text(LOADER)
    (sub / "b.py").write_text(LOADER)
    result = run_cli(["."], tmp_path)
    assert "a.py" not in result.output
    assert os.path.join("sub", "b.py") + ":2:10: TL101" in result.output


def test_remembered_lookups_answer_as_fresh_ones_in_any_order(tmp_path):
    """The resolver remembers each folder's config on the way up; asking in any order (deepest
    first, a sibling after, a folder before its files) gives what a fresh resolver gives."""
    (tmp_path / "trainlint.toml").write_text("ignore = ['TL101']\n")
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (tmp_path / "a" / "b" / "trainlint.toml").write_text("select = ['TL101']\n")
    (tmp_path / "a" / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no table: skipped
    (tmp_path / "x").mkdir()
    folders = [deep, tmp_path / "a" / "b", tmp_path / "a", tmp_path, tmp_path / "x", deep / "nothing-here"]
    expected = {str(f): SettingsResolver().for_directory(str(f)).config_path for f in folders}
    assert expected[str(deep)] == expected[str(tmp_path / "a" / "b")] == str(tmp_path / "a" / "b" / "trainlint.toml")
    assert expected[str(tmp_path / "a")] == expected[str(tmp_path / "x")] == str(tmp_path / "trainlint.toml")
    for order in (folders, folders[::-1], folders[2:] + folders[:2]):
        resolver = SettingsResolver()
        for folder in order:
            assert resolver.for_directory(str(folder)).config_path == expected[str(folder)]
            assert resolver.for_path(str(folder / "f.py")).config_path == expected[str(folder)]


def test_pyproject_without_table_is_skipped(tmp_path):
    (tmp_path / "trainlint.toml").write_text("ignore = ['TL101']\n")
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (sub / "a.py").write_text(LOADER)
    assert run_cli(["."], tmp_path).exit_code == 0


def test_cli_overrides_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\nignore = ['TL101']\n")
    (tmp_path / "a.py").write_text(LOADER)
    assert run_cli(["a.py"], tmp_path).exit_code == 0
    assert run_cli(["--select", "TL101", "a.py"], tmp_path).exit_code == 1


def test_a_command_line_select_starts_afresh(tmp_path):
    """As Ruff's does: `--select` replaces the config's select and its extend-select (a rule the
    config adds is not shown when the command line asks for another); `--extend-select` adds."""
    settings = _write(tmp_path, "[tool.trainlint]\nextend-select = ['TL403']\nignore = ['TL105']\n")
    path = str(tmp_path / "x.py")
    chosen = SettingsResolver(config_path=settings, overrides={"select": ("TL1",)}).for_path(path).enabled_codes()
    assert "TL403" not in chosen and "TL101" in chosen and "TL105" not in chosen
    inline = SettingsResolver(config_path=settings, inline=("select = ['TL1']",)).for_path(path).enabled_codes()
    assert "TL403" not in inline and "TL101" in inline
    added = SettingsResolver(config_path=settings, overrides={"extend_select": ("TL404",)}).for_path(path)
    assert {"TL403", "TL404"} <= set(added.enabled_codes())


def test_explicit_config_path(tmp_path):
    (tmp_path / "custom.toml").write_text("[tool.trainlint]\nselect = ['TL2']\n")
    (tmp_path / "a.py").write_text(LOADER)
    assert run_cli(["--config", "custom.toml", "a.py"], tmp_path).exit_code == 0
    missing = run_cli(["--config", "nope.toml", "a.py"], tmp_path)
    assert missing.exit_code == 2 and "nope.toml" in missing.output


def test_explicit_config_file_globs_are_relative_to_the_current_folder(tmp_path):
    # As Ruff reads a file given with --config. They were relative to the file's folder, so
    # `--config ci/trainlint.toml` excluding "src/legacy" excluded ci/src/legacy: nothing.
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "trainlint.toml").write_text(
        'extend = "base.toml"\nextend-exclude = ["src/legacy"]\nper-file-ignores = { "tests/*" = ["TL1"] }\n')
    # The file it extends keeps its globs relative to its own folder (ci/): "gen/*" is ci/gen/*.
    (tmp_path / "ci" / "base.toml").write_text('extend-exclude = ["gen/*"]\n')
    for name in ("src/legacy/old.py", "tests/test_x.py", "src/new.py", "gen/made.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(LOADER)
    result = run_cli(["--config", "ci/trainlint.toml", "--select", "TL101", "-q"], tmp_path)
    assert sorted(line.split(":")[0] for line in result.output.splitlines()) == ["gen/made.py", "src/new.py"]
    shown = run_cli(["--config", "ci/trainlint.toml", "--show-settings", "src/new.py"], tmp_path).output
    assert f'root = "{tmp_path}"' in shown and f'"{tmp_path}/ci/gen/*"' in shown
    # A discovered file keeps its own folder as the root.
    (tmp_path / "ci" / "src" / "legacy").mkdir(parents=True)
    (tmp_path / "ci" / "src" / "legacy" / "x.py").write_text(LOADER)
    assert "TL101" not in run_cli(["--select", "TL101", "-q", "ci"], tmp_path).output


def test_per_file_ignores(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\nper-file-ignores = { 'scripts/*' = ['TL1'] }\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "a.py").write_text(LOADER)
    (tmp_path / "b.py").write_text(LOADER)
    out = run_cli(["."], tmp_path).output
    assert "b.py" in out and "scripts" not in out


def test_per_file_ignores_negated(tmp_path):
    # Ruff's `!`: the codes are ignored everywhere but in the files the glob matches.
    (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\nper-file-ignores = { '!src/*' = ['TL1'] }\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text(LOADER)
    (tmp_path / "b.py").write_text(LOADER)
    out = run_cli(["."], tmp_path).output
    assert "src/a.py" in out and "b.py" not in out


def test_extend_per_file_ignores_adds_to_per_file_ignores(tmp_path):
    # Ruff's key, and its command-line option: more per-file ignores on top of the configuration's.
    for name in ("scripts/a.py", "tests/b.py", "c.py", "d.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(LOADER)

    def flagged(*args):
        out = run_cli(["--no-cache", "--select", "TL101", *args, "."], tmp_path).output
        return sorted(line.split(":")[0] for line in out.splitlines() if ": TL101 " in line)

    (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\nper-file-ignores = { 'scripts/*' = ['TL1'] }\n"
                                             "extend-per-file-ignores = { 'tests/*' = ['TL101'] }\n")
    assert flagged() == ["c.py", "d.py"]
    assert flagged("--extend-per-file-ignores", "c.py:TL2,TL101") == ["d.py"]
    assert flagged("--extend-per-file-ignores", "c.py:TL101", "--extend-per-file-ignores", "!scripts/*:TL1") == []
    assert flagged("--config", "extend-per-file-ignores = { 'd.py' = ['TL101'] }") == ["c.py"]
    # Through `extend` too (per-file ignores add up there whichever key wrote them).
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "e.py").write_text(LOADER)
    (tmp_path / "sub" / "trainlint.toml").write_text("extend = '../pyproject.toml'\n"
                                                     "extend-per-file-ignores = { 'e.py' = ['TL1'] }\n")
    assert flagged() == ["c.py", "d.py"]


@pytest.mark.parametrize("value,message", [
    ("tests/*", "'tests/*': expected GLOB:CODES"),
    ("tests/*:", "'tests/*:': expected GLOB:CODES"),
    (":TL101", "':TL101': expected GLOB:CODES"),
    ("tests/*:tl101", "'tests/*:tl101': unknown rule code or prefix 'tl101'; did you mean `TL101`?"),
])
def test_extend_per_file_ignores_option_is_checked(tmp_path, value, message):
    result = run_cli(["--extend-per-file-ignores", value, "."], tmp_path)
    assert result.exit_code == 2 and "Invalid value for '--extend-per-file-ignores'" in result.output
    assert message in result.output


def test_rule_option_reaches_the_fix(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.trainlint.TL101]\nnum-workers = 6\n")
    (tmp_path / "a.py").write_text(LOADER)
    run_cli(["--fix", "--unsafe-fixes", "--select", "TL101", "a.py"], tmp_path)
    assert "DataLoader(ds, num_workers=6)" in (tmp_path / "a.py").read_text()


def test_off_by_default_rules_need_select(tmp_path):
    settings = settings_from_file(_write(tmp_path, "[tool.trainlint]\nselect = ['ALL']\n"))
    assert "TL101" in settings.enabled_codes()
    resolver = SettingsResolver(overrides={"select": ("TL101",), "ignore": ("TL1",)})
    # A more specific select beats a broader ignore.
    assert resolver.for_path(str(tmp_path / "x.py")).enabled_codes() == ["TL101"]
    # A prefix selects the rules that are on by default; an off-by-default one takes its code or ALL.
    prefix = SettingsResolver(overrides={"select": ("TL4",)}).for_path(str(tmp_path / "x.py")).enabled_codes()
    assert "TL401" in prefix and "TL403" not in prefix and "TL404" not in prefix
    exact = SettingsResolver(overrides={"select": ("TL4", "TL403")}).for_path(str(tmp_path / "x.py")).enabled_codes()
    assert "TL403" in exact and "TL404" not in exact
    assert {"TL403", "TL404"} <= set(settings.enabled_codes())


def test_interval_names_config(tmp_path):
    code = ("for step, (x, y) in enumerate(loader):\n    loss = model(x, y)\n    loss.backward()\n"
            "    opt.step()\n    if report_ok:\n        print(loss.item())\n")
    (tmp_path / "a.py").write_text(code)
    assert run_cli(["--select", "TL201", "a.py"], tmp_path).exit_code == 1
    (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\ninterval-names = ['report_ok']\n")
    assert run_cli(["--select", "TL201", "a.py"], tmp_path).exit_code == 0


def _write(tmp_path, text):
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    return str(path)


def test_config_error_is_an_exception_type(tmp_path):
    with pytest.raises(ConfigError):
        settings_from_file(_write(tmp_path, "[tool.trainlint]\nfoo = 1\n"))


# -- extend: one configuration built on another (monorepos) ---------------------------------

def _put(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_extend_inherits_and_overrides(tmp_path):
    _put(tmp_path / "pyproject.toml", '[tool.trainlint]\nextend-select = ["TL403"]\nignore = ["TL105"]\n'
           'target-gpu = "volta"\ninterval-names = ["is_log"]\n[tool.trainlint.TL101]\nnum-workers = 4\n'
           '[tool.trainlint.TL104]\nmin-prefetch-factor = 2\n')
    child = _put(tmp_path / "proj" / "trainlint.toml", 'extend = "../pyproject.toml"\ntarget-gpu = "hopper"\n'
                   'ignore = ["TL106"]\ninterval-names = ["is_eval"]\n[TL101]\nnum-workers = 2\n')
    settings = settings_from_file(str(child))
    assert settings.target_gpu == "hopper"  # a value of its own replaces the base's
    assert settings.ignore == ("TL105", "TL106") and settings.interval_names == ("is_log", "is_eval")  # lists add up
    assert "TL403" in settings.enabled_codes() and "TL105" not in settings.enabled_codes()
    assert settings.options_for("TL101")["num-workers"] == 2 and settings.options_for("TL104")["min-prefetch-factor"] == 2
    assert settings.root == str(tmp_path / "proj")


def test_a_select_of_its_own_starts_the_rule_choice_over(tmp_path):
    _put(tmp_path / "pyproject.toml", '[tool.trainlint]\nextend-select = ["TL403"]\nignore = ["TL101"]\n')
    child = _put(tmp_path / "proj" / "pyproject.toml", '[tool.trainlint]\nextend = "../pyproject.toml"\nselect = ["TL1"]\n')
    codes = settings_from_file(str(child)).enabled_codes()
    assert "TL101" in codes and "TL403" not in codes and all(c.startswith("TL1") for c in codes)


def test_extended_globs_keep_their_own_folder(tmp_path):
    # The base's path globs are relative to the base's folder; the child's to its own; bare names anywhere.
    _put(tmp_path / "pyproject.toml", '[tool.trainlint]\nextend-exclude = ["proj/legacy", "scratch"]\n'
           'per-file-ignores = { "proj/tests/*" = ["TL1"] }\n')
    _put(tmp_path / "proj" / "pyproject.toml", '[tool.trainlint]\nextend = "../pyproject.toml"\nextend-exclude = ["gen"]\n')
    for name in ("train.py", "legacy/old.py", "gen/auto.py", "deep/scratch/x.py", "tests/test_x.py"):
        _put(tmp_path / "proj" / name, "from torch.utils.data import DataLoader\nDataLoader(ds)\n")
    shown = run_cli(["--show-files", "--no-cache"], tmp_path / "proj").output.split()
    checked = run_cli(["check", "--no-cache", "--output-format", "concise"], tmp_path / "proj").output
    assert sorted(shown) == ["tests/test_x.py", "train.py"]
    settings_out = run_cli(["--show-settings", "train.py"], tmp_path / "proj").output
    assert f'extends = ["{tmp_path / "pyproject.toml"}"]' in settings_out
    assert "train.py:2:1: TL101" in checked and "tests/test_x.py" not in checked


@pytest.mark.parametrize("child,message", [
    ('extend = "missing.toml"\n', "no such configuration file"),
    ('extend = 3\n', "the path of another configuration file"),
    ('extend = "other/trainlint.toml"\n', "a cycle of configuration files"),
])
def test_extend_errors_name_the_file(tmp_path, child, message):
    _put(tmp_path / "other" / "trainlint.toml", 'extend = "../trainlint.toml"\n')
    path = _put(tmp_path / "trainlint.toml", child)
    with pytest.raises(ConfigError) as exc:
        settings_from_file(str(path))
    assert "trainlint.toml: invalid configuration: `extend`" in str(exc.value) and message in str(exc.value)


def test_an_error_in_the_extended_file_names_that_file(tmp_path):
    _put(tmp_path / "base.toml", 'select = ["TL999"]\n')
    path = _put(tmp_path / "proj" / "trainlint.toml", 'extend = "../base.toml"\n')
    with pytest.raises(ConfigError) as exc:
        settings_from_file(str(path))
    assert str(exc.value).startswith(str(tmp_path / "base.toml") + ": invalid configuration: `select`")


def _dotted_tree(tmp_path):
    for name in ("legacy/a.py", "nested/b.py", "c.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(LOADER)


def _flagged(tmp_path, *args, cwd=None):
    out = run_cli(["--no-cache", "--select", "TL101", *args], cwd or tmp_path).output
    return sorted(line.split(":")[0] for line in out.splitlines() if "TL101" in line)


@pytest.mark.parametrize("table", [
    "extend-exclude = ['./legacy']",
    "extend-exclude = ['./legacy/']",
    "per-file-ignores = { './legacy/*' = ['TL1'] }",
    "extend-exclude = ['sub/../legacy']",
])
def test_globs_with_dot_segments_are_normalised(tmp_path, table):
    """A glob starting at `./` (or holding `..`) was matched as written against paths that never
    have such segments: it matched nothing, silently. Now `./legacy` is the root's `legacy`, as in Ruff."""
    _dotted_tree(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\n" + table + "\n")
    assert _flagged(tmp_path, ".") == ["c.py", "nested/b.py"]


def test_dotdot_glob_in_a_nested_config(tmp_path):
    """`../x` in a config one folder down points back into the tree being checked."""
    _dotted_tree(tmp_path)
    (tmp_path / "nested" / "pyproject.toml").write_text("[tool.trainlint]\nper-file-ignores = { '../nested/*' = ['TL1'] }\n")
    assert _flagged(tmp_path, ".") == ["c.py", "legacy/a.py"]


def test_command_line_globs_with_dot_segments(tmp_path):
    """--extend-exclude ./legacy and --extend-per-file-ignores './nested/*:TL1' matched nothing;
    they are read from the current folder, as Ruff reads command-line globs."""
    _dotted_tree(tmp_path)
    assert _flagged(tmp_path, "--extend-exclude", "./legacy", ".") == ["c.py", "nested/b.py"]
    assert _flagged(tmp_path, "--extend-per-file-ignores", "./nested/*:TL1", ".") == ["c.py", "legacy/a.py"]
    assert _flagged(tmp_path, "--extend-per-file-ignores", "!./nested/*:TL1", ".") == ["nested/b.py"]
    # From a subfolder, `../legacy` names the folder beside it.
    assert _flagged(tmp_path, "--extend-exclude", "../legacy", "..", cwd=tmp_path / "nested") == [
        "../c.py", "../nested/b.py"]


def test_rule_options_are_checked_together_as_a_run_reads_them(tmp_path):
    # `min-init-scale` above `max-init-scale` was accepted: every scaler was reported ("start
    # within 8192..1024"), also one at 8192, and fixed to a value below the range. Checked after
    # `extend` and --config merged their values, so a child may lower both of its base's.
    _put(tmp_path / "pyproject.toml", "[tool.trainlint.TL403]\nmin-init-scale = 8192\n")
    _put(tmp_path / "a" / "trainlint.toml", 'extend = "../pyproject.toml"\n[TL403]\nmax-init-scale = 8192.5\n')
    assert settings_from_file(str(tmp_path / "a" / "trainlint.toml")).options_for("TL403")["min-init-scale"] == 8192
    bad = _put(tmp_path / "b" / "trainlint.toml", 'extend = "../pyproject.toml"\n[TL403]\nmax-init-scale = 2048\n')
    with pytest.raises(ConfigError, match="`min-init-scale` \\(8192\\) is above `max-init-scale` \\(2048\\)"):
        settings_from_file(str(bad))
    lowered = _put(tmp_path / "c" / "trainlint.toml",
                   'extend = "../pyproject.toml"\n[TL403]\nmin-init-scale = 512\nmax-init-scale = 2048\n')
    assert settings_from_file(str(lowered)).options_for("TL403")["max-init-scale"] == 2048
    (tmp_path / "a" / "t.py").write_text(LOADER)
    result = run_cli(["check", "--config", "TL403.max-init-scale = 4096", "t.py"], tmp_path / "a")
    assert result.exit_code == 2 and "--config: invalid configuration: `TL403`: `min-init-scale` (8192) is above " \
                                      "`max-init-scale` (4096)" in result.output, result.output


_KEYS = ["select", "ignore", "extend-select", "fixable", "unfixable", "exclude", "per-file-ignores", "line-length",
         "target-torch", "target-gpu", "fix", "unsafe-fixes", "output-format", "interval-names", "lint", "TL101",
         "TL403", "TL501", "x"]
_VALUES = st.recursive(
    st.booleans() | st.integers(-3, 400) | st.floats() | st.text(max_size=5)
    | st.sampled_from(["TL101", "TL1", "ALL", "ampere", "json", "2.1", "tests/*"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from([*_KEYS, "num-workers", "min-init-scale", "max-init-scale", "*.py"]), inner,
                      max_size=3),
    max_leaves=5)


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if value != value else ("inf" if value == float("inf") else "-inf" if value == float("-inf")
                                             else repr(value))
    if isinstance(value, (int, str)):
        return json.dumps(value) if isinstance(value, str) else str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"


@settings(max_examples=int(os.environ.get("TRAINLINT_PROPERTY_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=4))
def test_any_configuration_is_read_or_refused_with_a_config_error(tmp_path, table):
    # Generated tables of every key with values of every TOML type: each is read, or refused with
    # a ConfigError naming the file; a list where a name was wanted (`output-format = []`) was a
    # TypeError, which the CLI reports as an internal error.
    path = tmp_path / "trainlint.toml"
    path.write_text("".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in table.items()))
    try:
        settings_from_file(str(path))
    except ConfigError as exc:
        assert str(exc).startswith(str(path)), exc
