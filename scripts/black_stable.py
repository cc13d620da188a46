"""Are trainlint's fixes laid out as Black lays out code? A development check, not a test.

Each source (the rules' invalid cases, the fixtures, and with --corpus the corpus files) is
formatted with Black, fixed with every rule and unsafe fixes, and formatted with Black again: a
fixed text that Black changes is a layout a fix wrote and Black would not have, printed as a
diff. Black is not a dependency of trainlint: install it beside it (`pip install black`).

    python scripts/black_stable.py [--corpus DIR] [--line-length 88] [-j JOBS]

Corpus files are formatted and fixed only when linting them as they are finds a fix.

Exit 0 when every fixed text is Black-stable, 1 otherwise.
"""

from __future__ import annotations

import argparse
import difflib
import multiprocessing
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

try:
    import black
except ImportError:
    sys.exit("black_stable: needs Black installed (pip install black)")

from trainlint.api import fix_source, lint_source  # noqa: E402
from trainlint.config import Settings  # noqa: E402
from trainlint.registry import all_rules  # noqa: E402


def sources(corpus: Path | None):
    """(name, text, settings, from the corpus?) for every source to check."""
    for rule in all_rules():
        for i, case in enumerate(rule.invalid):
            yield f"{rule.code} invalid case {i}", case.code, dict(case.settings), False
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        if "verify" not in path.relative_to(ROOT / "fixtures").parts:
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"), {}, False
    if corpus is not None:
        for path in sorted(corpus.rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            yield str(path.relative_to(corpus)), text, {}, True


def check(item) -> tuple[str, bool, str] | None:
    """(name, Black-stable?, report) for one source; None when no fix applies to it."""
    name, text, settings, quick, line_length = item
    mode = black.Mode(line_length=line_length)
    settings = Settings(line_length=line_length, **settings)
    if quick and not any(d.fix for d in lint_source(text, settings=settings, select=["ALL"])):
        return None  # a corpus file without a fix: formatting it would change nothing here
    try:
        formatted = black.format_str(text, mode=mode)
    except Exception:  # Black cannot read it (Python 2, invalid): not a layout question
        return None
    try:
        fixed = fix_source(formatted, select=["ALL"], unsafe_fixes=True, settings=settings)
    except Exception as exc:
        return name, False, f"{name}: not fixed: {exc}\n"
    if fixed == formatted:
        return None
    again = black.format_str(fixed, mode=mode)
    if again == fixed:
        return name, True, ""
    diff = difflib.unified_diff(fixed.splitlines(True), again.splitlines(True), "fixed", "black", n=2)
    return name, False, f"{name}: Black changes the fixed text\n" + "".join(diff)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="also every .py file under this folder")
    parser.add_argument("--line-length", type=int, default=88)
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    items = ((*source, args.line_length) for source in sources(args.corpus))
    checked = unstable = 0
    with multiprocessing.Pool(args.jobs) as pool:
        for result in pool.imap(check, items, chunksize=8):
            if result is None:
                continue
            checked += 1
            if not result[1]:
                unstable += 1
                sys.stdout.write(result[2])
    print(f"black_stable: {checked} fixed texts, {unstable} that Black changes")
    return 1 if unstable else 0


if __name__ == "__main__":
    sys.exit(main())
