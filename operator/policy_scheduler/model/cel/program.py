"""CEL expressions compiled once and evaluated with a cost limit, on celpy (cel-python).

celpy parses an expression into a tree and interprets it; this module adds what a Kubernetes CEL
environment has and celpy has not: the Kubernetes libraries (`library.py`), cel-go's `cel.bind`
macro and optional syntax (`x.?f`, `x[?k]`), namespaced functions (`strings.quote`), a runtime
cost limit, a check at compile time that every name read and every function called is declared,
and errors in cel-go's words. docs/architecture.md says why celpy, with the measurements, and what
differs from cel-go (no static type checking, a cost that counts celpy's operations rather than
cel-go's).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Literal

import lark
import lark.exceptions
from celpy import Environment, celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import Activation, CELEvalError, Evaluator, base_functions

from policy_scheduler.model.cel.library import FUNCTIONS, OPT_SELECT, OptionalValue, opt_field

MAX_EXPRESSION_LENGTH = 10 * 1024
"""kube's limit on a selector's length (resourceapi.CELSelectorExpressionMaxLength)."""

DEFAULT_COST_LIMIT = 1_000_000
"""kube's runtime cost limit per selector evaluation (resourceapi.CELSelectorExpressionMaxCost)."""

# Macros whose first argument names a variable for the others.
_BINDING_MACROS = frozenset({"map", "filter", "all", "exists", "exists_one", "bind"})
# Names of types, which an expression may read (`type(x) == int`).
_TYPE_NAMES = frozenset(
    {"bool", "int", "uint", "double", "string", "bytes", "list", "map", "null_type", "type"}
)

# The prefixes of namespaced functions (`strings.quote`, `optional.of`).
_NAMESPACES = ("strings", "optional")

# Called by name but not functions: celpy's macros, and `cel.bind`, which this module adds.
_MACROS = _BINDING_MACROS | {"has", "dyn"}
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

    def macro_has_eval(self, exprlist: lark.Tree[Any]) -> celtypes.BoolType:
        # has(m.f) on a map tests whether the key is there (celpy tests whether m.f evaluates,
        # which `device.attributes`' empty map for an unknown domain would make true).
        node: Any = exprlist.children[0] if exprlist.children else None
        while isinstance(node, lark.Tree) and len(node.children) == 1:
            node = node.children[0]
        if isinstance(node, lark.Tree) and node.data == "member_dot":
            target = self.visit(node.children[0])
            if isinstance(target, celtypes.MapType):
                return celtypes.BoolType(str(node.children[1]) in target)
        return super().macro_has_eval(exprlist)

    def member_dot(self, tree: lark.Tree[Any]) -> Any:
        # A field of an optional is an optional (cel-go's `x.?a.b`); a field of a map is its
        # entry; anything else is celpy's business.
        member = self.visit(tree.children[0])
        name = celtypes.StringType(str(tree.children[1]))
        if isinstance(member, OptionalValue):
            return opt_field(member, name)
        if isinstance(member, celtypes.MapType):
            try:
                return member[name]
            except KeyError:
                return CELEvalError(f"no such member in mapping: {str(name)!r}", KeyError, None)
        return super().member_dot(tree)

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
        namespace = next((n for n in _NAMESPACES if _is_ident(member_tree, n)), None)
        if isinstance(name, lark.Token) and namespace is not None:
            # `strings.quote(s)`, `optional.of(v)`: a function of a namespace, which celpy
            # would take for a method of a variable of that name.
            args = [] if len(tree.children) < 3 else self.visit_children(tree.children[2])
            return self.function_eval(lark.Token("IDENT", f"{namespace}.{name}"), args)
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


def _capacity_domain(tree: Any) -> str | None:
    """The domain of ``device.capacity["domain"]``, when ``tree`` is that; else None."""
    tree = _unwrapped(tree)
    if not (isinstance(tree, lark.Tree) and tree.data == "member_index"):
        return None
    capacity = _unwrapped(tree.children[0])
    if not (
        isinstance(capacity, lark.Tree)
        and capacity.data == "member_dot"
        and str(capacity.children[1]) == "capacity"
        and _is_ident(capacity.children[0], "device")
    ):
        return None
    return _string_literal(tree.children[1])


def _string_literal(tree: Any) -> str | None:
    """The value of a string literal alone in ``tree`` (an index expression); else None."""
    while isinstance(tree, lark.Tree) and len(tree.children) == 1 and tree.data != "literal":
        tree = tree.children[0]
    if not (isinstance(tree, lark.Tree) and tree.data == "literal"):
        return None
    # A qualified name needs no escapes: a literal with any is not one.
    token = str(tree.children[0])
    if len(token) < 2 or token[0] not in "'\"" or token[-1] != token[0] or "\\" in token:
        return None
    return token[1:-1]


def _unwrapped(tree: Any) -> Any:
    while isinstance(tree, lark.Tree) and tree.data == "member" and len(tree.children) == 1:
        tree = tree.children[0]
    return tree


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

    def capacities_read(self) -> tuple[str, ...]:
        """The device capacities the expression reads, ``domain/name``, once each, in the
        order they are written:
        ``device.capacity["domain"].name`` and ``device.capacity["domain"]["name"]``."""
        found: list[tuple[int, str]] = []
        for node in self._ast.iter_subtrees():
            if node.data not in ("member_dot", "member_index") or len(node.children) != 2:
                continue
            domain = _capacity_domain(node.children[0])
            name = node.children[1]
            if node.data == "member_index":
                name = _string_literal(name)
            if domain is not None and isinstance(name, str) and name:
                # Where it starts in the text: the capacities in the order they are written.
                first = next(node.scan_values(lambda value: isinstance(value, lark.Token)))
                found.append((first.start_pos or 0, f"{domain}/{name}"))
        return tuple(dict.fromkeys(name for _, name in sorted(found)))

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


_OPERAND_END = re.compile(r"[\w)\]}'\"]")
_IDENT = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")


def _optional_syntax(expression: str) -> str:
    """`x.?f` as `x._optSelect("f")` and `x[?k]` as `x._optSelect(k)`, outside string literals.

    celpy's grammar has neither; the rewrite keeps every other character where it was (an
    optional element of a list or map literal is left, and fails to parse)."""
    if ".?" not in expression and "[?" not in expression:
        return expression
    out: list[str] = []
    closers: list[str] = []
    i, n = 0, len(expression)
    while i < n:
        c = expression[i]
        if c in "'\"":
            end = _string_end(expression, i)
            out.append(expression[i:end])
            i = end
            continue
        if expression.startswith(".?", i):
            ident = _IDENT.match(expression, i + 2)
            if ident:
                out.append(f'.{OPT_SELECT}("{ident.group()}")')
                i = ident.end()
                continue
        if c == "[":
            previous = "".join(out).rstrip()[-1:]
            if expression.startswith("[?", i) and _OPERAND_END.match(previous or " "):
                out.append(f".{OPT_SELECT}(")
                closers.append(")")
                i += 2
                continue
            closers.append("]")
        elif c == "]" and closers:
            out.append(closers.pop())
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _string_end(text: str, start: int) -> int:
    """The index after the string literal opening at `start` (raw prefixes need no care: a
    backslash before the quote only matters inside)."""
    quote = text[start] * 3 if text.startswith(text[start] * 3, start) else text[start]
    raw = start > 0 and text[start - 1] in "rR"
    i = start + len(quote)
    while i < len(text):
        if text[i] == "\\" and not raw:
            i += 2
            continue
        if text.startswith(quote, i):
            return i + len(quote)
        i += 1
    return len(text)


def _undeclared(ast: lark.Tree[Any], variables: Collection[str]) -> Any:
    """The first name `ast` reads that is neither a variable, nor one a macro binds, nor a
    namespace or type name; None if there is none. (Scopes are not followed: a macro's
    variable is taken as declared everywhere in the expression.)"""
    declared = {*variables, *_NAMESPACES, "cel", *_TYPE_NAMES}
    for call in ast.find_data("member_dot_arg"):
        if str(call.children[1]) in _BINDING_MACROS and len(call.children) > 2:
            first = call.children[2].children[0]
            if isinstance(first, lark.Tree):
                declared.update(str(ident.children[0]) for ident in first.find_data("ident"))
    for ident in ast.find_data("ident"):
        if str(ident.children[0]) not in declared:
            return ident.children[0]
    return None


def compile_expression(expression: str, variables: Collection[str] = ("device",)) -> Program:
    """Parse `expression` and check the names it reads and the functions it calls (`variables`
    are the names the environment declares); raises CelError (compile)."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CelError(
            f"compilation failed: expression too long ({len(expression)} bytes, "
            f"more than {MAX_EXPRESSION_LENGTH})",
            "compile",
        )
    try:
        ast = _ENVIRONMENT.compile(_optional_syntax(expression))
    except CELParseError as e:
        raise CelError(_syntax_error(expression, e), "compile") from None
    for call in (*ast.find_data("member_dot_arg"), *ast.find_data("ident_arg")):
        token = call.children[1] if call.data == "member_dot_arg" else call.children[0]
        name = str(token)
        namespace = next((n for n in _NAMESPACES if _is_ident(call.children[0], n)), None)
        if call.data == "member_dot_arg" and namespace is not None:
            name = f"{namespace}.{name}"
        if name not in _KNOWN or name in _NOT_CEL:
            raise _undeclared_error(token)
    token = _undeclared(ast, variables)
    if token is not None:
        raise _undeclared_error(token)
    return Program(expression, ast)


def _undeclared_error(token: Any) -> CelError:
    line, column = getattr(token, "line", 1), getattr(token, "column", 1)
    return CelError(
        f"compilation failed: ERROR: <input>:{line}:{column}: "
        f"undeclared reference to '{token}' (in container '')",
        "compile",
    )


def _syntax_error(expression: str, error: CELParseError) -> str:
    """A parse error as cel-go words one: where, what, and the line with a caret under it."""
    line, column = getattr(error, "line", None) or 1, getattr(error, "column", None) or 1
    cause = error.__context__
    if isinstance(cause, lark.exceptions.UnexpectedCharacters):
        what = f"token recognition error at: '{cause.char}'"
    elif isinstance(cause, lark.exceptions.UnexpectedToken):
        token = cause.token
        what = f"mismatched input '{token if token.type != '$END' else '<EOF>'}'"
    else:
        what = "invalid expression"
    source = expression.splitlines()[line - 1] if expression.splitlines() else ""
    return (
        f"compilation failed: ERROR: <input>:{line}:{column}: Syntax error: {what}\n"
        f" | {source}\n | {'.' * (column - 1)}^"
    )


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
    if message.startswith("undeclared reference to "):
        # celpy appends its whole activation; cel-go names the container.
        return message.split(" (in ", 1)[0] + " (in container '')"
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
