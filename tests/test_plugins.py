"""Third-party rule packs load through the `trainlint.rules` entry-point group, like the built-in pack."""

import os
import subprocess
import sys

from _paths import ROOT

PACK = '''
import libcst as cst
from trainlint.rule import Invalid, Rule, Valid


class NoPrint(Rule):
    code = "XP001"
    name = "no-print"
    summary = "print call"
    docs = ""
    source = "§0"
    triggers = ("print",)

    def visit_Call(self, node):
        if self.ctx.names.qualified(node.func) == "builtins.print":
            self.report(node, "use logging")


RULES = [NoPrint]
'''


def test_entry_point_pack_is_loaded(tmp_path):
    site = tmp_path / "site"
    (site / "mypack").mkdir(parents=True)
    (site / "mypack" / "__init__.py").write_text(PACK)
    info = site / "mypack-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mypack\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[trainlint.rules]\nmypack = mypack\n")
    (tmp_path / "a.py").write_text("print('hi')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), ROOT]))
    proc = subprocess.run([sys.executable, "-m", "trainlint", "--select", "XP", "a.py"], cwd=tmp_path,
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 1, proc.stderr
    assert "a.py:1:1: XP001 use logging" in proc.stdout
    listed = subprocess.run([sys.executable, "-m", "trainlint", "rule", "XP001"], cwd=tmp_path,
                            capture_output=True, text=True, env=env)
    assert "no-print (XP001)" in listed.stdout


def test_broken_pack_is_a_clear_error(tmp_path):
    site = tmp_path / "site"
    info = site / "bad-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bad\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[trainlint.rules]\nbad = does_not_exist\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), ROOT]))
    proc = subprocess.run([sys.executable, "-m", "trainlint", "a.py"], cwd=tmp_path, capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 2
    assert "rule pack bad (does_not_exist) failed to load" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_prescan_sees_only_packs_other_than_the_builtin_one():
    from trainlint.registry import _other_packs_in

    assert not _other_packs_in("[console_scripts]\ntrainlint = trainlint.cli:main\n\n[trainlint.rules]\nbuiltin = trainlint.rules\n")
    assert _other_packs_in("[trainlint.rules]\nbuiltin = trainlint.rules\nmine = my_rules\n")
    assert _other_packs_in("[ trainlint.rules ]\nmine=my_rules:RULES\n")
    # The same names in another group, or commented out, are not packs.
    assert not _other_packs_in("[other.group]\nmine = trainlint.rules_extra\n# [trainlint.rules]\n")
    assert not _other_packs_in("[trainlint.rules]\n# mine = my_rules\n")


def test_prescan_finds_a_declared_pack_on_sys_path(tmp_path, monkeypatch):
    from trainlint.registry import _third_party_pack_declared

    info = tmp_path / "mypack-0.1.dist-info"
    info.mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path)])
    assert not _third_party_pack_declared()
    (info / "entry_points.txt").write_text("[trainlint.rules]\nbuiltin = trainlint.rules\n")
    assert not _third_party_pack_declared()
    (info / "entry_points.txt").write_text("[trainlint.rules]\nmypack = mypack\n")
    assert _third_party_pack_declared()
    # A zip archive on sys.path is not scanned: importlib.metadata answers for it.
    archive = tmp_path / "packs.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))
    monkeypatch.setattr(sys, "path", [str(archive)])
    assert _third_party_pack_declared()
