"""action.yml: its structure, and its steps run the way a runner runs them, against a pull
request in a temporary repository and the local GitHub API stand-in."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from _fake_github import FakeGitHub
from _integration_support import REPO_ROOT, commit_all, git, init_repo

yaml = pytest.importorskip("yaml", reason="PyYAML (a pre-commit dependency) reads action.yml")

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _action() -> dict:
    return yaml.safe_load((REPO_ROOT / "action.yml").read_text())


def test_action_is_a_composite_that_reviews():
    action = _action()
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    assert {"github-token", "base", "post", "fail-on-findings"} <= set(inputs)
    for step in action["runs"]["steps"]:
        if "run" in step:
            assert step["shell"] == "bash"
            # Expressions go through env:, never into the script text (script injection).
            assert "${{" not in step["run"], step["name"]
        for value in (step.get("env") or {}).values():
            for expr in EXPR.findall(str(value)):
                for name in re.findall(r"inputs\.([\w-]+)", expr):
                    assert name in inputs, f"step {step['name']!r} uses undeclared input {name!r}"
    assert any("trainlint-venv/bin/trainlint" in s.get("run", "") and "review" in s.get("run", "")
               for s in action["runs"]["steps"])


def _evaluate(expr: str, context: dict) -> str:
    """The few expression forms action.yml uses: dotted lookups and `a || b`."""
    for alternative in (part.strip() for part in expr.split("||")):
        value = context
        for key in alternative.split("."):
            value = value.get(key, "") if isinstance(value, dict) else ""
        if value:
            return str(value)
    return ""


@pytest.mark.slow
def test_action_steps_post_a_review(tmp_path):
    pytest.importorskip("trainlint.api", reason="the engine (trainlint.api) is not on this branch yet")
    root = init_repo(tmp_path / "proj")
    (root / "train.py").write_text("from torch.utils.data import DataLoader\n\nx = 1\n")
    base = commit_all(root, "base")
    git(root, "checkout", "-q", "-b", "feature")
    (root / "train.py").write_text("from torch.utils.data import DataLoader\n\nloader = DataLoader(ds)\n")
    head = commit_all(root, "feature")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 3, "base": {"sha": base}, "head": {"sha": head}}}))
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    # The runner checks the action out on its own; a copy also keeps pip's in-tree build/ out of
    # this checkout.
    action_path = tmp_path / "action"
    shutil.copytree(REPO_ROOT, action_path, ignore=shutil.ignore_patterns(
        ".git", "build", "*.egg-info", ".venv", "__pycache__", ".pytest_cache", ".hypothesis"))

    action = _action()
    inputs = {k: v.get("default", "") for k, v in action["inputs"].items()}
    with FakeGitHub("ghs_abc", "octo/proj", 3, head, {"train.py": {1, 2, 3}}) as gh:
        context = {
            "inputs": inputs,
            "github": {"token": "ghs_abc", "action_path": str(action_path),
                       "event": {"pull_request": {"head": {"sha": head}}}},
        }
        inputs["github-token"] = _evaluate("github.token", context)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update({
            "RUNNER_TEMP": str(runner_temp), "GITHUB_EVENT_PATH": str(event), "GITHUB_REPOSITORY": "octo/proj",
            "GITHUB_API_URL": gh.url, "PATH": os.path.dirname(sys.executable) + os.pathsep + env["PATH"],
        })
        for step in action["runs"]["steps"]:
            if "run" not in step:
                continue  # actions/setup-python: this interpreter stands in for it
            step_env = {**env, **{k: EXPR.sub(lambda m: _evaluate(m.group(1), context), str(v))
                                  for k, v in (step.get("env") or {}).items()}}
            out = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=root, env=step_env,
                                 capture_output=True, text=True, timeout=600)
            assert out.returncode == 0, f"{step['name']}: {out.stdout}{out.stderr}"
        assert gh.rejections == [] and len(gh.reviews) == 1
        (comment,) = [c for c in gh.reviews[0]["comments"] if "TL101" in c["body"]]
        assert comment["path"] == "train.py" and comment["line"] == 3
