"""Which expressions are tensors, well enough to keep the host-sync rules precise.

A value is a tensor when it comes from a torch call, a model or loss-function call, a tensor
method, arithmetic on a tensor, a batch drawn from a loader, or a name assigned from one of
those in the same function. Names like `loss` count by convention. Unknown stays unknown: the
rules only fire on values this analysis believes are tensors.
"""

from __future__ import annotations

import re

import libcst as cst

from trainlint.analysis.names import Names, bound_names, dotted
from trainlint.analysis.tree import TreeIndex

# torch functions that do not return tensors.
_NON_TENSOR_TORCH = re.compile(
    r"^torch\.(cuda\.|backends\.|distributed\.|device$|manual_seed|is_\w+|no_grad|"
    r"enable_grad|inference_mode|set_\w+|get_\w+|save$|load$|compile$|jit\.|optim\.|nn\.(?!functional)|"
    r"utils\.|autograd\.grad_mode|amp\.|profiler\.|Size$|dtype$|finfo|iinfo|numel$|use_deterministic)"
)
_TENSOR_METHODS = frozenset(
    {
        "mean", "sum", "detach", "to", "cuda", "float", "half", "bfloat16", "double", "long", "int",
        "clone", "view", "reshape", "squeeze", "unsqueeze", "abs", "sqrt", "exp", "log", "max", "min",
        "argmax", "argmin", "norm", "pow", "mul", "add", "sub", "div", "softmax", "log_softmax",
        "contiguous", "masked_fill", "flatten", "permute", "transpose", "type_as", "eq", "ne", "gt",
        "lt", "all", "any", "std", "var", "square", "sigmoid", "tanh", "relu", "t", "matmul",
    }
)
_MODEL_NAMES = re.compile(r"^(model|net|module|encoder|decoder|criterion|loss_fn|loss_func|lossfn|compute_loss|"
                          r"\w*_model|\w*_net|\w*criterion|\w*loss_fn)$", re.IGNORECASE)
# `loss_ce`, `loss_total` are losses; `loss_scale`, `loss_weight`, `loss_fn` are settings of one
# (deepspeed's `if self.clip_grad == 0.0 and self.loss_scale == 1.0:` compares two floats).
_TENSOR_NAMES = re.compile(r"^(loss|losses|\w+_loss|loss_(?!(scale|scaler|scaling|weights?|coeff?|factor|fn|func|"
                           r"function|type|cfg|config|name|kwargs|args|mode|reduction)$)\w+|logits|outputs?|preds?|"
                           r"predictions|grad_norm|total_norm|acc|accuracy|correct)$", re.IGNORECASE)
# torch functions that make a new tensor, on the CPU unless told a device.
_FACTORIES = re.compile(r"^torch\.(tensor|zeros|ones|full|empty|arange|linspace|logspace|eye|rand|randn|randint|"
                        r"randperm|from_numpy)$")
_LOADER_NAMES = re.compile(r"(loader|dataloader|batches|data_iter)", re.IGNORECASE)
_TENSOR_ATTRS = frozenset({"loss", "logits", "grad", "data", "last_hidden_state"})


class Tensors:
    def __init__(self, index: TreeIndex, names: Names) -> None:
        self.index = index
        self.names = names
        self._scopes: dict[cst.CSTNode | None, dict[str, list[cst.BaseExpression]]] = {}
        self._loop_targets: dict[cst.CSTNode | None, set[str]] = {}
        for assign in index.nodes(cst.Assign):
            scope = index.enclosing_function(assign)
            table = self._scopes.setdefault(scope, {})
            for target in assign.targets:
                self._bind(table, target.target, assign.value)
        for assign in index.nodes(cst.AugAssign):
            scope = index.enclosing_function(assign)
            name = dotted(assign.target)
            if name:
                self._scopes.setdefault(scope, {}).setdefault(name, []).append(assign.value)
        for assign in index.nodes(cst.AnnAssign):
            if assign.value is not None:
                scope = index.enclosing_function(assign)
                self._bind(self._scopes.setdefault(scope, {}), assign.target, assign.value)
        for loop in index.nodes(cst.For):
            iter_text = dotted(_strip_enumerate(loop.iter)) or ""
            if _LOADER_NAMES.search(iter_text) or _is_tqdm_over_loader(loop.iter):
                scope = index.enclosing_function(loop)
                targets = self._loop_targets.setdefault(scope, set())
                target = loop.target
                if isinstance(loop.iter, cst.Call) and dotted(loop.iter.func) == "enumerate" and \
                        isinstance(target, cst.Tuple) and len(target.elements) == 2:
                    target = target.elements[1].value
                for node in index.walk(target):
                    if isinstance(node, cst.Name):
                        targets.add(node.value)

    @staticmethod
    def _bind(table, target, value) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                # Unpacked results of a tensor expression (e.g. `logits, loss = model(x)`).
                Tensors._bind(table, element.value, value)
            return
        name = dotted(target)
        if name:
            table.setdefault(name, []).append(value)

    def is_tensor(self, expr: cst.BaseExpression, _depth: int = 0) -> bool:
        if _depth > 6:
            return False
        names = self.names
        if isinstance(expr, cst.Call):
            func = expr.func
            qn = names.qualified(func)
            if qn is not None:
                return qn.startswith("torch.") and not _NON_TENSOR_TORCH.match(qn)
            if isinstance(func, cst.Attribute):
                attr = func.attr.value
                if attr in _TENSOR_METHODS:
                    return self.is_tensor(func.value, _depth + 1) or attr in ("detach", "cuda", "float", "mean", "sum")
                if attr in ("item", "tolist", "numpy", "size", "dim", "numel"):
                    return False
            callee = dotted(func) or ""
            return bool(_MODEL_NAMES.match(callee.rsplit(".", 1)[-1]))
        if isinstance(expr, cst.BinaryOperation):
            return self.is_tensor(expr.left, _depth + 1) or self.is_tensor(expr.right, _depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self.is_tensor(expr.expression, _depth + 1)
        if isinstance(expr, cst.Subscript):
            return self.is_tensor(expr.value, _depth + 1)
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in _TENSOR_ATTRS:
                return True
            if expr.attr.value in ("shape", "dtype", "device", "ndim"):
                return False
        if isinstance(expr, (cst.Name, cst.Attribute)):
            name = dotted(expr)
            if name is None:
                return False
            last = name.rsplit(".", 1)[-1]
            scope = self.index.enclosing_function(expr)
            values = self._scopes.get(scope, {}).get(name, ())
            # What is assigned beats what the name suggests: `current_loss = loss.item()` is a
            # float (simpletransformers logs it every step; that read is TL201's, not TL202's),
            # and so is `prev_loss = loss` after `loss = loss.item()` (timm's optimizer tests).
            if values and all(self._host_here(v) for v in values):
                return False
            # `loss = loss.item()` earlier in the same straight-line code: a float from there on.
            if any(_host_value(v) for v in values):
                reaching = self._reaching_value(expr, name)
                if reaching is not None and _host_value(reaching):
                    return False
            if _TENSOR_NAMES.match(last):
                return True
            if name in self._loop_targets.get(scope, ()):
                return True
            for value in self._scopes.get(scope, {}).get(name, ()):
                if value is not expr and self.is_tensor(value, _depth + 1):
                    return True
        return False

    def _host_here(self, value: cst.BaseExpression) -> bool:
        """value is a Python number or string: one for certain, or a name that the assignment
        reaching it made one."""
        if _host_value(value):
            return True
        name = dotted(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
        reaching = self._reaching_value(value, name) if name else None
        return reaching is not None and _host_value(reaching)

    def on_host(self, expr: cst.BaseExpression) -> bool:
        """A tensor made here on the CPU: a torch factory called without `device=`
        (`torch.randint(n, (1,)).item()` reads no GPU), or an element of one."""
        while isinstance(expr, cst.Subscript):
            expr = expr.value
        return isinstance(expr, cst.Call) and bool(_FACTORIES.match(self.names.qualified(expr.func) or "")) \
            and not any(a.keyword is not None and a.keyword.value == "device" for a in expr.args) \
            and not any(a.star for a in expr.args)

    # Not variables.variable_uses: that lists a plain name's uses in document order, but this asks
    # which assignment reaches a use along the block structure, for dotted names too (`self.running =
    # self.running.item()`), and a closure that reads the name (where variable_uses gives up) does not
    # change which assignment reaches a use.
    def _reaching_value(self, use: cst.BaseExpression, name: str) -> cst.BaseExpression | None:
        """The value of the assignment `name = value` that every path to `use` passes last, when
        that is plain to see: an earlier statement of a block that holds the use, with no other
        assignment to name after it and no loop between it and the use (whose next iteration
        could bring a later value back). None when not that simple."""
        for anc, earlier in self.index.preceding(use):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.For, cst.While)):
                return None
            for stmt in earlier:
                value = _assigned_here(stmt, name)
                if value is not None:
                    return value
                if name in bound_names(stmt):
                    return None
        return None


def _assigned_here(stmt: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """The value when stmt is the simple statement `name = value`."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        assign = stmt.body[0]
        if len(assign.targets) == 1 and dotted(assign.targets[0].target) == name:
            return assign.value
    return None


def _host_value(expr: cst.BaseExpression) -> bool:
    """A Python number or string for certain: a literal, `.item()`/`.tolist()`, `float(...)` and
    friends, or arithmetic on those."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString)):
        return True
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("item", "tolist") and not expr.args:
            return True
        return isinstance(func, cst.Name) and func.value in ("float", "int", "len", "round", "bool", "str")
    if isinstance(expr, cst.UnaryOperation):
        return _host_value(expr.expression)
    if isinstance(expr, cst.BinaryOperation):
        return _host_value(expr.left) and _host_value(expr.right)
    return False


def _strip_enumerate(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Call) and expr.args and dotted(expr.func) in ("enumerate", "tqdm", "tqdm.tqdm", "iter"):
        expr = expr.args[0].value
    return expr


def _is_tqdm_over_loader(expr: cst.BaseExpression) -> bool:
    inner = _strip_enumerate(expr)
    return inner is not expr and bool(_LOADER_NAMES.search(dotted(inner) or ""))
