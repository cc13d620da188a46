"""How the module uses parameters' gradients (`p.grad`).

Two fixes change what a `.grad` holds. TL302's `gradient_as_bucket_view=True` makes every
gradient a view into DDP's all-reduce bucket: code that replaces the gradient or its storage
(`p.grad = ...`, `p.grad.data = ...`) or detaches it in place breaks. TL602's
`zero_grad()` (set_to_none) leaves `None` where a zero tensor was: code that reads `p.grad`
without a None check crashes for a parameter that got no gradient on a step. Both are read over
the whole module, since the gradients are the parameters' wherever the code that touches them is.
"""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from trainlint.analysis.tree import TreeIndex, last_statement

# In-place methods that a gradient which is a view cannot take ("Can't detach views in-place").
_IN_PLACE_DETACH = ("detach_", "requires_grad_")
# Statements that leave the rest of a block unrun without failing: `if p.grad is None: continue`.
_SKIPS = (cst.Continue, cst.Return, cst.Break)
_NONE_TESTS = (cst.Is, cst.IsNot)


class Grads:
    def __init__(self, index: TreeIndex, code, assigned_values) -> None:
        self.index = index
        self.code = code  # node -> source text
        self.assigned_values = assigned_values  # FileContext.assigned_values

    @cached_property
    def uses(self) -> list[cst.Attribute]:
        """Every `X.grad` that is a gradient: not a call's function (`torch.autograd.grad(...)`,
        `jax.grad(f)`), in document order."""
        parent = self.index.parent
        return [node for node in self.index.nodes(cst.Attribute) if node.attr.value == "grad"
                and not (isinstance(parent.get(node), cst.Call) and parent[node].func is node)]

    @cached_property
    def replaced(self) -> cst.CSTNode | None:
        """The first statement part that replaces a gradient or its storage, or detaches it in
        place: the target of `p.grad = ...` or `p.grad.data = ...`, or the call
        `p.grad.detach_()`/`p.grad.requires_grad_(...)`; None when the module does none of these.
        (`p.grad.data *= s`, `p.grad.mul_(s)` change it in place, which a view allows.)"""
        parent = self.index.parent
        for grad in self.uses:
            up = parent.get(grad)
            if isinstance(up, cst.AssignTarget) and up.target is grad:
                return grad
            if isinstance(up, cst.Attribute) and up.value is grad:
                holder = parent.get(up)
                if up.attr.value == "data" and isinstance(holder, cst.AssignTarget) and holder.target is up:
                    return up
                if up.attr.value in _IN_PLACE_DETACH and isinstance(holder, cst.Call) and holder.func is up:
                    return holder
        return None

    @cached_property
    def unguarded_read(self) -> cst.Attribute | None:
        """The first `.grad` read that does not check for None first: any use but a None test
        (`p.grad is None`), an assignment to it (`p.grad = ...`) or a `del`, unless a None test of
        the same gradient guards it (`if p.grad is not None:`, `... for p in ps if p.grad is not
        None`, `p.grad is not None and p.grad.norm()`, an earlier `if p.grad is None: continue`),
        or it is read from a loop variable over parameters filtered by such a test
        (`filter(lambda p: p.grad is not None, params)`). Reading None where a zero tensor was
        (`p.grad.norm()`, `torch.stack([p.grad ...])`) fails, or prints something else."""
        for grad in self.uses:
            if self._is_read(grad) and not self._guarded(grad):
                return grad
        return None

    def _is_read(self, grad: cst.Attribute) -> bool:
        up = self.index.parent.get(grad)
        if isinstance(up, (cst.AssignTarget, cst.Del)):
            return False  # `p.grad = ...`, `del p.grad`: written, not read
        if isinstance(up, cst.ComparisonTarget):
            up = self.index.parent.get(up)
        if isinstance(up, cst.Comparison) and _none_test(up) is not None:
            return False  # the test itself
        return True

    def _guarded(self, grad: cst.Attribute) -> bool:
        """A None test of the same gradient runs first and keeps a None from reaching grad."""
        owner = _normal(self.code(grad.value))
        child: cst.CSTNode = grad
        for anc in self.index.ancestors(grad):
            if isinstance(anc, (cst.If, cst.IfExp)):
                if child is anc.body and "not None" in self._tests(anc.test, owner):
                    return True
                if child is anc.orelse and "None" in self._tests(anc.test, owner):
                    return True
            elif isinstance(anc, cst.BooleanOperation) and child is anc.right:
                wanted = "not None" if isinstance(anc.operator, cst.And) else "None"
                if wanted in self._tests(anc.left, owner):
                    return True
            elif isinstance(anc, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                if child is not anc.for_in and self._comprehension_guards(anc.for_in, owner):
                    return True
            elif isinstance(anc, cst.CompFor):
                earlier = []
                for test in anc.ifs:
                    if test is child:
                        break
                    earlier.append(test)
                if isinstance(child, cst.CompIf) and any("not None" in self._tests(test.test, owner) for test in earlier):
                    return True
            elif isinstance(anc, cst.For):
                if child is anc.body and _normal(self.code(anc.target)) == owner and self._filtered(anc.iter):
                    return True
            elif isinstance(anc, (cst.IndentedBlock, cst.Module)):
                position = next(i for i, stmt in enumerate(anc.body) if stmt is child)
                if any(self._skips_none(stmt, owner) for stmt in anc.body[:position]):
                    return True
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            child = anc
        return False

    def _comprehension_guards(self, clause: cst.CompFor, owner: str) -> bool:
        """A comprehension's clauses keep None out of its element: a `... if p.grad is not None`,
        or a loop over filtered parameters."""
        while clause is not None:
            if any("not None" in self._tests(test.test, owner) for test in clause.ifs):
                return True
            if _normal(self.code(clause.target)) == owner and self._filtered(clause.iter):
                return True
            clause = clause.inner_for_in
        return False

    def _filtered(self, values: cst.BaseExpression, depth: int = 0) -> bool:
        """Parameters kept only where a gradient is there: the expression (or what the name is
        assigned in its function) holds a `... .grad is not None` test, as in
        `filter(lambda p: p.grad is not None, params)` or `[p for p in ps if p.grad is not None]`."""
        if any(isinstance(node, cst.Comparison) and _none_test(node) == "not None"
               for node in self.index.walk(values)):
            return True
        if isinstance(values, cst.Name) and depth < 2:
            return any(self._filtered(value, depth + 1) for value in self.assigned_values(values))
        return False

    def _skips_none(self, stmt: cst.CSTNode, owner: str) -> bool:
        """`if p.grad is None: continue` (or return, break): what follows it runs only with a gradient."""
        if not isinstance(stmt, cst.If) or "None" not in self._tests(stmt.test, owner):
            return False
        return isinstance(last_statement(stmt.body), _SKIPS)

    def _tests(self, test: cst.BaseExpression, owner: str) -> set[str]:
        """The None tests of owner's gradient in test: "None" for `owner.grad is None`, "not None"
        for `owner.grad is not None`."""
        found = set()
        for node in self.index.walk(test):
            if isinstance(node, cst.Comparison):
                kind = _none_test(node)
                if kind is not None and _normal(self.code(_tested(node).value)) == owner:
                    found.add(kind)
        return found


def _tested(comparison: cst.Comparison) -> cst.Attribute:
    """The `.grad` a None test compares (`p.grad is None`, `None is not p.grad`)."""
    left = comparison.left
    return left if isinstance(left, cst.Attribute) else comparison.comparisons[0].comparator


def _none_test(comparison: cst.Comparison) -> str | None:
    """"None" for `X.grad is None`, "not None" for `X.grad is not None` (either side); else None."""
    if len(comparison.comparisons) != 1:
        return None
    target = comparison.comparisons[0]
    if not isinstance(target.operator, _NONE_TESTS):
        return None
    sides = (comparison.left, target.comparator)
    if not any(isinstance(side, cst.Name) and side.value == "None" for side in sides):
        return None
    if not any(isinstance(side, cst.Attribute) and side.attr.value == "grad" for side in sides):
        return None
    return "None" if isinstance(target.operator, cst.Is) else "not None"


def _normal(code: str) -> str:
    return "".join(code.split())
