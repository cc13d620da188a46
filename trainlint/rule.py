"""What a rule is: a small declarative class with its docs, options, cases and visitor methods.

A rule defines `visit_<NodeType>(self, node)` methods for the libcst node types it inspects
(e.g. `visit_Call`). The engine runs every enabled rule over the file's node index in one pass;
rules ask the shared analyses on `self.ctx` and call `self.report(...)`. Rules never read
files, parse or print.

Cases (`valid`, `invalid`) live on the rule and become tests automatically
(tests/test_rule_cases.py): a valid case must produce no finding of the rule; an invalid case
must produce at least one, and, when `fixed` is given, the fix (with unsafe fixes) must turn
the code into exactly that text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import libcst as cst

from trainlint.diagnostics import Applicability

DOCS_URL = "https://github.com/trainlint/trainlint/blob/main/docs/rules.md#{code}"


@dataclass(frozen=True)
class Option:
    default: Any
    type: type | tuple[type, ...]
    description: str
    # The smallest value accepted (config.py rejects a smaller one): an interval that becomes
    # `step % 0` in a fix raises ZeroDivisionError when the fixed script runs.
    minimum: int | float | None = None

    def line(self, key: str) -> str:
        """The option as a Markdown list item (`trainlint rule CODE` and docs/rules.md alike)."""
        least = f", at least `{self.minimum!r}`" if self.minimum is not None else ""
        return f"- `{key}` (default `{self.default!r}`{least}): {self.description}"


@dataclass(frozen=True)
class Valid:
    code: str
    options: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)  # Settings fields for this case, e.g. {"target_gpu": "ampere"}


# Invalid.fixed for a case whose findings must carry no fix that gets written (checked).
NO_FIX = "<no fix>"


@dataclass(frozen=True)
class Invalid:
    code: str
    # Expected text after applying fixes; NO_FIX: none of the rule's fixes is written; None: the
    # fix is not checked.
    fixed: str | None = None
    options: dict = field(default_factory=dict)
    message: str | None = None  # a substring the message must contain
    settings: dict = field(default_factory=dict)  # Settings fields for this case, e.g. {"target_gpu": "ampere"}


def in_training_loop(body: str) -> str:
    """A rule case: a tiny training loop (backward and optimizer step every iteration, `step` as
    the counter) ending with `body`, which may span lines."""
    return (
        "import torch\n"
        "for step, (x, y) in enumerate(loader):\n"
        "    loss = model(x, y)\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    " + body.replace("\n", "\n    ") + "\n"
    )


@dataclass
class FixSpec:
    """A fix as rules describe it: replace these nodes with these nodes (or code)."""

    applicability: Applicability
    message: str
    replacements: list[tuple[cst.CSTNode, cst.CSTNode | str]]
    follow_up: bool = False  # see diagnostics.Fix.follow_up


@dataclass
class Finding:
    """A finding before positions are resolved (rules hold nodes, not offsets)."""

    code: str
    name: str
    node: cst.CSTNode
    message: str
    fix: FixSpec | None = None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one line: what it flags
    docs: ClassVar[str]  # markdown: What it does / Why is this bad / Example / Use instead / Fix safety
    # Sections of the training-efficiency article the rule comes from (None: a rule about
    # trainlint's own comments, such as TL001).
    source: ClassVar[str | None]
    default_enabled: ClassVar[bool] = True
    fix_applicability: ClassVar[str] = "none"  # safe | unsafe | suggestion | none (as rules.md states it)
    # Rules that only look inside hot loops: the file must also mention a backward or step call.
    needs_hot_loop: ClassVar[bool] = False
    # The PyTorch release the finding exists from (a deprecation, an API): with `target-torch`
    # older than this, the rule is off.
    requires_torch: ClassVar[str | None] = None
    # Substrings of which a file must hold one for the rule to run on it (or a tuple of substrings
    # it must hold all of): the engine's prefilter, before any parsing. Plain `in` tests: they
    # run on every file.
    triggers: ClassVar[tuple[str | tuple[str, ...], ...]] = ()
    # A rule that judges the file's suppression comments once every other rule has run (TL001):
    # it has no visitors; the engine reports it from what the suppressions did (engine.lint_text).
    audits_suppressions: ClassVar[bool] = False
    options: ClassVar[dict[str, Option]] = {}
    valid: ClassVar[list] = []
    invalid: ClassVar[list] = []

    def __init__(self, ctx, options: dict[str, Any]) -> None:
        self.ctx = ctx
        self.opts = options
        self.findings: list[Finding] = []

    @classmethod
    def facts(cls, emphasis: str = "") -> str:
        """One line for `trainlint rule` and docs/rules.md: fix, default, source, PyTorch floor."""
        torch = f" Applies to PyTorch {cls.requires_torch} and later (`target-torch`)." if cls.requires_torch else ""
        source = f" Source: the training-efficiency article, {cls.source}." if cls.source else ""
        return (f"Fix: {emphasis}{cls.fix_applicability}{emphasis}. {'On' if cls.default_enabled else 'Off'} by "
                f"default.{source}{torch}")

    @classmethod
    def explanation(cls) -> str:
        """The rule explained, in Markdown: `trainlint rule CODE`, and the editor's hover on a code."""
        options = ""
        if cls.options:
            options = "\n## Options\n" + "\n".join(o.line(k) for k, o in cls.options.items()) + "\n"
        return f"# {cls.name} ({cls.code})\n\n{cls.summary}\n\n{cls.facts()}\n\n{cls.docs.strip()}\n{options}"

    @classmethod
    def options_problem(cls, values: dict[str, Any]) -> str | None:
        """What is wrong with the rule's option values taken together (each one was checked on its
        own as it was read), or None; config.py refuses the configuration with it."""
        return None

    @classmethod
    def url(cls) -> str:
        return DOCS_URL.format(code=cls.code.lower())

    @classmethod
    def visited_types(cls) -> dict[type, str]:
        """libcst node type -> method name, from the rule's visit_<Type> methods."""
        out = {}
        for attr in dir(cls):
            if attr.startswith("visit_"):
                node_type = getattr(cst, attr[len("visit_"):], None)
                if node_type is None:
                    raise TypeError(f"{cls.__name__}.{attr}: libcst has no node type {attr[6:]!r}")
                out[node_type] = attr
        return out

    def report(self, node: cst.CSTNode, message: str, fix: FixSpec | None = None) -> None:
        self.findings.append(Finding(self.code, self.name, node, message, fix))

    def fix(self, applicability: Applicability, message: str, *replacements, follow_up: bool = False) -> FixSpec:
        # A call that replaces part of a larger value may take the whole value along, laid out as
        # Black would (FileContext.call_replacement); any other replacement stands as written.
        call_replacement = self.ctx.call_replacement
        return FixSpec(applicability, message, [
            call_replacement(old, new) if isinstance(new, cst.Call) else (old, new) for old, new in replacements],
            follow_up)


def target_allows(ctx, version: str) -> bool:
    """Whether the code being checked may use what PyTorch `version` brought (`target-torch`;
    without one, yes): a fix is spelled with what the target has."""
    from trainlint.config import torch_at_least

    # getattr: a context built without settings (library callers) targets a current PyTorch.
    return torch_at_least(getattr(ctx.settings, "target_torch", None), version)
