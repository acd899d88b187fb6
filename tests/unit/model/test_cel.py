"""model/cel: Kubernetes' CEL libraries, the device environment of DRA selectors, the selector
cache and the cost limit, with the cases and expected results of kube's own tests
(apiserver/pkg/cel/library/*_test.go, dynamic-resource-allocation/cel/compile_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.model.cel import CelError, DeviceSelectors

DRIVER = "dra.example.com"


def attrs(**values: Any) -> dict[str, Any]:
    """Attributes of a device as the API serves them: {"name": {"int": 1}}."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"
        out[name] = {kind: value}
    return out


def evaluate(expression: str, device: dict[str, Any] | None = None, driver: str = DRIVER) -> Any:
    try:
        return DeviceSelectors().matches(expression, driver, device or {"name": "d"}, "k")
    except CelError as e:
        return (e.phase, e.message)


# Expressions that must be true (each library's cases from kube's tests, written as a bool).
TRUE = {
    # quantity_test.go
    "quantity-isQuantity": 'isQuantity("20") && isQuantity("20M") && isQuantity("20Mi")',
    "quantity-isQuantity-invalid-suffix": '!isQuantity("20Mo") && !isQuantity("10Mm")',
    "quantity-equality": 'quantity("200M") == quantity("0.2G")'
    ' && quantity("2000k") == quantity("2M")',
    "quantity-inequality": '!(quantity("200M") == quantity("0.3G"))',
    "quantity-less": 'quantity("50M").isLessThan(quantity("50Mi"))',
    "quantity-less-false": '!quantity("100M").isLessThan(quantity("50M"))',
    "quantity-greater": 'quantity("50Mi").isGreaterThan(quantity("50M"))',
    "quantity-compare": 'quantity("200M").compareTo(quantity("0.2G")) == 0'
    ' && quantity("50M").compareTo(quantity("50Mi")) == -1'
    ' && quantity("50Mi").compareTo(quantity("50M")) == 1',
    "quantity-add": 'quantity("50k").add(quantity("20")) == quantity("50.02k")'
    ' && quantity("50k").add(20) == quantity("50020")',
    "quantity-sub": 'quantity("50k").sub(quantity("20")) == quantity("49.98k")'
    ' && quantity("50k").sub(-20) == quantity("50020")',
    "quantity-arith-chain": 'quantity("50k").add(20).sub(quantity("100k")).asInteger() == -49980',
    "quantity-asInteger": 'quantity("50k").asInteger() == 50000',
    "quantity-isInteger": 'quantity("50").isInteger() && !quantity("50m").isInteger()'
    ' && !quantity("9999999999999999999999999999999999999G").isInteger()',
    "quantity-asApproximateFloat": 'quantity("50.703k").asApproximateFloat() == 50703.0',
    "quantity-sign": 'quantity("-50k").sign() == -1 && quantity("0").sign() == 0'
    ' && quantity("50k").sign() == 1',
    # semver_test.go
    "semver-isSemver": 'isSemver("1.2.3-beta.1+build.1") && !isSemver("") && !isSemver("v1.0.0")'
    ' && !isSemver(" 1.0.0") && !isSemver("01.01.01") && !isSemver("1.1")',
    "semver-normalize": 'isSemver("v1.0.0", true) && isSemver("01.01.01", true)'
    ' && isSemver("1", true) && isSemver("1.1", true) && !isSemver("1.0-rc1", true)'
    ' && semver("v1.0", true) == semver("1.0.0")',
    "semver-equality": 'semver("1.2.3") == semver("1.2.3")'
    ' && !(semver("1.2.3") == semver("1.0.0"))',
    "semver-build-metadata-ignored": 'semver("1.2.3+build.1") == semver("1.2.3+build.2")',
    "semver-less": 'semver("1.0.0").isLessThan(semver("1.2.3"))'
    ' && !semver("1.2.3").isLessThan(semver("1.0.0"))',
    "semver-greater": 'semver("1.2.3").isGreaterThan(semver("1.0.0"))',
    "semver-compare": 'semver("1.2.3").compareTo(semver("1.2.3")) == 0'
    ' && semver("1.0.0").compareTo(semver("1.2.3")) == -1'
    ' && semver("1.2.3").compareTo(semver("1.0.0")) == 1',
    "semver-prerelease-order": 'semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))'
    ' && semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))'
    ' && semver("1.0.0-beta.11").isLessThan(semver("1.0.0-rc.1"))'
    ' && semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))',
    "semver-parts": 'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2'
    ' && semver("1.2.3").patch() == 3',
    # lists_test.go (kube's lists library)
    "lists-isSorted": "[1, 2, 3].isSorted() && ![3, 1].isSorted() && [].isSorted()"
    ' && ["a", "b"].isSorted()',
    "lists-sum": "[1, 2, 3].sum() == 6 && [].sum() == 0 && [1.5, 2.5].sum() == 4.0",
    "lists-min-max": "[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3",
    "lists-indexOf": "[1, 2, 2, 3].indexOf(2) == 1 && [1, 2, 2, 3].lastIndexOf(2) == 2"
    " && [1].indexOf(5) == -1",
    # cel-go's strings extension
    "strings": '"hello".charAt(1) == "e" && "hello".indexOf("l") == 2'
    ' && "hello".lastIndexOf("l") == 3 && "HeLLo".lowerAscii() == "hello"'
    ' && "hello".upperAscii() == "HELLO" && "a,b,c".split(",") == ["a", "b", "c"]'
    ' && "hello".substring(1, 3) == "el" && "  x ".trim() == "x"'
    ' && ["a", "b"].join("-") == "a-b" && "aaa".replace("a", "b", 2) == "bba"',
    # cel-go's optional types: the syntax and the functions
    "optional-field": '{"a": 1}.?a.orValue(0) == 1 && {"a": 1}.?b.orValue(0) == 0',
    "optional-index": '{"a": 1}[?"a"].hasValue() && ![1, 2][?5].hasValue()',
    "optional-functions": "optional.of(1).value() == 1 && optional.none().orValue(2) == 2"
    ' && !optional.ofNonZeroValue("").hasValue()'
    " && optional.none().or(optional.of(3)).value() == 3",
    "optional-syntax-in-strings-untouched": '"a.?b[?c]".size() == 8',
    "strings-quote": 'strings.quote("a") == "\\"a\\""',
    # regex library
    "regex-find": '"abc123".find("[0-9]+") == "123" && "a1b2".findAll("[0-9]") == ["1", "2"]',
    # CEL itself, with cel.bind
    "bind": "cel.bind(x, 2, x * x == 4)",
    "macros": "[1, 2, 3].exists(x, x > 2) && [1, 2].all(x, x > 0)"
    " && [1, 2, 3].exists_one(x, x == 2) && [1, 2].map(x, x * 2) == [2, 4]"
    " && [1, 2, 3].filter(x, x > 1).size() == 2",
    "in": '"a" in ["a", "b"] && !("c" in {"a": 1})',
}


@pytest.mark.parametrize("expression", TRUE.values(), ids=TRUE.keys())
def test_library_functions(expression: str) -> None:
    assert evaluate(expression) is True


ERRORS = {
    "quantity-invalid-suffix": (
        'quantity("10Mo") == quantity("1")',
        (
            "runtime",
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
    ),
    "quantity-invalid-suffix-passes-regex": (
        'quantity("10Mm") == quantity("1")',
        ("runtime", "unable to parse quantity's suffix"),
    ),
    "quantity-asInteger-not-integer": (
        'quantity("50m").asInteger() == 0',
        ("runtime", "cannot convert value to integer"),
    ),
    "quantity-no-overload": ("isQuantity([1, 2, 3])", ("runtime", "no such overload")),
    "semver-invalid": (
        'semver("v1.0") == semver("1.0.0")',
        ("runtime", "No Major.Minor.Patch elements found"),
    ),
    "min-empty-list": ("[].min() == 1", ("runtime", "min called on empty list")),
    "division-by-zero": ("1 / 0 == 1", ("runtime", "division by zero")),
    "optional-none-dereference": (
        "optional.none().value() == 1",
        ("runtime", "optional.none() dereference"),
    ),
    "undeclared-variable": (
        "devices.driver == 1",
        (
            "compile",
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'devices'"
            " (in container '')",
        ),
    ),
    # A macro's variable counts as declared in the whole expression at compile time (scopes
    # are not followed); outside its macro it is undeclared when evaluated.
    "macro-variable-out-of-scope": (
        "[1].all(x, x > 0) && cel.bind(y, 1, y == 1) && x == 1",
        ("runtime", "undeclared reference to 'x' (in container '')"),
    ),
    # compile_test.go
    "syntax-error": ("?!", ("compile", "compilation failed: ERROR: <input>:1:1: Syntax error: ?!")),
    "undeclared-function": (
        f'device.attributes["{DRIVER}"].attr.includes("fish")',
        (
            "compile",
            "compilation failed: ERROR: <input>:1:43: undeclared reference to 'includes'"
            " (in container '')",
        ),
    ),
    "not-bool": (
        "1",
        (
            "runtime",
            "CEL result of type int could not be converted to bool:"
            " type conversion error from int to 'bool'",
        ),
    ),
    "runtime-error-lookup-identifier": (
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        ("runtime", "no such key: noSuchAttr"),
    ),
    "runtime-error-lookup-map": (
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        ("runtime", "no such key: noSuchAttr"),
    ),
    "too-long": ("true || " * 1400 + "true", None),
}


@pytest.mark.parametrize(("expression", "expected"), ERRORS.values(), ids=ERRORS.keys())
def test_errors(expression: str, expected: tuple[str, str] | None) -> None:
    result = evaluate(expression)
    if expected is None:
        assert isinstance(result, tuple)
        assert result[0] == "compile"
        assert result[1].startswith("compilation failed: expression too long")
    else:
        assert result == expected


GPU = {
    "name": "gpu-0",
    "attributes": {
        "model": {"string": "a100"},
        "index": {"int": 3},
        "healthy": {"bool": True},
        "driverVersion": {"version": "1.2.3"},
        "other.example.com/numa": {"int": 1},
    },
    "capacity": {"memory": {"value": "40Gi"}, "other.example.com/slots": {"value": "4"}},
}

# (expression, device, driver) -> expected; compile_test.go's device cases and selectors as users
# write them.
DEVICE = {
    "domain-check-negative": ('"no-such-domain" in device.attributes', GPU, False),
    "domain-check-positive": (f'"{DRIVER}" in device.attributes', GPU, True),
    "empty-driver-name": ('device.driver == ""', {"name": "d"}, "", True),
    "real-driver-name": (f'device.driver == "{DRIVER}"', GPU, True),
    "driver-name-qualifier": (f'device.attributes["{DRIVER}"].healthy', GPU, True),
    "driver-name-qualifier-map-lookup": (f'device.attributes["{DRIVER}"]["healthy"]', GPU, True),
    "bind": (f'cel.bind(dra, device.attributes["{DRIVER}"], dra.healthy)', GPU, True),
    "other-domain": ('device.attributes["other.example.com"].numa == 1', GPU, True),
    "string": (f'device.attributes["{DRIVER}"].model == "a100"', GPU, True),
    "int": (f'device.attributes["{DRIVER}"].index > 2', GPU, True),
    "semver": (
        f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("1.2.0"))',
        GPU,
        True,
    ),
    "quantity": (
        f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
        GPU,
        True,
    ),
    "quantity-too-small": (
        f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("80Gi"))',
        GPU,
        False,
    ),
    "capacity-other-domain": (
        'device.capacity["other.example.com"].slots == quantity("4")',
        GPU,
        True,
    ),
    "check-positive": (
        f'"memory" in device.capacity["{DRIVER}"]'
        f' && device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("1Ki"))',
        GPU,
        True,
    ),
    "check-negative": (
        f'!("name" in device.capacity["{DRIVER}"])'
        f' || device.capacity["{DRIVER}"].name.isGreaterThan(quantity("1Ki"))',
        GPU,
        True,
    ),
    "has": (f'has(device.attributes["{DRIVER}"].model)', GPU, True),
    "optional-attribute": (
        f'device.attributes["{DRIVER}"].?mig.orValue("none") == "none"',
        GPU,
        True,
    ),
    "has-missing": (f'has(device.attributes["{DRIVER}"].mig)', GPU, False),
    # An unknown domain reads as an empty map, but is not in the map (kube's mapper).
    "has-unknown-domain": ("has(device.attributes.other)", GPU, False),
    "has-in-unknown-domain": ("has(device.capacity.other.slots)", {**GPU, "capacity": {}}, False),
    "strings-on-attribute": (f'device.attributes["{DRIVER}"].model.startsWith("a1")', GPU, True),
    "exists-one-domain": (f'device.attributes.exists_one(x, x == "{DRIVER}")', GPU, True),
    "allowMultipleAllocations-unset": ("device.allowMultipleAllocations == false", GPU, True),
    "allowMultipleAllocations-set": (
        "device.allowMultipleAllocations",
        {"name": "d", "allowMultipleAllocations": True},
        True,
    ),
    "all": (
        """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
""",
        {
            "name": "d",
            "attributes": {
                "bool": {"bool": True},
                "int": {"int": 1},
                "string": {"string": "fish"},
                "version": {"version": "1.0.0"},
            },
            "capacity": {"quantity": {"value": "1Mi"}},
        },
        True,
    ),
    "many": (
        f'device.attributes["{DRIVER}"].a && device.attributes["{DRIVER}"].b'
        f' && device.attributes["{DRIVER}"].c',
        {"name": "d", "attributes": attrs(a=True, b=True, c=True)},
        True,
    ),
    "check_attribute_ids": (
        f'device.attributes["{DRIVER}"].exists_one(x, x == "services")',
        {"name": "d", "attributes": attrs(services="some_example_value")},
        True,
    ),
    "split_attribute": (
        f'device.attributes["{DRIVER}"].services.split("example").size() >= 2',
        {"name": "d", "attributes": attrs(services="some_example_value")},
        True,
    ),
    "regexp_attribute": (
        f'device.attributes["{DRIVER}"].services.matches("[^a]?sym")',
        {"name": "d", "attributes": attrs(services="asymetric")},
        True,
    ),
    "check_capacity_domains": (
        f'device.capacity.exists_one(x, x == "{DRIVER}")',
        {"name": "d", "capacity": {"memory": {"value": "1Mi"}}},
        True,
    ),
    "list-attributes": (
        f'device.attributes["{DRIVER}"].ids.exists(i, i == 2)'
        f' && device.attributes["{DRIVER}"].names.size() == 2'
        f' && device.attributes["{DRIVER}"].versions.all(v, v.isGreaterThan(semver("0.0.1")))',
        {
            "name": "d",
            "attributes": {
                "ids": {"ints": [1, 2]},
                "names": {"strings": ["a", "b"]},
                "versions": {"versions": ["1.0.0"]},
            },
        },
        True,
    ),
    "invalid-version-attribute": (
        "true",
        {"name": "d", "attributes": {"v": {"version": "1.0"}}},
        ("runtime", "attribute v: parse semantic version: No Major.Minor.Patch elements found"),
    ),
}


@pytest.mark.parametrize("case", DEVICE.values(), ids=DEVICE.keys())
def test_device_environment(case: tuple[Any, ...]) -> None:
    expression, device, *rest = case
    driver, expected = (rest[0], rest[1]) if len(rest) == 2 else (DRIVER, rest[0])
    assert evaluate(expression, device, driver) == expected


def test_results_are_cached_per_expression_and_key() -> None:
    selectors = DeviceSelectors()
    expression = f'device.attributes["{DRIVER}"].index > 2'
    assert selectors.matches(expression, DRIVER, GPU, ("uid", "1", "gpu-0")) is True
    assert selectors.evaluations == 1
    # The same key is answered from the cache, whatever device is passed with it.
    assert selectors.matches(expression, DRIVER, {"name": "x"}, ("uid", "1", "gpu-0")) is True
    assert selectors.evaluations == 1
    # A new key (the slice's next resourceVersion) is evaluated again.
    lower = {**GPU, "attributes": {"index": {"int": 1}}}
    assert selectors.matches(expression, DRIVER, lower, ("uid", "2", "gpu-0")) is False
    assert selectors.evaluations == 2


def test_errors_are_cached_too() -> None:
    selectors = DeviceSelectors()
    for _ in range(2):
        with pytest.raises(CelError, match="no such key: missing"):
            selectors.matches(f'device.attributes["{DRIVER}"].missing', DRIVER, GPU, "k")
    assert selectors.evaluations == 1


def test_cost_limit_exceeded() -> None:
    # compile_test.go's "expensive" case, on a smaller budget so that the test stays fast.
    expression = (
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y,"
        " [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, int('1'.find('[0-9]*')) < 100)))"
    )
    assert DeviceSelectors().matches(expression, DRIVER, GPU, "k") is True
    with pytest.raises(CelError) as raised:
        DeviceSelectors(cost_limit=5_000).matches(expression, DRIVER, GPU, "k")
    assert raised.value.message == "operation cancelled: actual cost limit exceeded"
    assert raised.value.phase == "runtime"
