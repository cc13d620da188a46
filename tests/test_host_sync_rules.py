"""TL201-TL204 beyond their rule cases: the suggestions (display-only fixes, which the rule cases
cannot see since `--fix` never writes them)."""

from trainlint.config import Settings
from trainlint.engine import lint_text
from trainlint.fixer import fix_text
from trainlint.rule import in_training_loop
from trainlint.textpos import apply_edits


def _findings(code: str, code_name: str):
    settings = Settings(select=(code_name,))
    return [d for d in lint_text(code, "t.py", settings.active_rules(), settings) if d.code == code_name]


def _suggested(code: str, code_name: str) -> list:
    """The code each finding's fix would produce (None where there is no fix)."""
    return [apply_edits(code, d.fix.edits) if d.fix and d.fix.edits else None for d in _findings(code, code_name)]


# -- TL201/TL203: an assignment moves under the interval only with the reads of its name ----------------

def test_tl201_suggestion_moves_the_reads_right_after_an_assignment():
    code = in_training_loop("l = float(loss)\nlosses.append(l)\nprint(step)")
    assert _suggested(code, "TL201") == [in_training_loop(
        "if step % 100 == 0:\n    l = float(loss)\n    losses.append(l)\nprint(step)")]


def test_tl201_no_suggestion_when_the_name_is_read_elsewhere():
    after_loop = in_training_loop("l = float(loss)") + "print(l)\n"
    after_work = in_training_loop("l = float(loss)\nopt.zero_grad()\nprint(l)")
    earlier = in_training_loop("if l > 10:\n    print('high')\nl = float(loss)")
    attribute = in_training_loop("self.l = float(loss)")
    for code in (after_loop, after_work, earlier, attribute):
        assert _suggested(code, "TL201") == [None], code


def test_tl201_assignment_read_by_nobody_still_moves_alone():
    code = in_training_loop("l = float(loss)")
    assert _suggested(code, "TL201") == [in_training_loop("if step % 100 == 0:\n    l = float(loss)")]


def test_tl203_moves_the_chain_of_reads():
    code = in_training_loop("m = torch.cuda.memory_allocated()\ngb = m / 2**30\nstats.append(gb)")
    settings = Settings(select=("TL203",))
    fixed = fix_text(code, "t.py", settings.active_rules(), settings, unsafe_fixes=True).text
    assert fixed == in_training_loop(
        "if step % 100 == 0:\n    m = torch.cuda.memory_allocated()\n    gb = m / 2**30\n    stats.append(gb)")
