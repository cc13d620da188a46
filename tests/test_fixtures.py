"""The realistic scripts in fixtures/: their findings and fixed output are checked against the
snapshots beside them (<name>.expected.json, <name>.fixed), and both versions must run.

Some scripts are also checked under other settings (VARIANTS): their snapshots for a variant are
<name><suffix>.expected.json and <name><suffix>.fixed, and each fixed script must still run.

Set TRAINLINT_UPDATE_FIXTURES=1 to rewrite the snapshots after an intended change; review the diff.
"""

import glob
import json
import os
import subprocess
import sys

import pytest

from trainlint.api import fix_source, lint_source
from trainlint.config import Settings
from trainlint.registry import all_rules

from _paths import ROOT

FIXTURES = os.path.join(ROOT, "fixtures")
# Every script with a findings snapshot beside it, in fixtures/ and its family folders (not verify/,
# whose scripts are the verifier's end-to-end cases).
SCRIPTS = sorted(
    os.path.relpath(p, FIXTURES)
    for p in glob.glob(os.path.join(FIXTURES, "**", "*.py"), recursive=True)
    if os.path.exists(p[:-3] + ".expected.json")
)
UPDATE = os.environ.get("TRAINLINT_UPDATE_FIXTURES") == "1"
# Scripts checked again under other settings, by snapshot suffix:
# - the oldest PyTorch the code must run on (`target-torch`): rules whose finding does not exist there
#   are off, and fixes write only what that release has (the fp16 recipe of torch 1.13: no
#   torch.amp.GradScaler, no is_bf16_supported(including_emulation=), zero_grad keeps grads);
# - `select = ["ALL"]`: the rules that are off by default (TL403, TL404), on realistic code;
# - `target-gpu = "ampere"`: TL402 writes plain bfloat16 and drops the scaler.
VARIANTS = {
    "amp/fp16_finetune.py": {".torch1.13": {"target_torch": "1.13"}, ".torch2.2": {"target_torch": "2.2"},
                             ".all": {"select": ("ALL",)}, ".ampere": {"target_gpu": "ampere"}},
    "image_classifier.py": {".all": {"select": ("ALL",)}},
    "amp/named_settings_train.py": {".all": {"select": ("ALL",)}},
    "amp/partial_autocast_train.py": {".all": {"select": ("ALL",)}},
    "amp/guarded_torch_import_train.py": {".all": {"select": ("ALL",)}},
}
# (script, snapshot suffix, Settings fields)
CASES = [(name, "", {}) for name in SCRIPTS] + [
    (name, suffix, fields) for name, variants in VARIANTS.items() for suffix, fields in variants.items()]
CASE_IDS = [name + suffix for name, suffix, _fields in CASES]


def _findings(name, fields):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as fh:
        text = fh.read()
    diags = lint_source(text, path=name, settings=Settings(**fields))
    return text, [
        {"code": d.code, "row": d.start.row, "column": d.start.column, "end_row": d.end.row,
         "end_column": d.end.column, "fix": d.fix.applicability.value if d.fix and d.fix.edits else None}
        for d in diags
    ]


def _snapshot(path, actual):
    if UPDATE:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(actual)
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def test_there_are_realistic_fixtures():
    assert len(SCRIPTS) >= 4
    assert "clean_train.py" in SCRIPTS


def test_every_rule_shows_on_a_realistic_fixture():
    """Each rule's finding appears in at least one snapshot: rule cases alone do not show a rule on
    the code it is meant for."""
    shown = set()
    for path in glob.glob(os.path.join(FIXTURES, "**", "*.expected.json"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            shown |= {finding["code"] for finding in json.load(fh)}
    assert {rule.code for rule in all_rules() if rule.code.startswith("TL")} - shown == set()


@pytest.mark.parametrize(("name", "suffix", "fields"), CASES, ids=CASE_IDS)
def test_findings_match_snapshot(name, suffix, fields):
    _, found = _findings(name, fields)
    expected = json.loads(_snapshot(os.path.join(FIXTURES, name[:-3] + suffix + ".expected.json"),
                                    json.dumps(found, indent=1) + "\n"))
    assert found == expected
    if os.path.basename(name).startswith("clean") and not fields:
        assert found == []
    else:
        assert found, f"{name} shows no finding"


@pytest.mark.parametrize(("name", "suffix", "fields"), CASES, ids=CASE_IDS)
def test_fixed_output_matches_snapshot(name, suffix, fields):
    text, _ = _findings(name, fields)
    settings = Settings(**fields)
    fixed = fix_source(text, path=name, settings=settings, unsafe_fixes=True)
    expected = _snapshot(os.path.join(FIXTURES, name[:-3] + suffix + ".fixed"), fixed)
    assert fixed == expected
    compile(fixed, name, "exec")
    assert fix_source(fixed, path=name, settings=settings, unsafe_fixes=True) == fixed


# Scripts that run as plain `python script.py`: all but those that need a process group (they run
# under torchrun in tests/test_distributed_rules.py) and one that reads an image folder it is given.
NOT_STANDALONE = {"dataloader/image_folder_train.py", "distributed/accelerate_accumulation.py",
                  "distributed/ddp_accumulation.py", "distributed/ddp_accumulation_nested.py",
                  "distributed/ddp_late_no_sync.py", "distributed/ddp_micro_step_helper.py",
                  "distributed/fabric_accumulation.py", "distributed/fsdp2_trainer_class.py"}
RUNNABLE = [s for s in SCRIPTS if not os.path.basename(s).startswith("clean") and s not in NOT_STANDALONE]
# Arguments that keep a run short and its files in the test's folder ({tmp}).
ARGS = {"image_classifier.py": ["--epochs", "1"], "checkpoint/checkpoint_every_step.py": ["--out", "{tmp}"],
        "checkpoint/archived_run_checkpoints.py": ["--out", "{tmp}"],
        "checkpoint/preemptible_stream_train.py": ["--out", "{tmp}"],
        "checkpoint/callback_trainer.py": ["--out", "{tmp}"],
        "checkpoint/callback_list_trainer.py": ["--out", "{tmp}"],
        "checkpoint/final_checkpoint_train.py": ["--out", "{tmp}"],
        "compute/vit_compile_ema_pretrain.py": ["--out", "{tmp}"],
        "checkpoint/char_lm_init_snapshot.py": ["--out", "{tmp}"]}


# The framework each script trains with, besides torch (the dev extra installs them).
FRAMEWORK = {"frameworks/lightning_classifier.py": "pytorch_lightning",
             "frameworks/lightning_tagger_logging.py": "pytorch_lightning",
             "frameworks/hf_trainer_regression.py": "transformers",
             "frameworks/accelerate_regression.py": "accelerate",
             "dataloader/handed_tokenizer_train.py": "transformers"}


@pytest.mark.parametrize("name", RUNNABLE)
def test_original_and_fixed_scripts_run(name, tmp_path):
    pytest.importorskip("torch")
    if name in FRAMEWORK:
        pytest.importorskip(FRAMEWORK[name])
    original = os.path.join(FIXTURES, name)
    scripts = [original]
    for suffix in ["", *VARIANTS.get(name, {})]:  # each fixed version
        fixed = tmp_path / f"fixed{suffix}.py"
        with open(os.path.join(FIXTURES, name[:-3] + suffix + ".fixed"), encoding="utf-8") as fh:
            fixed.write_text(fh.read(), encoding="utf-8")
        scripts.append(str(fixed))
    # HF_HUB_OFFLINE: the transformers script downloads nothing, and CI may reach only package registries.
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    for script in scripts:
        args = [sys.executable, script] + [a.format(tmp=tmp_path) for a in ARGS.get(name, [])]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env,
                              cwd=os.path.dirname(original))
        assert proc.returncode == 0, proc.stderr[-2000:]
