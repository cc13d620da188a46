#!/usr/bin/env python3
"""Ecosystem check, after Ruff's: lint real training code and compare versions of trainlint.

    ecosystem.py run [--corpus DIR] [--role train] [--packages a,b] [--out SNAPSHOT] [--summary MD]
        Lint every package of the corpus, write a findings snapshot (JSON) and a summary (markdown,
        counts per rule and package). The corpus code itself is never copied anywhere.
    ecosystem.py diff OLD NEW        (also: ecosystem.py --diff OLD NEW)
        OLD and NEW are snapshots, or trainlint checkouts (folders holding trainlint/): a checkout is
        run first (a subprocess with that checkout first on sys.path). Prints added and removed
        findings per rule; exit 1 when they differ.
    ecosystem.py sample --code TL101 [-n 25] [--snapshot S]
        A reproducible sample of one rule's findings with the code around each, for triage.
    ecosystem.py precision [--triage docs/ecosystem.md] [--snapshot S]
        Precision per rule from the triage tables in docs/ecosystem.md, counted over the triaged
        findings that the snapshot still contains (a fixed false positive drops out of both counts
        and is listed as gone). Rows of packages the snapshot did not lint are left out: run
        `--role all` for the rows of both sets, the default `--role train` for the training set's.

Internal errors (exceptions inside trainlint) are counted per package; `run` exits 3 if there
are any, so the check doubles as a crash sweep for lint mode (scripts/sweep.py adds --fix).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_CORPUS = os.environ.get("TRAINLINT_CORPUS", os.path.expanduser("~/.cache/trainlint-corpus"))
DEFAULT_SNAPSHOT = os.path.join(REPO, ".ecosystem", "snapshot.json")
DEFAULT_SUMMARY = os.path.join(REPO, "docs", "ecosystem-summary.md")
DEFAULT_TRIAGE = os.path.join(REPO, "docs", "ecosystem.md")


def _find_pins() -> str | None:
    """$PINS, else shared/corpus/pins.tsv in the repository or a folder above it (worktrees)."""
    if os.environ.get("PINS"):
        return os.environ["PINS"]
    folder = REPO
    while True:
        candidate = os.path.join(folder, "shared", "corpus", "pins.tsv")
        if os.path.exists(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


PINS = _find_pins()


def use_checkout(path: str) -> None:
    """Import trainlint from the checkout at path, whatever is installed.

    An editable install (setuptools' finder on sys.meta_path) would otherwise still answer for
    `trainlint.rules`; without it the registry falls back to the checkout's own rules/ folder.
    """
    sys.path.insert(0, os.path.abspath(path))
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in str(getattr(f, "__module__", ""))]
    for name in [m for m in sys.modules if m == "trainlint" or m.startswith("trainlint.")]:
        del sys.modules[name]


# -- the corpus ----------------------------------------------------------------------------------

def read_pins(path: str | None = PINS) -> list[dict]:
    out = []
    if path is None or not os.path.exists(path):
        return out
    with open(path) as fh:
        for line in fh:
            if not line.strip() or line.startswith("#"):
                continue
            pkg, ver, _kind, _archive, _sha, role, *_ = line.rstrip("\n").split("\t")
            out.append({"package": pkg, "version": ver, "role": role, "folder": f"{pkg}-{ver}"})
    return out


def corpus_packages(corpus: str, role: str, only: list[str] | None) -> list[tuple[str, str]]:
    """(name, folder) of each unpacked package of the role (train, speed, all)."""
    src = os.path.join(corpus, "src")
    pins = read_pins()
    if pins:
        wanted = [p["folder"] for p in pins if role == "all" or p["role"] == role]
    else:  # no pins file: every unpacked folder, whatever its role
        print("warning: no pins.tsv found (set PINS=); linting every package under src/", file=sys.stderr)
        wanted = sorted(os.listdir(src)) if os.path.isdir(src) else []
    out = []
    for folder in wanted:
        path = os.path.join(src, folder)
        if not os.path.isdir(path):
            continue
        if only and not any(folder == o or folder.startswith(o + "-") for o in only):
            continue
        out.append((folder, path))
    return out


def python_files(root: str) -> list[str]:
    """Every .py/.pyi file under root, sorted (the corpus is not a git work tree: no ignores)."""
    out = []
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        out.extend(os.path.join(dirpath, f) for f in sorted(files) if f.endswith((".py", ".pyi")))
    return out


# -- linting (in worker processes) -----------------------------------------------------------------

_SETTINGS = None


def _init_worker(settings) -> None:
    global _SETTINGS
    _SETTINGS = settings


def _lint_one(path: str) -> dict:
    from trainlint.runner import Mode, check_file

    started = time.perf_counter()
    result = check_file(path, _SETTINGS, Mode())
    try:
        with open(path, "rb") as fh:
            lines = fh.read().count(b"\n")
    except OSError:
        lines = 0
    return {
        "path": path,
        "lines": lines,
        "seconds": time.perf_counter() - started,
        "error": None if result.error is None else {"reason": result.error.reason, "internal": result.error.internal},
        "findings": [
            {"code": d.code, "line": d.start.row, "column": d.start.column, "message": d.message,
             "fix": d.fix.applicability.value if d.fix is not None and d.fix.edits else None}
            for d in result.diagnostics
        ],
    }


def make_settings(select: str | None):
    from trainlint.config import Settings

    if select:
        return Settings(select=tuple(s.strip() for s in select.split(",") if s.strip()))
    return Settings()


def lint_corpus(packages: list[tuple[str, str]], settings, jobs: int, progress: bool = True) -> dict:
    import multiprocessing

    from trainlint import __version__

    files = [(name, root, path) for name, root in packages for path in python_files(root)]
    # Big files first, so one huge file does not finish alone at the end.
    order = sorted(range(len(files)), key=lambda i: -_size(files[i][2]))
    results: dict[int, dict] = {}
    started = time.perf_counter()
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, initializer=_init_worker, initargs=(settings,), maxtasksperchild=200) as pool:
        for n, (i, res) in enumerate(zip(order, pool.imap(_lint_one, [files[i][2] for i in order], chunksize=4))):
            results[i] = res
            if progress and (n + 1) % 500 == 0:
                print(f"  {n + 1}/{len(files)} files, {time.perf_counter() - started:.0f}s", file=sys.stderr)
    snapshot = {
        "trainlint": {"version": __version__, "commit": _git_commit(), "rules": _enabled(settings)},
        "packages": {},
        "findings": [],
        "errors": [],
        "seconds": round(time.perf_counter() - started, 1),
    }
    for i, (name, root, path) in enumerate(files):
        res = results[i]
        rel = os.path.relpath(path, root)
        pkg = snapshot["packages"].setdefault(name, {"files": 0, "lines": 0, "errors": 0, "internal_errors": 0})
        pkg["files"] += 1
        pkg["lines"] += res["lines"]
        if res["error"] is not None:
            pkg["errors"] += 1
            pkg["internal_errors"] += bool(res["error"]["internal"])
            snapshot["errors"].append({"package": name, "path": rel, **res["error"]})
        for f in res["findings"]:
            snapshot["findings"].append({"package": name, "path": rel, **f})
    snapshot["slowest"] = [
        {"package": files[i][0], "path": os.path.relpath(files[i][2], files[i][1]),
         "seconds": round(results[i]["seconds"], 2)}
        for i in sorted(results, key=lambda i: -results[i]["seconds"])[:10]
    ]
    return snapshot


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _enabled(settings) -> list[str]:
    return settings.enabled_codes()


def _git_commit() -> str | None:
    import trainlint

    root = os.path.dirname(os.path.dirname(os.path.abspath(trainlint.__file__)))
    try:
        proc = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return proc.stdout.strip() + ("-dirty" if dirty else "")


# -- the summary ------------------------------------------------------------------------------------

def summary_markdown(snapshot: dict, command: str) -> str:
    findings = snapshot["findings"]
    codes = sorted({f["code"] for f in findings} | set(snapshot["trainlint"]["rules"]))
    per_pkg = collections.Counter((f["package"], f["code"]) for f in findings)
    lines = [
        "# Ecosystem summary",
        "",
        "Findings of trainlint's default rules on the training set of the pinned corpus",
        "(`shared/corpus/pins.tsv`, role `train`). Generated, do not edit; regenerate with:",
        "",
        "```",
        command,
        "```",
        "",
        f"trainlint {snapshot['trainlint']['version']} ({snapshot['trainlint']['commit'] or 'unknown commit'}); "
        f"rules: {', '.join(snapshot['trainlint']['rules'])}.",
        "",
        "| package | files | lines | errors | internal errors | " + " | ".join(codes) + " | total |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(codes) + "---:|",
    ]
    totals = collections.Counter()
    for name, pkg in sorted(snapshot["packages"].items()):
        row = [per_pkg[(name, c)] for c in codes]
        totals.update({c: per_pkg[(name, c)] for c in codes})
        lines.append(f"| {name} | {pkg['files']} | {pkg['lines']} | {pkg['errors']} | {pkg['internal_errors']} | "
                     + " | ".join(str(v) for v in row) + f" | {sum(row)} |")
    pk = snapshot["packages"].values()
    lines.append(f"| **total** | {sum(p['files'] for p in pk)} | {sum(p['lines'] for p in pk)} | "
                 f"{sum(p['errors'] for p in pk)} | {sum(p['internal_errors'] for p in pk)} | "
                 + " | ".join(str(totals[c]) for c in codes) + f" | {sum(totals.values())} |")
    lines += ["", "## Files that could not be checked", ""]
    reasons = collections.Counter(_reason_kind(e["reason"]) for e in snapshot["errors"])
    if reasons:
        lines += ["| reason | files |", "|---|---:|"]
        lines += [f"| {r} | {n} |" for r, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))]
    else:
        lines.append("None.")
    return "\n".join(lines) + "\n"


def _reason_kind(reason: str) -> str:
    """The reason without positions and names, so the table groups like with like."""
    if reason.startswith("internal error"):
        return reason.split(";")[0]
    reason = re.sub(r"line \d+, column \d+", "line N, column N", reason)
    reason = re.sub(r"\(\d+ bytes", "(N bytes", reason)
    return reason.split(":")[0] if reason.startswith("syntax error") else reason


# -- diff ---------------------------------------------------------------------------------------------

def _key(f: dict) -> tuple:
    return (f["code"], f["package"], f["path"], f["line"], f["column"], f["message"])


def load_or_run(spec: str, args) -> dict:
    if os.path.isdir(spec) and os.path.isdir(os.path.join(spec, "trainlint")):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "snapshot.json")
            cmd = [sys.executable, os.path.abspath(__file__), "run", "--trainlint", spec, "--corpus", args.corpus,
                   "--role", args.role, "--out", out, "--no-summary", "--jobs", str(args.jobs)]
            if args.packages:
                cmd += ["--packages", args.packages]
            if args.select:
                cmd += ["--select", args.select]
            print(f"running trainlint from {spec} ...", file=sys.stderr)
            proc = subprocess.run(cmd)
            if proc.returncode not in (0, 3):
                sys.exit(f"ecosystem run of {spec} failed (exit {proc.returncode})")
            with open(out) as fh:
                return json.load(fh)
    with open(spec) as fh:
        return json.load(fh)


def diff_snapshots(old: dict, new: dict) -> tuple[dict, dict]:
    """(added, removed): rule code -> findings. Findings match on rule, file, position and message."""
    old_keys = {_key(f): f for f in old["findings"]}
    new_keys = {_key(f): f for f in new["findings"]}
    added: dict[str, list] = collections.defaultdict(list)
    removed: dict[str, list] = collections.defaultdict(list)
    for k in sorted(new_keys.keys() - old_keys.keys()):
        added[k[0]].append(new_keys[k])
    for k in sorted(old_keys.keys() - new_keys.keys()):
        removed[k[0]].append(old_keys[k])
    return added, removed


def _reworded(added: dict, removed: dict) -> dict:
    """Pairs (removed, added) at the same rule and place whose message alone changed: moved out of
    added/removed so a reworded message does not read as a lost and a new finding."""
    out: dict[str, list] = collections.defaultdict(list)
    for code in set(added) & set(removed):
        by_place = {}
        for f in removed[code]:
            by_place.setdefault((f["package"], f["path"], f["line"], f["column"]), []).append(f)
        kept = []
        for f in added[code]:
            olds = by_place.get((f["package"], f["path"], f["line"], f["column"]))
            if olds:
                out[code].append((olds.pop(0), f))
            else:
                kept.append(f)
        added[code] = kept
        removed[code] = [f for fs in by_place.values() for f in fs]
    return out


def print_diff(old: dict, new: dict, limit: int) -> int:
    added, removed = diff_snapshots(old, new)
    reworded = _reworded(added, removed)
    codes = sorted(c for c in set(added) | set(removed) | set(reworded) if added.get(c) or removed.get(c) or reworded.get(c))
    old_count = collections.Counter(f["code"] for f in old["findings"])
    new_count = collections.Counter(f["code"] for f in new["findings"])
    print(f"old: {old['trainlint'].get('commit')}  new: {new['trainlint'].get('commit')}")
    if not codes:
        print("No changes in findings.")
    for code in codes:
        changed = f", {len(reworded[code])} reworded" if reworded.get(code) else ""
        print(f"\n{code}: {old_count[code]} -> {new_count[code]} (+{len(added.get(code, []))} "
              f"-{len(removed.get(code, []))}{changed})")
        for before, after in reworded.get(code, [])[:limit]:
            print(f"  ~ {after['package']}/{after['path']}:{after['line']}:{after['column']}: {after['message']}")
            print(f"      was: {before['message']}")
        for sign, items in (("+", added.get(code, [])), ("-", removed.get(code, []))):
            for f in items[:limit]:
                print(f"  {sign} {f['package']}/{f['path']}:{f['line']}:{f['column']}: {f['message']}")
            if len(items) > limit:
                print(f"  {sign} ... and {len(items) - limit} more")
    old_err = {(e["package"], e["path"], e["reason"]) for e in old["errors"]}
    new_err = {(e["package"], e["path"], e["reason"]) for e in new["errors"]}
    if old_err != new_err:
        print(f"\nerrors: {len(old_err)} -> {len(new_err)}")
        for e in sorted(new_err - old_err)[:limit]:
            print(f"  + {e[0]}/{e[1]}: {e[2]}")
        for e in sorted(old_err - new_err)[:limit]:
            print(f"  - {e[0]}/{e[1]}: {e[2]}")
    return 1 if codes or old_err != new_err else 0


# -- triage: samples and precision --------------------------------------------------------------------

def finding_id(f: dict) -> str:
    return f"{f['package']}/{f['path']}:{f['line']}"


def sample(snapshot: dict, code: str, n: int, seed: str) -> list[dict]:
    """n findings of a rule, chosen by a hash of their place: reproducible, spread over packages."""
    items = [f for f in snapshot["findings"] if f["code"] == code]
    items.sort(key=lambda f: hashlib.sha256(f"{seed}:{finding_id(f)}:{f['column']}".encode()).hexdigest())
    return items[:n]


def show_context(corpus: str, f: dict, before: int, after: int) -> str:
    path = os.path.join(corpus, "src", f["package"], f["path"])
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        return f"    (cannot read: {exc})"
    lo, hi = max(0, f["line"] - 1 - before), min(len(lines), f["line"] + after)
    return "\n".join(f"  {'>' if i + 1 == f['line'] else ' '}{i + 1:5d} {lines[i]}" for i in range(lo, hi))


# A triage row in docs/ecosystem.md: | TL101 | package/path.py:123 | TP | reason |
# Several findings of one rule on one line are told apart by a piece of their message:
# | TL201 | `package/path.py:123 ~ .numpy()` | FP | ... |
TRIAGE_ROW = re.compile(r"^\|\s*(TL\d{3})\s*\|\s*`?([^|`~]+?:\d+(?:\s*~\s*[^|`]+?)?)`?\s*\|\s*(TP|FP)\s*\|(.*)\|\s*$")


def read_triage(path: str) -> list[tuple[str, str, str, str]]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            m = TRIAGE_ROW.match(line.strip())
            if m:
                out.append((m.group(1), m.group(2).strip(), m.group(3), m.group(4).strip()))
    return out


def precision(snapshot: dict, triage: list) -> dict:
    """Per rule: the triaged findings still in the snapshot (TP, FP) and those gone (gone_TP,
    gone_FP). A row of a package the snapshot did not lint counts in neither: a `--role train`
    snapshot gives the training set's precision, a `--role all` one the whole corpus'."""
    linted = set(snapshot["packages"])
    messages: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    for f in snapshot["findings"]:
        messages[(f["code"], finding_id(f))].append(f["message"])
    total = collections.Counter(f["code"] for f in snapshot["findings"])
    table: dict[str, dict] = {}
    for code, fid, verdict, _reason in triage:
        place, _, fragment = (part.strip() for part in fid.partition("~"))
        if place.split("/", 1)[0] not in linted:
            continue
        row = table.setdefault(code, {"TP": 0, "FP": 0, "gone_TP": 0, "gone_FP": 0})
        if any(fragment in m for m in messages.get((code, place), ())):
            row[verdict] += 1
        else:
            row["gone_" + verdict] += 1
    for code, row in table.items():
        judged = row["TP"] + row["FP"]
        row["findings"] = total[code]
        row["precision"] = row["TP"] / judged if judged else None
    for code in total:
        table.setdefault(code, {"TP": 0, "FP": 0, "gone_TP": 0, "gone_FP": 0, "findings": total[code],
                                "precision": None})
    return table


# -- command line -------------------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    def corpus_opts(p):
        p.add_argument("--corpus", default=DEFAULT_CORPUS, help="corpus folder (holds src/), from fetch.sh")
        p.add_argument("--role", default="train", choices=("train", "speed", "all"))
        p.add_argument("--packages", help="comma-separated package names (default: all of the role)")
        p.add_argument("--select", help="rule selection (default: the default rules)")
        p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)

    p_run = sub.add_parser("run", help="lint the corpus, write a snapshot and the summary")
    corpus_opts(p_run)
    p_run.add_argument("--out", default=DEFAULT_SNAPSHOT)
    p_run.add_argument("--summary", default=DEFAULT_SUMMARY)
    p_run.add_argument("--no-summary", action="store_true")
    p_run.add_argument("--trainlint", help="run the trainlint of this checkout")

    p_diff = sub.add_parser("diff", help="compare two snapshots or two trainlint checkouts")
    p_diff.add_argument("old")
    p_diff.add_argument("new")
    p_diff.add_argument("--limit", type=int, default=50, help="findings listed per rule and direction")
    corpus_opts(p_diff)

    p_sample = sub.add_parser("sample", help="print a reproducible sample of one rule's findings")
    p_sample.add_argument("--code", required=True)
    p_sample.add_argument("-n", type=int, default=25)
    p_sample.add_argument("--seed", default="0")
    p_sample.add_argument("--snapshot", default=DEFAULT_SNAPSHOT)
    p_sample.add_argument("--corpus", default=DEFAULT_CORPUS)
    p_sample.add_argument("--context", type=int, default=6)

    p_prec = sub.add_parser("precision", help="precision per rule from the triage in docs/ecosystem.md")
    p_prec.add_argument("--snapshot", default=DEFAULT_SNAPSHOT)
    p_prec.add_argument("--triage", default=DEFAULT_TRIAGE)
    p_prec.add_argument("--min", type=float, default=0.9, help="exit 1 if a triaged rule is below this")

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--diff":  # Ruff-style spelling: `ecosystem.py --diff OLD NEW`
        argv[0] = "diff"
    args = parser.parse_args(argv)

    if args.command == "run":
        if args.trainlint:
            use_checkout(args.trainlint)
        packages = corpus_packages(args.corpus, args.role, args.packages.split(",") if args.packages else None)
        if not packages:
            print(f"no corpus packages under {args.corpus}/src; fetch them with shared/corpus/fetch.sh", file=sys.stderr)
            return 2
        settings = make_settings(args.select)
        snapshot = lint_corpus(packages, settings, max(1, args.jobs))
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as fh:
            json.dump(snapshot, fh, indent=1)
        if not args.no_summary:
            command = "python scripts/ecosystem.py run --corpus CORPUS" + (
                f" --role {args.role}" if args.role != "train" else "") + (
                f" --select {args.select}" if args.select else "") + (
                f" --packages {args.packages}" if args.packages else "")
            os.makedirs(os.path.dirname(os.path.abspath(args.summary)), exist_ok=True)
            with open(args.summary, "w") as fh:
                fh.write(summary_markdown(snapshot, command))
        internal = [e for e in snapshot["errors"] if e["internal"]]
        counts = collections.Counter(f["code"] for f in snapshot["findings"])
        print(f"{sum(p['files'] for p in snapshot['packages'].values())} files, "
              f"{sum(p['lines'] for p in snapshot['packages'].values())} lines, {snapshot['seconds']}s; "
              f"{len(snapshot['findings'])} findings " + " ".join(f"{c}={n}" for c, n in sorted(counts.items()))
              + f"; {len(snapshot['errors'])} files not checked, {len(internal)} internal errors")
        for e in internal:
            print(f"INTERNAL {e['package']}/{e['path']}: {e['reason']}")
        return 3 if internal else 0

    if args.command == "diff":
        old = load_or_run(args.old, args)
        new = load_or_run(args.new, args)
        return print_diff(old, new, args.limit)

    if args.command == "sample":
        with open(args.snapshot) as fh:
            snapshot = json.load(fh)
        items = sample(snapshot, args.code, args.n, args.seed)
        total = sum(1 for f in snapshot["findings"] if f["code"] == args.code)
        print(f"{args.code}: {len(items)} of {total} findings (seed {args.seed})\n")
        for f in items:
            print(f"| {f['code']} | {finding_id(f)} | ?? | {f['message']} |")
            print(show_context(args.corpus, f, args.context, args.context))
            print()
        return 0

    if args.command == "precision":
        with open(args.snapshot) as fh:
            snapshot = json.load(fh)
        table = precision(snapshot, read_triage(args.triage))
        print("| rule | findings | triaged (present) | TP | FP | precision | fixed FPs (gone) | gone TPs "
              "| precision before the fixes |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        bad = False
        for code in sorted(table):
            row = table[code]
            p = row["precision"]
            judged = row["TP"] + row["FP"]
            shown = "n/a" if p is None else f"{100 * p:.1f}%"
            all_tp = row["TP"] + row["gone_TP"]
            all_judged = judged + row["gone_FP"] + row["gone_TP"]
            before = f"{100 * all_tp / all_judged:.1f}% of {all_judged}" if all_judged else "n/a"
            print(f"| {code} | {row['findings']} | {judged} | {row['TP']} | {row['FP']} | {shown} | "
                  f"{row['gone_FP']} | {row['gone_TP']} | {before} |")
            if p is not None and p < args.min:
                bad = True
        return 1 if bad else 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
