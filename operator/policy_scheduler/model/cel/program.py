"""CEL expressions compiled once and evaluated with a cost limit, on celpy (cel-python).

celpy parses an expression into a tree and interprets it; this module adds what a Kubernetes CEL
environment has and celpy has not: the Kubernetes libraries (`library.py`), cel-go's `cel.bind`
macro, a runtime cost limit, a check at compile time that every function called exists, and
errors in cel-go's words. docs/architecture.md says why celpy, with the measurements, and what
differs from cel-go (no static type checking, no optional syntax, a cost that counts celpy's
operations rather than cel-go's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import lark
from celpy import Environment, celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import Activation, CELEvalError, Evaluator, base_functions

from policy_scheduler.model.cel.library import FUNCTIONS

MAX_EXPRESSION_LENGTH = 10 * 1024
"""kube's limit on a selector's length (resourceapi.CELSelectorExpressionMaxLength)."""

DEFAULT_COST_LIMIT = 1_000_000
"""kube's runtime cost limit per selector evaluation (resourceapi.CELSelectorExpressionMaxCost)."""

# Called by name but not functions: celpy's macros, and `cel.bind`, which this module adds.
_MACROS = frozenset({"has", "dyn", "map", "filter", "all", "exists", "exists_one", "bind"})
# celpy's own extras that CEL does not have; kube's lists library gives `min` its meaning.
_NOT_CEL = frozenset({"reduce"})
_KNOWN = frozenset(base_functions) | frozenset(FUNCTIONS) | _MACROS


class CelError(Exception):
    """A selector that does not compile or fails at runtime; str(error) / .message is kube's text.

    `phase` says which: the allocator reports a compile error as "CEL compile error: ..." and a
    runtime error as "CEL runtime error: ..." (structured allocator's words).
    """

    def __init__(self, message: str, phase: Literal["compile", "runtime"] = "runtime") -> None:
        super().__init__(message)
        self.message = message
        self.phase = phase


class _CostLimitError(Exception):
    """Raised through celpy's evaluation, which catches only its own errors, when over budget."""


class _Budget:
    """An evaluation's cost so far; `costly` holds the ids of its program's nodes that cost 1."""

    __slots__ = ("costly", "limit", "spent")

    def __init__(self, limit: int, costly: frozenset[int]) -> None:
        self.limit = limit
        self.costly = costly
        self.spent = 0


# The value of each literal node of the compiled programs (values are immutable).
_LITERALS: dict[lark.Tree[Any], Any] = {}


class _KubeEvaluator(Evaluator):
    """celpy's interpreter with a cost budget, `cel.bind`, and kube's list `min`/`max`.

    Every tree node that does something costs 1: an operator, a call, a selection, an index, a
    literal, a name; celpy's grammar nests many pass-through nodes, which cost nothing.
    """

    def __init__(self, ast: lark.Tree[Any], activation: Activation, budget: _Budget) -> None:
        super().__init__(ast, activation)
        self.budget = budget

    def sub_evaluator(self, ast: lark.Tree[Any]) -> Evaluator:
        return _KubeEvaluator(ast, self.activation, self.budget)

    def _visit_tree(self, tree: lark.Tree[Any]) -> Any:
        # lark's Interpreter reaches every node here, through visit() or visit_children().
        budget = self.budget
        if id(tree) in budget.costly:
            budget.spent += 1
            if budget.spent > budget.limit:
                raise _CostLimitError
        return super()._visit_tree(tree)

    def literal(self, tree: lark.Tree[Any]) -> Any:
        # celpy converts a literal's text again at every evaluation (a string's escapes
        # included); a literal's value never changes.
        value = _LITERALS.get(tree)
        if value is None:
            value = super().literal(tree)
            if not isinstance(value, CELEvalError):
                _LITERALS[tree] = value
        return value

    def member_dot_arg(self, tree: lark.Tree[Any]) -> Any:
        member_tree, name = tree.children[0], tree.children[1]
        if isinstance(name, lark.Token) and name.value == "bind" and _is_ident(member_tree, "cel"):
            return self._bind(tree)
        if isinstance(name, lark.Token) and name.value in ("min", "max"):
            # celpy's own `min()` macro would shadow kube's lists library function.
            member = self.visit(member_tree)
            args = [] if len(tree.children) < 3 else self.visit_children(tree.children[2])
            return self.method_eval(member, name, args)
        return super().member_dot_arg(tree)

    def _bind(self, tree: lark.Tree[Any]) -> Any:
        args = tree.children[2] if len(tree.children) > 2 else None
        if not isinstance(args, lark.Tree) or len(args.children) != 3:
            return CELEvalError("cel.bind() requires 3 arguments")
        var_tree, init_tree, body_tree = args.children
        idents = list(var_tree.find_data("ident")) if isinstance(var_tree, lark.Tree) else []
        if len(idents) != 1:
            return CELEvalError("cel.bind() variable names must be simple identifiers")
        name = str(idents[0].children[0])
        value = self.visit(init_tree)
        if isinstance(value, CELEvalError):
            return value
        return self.sub_evaluator(body_tree).evaluate({name: value})


def _is_ident(tree: Any, name: str) -> bool:
    while isinstance(tree, lark.Tree) and tree.data in ("member", "primary"):
        tree = tree.children[0]
    return isinstance(tree, lark.Tree) and tree.data == "ident" and str(tree.children[0]) == name


_ENVIRONMENT = Environment()
# What every evaluation starts from: the functions, and no variable. An evaluation chains its
# variables onto it rather than copying it (celpy's Runner builds and copies one per evaluation).
_BASE = Activation(functions=FUNCTIONS)


class Program:
    """One compiled expression; `evaluate` runs it on its variables within a cost limit."""

    __slots__ = ("_ast", "_costly", "expression")

    def __init__(self, expression: str, ast: lark.Tree[Any]) -> None:
        self.expression = expression
        self._ast = ast
        # The program keeps its tree, so the ids of the nodes stay theirs.
        self._costly = frozenset(
            id(node)
            for node in ast.iter_subtrees()
            if len(node.children) != 1 or node.data in ("ident", "literal")
        )

    def evaluate(self, variables: Mapping[str, Any], cost_limit: int) -> Any:
        """The expression's value; raises CelError (runtime) with cel-go's text."""
        activation = _BASE.nested_activation(vars=variables)
        evaluator = _KubeEvaluator(self._ast, activation, _Budget(cost_limit, self._costly))
        try:
            return evaluator.evaluate()
        except _CostLimitError:
            raise CelError("operation cancelled: actual cost limit exceeded") from None
        except CELEvalError as e:
            raise CelError(kube_text(e)) from None
        except RecursionError:
            raise CelError("operation cancelled: actual cost limit exceeded") from None


def compile_expression(expression: str) -> Program:
    """Parse `expression` and check the functions it calls; raises CelError (compile)."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CelError(
            f"compilation failed: expression too long ({len(expression)} bytes, "
            f"more than {MAX_EXPRESSION_LENGTH})",
            "compile",
        )
    try:
        ast = _ENVIRONMENT.compile(expression)
    except CELParseError as e:
        line, column = getattr(e, "line", None) or 1, getattr(e, "column", None) or 1
        first = str(e.args[0]).splitlines()[0] if e.args else "invalid expression"
        raise CelError(
            f"compilation failed: ERROR: <input>:{line}:{column}: Syntax error: {first}", "compile"
        ) from None
    for call in (*ast.find_data("member_dot_arg"), *ast.find_data("ident_arg")):
        token = call.children[1] if call.data == "member_dot_arg" else call.children[0]
        name = str(token)
        if call.data == "member_dot_arg" and _is_ident(call.children[0], "strings"):
            name = f"strings.{name}"
        if name in _KNOWN and name not in _NOT_CEL:
            continue
        line = getattr(token, "line", 1)
        column = getattr(token, "column", 1)
        raise CelError(
            f"compilation failed: ERROR: <input>:{line}:{column}: "
            f"undeclared reference to '{token}' (in container '')",
            "compile",
        )
    return Program(expression, ast)


def kube_text(error: CELEvalError) -> str:
    """A celpy error in cel-go's words (the texts kube's tests expect)."""
    message = str(error.args[0]) if error.args else "evaluation error"
    cause = error.args[1] if len(error.args) > 1 else None
    details = error.args[2] if len(error.args) > 2 else None
    if message.startswith("no such member in mapping: ") or message == "no such key":
        key = details[0] if isinstance(details, tuple) and details else message.split(": ", 1)[-1]
        return f"no such key: {str(key).strip(chr(39))}"
    if cause is ZeroDivisionError or "divide by zero" in message:
        return "division by zero"
    if message == "return error for overflow":
        return "return error for overflow" if cause is ValueError else "integer overflow"
    if message == "invalid_argument" and cause is IndexError:
        return "index out of range"
    if message.startswith("no such overload") or message.startswith("found no matching overload"):
        return "no such overload"
    return message


def as_bool(value: Any) -> bool:
    """A selector's result as kube's DeviceMatches takes it: a bool, or a runtime error."""
    if isinstance(value, celtypes.BoolType | bool):
        return bool(value)
    raise CelError(
        f"CEL result of type {type_name(value)} could not be converted to bool: "
        f"type conversion error from {type_name(value)} to 'bool'"
    )


def type_name(value: Any) -> str:
    """cel-go's name of a value's type, for messages."""
    names: list[tuple[type, str]] = [
        (celtypes.BoolType, "bool"),
        (celtypes.IntType, "int"),
        (celtypes.UintType, "uint"),
        (celtypes.DoubleType, "double"),
        (celtypes.StringType, "string"),
        (celtypes.BytesType, "bytes"),
        (celtypes.ListType, "list"),
        (celtypes.MapType, "map"),
    ]
    for kind, name in names:
        if isinstance(value, kind):
            return name
    return type(value).__name__
