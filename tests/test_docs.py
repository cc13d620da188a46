"""README's rule table and docs/rules.md are generated from the registry and must be fresh."""

import os

from _paths import ROOT
from trainlint.ruledocs import rules_markdown, updated_readme


def test_readme_rule_table_is_fresh():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    assert updated_readme(text) == text, "README's rule table is stale: run `python -m trainlint.ruledocs`"


def test_rules_doc_is_fresh():
    with open(os.path.join(ROOT, "docs", "rules.md"), encoding="utf-8") as fh:
        assert fh.read() == rules_markdown(), "docs/rules.md is stale: run `python -m trainlint.ruledocs`"


def test_readme_states_the_two_setup_commands():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    assert "pip install . && trainlint fixtures/" in text
    assert 'pip install torch==2.13.0 && pip install -e ".[dev]" && python -m pytest -q' in text
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as fh:
        ci = fh.read()
    assert 'pip install -q torch==2.13.0 && pip install -q -e ".[dev]"' in ci and "python -m pytest -q" in ci


def test_readme_python_api_example_runs(tmp_path, monkeypatch):
    """The `### From Python` example runs as written, on a script with findings."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    section = text[text.index("### From Python"):]
    code = section[section.index("```python\n") + len("```python\n"):section.index("\n```", section.index("```python"))]
    (tmp_path / "train.py").write_text("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\n",
                                       encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    printed = []
    exec(compile(code, "README.md", "exec"), {"print": lambda *a, **k: printed.append(" ".join(map(str, a)))})
    assert any(line.startswith("train.py:2:10 TL104 ") and line.endswith("(fix: safe)") for line in printed), printed
    assert printed[-1] == "findings: 1 files not checked: 0", printed
