"""The CEL libraries of PyPI measured on DRA device selectors and on the CRD's own rules.

For each candidate importable in the running interpreter, on 26 device selectors written as
users write them (driver, attributes, capacities with quantity(), versions with semver(), has(),
`in`, cel.bind, macros, the string and list extensions, optional syntax) and on every
`x-kubernetes-validations` rule of crds/schedulingpolicy.yaml: how many compile and give the
expected result, how many of them use a function we had to add (quantity, semver, ...), the
median µs of one evaluation of a compiled program (cache off), whether a runtime cost can be
counted and limited, and the latest release.

The candidates cannot share one virtualenv (two of them install a module named `cel`), so run
the script once per library, each in its own scratch virtualenv (the project installs only the
chosen one, cel-python, whose adapter is the project's own model/cel):

    .venv/bin/python bench/bench_cel.py
    python3 -m venv /tmp/v && /tmp/v/bin/pip install common-expression-language PyYAML \
        cel-python && /tmp/v/bin/python bench/bench_cel.py --skip-celpy  # likewise the others

docs/architecture.md has the figures of all four and the choice.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "operator"))

DRIVER = "gpu.example.com"
DEVICE: dict[str, Any] = {
    "name": "gpu-0",
    "attributes": {
        "model": {"string": "a100"},
        "index": {"int": 3},
        "healthy": {"bool": True},
        "driverVersion": {"version": "1.2.3"},
        "uuid": {"string": "GPU-18db0e85-99e9-c746-8531-ffeb86328b39"},
        "pcieRoot": {"string": "pci0000:00"},
        "numa.example.com/node": {"int": 1},
    },
    "capacity": {"memory": {"value": "40Gi"}, "cores": {"value": "108"}},
}
D = f'device.attributes["{DRIVER}"]'
C = f'device.capacity["{DRIVER}"]'

# (selector, expected result, uses a function we write: quantity, semver, lists or strings)
SELECTORS: list[tuple[str, bool, bool]] = [
    (f'device.driver == "{DRIVER}"', True, False),
    (f'{D}.model == "a100"', True, False),
    (f'{D}.model in ["a100", "h100"]', True, False),
    (f"{D}.index >= 2 && {D}.healthy", True, False),
    (f'{D}["model"] != "t4"', True, False),
    (f'"{DRIVER}" in device.attributes', True, False),
    ('"other.example.com" in device.attributes', False, False),
    (f"has({D}.model)", True, False),
    (f"!has({D}.mig)", True, False),
    ('device.attributes["numa.example.com"].node == 1', True, False),
    ('device.attributes["missing.example.com"].size() == 0', True, False),
    (f'{D}.model.startsWith("a1") && {D}.uuid.matches("^GPU-[0-9a-f-]+$")', True, False),
    ("device.allowMultipleAllocations == false", True, False),
    (f"cel.bind(gpu, {D}, gpu.model == 'a100' && gpu.index > 1)", True, False),
    (f"{D}.exists(k, k == 'model')", True, False),
    (f'{C}.memory.compareTo(quantity("40Gi")) >= 0', True, True),
    (f'{C}.memory.isGreaterThan(quantity("16Gi"))', True, True),
    (f'{C}.memory.isLessThan(quantity("80Gi")) && {C}.cores.asInteger() == 108', True, True),
    (f'{C}.memory.add(quantity("8Gi")).sub(quantity("48Gi")).sign() == 0', True, True),
    (f'{D}.driverVersion.isGreaterThan(semver("1.2.0"))', True, True),
    (
        f'{D}.driverVersion.major() == 1 && {D}.driverVersion.compareTo(semver("1.2.3")) == 0',
        True,
        True,
    ),
    ('isSemver("1.2.3") && !isQuantity("1Gx")', True, True),
    (f'{D}.uuid.split("-").size() == 6 && {D}.model.upperAscii() == "A100"', True, True),
    (f"[{D}.index, 1, 7].max() == 7 && [1, 2].isSorted()", True, True),
    (f'{D}.?mig.orValue("none") == "none"', True, False),
    (f"optional.of({D}.model).hasValue()", True, False),
]


def _crd_rules() -> list[tuple[str, Any, bool]]:
    """Every x-kubernetes-validations rule of the CRD with a `self` it accepts or refuses."""
    crd = yaml.safe_load((ROOT / "crds" / "schedulingpolicy.yaml").read_text())
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for rule in node.get("x-kubernetes-validations", ()):
                found.append(" ".join(rule["rule"].split()))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(crd)
    cases: list[tuple[str, Any, bool]] = []
    for rule in found:
        if rule.startswith("self.operator"):
            cases += [(rule, {"key": "k", "operator": "In", "values": ["a"]}, True)]
            cases += [(rule, {"key": "k", "operator": "Exists", "values": ["a"]}, False)]
        elif "exists_one" in rule:
            cases += [(rule, [{"name": "NodeAffinity"}, {"name": "TaintToleration"}], True)]
            cases += [(rule, [{"name": "NodeAffinity"}, {"name": "NodeAffinity"}], False)]
        elif "p.name in" in rule:
            cases += [(rule, [], True), (rule, [{"name": "NodeAffinity"}], False)]
        else:
            pair = [{"name": "HostName"}, {"name": "NodeName"}]
            pair += [{"name": "LeastRequestedPriority"}, {"name": "LeastAllocated"}]
            cases += [(rule, [{"name": "NodeAffinity"}], True), (rule, pair, False)]
    return cases


# Each candidate (and the project, which needs celpy) is imported inside its adapter: a
# scratch virtualenv holds one candidate only.


@dataclass
class Candidate:
    """One library behind the same three calls."""

    name: str
    module: str
    compile: Callable[[str], Any]
    evaluate: Callable[[Any, str, Any], Any]
    cost: str


def _project_celpy() -> Candidate:
    from policy_scheduler.model.cel.program import DEFAULT_COST_LIMIT, compile_expression  # noqa: PLC0415
    from policy_scheduler.model.cel.selectors import device_variable  # noqa: PLC0415

    def evaluate(program: Any, var: str, value: Any) -> Any:
        if var == "device":
            value = device_variable(DRIVER, value)
        else:
            from celpy.adapter import json_to_cel  # noqa: PLC0415

            value = json_to_cel(value)
        return program.evaluate({var: value}, DEFAULT_COST_LIMIT)

    return Candidate(
        "cel-python (celpy)",
        "celpy",
        lambda expression: compile_expression(expression, ("device", "self")),
        evaluate,
        "yes: the interpreter's nodes counted (model/cel)",
    )


# The Rust and C++ bindings take plain Python values: a Quantity or a Semver can only travel as a
# tagged map, converted to the project's types inside each function.
_Q, _S = "__quantity__", "__semver__"


def _tagged_functions() -> dict[str, Callable[..., Any]]:
    from policy_scheduler.model.cel import library  # noqa: PLC0415

    def untag(value: Any) -> Any:
        if isinstance(value, dict) and _Q in value:
            return library.quantity(value[_Q])
        if isinstance(value, dict) and _S in value:
            return library.semver(value[_S])
        return value

    def tag(value: Any) -> Any:
        if isinstance(value, library.Quantity):
            return {_Q: str(value.value)}
        if isinstance(value, library.Semver):
            return {_S: f"{value.major}.{value.minor}.{value.patch}"}
        if isinstance(value, bool | int | float | str):
            return value
        return list(value) if isinstance(value, list) else value

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *args: tag(function(*[untag(a) for a in args]))

    return {name: wrap(f) for name, f in library.FUNCTIONS.items()}


def _plain_device(device: Mapping[str, Any]) -> dict[str, Any]:
    """The device as plain maps: unknown domains cannot read as empty maps here."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, attribute in device.get("attributes", {}).items():
        domain, _, ident = name.rpartition("/")
        value = next(iter(attribute.values()))
        attributes.setdefault(domain or DRIVER, {})[ident] = (
            {_S: value} if "version" in attribute else value
        )
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in device.get("capacity", {}).items():
        domain, _, ident = name.rpartition("/")
        capacity.setdefault(domain or DRIVER, {})[ident] = {_Q: cap["value"]}
    return {
        "driver": DRIVER,
        "allowMultipleAllocations": bool(device.get("allowMultipleAllocations")),
        "attributes": attributes,
        "capacity": capacity,
    }


def _rust(name: str) -> Candidate:
    import cel  # noqa: PLC0415

    functions = _tagged_functions()

    def compile_(expression: str) -> Any:
        return cel.compile(expression) if hasattr(cel, "compile") else cel.Program(expression)

    def evaluate(program: Any, var: str, value: Any) -> Any:
        value = _plain_device(value) if var == "device" else value
        return program.execute(cel.Context(variables={var: value}, functions=functions))

    return Candidate(name, "cel", compile_, evaluate, "no API")


# What cel-expr-python's own strings extension declares (declaring them again is refused).
_CPP_STRINGS = frozenset(
    [
        "charAt",
        "indexOf",
        "lastIndexOf",
        "replace",
        "split",
        "substring",
        "join",
        "lowerAscii",
        "upperAscii",
        "trim",
        "reverse",
        "strings.quote",
    ]
)


def _cpp() -> Candidate:
    from cel_expr_python import cel  # noqa: PLC0415
    from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings  # noqa: PLC0415

    dyn = cel.Type.DYN
    declarations = [
        cel.FunctionDecl(
            name,
            [
                cel.Overload(
                    f"{name}_{arity}_{member}",
                    dyn,
                    [dyn] * arity,
                    is_member=member,
                    impl=impl,
                )
                for arity in (1, 2)
                for member in (False, True)
                if not (member and arity == 1 and name in ("quantity", "semver"))
            ],
        )
        for name, impl in _tagged_functions().items()
        if name not in _CPP_STRINGS
    ]
    env = cel.NewEnv(
        variables={"device": dyn, "self": dyn},
        extensions=[
            ext_strings.ExtStrings(),
            ext_optional.ExtOptional(),
            ext_bindings.ExtBindings(),
        ],
        functions=declarations,
    )

    def evaluate(program: Any, var: str, value: Any) -> Any:
        value = _plain_device(value) if var == "device" else value
        result = program.eval(data={var: value})
        if result.type() == cel.Type.ERROR:
            raise RuntimeError(str(result.value()))
        return result.value()

    return Candidate("cel-expr-python", "cel_expr_python", env.compile, evaluate, "no API")


RELEASES = {
    "cel-python (celpy)": "0.5.0, 2026-01",
    "common-expression-language": "0.10.0, 2026-09",
    "cel-expr-python": "0.1.3, 2026-06",
    "python-cel": "0.1.1, 2025-03",
}


def _candidates() -> list[Candidate]:
    found = []
    if importlib.util.find_spec("celpy"):
        found.append(_project_celpy())
    if importlib.util.find_spec("cel"):
        import cel  # noqa: PLC0415

        name = "common-expression-language" if hasattr(cel, "compile") else "python-cel"
        found.append(_rust(name))
    if importlib.util.find_spec("cel_expr_python"):
        found.append(_cpp())
    return found


def _try(candidate: Candidate, expression: str, var: str, value: Any, expected: bool) -> bool:
    try:
        program = candidate.compile(expression)
        return bool(candidate.evaluate(program, var, value) == expected)
    except BaseException:
        return False


def _timing(candidate: Candidate, rounds: int) -> float:
    """The median µs of one evaluation over the selectors every candidate runs correctly."""
    times = []
    for expression, expected, _ in SELECTORS:
        if not _try(candidate, expression, "device", DEVICE, expected):
            continue
        program = candidate.compile(expression)
        start = time.perf_counter()
        for _ in range(rounds):
            candidate.evaluate(program, "device", DEVICE)
        times.append((time.perf_counter() - start) / rounds * 1e6)
    return statistics.median(times) if times else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300, help="evaluations per selector")
    parser.add_argument("--skip-celpy", action="store_true", help="only the other candidates")
    args = parser.parse_args()
    rules = _crd_rules()
    print(
        "| library | selectors right | of them with our functions | CRD rules right "
        "| µs per evaluation | runtime cost | latest release |"
    )
    print("|---|---|---|---|---|---|---|")
    for candidate in _candidates():
        if args.skip_celpy and candidate.module == "celpy":
            continue
        right = [s for s in SELECTORS if _try(candidate, s[0], "device", DEVICE, s[1])]
        ours = sum(1 for s in right if s[2])
        rules_right = sum(1 for r in rules if _try(candidate, r[0], "self", r[1], r[2]))
        print(
            f"| {candidate.name} | {len(right)}/{len(SELECTORS)} "
            f"| {ours}/{sum(1 for s in SELECTORS if s[2])} | {rules_right}/{len(rules)} "
            f"| {_timing(candidate, args.rounds):.0f} | {candidate.cost} "
            f"| {RELEASES[candidate.name]} |"
        )


if __name__ == "__main__":
    main()
