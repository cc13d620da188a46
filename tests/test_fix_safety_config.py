"""Which fixes --fix may write, per project (Ruff's keys): `fixable`/`unfixable` and
`extend-safe-fixes`/`extend-unsafe-fixes`, in the configuration and on the command line; every
output (the `[*]` marks, JSON applicability, what --fix writes) follows the same classification."""

import json
import os

import pytest
from click.testing import CliRunner

from trainlint.cli import cli
from trainlint.config import ConfigError, settings_from_file
from trainlint.diagnostics import Applicability

# TL102 (pin_memory) has a safe fix, TL101 (num_workers) an unsafe one, TL303 (DataParallel) a suggestion.
# (The training runs under a `__main__` guard: TL101 adds no workers to a script that trains unguarded.)
SOURCE = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "model = torch.nn.DataParallel(net)\n"
    "loader = DataLoader(ds, batch_size=4)\n"
    "def train():\n"
    "    for x in loader:\n"
    "        x = x.cuda(non_blocking=True)\n"
    "        model(x).backward()\n"
    "        opt.step()\n"
    "if __name__ == '__main__':\n"
    "    train()\n"
)


def run(tmp_path, config: str, *args):
    (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\n" + config)
    (tmp_path / "train.py").write_text(SOURCE)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(cli, ["check", "--no-cache", *args, "train.py"], catch_exceptions=False)
    finally:
        os.chdir(old)
    return result, (tmp_path / "train.py").read_text()


def applicabilities(tmp_path, config: str, *args) -> dict[str, str]:
    result, _ = run(tmp_path, config, "--output-format", "json", *args)
    return {d["code"]: d["fix"]["applicability"] for d in json.loads(result.output) if d["fix"]}


def test_rules_as_they_come(tmp_path):
    assert applicabilities(tmp_path, "") == {"TL101": "unsafe", "TL102": "safe", "TL303": "display-only"}
    _, text = run(tmp_path, "", "--fix")
    assert "pin_memory=True" in text and "num_workers" not in text


def test_extend_safe_fixes_lets_plain_fix_write_an_unsafe_fix(tmp_path):
    assert applicabilities(tmp_path, 'extend-safe-fixes = ["TL101"]')["TL101"] == "safe"
    result, text = run(tmp_path, 'extend-safe-fixes = ["TL1"]', "--fix")
    assert "num_workers=" in text and "pin_memory=True" in text


def test_extend_unsafe_fixes_holds_a_safe_fix_back(tmp_path):
    result, text = run(tmp_path, 'extend-unsafe-fixes = ["TL102"]', "--fix")
    assert "pin_memory" not in text
    assert "TL102 [*]" not in result.output  # no longer offered as fixable by --fix
    _, text = run(tmp_path, 'extend-unsafe-fixes = ["TL102"]', "--fix", "--unsafe-fixes")
    assert "pin_memory=True" in text


def test_in_both_lists_a_fix_is_unsafe(tmp_path):
    config = 'extend-safe-fixes = ["TL1"]\nextend-unsafe-fixes = ["TL101"]'
    assert applicabilities(tmp_path, config) == {"TL101": "unsafe", "TL102": "safe", "TL303": "display-only"}


def test_unfixable_fixes_are_only_shown(tmp_path):
    assert applicabilities(tmp_path, 'unfixable = ["TL102"]')["TL102"] == "display-only"
    result, text = run(tmp_path, 'unfixable = ["TL1"]', "--fix", "--unsafe-fixes")
    assert text == SOURCE
    assert "TL102 " in result.output and "TL102 [*]" not in result.output


def test_fixable_limits_fixes_to_the_listed_rules(tmp_path):
    _, text = run(tmp_path, 'fixable = ["TL101"]', "--fix", "--unsafe-fixes")
    assert "num_workers=" in text and "pin_memory" not in text


def test_extend_fixable_adds_to_fixable(tmp_path):
    # As Ruff's `extend-fixable`: on top of `fixable`, as extend-select is on top of select.
    _, text = run(tmp_path, 'fixable = ["TL101"]\nextend-fixable = ["TL102"]', "--fix", "--unsafe-fixes")
    assert "num_workers=" in text and "pin_memory=True" in text
    _, text = run(tmp_path, 'fixable = ["TL101"]', "--fix", "--unsafe-fixes", "--extend-fixable", "TL102")
    assert "num_workers=" in text and "pin_memory=True" in text
    # `unfixable` still wins over it.
    _, text = run(tmp_path, 'fixable = ["TL101"]\nunfixable = ["TL102"]', "--fix", "--unsafe-fixes",
                  "--extend-fixable", "TL102")
    assert "num_workers=" in text and "pin_memory" not in text


def test_extend_fixable_through_extend(tmp_path):
    (tmp_path / "base.toml").write_text('fixable = ["TL101"]\nextend-fixable = ["TL102"]\n')
    (tmp_path / "child.toml").write_text('extend = "base.toml"\n')
    inherited = settings_from_file(str(tmp_path / "child.toml"))
    assert inherited.fix_applicability("TL102", Applicability.SAFE) is Applicability.SAFE
    # A `fixable` of its own starts the choice over, as a `select` of its own drops extend-select.
    (tmp_path / "child.toml").write_text('extend = "base.toml"\nfixable = ["TL101"]\n')
    own = settings_from_file(str(tmp_path / "child.toml"))
    assert own.extend_fixable == ()
    assert own.fix_applicability("TL102", Applicability.SAFE) is Applicability.DISPLAY_ONLY


def test_a_suggestion_is_never_promoted(tmp_path):
    _, text = run(tmp_path, 'extend-safe-fixes = ["ALL"]', "--fix", "--unsafe-fixes")
    assert "torch.nn.DataParallel(net)" in text


def test_command_line_fixable_and_unfixable(tmp_path):
    _, text = run(tmp_path, "", "--fix", "--unsafe-fixes", "--unfixable", "TL102")
    assert "num_workers=" in text and "pin_memory" not in text
    # --unfixable adds to the configuration's list.
    _, text = run(tmp_path, 'unfixable = ["TL101"]', "--fix", "--unsafe-fixes", "--unfixable", "TL102")
    assert text == SOURCE
    _, text = run(tmp_path, "", "--fix", "--unsafe-fixes", "--fixable", "TL102")
    assert "pin_memory=True" in text and "num_workers" not in text


def test_results_cache_keeps_configurations_apart(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    cache = str(tmp_path / "cache")
    outputs = []
    for config in ("", 'unfixable = ["TL102"]', ""):
        (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\n" + config)
        old = os.getcwd()
        os.chdir(tmp_path)
        try:
            outputs.append(CliRunner().invoke(cli, ["check", "--cache-dir", cache, "train.py"]).output)
        finally:
            os.chdir(old)
    assert "TL102 [*]" in outputs[0] and "TL102 [*]" not in outputs[1] and outputs[2] == outputs[0]


@pytest.mark.parametrize("key,value,message", [
    ("unfixable", '["TL999"]', "unknown rule code or prefix 'TL999'"),
    ("extend-safe-fixes", '"TL101"', "a list of rule codes or prefixes"),
    ("extend-fixable", '["TL999"]', "unknown rule code or prefix 'TL999'"),
])
def test_bad_values_name_the_file_and_key(tmp_path, key, value, message):
    path = tmp_path / "trainlint.toml"
    path.write_text(f"{key} = {value}\n")
    with pytest.raises(ConfigError) as exc:
        settings_from_file(str(path))
    assert str(path) in str(exc.value) and f"`{key}`" in str(exc.value) and message in str(exc.value)


def test_settings_classify_by_prefix(tmp_path):
    path = tmp_path / "trainlint.toml"
    path.write_text('extend-safe-fixes = ["TL1"]\nunfixable = ["TL105"]\n')
    settings = settings_from_file(str(path))
    assert settings.fix_applicability("TL101", Applicability.UNSAFE) is Applicability.SAFE
    assert settings.fix_applicability("TL105", Applicability.UNSAFE) is Applicability.DISPLAY_ONLY
    assert settings.fix_applicability("TL201", Applicability.UNSAFE) is Applicability.UNSAFE
