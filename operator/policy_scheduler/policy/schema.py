"""The SchedulingPolicy schema, read from the CRD and applied as the API server applies it.

``crds/schedulingpolicy.yaml`` is the one schema: the API server enforces it, and so do the
operator and ``policy-scheduler validate`` through this module, so what one accepts the other
accepts too. The CRD's structural OpenAPI v3 schema becomes a JSON Schema Draft 2020-12 validator:

- ``nullable`` and ``x-kubernetes-int-or-string`` become JSON Schema types;
- an object with ``properties`` rejects other fields unless ``x-kubernetes-preserve-unknown-fields``
  (the API server drops them, and refuses them under kubectl's default ``--validate=strict``);
- ``x-kubernetes-list-type: map`` rejects two items with the same keys;
- each CEL rule (``x-kubernetes-validations``) is evaluated with ``model/cel`` on the value it is
  attached to, and a failure reported in the API server's words ("spec.predicates: Invalid value:
  each predicate may be listed only once"); as the API server, no rule is checked while the
  object has a blocking schema error (an unsupported value, a missing field, a wrong type, too
  long, too many). A rule that does not compile fails loading.

Defaults are applied first, as the API server does; errors are kubectl-style field paths with short
messages ("spec.priorities[1].weight: must be between 1 and 100").
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import create

from policy_scheduler.framework.args import FieldError
from policy_scheduler.manifests import SAFE_LOADER
from policy_scheduler.model.cel import CelError, Program, compile_expression
from policy_scheduler.model.cel.program import DEFAULT_COST_LIMIT

GROUP = "policy-scheduler.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "SchedulingPolicy"

CRD_FILE = "schedulingpolicy.yaml"
_DISTRIBUTION = "policy-scheduler"


def crd_path() -> Path:
    """The CRD file: ``crds/`` of the source checkout this module runs from (which is also where an
    editable install runs from), else the copy that a wheel installs as a data file."""
    checkout = Path(__file__).resolve().parents[3] / "crds" / CRD_FILE
    if checkout.is_file():
        return checkout
    # Imported here: it costs a tenth of a second at every start of the offline commands.
    import importlib.metadata  # noqa: PLC0415

    try:
        installed = importlib.metadata.files(_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        installed = []
    for file in installed:
        if file.name == CRD_FILE:
            return Path(str(file.locate())).resolve()
    raise FileNotFoundError(
        f"{CRD_FILE} is neither in {checkout.parent} nor installed with {_DISTRIBUTION}"
    )


@functools.cache
def openapi_schema() -> Mapping[str, Any]:
    """The CRD's ``openAPIV3Schema`` of version :data:`VERSION`."""
    crd = yaml.load(crd_path().read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    (version,) = (v for v in crd["spec"]["versions"] if v["name"] == VERSION)
    schema: Mapping[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


# ---------------------------------------------------------------------------------------------
# Defaulting


def apply_defaults(policy: Mapping[str, Any]) -> dict[str, Any]:
    """A defaulted deep copy of ``policy``, as the API server stores it: a null in a field that is
    not nullable is dropped, then every absent field that has a default gets it, at every depth
    (in list items and in defaults themselves too)."""
    defaulted: dict[str, Any] = _plain(policy)
    _default(defaulted, openapi_schema())
    return defaulted


def _plain(value: Any) -> Any:
    """A deep copy made of dicts and lists only: the caller's object may be a read-only view (Kopf's
    body), and jsonschema recognises objects and arrays only as dict and list."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _default(value: Any, schema: Mapping[str, Any]) -> None:
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties", {})
        for key, sub in properties.items():
            if key in value and value[key] is None and not sub.get("nullable"):
                del value[key]
            if key not in value and "default" in sub:
                value[key] = _plain(sub["default"])
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key, extra)
            if isinstance(sub, Mapping):
                _default(item, sub)
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            _default(item, schema["items"])


# ---------------------------------------------------------------------------------------------
# The CEL rules (x-kubernetes-validations), evaluated as the API server evaluates them

# The schema errors after which the API server checks no CEL rule (apiextensions' hasBlockingErr:
# a value not supported, required, too long, too many, or of the wrong type).
_BLOCKING = frozenset({"enum", "required", "maxLength", "maxItems", "maxProperties", "type"})

# How the API server words a failed rule's `reason` (apimachinery's field.Error types).
_REASONS = {
    "FieldValueForbidden": "Forbidden",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
}

_RULE_KEYWORD = "x-kubernetes-validations"


@dataclass(frozen=True)
class _Rule:
    """One x-kubernetes-validations rule, its expressions compiled."""

    program: Program
    message: str
    message_expression: Program | None
    field_path: tuple[str, ...]
    reason: str | None


@functools.cache
def _compiled(
    rule: str, message: str, message_expression: str, field_path: str, reason: str
) -> _Rule:
    """A rule of the CRD compiled; a rule that does not compile fails loading the schema."""
    try:
        program = compile_expression(rule, ("self",))
        expression = (
            compile_expression(message_expression, ("self",)) if message_expression else None
        )
    except CelError as e:
        raise ValueError(f"CEL rule {rule!r} of the CRD: {e.message}") from None
    # `message` or else the rule itself, as the API server words a failed rule.
    detail = message.strip() or f"failed rule: {rule.strip()}"
    path = tuple(p for p in re.split(r"\.|\['|'\]", field_path) if p)
    return _Rule(program, detail, expression, path, reason or None)


def _rule(rule: Mapping[str, str]) -> _Rule:
    return _compiled(
        rule["rule"],
        rule.get("message", ""),
        rule.get("messageExpression", ""),
        rule.get("fieldPath", ""),
        rule.get("reason", ""),
    )


def _openapi_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string" if isinstance(value, str) else "other"


def _rule_error(rule: _Rule, instance: Any, detail: str) -> ValidationError:
    """A failed rule in the API server's words: "Invalid value: <value>: <detail>", the value
    left out for an object or a list (field.OmitValueType)."""
    kind = _REASONS.get(rule.reason or "", "Invalid value")
    shown = "" if isinstance(instance, dict | list) else f": {_show(instance)}"
    if kind in ("Forbidden", "Required value"):
        text = f"{kind}: {detail}"
    elif kind == "Duplicate value":
        text = f"{kind}{shown}"
    else:
        text = f"{kind}{shown}: {detail}"
    return ValidationError(text, path=list(rule.field_path))


def _cel_rules(
    validator: Any, rules: Sequence[Mapping[str, str]], instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    value = json_to_cel(json.loads(_show(instance)))
    for rule in rules:
        compiled = _rule(rule)
        source = rule["rule"].strip()
        try:
            result = compiled.program.evaluate({"self": value}, DEFAULT_COST_LIMIT)
        except CelError as e:
            yield _rule_error(compiled, instance, f"{e.message} evaluating rule: {source}")
            continue
        if isinstance(result, celtypes.BoolType) and result:
            continue
        detail = compiled.message
        if compiled.message_expression is not None:
            try:
                said = compiled.message_expression.evaluate({"self": value}, DEFAULT_COST_LIMIT)
            except CelError:
                said = None
            if isinstance(said, str) and said.strip():
                detail = said
        yield _rule_error(compiled, instance, detail)


# ---------------------------------------------------------------------------------------------
# OpenAPI v3 (structural, with Kubernetes extensions) -> JSON Schema Draft 2020-12


def to_json_schema(node: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON Schema that accepts what the API server accepts for the structural schema ``node``.

    The ``x-kubernetes-list-type`` and ``x-kubernetes-validations`` keys are kept: the validator
    of :func:`validate` implements them as keywords.
    """
    converted = dict(node)
    for rule in node.get(_RULE_KEYWORD, ()):
        _rule(rule)
    if "properties" in node:
        converted["properties"] = {k: to_json_schema(v) for k, v in node["properties"].items()}
        if "additionalProperties" not in node and not node.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            converted["additionalProperties"] = False
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), Mapping):
            converted[key] = to_json_schema(node[key])
    types = (
        ["integer", "string"]
        if node.get("x-kubernetes-int-or-string")
        else [node["type"]]
        if "type" in node
        else []
    )
    if types and node.get("nullable"):
        types.append("null")
        if "enum" in node:
            converted["enum"] = [*node["enum"], None]
    if types:
        converted["type"] = types[0] if len(types) == 1 else types
    return converted


def _show(value: Any) -> str:
    # default=str: YAML turns unquoted dates into datetime objects, which JSON cannot encode.
    return json.dumps(value, default=str)


# Keywords replaced or added: jsonschema reports all missing or unknown fields of an object in one
# error, while kubectl names each field in its own.


def _required(
    validator: Any, required: Sequence[str], instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if isinstance(instance, dict):
        for name in required:
            if name not in instance:
                yield ValidationError("required", path=[name])


_ADDITIONAL_PROPERTIES = Draft202012Validator.VALIDATORS["additionalProperties"]


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if additional is not False:
        yield from _ADDITIONAL_PROPERTIES(validator, additional, instance, schema)
    elif isinstance(instance, dict):
        known = schema.get("properties", {})
        for key in instance:
            if key not in known:
                yield ValidationError("unknown field", path=[key])


def _list_map(
    validator: Any, list_type: str, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``x-kubernetes-list-type: map``: no two items with the same ``x-kubernetes-list-map-keys``.
    (The CRD uses no ``set`` lists; ``atomic`` lists have no rule.)"""
    if list_type != "map" or not isinstance(instance, list):
        return
    keys: Sequence[str] = schema["x-kubernetes-list-map-keys"]
    seen: set[str] = set()
    for i, item in enumerate(instance):
        if isinstance(item, dict):
            identity = ", ".join(f"{key} {_show(item.get(key))}" for key in keys)
            if identity in seen:
                yield ValidationError(f"duplicate entry with {identity}", path=[i])
            seen.add(identity)


_KubernetesValidator = create(
    meta_schema=Draft202012Validator.META_SCHEMA,
    validators={
        **Draft202012Validator.VALIDATORS,
        "required": _required,
        "additionalProperties": _additional_properties,
        "x-kubernetes-list-type": _list_map,
        _RULE_KEYWORD: _cel_rules,
    },
    type_checker=Draft202012Validator.TYPE_CHECKER,
)


@functools.cache
def _validator() -> Validator:
    return _KubernetesValidator(to_json_schema(openapi_schema()))


# ---------------------------------------------------------------------------------------------
# Validation

_ARTICLES = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


_PATTERNS = {
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": (
        "must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending "
        "with a letter or digit"
    ),
}
"""What the CRD's patterns mean, for people; a pattern not listed is shown as it is."""


def _unsupported(value: Any, allowed: Sequence[Any]) -> str:
    message = f"unsupported value {_show(value)}"
    if isinstance(value, str):
        close = difflib.get_close_matches(value, [str(a) for a in allowed], n=1)
        if close:
            message += f' (did you mean "{close[0]}"?)'
    return f"{message}; supported values: {', '.join(map(_show, allowed))}"


def _message(error: ValidationError) -> str:
    """jsonschema's message made short, as kubectl's; the added keywords' messages already are."""
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    value: Any = error.validator_value
    match error.validator:
        case "type":
            types = value if isinstance(value, list) else [value]
            return "must be " + " or ".join(_ARTICLES[t] for t in types)
        case "enum":
            return _unsupported(error.instance, value)
        case "minimum" | "maximum" if "minimum" in schema and "maximum" in schema:
            return f"must be between {schema['minimum']} and {schema['maximum']}"
        case "minimum":
            return f"must be >= {value}"
        case "maximum":
            return f"must be <= {value}"
        case "pattern":
            return f"invalid value {_show(error.instance)}: " + _PATTERNS.get(
                value, f"must match {value}"
            )
        case "minLength":
            return "must not be empty" if value == 1 else f"must be at least {value} characters"
        case "maxLength":
            return f"must be at most {value} characters"
        case "maxItems":
            return f"must have at most {value} items"
    return error.message


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _field_path(parts: Iterable[str | int]) -> str:
    """kubectl's notation: ``spec.priorities[1].weight``; a map key that is no identifier in
    brackets, as ``status.decisions[0].reasons[Insufficient cpu]``."""
    path = ""
    for part in parts:
        if isinstance(part, str) and _IDENTIFIER.fullmatch(part):
            path += f".{part}" if path else part
        else:
            path += f"[{part}]"
    return path


def _path_order(error: ValidationError) -> list[tuple[int, int, str]]:
    # List indexes in numeric order, so that [2] comes before [10].
    return [(0, p, "") if isinstance(p, int) else (1, 0, p) for p in error.absolute_path]


def validate(policy: Mapping[str, Any]) -> list[FieldError]:
    """Every problem the API server would find in ``policy`` on create or update, ordered by field:
    the schema's (after defaulting, as the API server validates), unknown fields included, and the
    CEL rules'. The plugins' ``args`` are not checked here but when compiling."""
    errors = list(_validator().iter_errors(apply_defaults(policy)))
    if any(error.validator in _BLOCKING for error in errors):
        errors = [error for error in errors if error.validator != _RULE_KEYWORD]
    errors.sort(key=_path_order)
    return [FieldError(_field_path(error.absolute_path), _message(error)) for error in errors]
