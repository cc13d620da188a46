"""The command line, after Ruff's conventions: `trainlint [PATHS]` is `trainlint check [PATHS]`.

Exit codes: 0 no findings left, 1 findings, 2 usage or configuration error, or a file that
could not be checked. --exit-zero makes findings and files that could not be checked exit 0 (as
Ruff, whose syntax errors are findings); usage and configuration errors still exit 2.
"""

from __future__ import annotations

import json
import os
import sys

import click

from trainlint import __version__
from trainlint.cache import Cache, default_dir
from trainlint.config import ConfigError, SettingsResolver, rule_hint, unknown_selector
from trainlint.registry import RegistryError, all_rules, get_rule, is_known_selector
from trainlint.reporters import FORMATS, render
from trainlint.reporters.statistics import FORMATS as STATISTICS_FORMATS
from trainlint.runner import Mode, check_stdin, run
from trainlint.source import STDIN_NAME


# Commands that live in modules of their own, imported only when named (or listed by --help):
# `check`, the hot path, must not pay for the verifier's or the GitHub client's imports.
LAZY_COMMANDS = {
    "verify": ("trainlint.verify.command", "verify_command"),
    "review": ("trainlint.review", "review_command"),
    "clean": ("trainlint.cache", "clean_command"),
    "server": ("trainlint.server", "server_command"),
}


class DefaultToCheck(click.Group):
    """Arguments that are not a subcommand go to `check` (`trainlint src/` == `trainlint check src/`)."""

    def parse_args(self, ctx, args):
        named = self._command_after_options(ctx, args)
        if named:
            # `trainlint --isolated check x.py`: Ruff takes its global options before the
            # subcommand; here every option belongs to a subcommand, so they go after its name.
            args = [args[named], *args[:named], *args[named + 1:]]
        known = args and (args[0] in self.commands or args[0] in LAZY_COMMANDS)
        if not known and args:
            self._refuse_mistyped_command(ctx, args[0])
        if not known and (not args or args[0] not in ("--help", "-h", "--version", "-V")):
            args = ["check", *args]
        ctx.meta["trainlint.args"] = list(args)  # as given: --watch runs the same command again
        return super().parse_args(ctx, args)

    def _command_after_options(self, ctx, args) -> int:
        """Where a subcommand's name follows options of `check` only (with their values), or 0."""
        if not args or not args[0].startswith("-"):
            return 0
        check = self.get_command(ctx, "check")
        options = {name: param for param in check.params if isinstance(param, click.Option)
                   for name in (*param.opts, *param.secondary_opts)}
        at = 0
        while at < len(args) and args[at].startswith("-") and args[at] not in ("-", "--"):
            name, has_value = args[at].split("=", 1)[0], "=" in args[at]
            param = options.get(name)
            if param is None:
                return 0
            at += 1 if has_value or param.is_flag or param.count else 2
        word = args[at] if at < len(args) else None
        return at if word in self.commands or word in LAZY_COMMANDS else 0

    def list_commands(self, ctx):
        return sorted(set(self.commands) | set(LAZY_COMMANDS))

    def _refuse_mistyped_command(self, ctx, word: str) -> None:
        """`trainlint chekc`: a bare word that is no path but looks like a command is refused as
        one (as Ruff does), not checked as a missing file."""
        if not word.isidentifier() or os.path.lexists(word):
            return
        if word in ("help", "version"):
            ctx.fail(f"unrecognized subcommand '{word}'; use `trainlint --{word}`")
        close = _closest(word, self.list_commands(ctx))
        if close:
            ctx.fail(f"unrecognized subcommand '{word}'; did you mean '{close}'?")

    def get_command(self, ctx, name):
        if name not in self.commands and name in LAZY_COMMANDS:
            command = _load_command(*LAZY_COMMANDS[name])
            if command is not None:
                self.add_command(command, name)
        return self.commands.get(name)


def _closest(word: str, choices) -> str | None:
    """The choice a misspelt word most likely meant, or None when none is close."""
    import difflib  # only on an error path: a run imports nothing it does not use

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.7)
    return close[0] if close else None


class SuggestingChoice(click.Choice):
    """A choice whose refusal names the closest value (`--output-format jsn`: did you mean
    'json'?), as a mistyped subcommand is answered: the list of every value is long to scan."""

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            close = _closest(value, self.choices) if isinstance(value, str) else None
            if close is None:
                raise
            self.fail(f"{exc.message.rstrip('.')}; did you mean '{close}'?", param, ctx)


def _load_command(module: str, attr: str):
    """The command object, or None when its module is not installed (that command is absent)."""
    import importlib

    try:
        return getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as exc:
        # Only the command's own module (or its package) being absent means "not installed";
        # any other missing module is a real missing dependency: say so.
        if exc.name is None or not (module == exc.name or module.startswith(exc.name + ".")):
            raise
        return None


@click.group(cls=DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="trainlint", message="%(prog)s %(version)s")
def cli() -> None:
    """Find and fix what leaves GPUs idle in PyTorch training code.

    `trainlint [PATHS]` is `trainlint check [PATHS]`; `trainlint check --help` lists its options.
    """


def selectors(ctx, param, value):
    if not value:
        return None
    codes = tuple(c.strip() for v in value for c in v.split(",") if c.strip())
    if not codes:
        # `--select "$RULES"` with an empty variable would otherwise select no rule and pass.
        raise click.BadParameter("expected rule codes or prefixes (ALL for all), got an empty value",
                                 ctx=ctx, param=param)
    for code in codes:
        if not is_known_selector(code):
            raise click.BadParameter(unknown_selector(code), ctx=ctx, param=param)
    return codes


class SectionedCommand(click.Command):
    """A command whose --help lists its options in sections, as Ruff's does; an option no
    section names is listed under "Options" (tests/test_cli.py checks that none is left there)."""

    sections: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def format_options(self, ctx, formatter) -> None:
        place = {name: (title, i) for title, names in self.sections for i, name in enumerate(names)}
        help_option = self.get_help_option(ctx)
        rows: dict[str, list] = {title: [] for title in ("Options", *(title for title, _ in self.sections))}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
            if record is not None:
                title, order = place.get("help" if param is help_option else param.name, ("Options", 0))
                rows[title].append((order, record))
        # One column width for every section (click sizes each list on its own): names padded to it.
        width = 30
        for title, records in rows.items():
            if records:
                with formatter.section(title):
                    formatter.write_dl([(name.ljust(width), text) for _, (name, text) in sorted(records, key=lambda r: r[0])],
                                       col_max=width)


class CheckCommand(SectionedCommand):
    sections = (
        ("Fixes", ("fix", "unsafe_fixes", "fix_only", "diff", "show_fixes", "exit_non_zero_on_fix", "add_noqa")),
        ("Rule selection", ("select", "extend_select", "ignore", "extend_per_file_ignores", "fixable", "extend_fixable",
                            "unfixable", "target_torch", "line_length", "ignore_noqa", "baseline_path")),
        ("File selection", ("exclude", "extend_exclude", "respect_gitignore", "force_exclude", "stdin_filename",
                            "show_files", "show_settings")),
        ("Reporting", ("output_format", "output_file", "statistics", "quiet", "silent", "exit_zero", "watch")),
        ("Configuration and running", ("config_args", "isolated", "no_cache", "cache_dir", "jobs", "help")),
    )


# short_help: what `trainlint --help` lists, whole (click cuts a longer first sentence at ~68 columns).
@cli.command(cls=CheckCommand, short_help="Check files for training-efficiency problems (the default command).")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--fix/--no-fix", default=None, help="Apply safe fixes (default: the configuration's `fix`, else no).")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None,
              help="Also apply (with --fix) or show unsafe fixes (default: the configuration's `unsafe-fixes`, else no).")
@click.option("--fix-only/--no-fix-only", default=None,
              help="Apply fixes and report only what was fixed: leftover findings are neither shown nor a "
                   "reason to exit 1 (implies --fix; default: the configuration's `fix-only`, else no).")
@click.option("--diff", is_flag=True, help="Print a unified diff of the fixes; write nothing.")
@click.option("--select", multiple=True, callback=selectors, help="Rule codes or prefixes to enable (ALL for all).")
@click.option("--extend-select", multiple=True, callback=selectors, help="Rules to enable on top of the selection.")
@click.option("--ignore", multiple=True, callback=selectors, help="Rule codes or prefixes to disable.")
@click.option("--extend-per-file-ignores", multiple=True, callback=lambda ctx, param, v: _per_file_ignores(ctx, param, v),
              metavar="GLOB:CODES", help="Rules to disable in the files a glob matches (`tests/*:TL2,TL101`; the glob "
                                         "as in `per-file-ignores`), on top of the configuration's; may be repeated.")
@click.option("--fixable", multiple=True, callback=selectors,
              help="Rules whose fixes --fix may write (default: all); the others are shown as suggestions.")
@click.option("--extend-fixable", multiple=True, callback=selectors,
              help="Rules whose fixes --fix may write on top of `fixable` (adds to the configuration's).")
@click.option("--unfixable", multiple=True, callback=selectors,
              help="Rules whose fixes are only shown, never written (adds to the configuration's).")
@click.option("-e", "--exit-zero", is_flag=True,
              help="Exit 0 even when findings remain or a file could not be checked (errors are still reported).")
@click.option("--exit-non-zero-on-fix", is_flag=True,
              help="Exit 1 when --fix changed a file, even if no finding remains (for pre-commit and CI).")
@click.option("--target-torch", metavar="X.Y", default=None, callback=lambda ctx, param, v: _torch_version(v),
              help="The oldest PyTorch the code must run on (as the `target-torch` key): rules whose finding "
                   "does not exist there are off, and fixes use only what it has.")
@click.option("--line-length", type=click.IntRange(1, 320), default=None,
              help="How wide a line a fix may write before it puts a call's arguments one per line (as the "
                   "`line-length` key; default 88).")
@click.option("--ignore-noqa", is_flag=True, help="Report (and fix) findings that `# noqa` comments suppress.")
@click.option("--statistics", is_flag=True, help="Print counts per rule instead of findings.")
@click.option("--show-fixes", is_flag=True, default=None, help="List the fixes that were applied.")
@click.option("--output-format", type=SuggestingChoice(sorted(FORMATS)), default=None,
              help="How to report (default: the configuration's `output-format`, else concise).")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False),
              help="Write the report to this file (in --output-format) instead of standard output.")
@click.option("--config", "config_args", multiple=True, metavar="PATH | KEY=VALUE",
              help="A configuration file to use for every file, or a TOML `key = value` pair set on top of each "
                   "file's configuration (`--config \"TL104.min-prefetch-factor = 8\"`); may be repeated.")
@click.option("--isolated", is_flag=True, help="Read no configuration file (defaults and the command line only).")
@click.option("-n", "--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar="TRAINLINT_CACHE_DIR", default=None,
              help="Where the cache lives (env: TRAINLINT_CACHE_DIR) [default: .trainlint_cache in the project "
                   "root, the folder of the configuration file].")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: one per CPU; 1 runs in this process).")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to files named on the command line too.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("-s", "--silent", is_flag=True,
              help="Print nothing, not even findings; the exit code still tells (1: findings). -o FILE is "
                   "still written, as is the fixed source of --stdin-filename --fix; usage and configuration "
                   "errors are still printed.")
@click.option("-w", "--watch", is_flag=True, help="Check again whenever a checked file or a configuration file changes.")
@click.option("--exclude", multiple=True,
              help="Exclude patterns that replace the configuration's `exclude` (and the defaults: .git, "
                   ".venv, build, ...); --extend-exclude adds to them.")
@click.option("--extend-exclude", multiple=True, help="Extra exclude patterns.")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None,
              help="Leave out what .gitignore ignores in folders (default: the configuration's "
                   "`respect-gitignore`, else yes).")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False),
              help="Report only findings not recorded in FILE (a missing FILE is written with the current findings).")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: TLxxx` comments that suppress every current finding.")
@click.option("--show-files", is_flag=True, help="List the files a check would read, and stop.")
@click.option("--show-settings", is_flag=True,
              help="Print the settings for the first file a check would read (config file, rules, excludes), and stop.")
@click.option("--stdin-filename", type=click.Path(), default=None,
              help="Read the source from standard input (also `-` as the only PATH); PATH names it for "
                   "configuration, excludes and output. With --fix the fixed source goes to standard output "
                   "and the report to standard error.")
@click.pass_obj
def check(process, paths, fix, fix_only, unsafe_fixes, diff, select, extend_select, ignore, extend_per_file_ignores,
          fixable, extend_fixable, unfixable, exit_zero,
          exit_non_zero_on_fix, target_torch, line_length, ignore_noqa, statistics, show_fixes, output_format, output_file, config_args, isolated, no_cache, cache_dir, jobs, force_exclude,
          quiet, silent, watch, exclude, extend_exclude, respect_gitignore, baseline_path, add_noqa, show_files, show_settings,
          stdin_filename) -> None:
    """Check PATHS (default: the current folder) for training-efficiency problems."""
    if watch:
        from trainlint.watch import watch_command

        if stdin_filename is not None or STDIN_NAME in paths or add_noqa or show_files or show_settings or silent:
            raise click.UsageError("--watch checks files again as they change; it cannot go with standard input, "
                                   "--add-noqa, --show-files, --show-settings or --silent")
        args = click.get_current_context().meta.get("trainlint.args") or ["check", *paths]
        sys.exit(watch_command(list(paths) or ["."], [a for a in args if a not in ("-w", "--watch")]))
    own_process = process is not None
    if own_process:
        process.checked = True
    overrides = {"select": select, "extend_select": extend_select, "ignore": ignore,
                 "extend_per_file_ignores": extend_per_file_ignores, "fixable": fixable,
                 "extend_fixable": extend_fixable, "unfixable": unfixable,
                 "exclude": _from_cwd(exclude) or None, "extend_exclude": _from_cwd(extend_exclude) or None,
                 "ignore_noqa": ignore_noqa or None, "target_torch": target_torch, "line_length": line_length,
                 "respect_gitignore": respect_gitignore}
    from_stdin = stdin_filename is not None or STDIN_NAME in paths
    if from_stdin and (set(paths) - {STDIN_NAME} or add_noqa):
        what = "--add-noqa" if add_noqa else "other PATHS"
        raise click.UsageError(f"standard input (`-` or --stdin-filename) is checked alone; {what} cannot go with it")
    if add_noqa and (fix or fix_only or diff or baseline_path):
        # --add-noqa writes files; with --diff (which promises to write nothing) or --fix (whose
        # edits would move the rows the comments go on) the outcome would not be what was asked,
        # and --baseline would be neither read nor written (the comments go on every finding).
        other = "--diff" if diff else "--fix" if fix else "--fix-only" if fix_only else "--baseline"
        raise click.UsageError(f"--add-noqa cannot go with {other}")
    fixed_source = None
    cache = None
    try:
        config_path, inline = config_arguments(config_args, isolated)
        resolver = SettingsResolver(config_path, overrides, inline, isolated)
        # What the command line leaves unsaid, the configuration of the folder the run starts in says.
        project = resolver.for_directory(".")
        fix_only = fix is not False and bool(project.fix_only if fix_only is None else fix_only) and not add_noqa
        fix = fix if fix is not None else (bool(project.fix) or fix_only) and not add_noqa
        unsafe_fixes = unsafe_fixes if unsafe_fixes is not None else bool(project.unsafe_fixes)
        show_fixes = show_fixes or bool(project.show_fixes)
        if statistics and not output_format and project.output_format not in (None, *STATISTICS_FORMATS):
            # A CI format set in the configuration (`output-format = "github"`) is for reports:
            # `--statistics` typed by hand prints its table instead of refusing the run.
            output_format = "concise"
        output_format = output_format or project.output_format or "concise"
        if statistics and fix_only:
            raise click.UsageError("--fix-only reports no leftover finding; --statistics would count none")
        if statistics and output_format not in STATISTICS_FORMATS:
            raise click.UsageError(f"--statistics prints in the output formats {', '.join(STATISTICS_FORMATS)}; "
                                   f"not {output_format}")
        if show_files or show_settings:
            run_values = {"fix": fix, "fix_only": fix_only, "unsafe_fixes": unsafe_fixes, "show_fixes": show_fixes,
                          "output_format": output_format}
            _show(list(paths) or ["."], resolver, force_exclude, show_settings, stdin_filename, run_values)
        matched = _baseline_match(baseline_path) if baseline_path and (fix or diff) else None
        mode = Mode(fix=fix and not diff, unsafe_fixes=unsafe_fixes, diff=diff, baseline=matched)
        if from_stdin:
            result, fixed_source = check_stdin(sys.stdin.buffer.read(), stdin_filename or STDIN_NAME, resolver, mode,
                                               force_exclude=force_exclude)
        else:
            cache = None if no_cache else Cache(cache_dir or default_dir(isolated))
            result = run(list(paths) or ["."], resolver, mode, force_exclude=force_exclude, jobs=jobs, cache=cache,
                         own_process=own_process)
    except (ConfigError, RegistryError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    note = _notes(silent)
    if add_noqa:
        from trainlint.noqa import add_noqa as insert_noqa

        problems = list(result.errors)
        count = insert_noqa(result, problems)
        for problem in problems:
            note(str(problem))
        note(f"Added {count} noqa directive{'' if count == 1 else 's'}.")
        sys.exit(2 if problems else 0)
    moves = [move for file_result in result.files for move in file_result.baseline_moves]
    if moves:  # recorded findings on lines the fixes rewrote: the baseline follows them
        from trainlint.baseline import BaselineError, follow_moves

        try:
            count = follow_moves(baseline_path, moves)
        except BaselineError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        note(f"Updated {count} baseline entr{'y' if count == 1 else 'ies'} whose line{'' if count == 1 else 's'} "
             f"the fixes rewrote in {baseline_path}.")
    if baseline_path and matched is None:  # with one, the run already left out what it records
        from trainlint.baseline import BaselineError, apply_baseline

        try:
            result, written = apply_baseline(result, baseline_path)
        except BaselineError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        if written is not None:
            note(f"Wrote {written} finding{'' if written == 1 else 's'} to the baseline {baseline_path}.")
    if fix_only:  # what is left is not reported, and is no reason to exit 1
        for file_result in result.files:
            file_result.diagnostics = []
    result.fix_only = fix_only
    result.statistics = statistics
    result.show_fixes = show_fixes
    result.unsafe_fixes = unsafe_fixes
    result.diff_mode = diff
    result.quiet = quiet
    for warning in result.warnings:
        note(warning)
    for error in result.errors:
        note(str(error))
    if cache is not None and cache.write_error is not None:
        note(f"warning: cannot write the cache at {cache.named}: {cache.write_error}")
    if not result.files and not from_stdin:
        note("warning: No Python files found under the given path(s)")
    # --diff: standard output is the patch, whatever the format; the summary goes to standard error.
    output = render("concise" if diff else output_format, result)
    if diff and not quiet:
        from trainlint.reporters.text import summary

        note("\n".join(summary(result)))
    if output_file is not None:
        try:
            # Its folder is made if missing, as Ruff does (`-o reports/trainlint.sarif` in CI).
            os.makedirs(os.path.dirname(os.path.abspath(output_file)), exist_ok=True)
            with open(output_file, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(click.unstyle(output))
        except OSError as exc:
            click.echo(f"error: {output_file}: cannot write the report: {exc.strerror or exc}", err=True)
            sys.exit(2)
        output = ""
    if silent:  # the report (the patch, with --diff) is not printed; the exit code below still tells
        output = ""
    if mode.fix and fixed_source is not None:
        # The source is standard output's content (an editor replaces its buffer with it): the
        # report goes to standard error, and the source is written as bytes, encoding kept.
        if output:
            click.echo(output, nl=False, err=True, color=_color())
        sys.stdout.flush()
        sys.stdout.buffer.write(fixed_source)
        sys.stdout.buffer.flush()
    elif output:
        click.echo(output, nl=False, color=_color())
    if exit_zero:
        sys.exit(0)
    if result.errors:
        sys.exit(2)
    if result.diagnostics and not diff:
        sys.exit(1)
    if diff and any(f.diff for f in result.files):
        sys.exit(1)
    if exit_non_zero_on_fix and result.fixed:
        sys.exit(1)
    sys.exit(0)


def _baseline_match(path: str):
    """--baseline FILE with --fix or --diff: the recorded findings, matched while fixing (so they
    are not fixed, and a fix of a new finding on their line does not make them new); None when
    FILE does not exist yet (it is written after the run). An unreadable FILE exits 2."""
    from trainlint.baseline import BaselineError, BaselineMatch

    if not os.path.exists(path):
        return None
    try:
        return BaselineMatch.read(path)
    except BaselineError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


def _notes(silent: bool):
    """How the run's messages on standard error (files that could not be checked, warnings, the
    --diff summary) are said: not at all with --silent. Usage and configuration errors are said
    anyway: the exit code 2 alone would not tell what to correct."""
    if silent:
        return lambda text: None
    return lambda text: click.echo(text, err=True)


def _color() -> bool | None:
    """Whether to keep the text report's colours: NO_COLOR says no, FORCE_COLOR yes
    (https://no-color.org, https://force-color.org); otherwise only on a terminal (None)."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return None


def _per_file_ignores(ctx, param, values) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """--extend-per-file-ignores GLOB:CODES values as `per-file-ignores` pairs. The glob is what
    comes before the last colon (a Windows path has one of its own); codes are checked as
    --ignore's, and the glob means what it means in the configuration (relative to its folder),
    except one starting at `.` or `..`, which is relative to the current folder (_from_cwd)."""
    pairs = []
    for value in values:
        pattern, colon, listed = value.rpartition(":")
        codes = tuple(c.strip() for c in listed.split(",") if c.strip())
        if not colon or not pattern.strip() or not codes:
            raise click.BadParameter(f"{value!r}: expected GLOB:CODES (for example \"tests/*:TL2,TL101\")",
                                     ctx=ctx, param=param)
        for code in codes:
            if not is_known_selector(code):
                raise click.BadParameter(f"{value!r}: {unknown_selector(code)}", ctx=ctx, param=param)
        negated = pattern.startswith("!")
        pattern = "!" * negated + _from_cwd((pattern[negated:],))[0]
        pairs.append((pattern, codes))
    return tuple(pairs) or None


def _from_cwd(patterns) -> tuple[str, ...]:
    """Globs given on the command line that start at `.` or `..` (`--extend-exclude ./legacy`)
    made absolute from the current folder, as Ruff reads them; other globs mean what they mean in
    the configuration. Written so, they matched nothing before."""
    return tuple(os.path.normpath(os.path.abspath(p)).replace(os.sep, "/")
                 if p in (".", "..") or p.startswith(("./", "../")) else p for p in patterns)


def _torch_version(value: str | None) -> str | None:
    from trainlint.config import TORCH_VERSION

    if value is not None and not TORCH_VERSION.match(value):
        raise click.BadParameter(f'{value!r}: expected a PyTorch version as "MAJOR.MINOR" (for example "2.1")')
    return value


def config_arguments(values: tuple[str, ...], isolated: bool = False) -> tuple[str | None, tuple[str, ...]]:
    """--config values: (the one configuration file, the inline `key = value` pairs). A value is a
    file when it names one or looks like one (a .toml name without `=`), as Ruff tells them apart."""
    files = [v for v in values if os.path.isfile(v) or ("=" not in v and v.endswith(".toml"))]
    if len(files) > 1:
        raise click.UsageError(f"--config names {len(files)} configuration files; give one")
    if files and isolated:
        raise click.UsageError("--isolated reads no configuration file; it cannot go with --config PATH")
    return (files[0] if files else None), tuple(v for v in values if v not in files)


def _show(paths, resolver, force_exclude, settings_only, stdin_filename, run_values) -> None:
    """--show-files / --show-settings: print, and exit (2 when a path does not exist). run_values:
    the keys that hold for the whole run, as resolved (--show-settings prints them as the run uses them)."""
    from trainlint.discovery import discover
    from trainlint.show import show_settings

    skipped: list[str] = []
    if stdin_filename is not None:
        files, missing = [stdin_filename], []
    else:
        # The files a folder walk leaves out (a broken symbolic link) get the check run's warning:
        # before, --show-files left them out without a word.
        files, missing = discover([p for p in paths if p != STDIN_NAME], resolver, force_exclude, skipped=skipped)
    for warning in skipped:
        click.echo(warning, err=True)
    for path in missing:
        click.echo(f"{path}: error: no such file or directory", err=True)
    if settings_only:
        if not files:
            click.echo("error: no file to show the settings of", err=True)
            sys.exit(2)
        click.echo("\n".join(show_settings(files[0], resolver.for_path(files[0]), run_values)))
    else:
        click.echo("".join(f"{path}\n" for path in files), nl=False)
    sys.exit(2 if missing else 0)


@cli.command(short_help="Explain a rule, or list them all.")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@click.option("--output-format", type=SuggestingChoice(["text", "json"]), default="text", show_default=True)
def rule(code, show_all, output_format) -> None:
    """Explain a rule (`trainlint rule TL101`), or list them all (`--all`)."""
    if show_all and code:
        raise click.UsageError("give a rule code or --all, not both")
    if show_all:
        rules = list(all_rules())
    elif code:
        found = get_rule(code)
        if found is None and is_known_selector(code):
            _rule_prefix(code, output_format)
            return
        if found is None:
            hint = rule_hint(code) or _check_hint(code) or "; `trainlint rule --all` lists them"
            click.echo(f"error: unknown rule code or name {code!r}{hint}", err=True)
            sys.exit(2)
        rules = [found]
    else:
        click.echo(f"error: give a rule code, or --all{_check_hint('rule')}", err=True)
        sys.exit(2)
    if output_format == "json":
        data = [_rule_dict(r) for r in rules]
        click.echo(json.dumps(data if show_all else data[0], indent=2))
        return
    for r in rules:
        click.echo(r.explanation())


def _check_hint(path: str) -> str:
    """For a word `trainlint rule` took that names a file or folder here (`trainlint rule` run in a
    project with a `rule/` folder, meant as `trainlint [PATHS]`): how to check it."""
    return f"; to check `{path}`, run `trainlint check {path}`" if os.path.exists(path) else ""


def _rule_prefix(prefix: str, output_format: str) -> None:
    """`trainlint rule TL1` (or `ALL`): a prefix (valid in --select) names several rules, so
    instead of "unknown rule code" (what it said before) list the rules it selects, one line
    each, and point at the command that explains one; json lists them as `--all` does."""
    rules = [r for r in all_rules() if prefix == "ALL" or r.code.startswith(prefix)]
    if output_format == "json":
        click.echo(json.dumps([_rule_dict(r) for r in rules], indent=2))
        return
    width = max(len(f"{r.code} {r.name}") for r in rules)
    what = "ALL selects every rule" if prefix == "ALL" else f"{prefix} is a prefix that selects {len(rules)} rule" \
        + ("" if len(rules) == 1 else "s")
    click.echo(f"{what}; `trainlint rule {rules[0].code}` explains one:")
    for r in rules:
        click.echo(f"  {f'{r.code} {r.name}'.ljust(width)}  {r.summary}")


def _rule_dict(r) -> dict:
    return {
        "code": r.code,
        "name": r.name,
        "summary": r.summary,
        "default": r.default_enabled,
        "fix": r.fix_applicability,
        "source": r.source,
        "options": {k: {"default": o.default, "minimum": o.minimum, "description": o.description}
                    for k, o in r.options.items()},
        "explanation": r.docs,
        "url": r.url(),
    }


class _Process:
    """What main(), the console entry point, tells the commands through click's context object:
    this process exists only for this command. A check may then tune the garbage collector for
    throughput, and the process leaves without interpreter finalization (tearing down libcst's
    and the run's objects costs tens of milliseconds and shows nothing). A check run any other
    way (CliRunner in tests, another program) has no such object and leaves its process as it was."""

    checked = False  # a check ran: main() may leave without finalization


def main() -> None:
    process = _Process()
    try:
        cli(prog_name="trainlint", obj=process)
    except SystemExit as exc:
        if process.checked:
            _leave(exc.code)
        raise


def _leave(code) -> None:
    """Exit now, as `sys.exit(code)` would, minus finalization: every file and cache entry is
    written and closed by now; only the output buffers need flushing."""
    status = 0 if code is None else code if isinstance(code, int) else 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # a reader that went away (`trainlint | head`) is not an error of the run
    os._exit(status)
