"""The scheduling benchmark's workload phases after scheduler_perf (bench/bench_scheduling.py's
SHAPES): what each adds to its pods' spec, how many pods it runs at a node count, and each
check's verdict on a cluster listing that holds or breaks the placement it requires (or the share
of pods it reports placed as preferred)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from bench_scheduling import (
    PREEMPTION_LABEL,
    SHAPES,
    TAINT_KEY,
    Config,
    Listing,
    own,
    phase_pods,
)
from harness.objects import HOSTNAME
from harness.workload import PHASE_LABEL, ZONE
from scheduling_report import MISC_PHASES, PHASE_RATIOS, PREFERRING_SHAPES, REPORTS

# The nodes of every listing below: two per zone, then one tainted as the node-inclusion phase
# taints its own, and one of the preemption phase's.
NODES: dict[str, dict[str, Any]] = {
    **{
        f"{zone}-{i}": {"metadata": {"labels": {ZONE: zone}}, "spec": {}}
        for zone in ("zone-a", "zone-b", "zone-c")
        for i in (0, 1)
    },
    "tainted-0": {
        "metadata": {"labels": {ZONE: "zone-a"}},
        "spec": {"taints": [{"key": TAINT_KEY, "effect": "NoSchedule"}]},
    },
    "preempt-0": {"metadata": {"labels": {ZONE: "zone-b", PREEMPTION_LABEL: "true"}}, "spec": {}},
}


def listing(placed: Mapping[str, str | None]) -> Listing:
    """The cluster with the pods of ``placed`` (name -> its node, None: unbound)."""
    pods = {name: {"spec": {"nodeName": node} if node else {}} for name, node in placed.items()}
    return Listing(pods, NODES)


def check(phase: str, placed: Mapping[str, str | None]) -> dict[str, Any]:
    return SHAPES[phase].check(listing(placed), list(placed))


def one_each(nodes: Sequence[str]) -> dict[str, str | None]:
    return {f"p-{i}": node for i, node in enumerate(nodes)}


EVERY_PLAIN_NODE = [name for name in NODES if name[:5] == "zone-"]

# (phase, placement, the check's ok)
REQUIRED_CASES: dict[str, tuple[str, Mapping[str, str | None], bool]] = {
    "pod affinity: all in one zone holds": (
        "pod-affinity",
        one_each(["zone-b-0", "zone-b-1", "zone-b-0"]),
        True,
    ),
    "pod affinity: one pod in another zone breaks it": (
        "pod-affinity",
        one_each(["zone-b-0", "zone-b-1", "zone-c-0"]),
        False,
    ),
    "affinity by namespace selector: one pod in another zone breaks it": (
        "affinity-ns",
        one_each(["zone-a-0", "zone-a-1", "zone-b-1"]),
        False,
    ),
    "node affinity: the two required zones hold": (
        "node-affinity",
        one_each(["zone-a-0", "zone-b-1", "zone-a-1"]),
        True,
    ),
    "node affinity: the third zone breaks it": (
        "node-affinity",
        one_each(["zone-a-0", "zone-c-1"]),
        False,
    ),
    "anti-affinity by namespace selector: one per node holds": (
        "anti-affinity-ns",
        one_each(["zone-a-0", "zone-a-1", "zone-b-0"]),
        True,
    ),
    "anti-affinity by namespace selector: two on a node break it": (
        "anti-affinity-ns",
        one_each(["zone-a-0", "zone-a-1", "zone-a-0"]),
        False,
    ),
    "node inclusion: one per included node holds": (
        "node-inclusion",
        one_each(EVERY_PLAIN_NODE),
        True,
    ),
    "node inclusion: counts within one of each other hold": (
        "node-inclusion",
        one_each([*EVERY_PLAIN_NODE, "zone-a-0", "zone-c-1"]),
        True,
    ),
    "node inclusion: an included node left empty while another holds two breaks it": (
        "node-inclusion",
        one_each([*EVERY_PLAIN_NODE[1:], "zone-c-1"]),
        False,
    ),
    "node inclusion: a pod on the tainted node breaks it": (
        "node-inclusion",
        one_each(["zone-a-0", "tainted-0"]),
        False,
    ),
    "node inclusion: a pod on a preemption node breaks it": (
        "node-inclusion",
        one_each(["zone-a-0", "preempt-0"]),
        False,
    ),
}


@pytest.mark.parametrize(
    ("phase", "placed", "ok"), REQUIRED_CASES.values(), ids=REQUIRED_CASES.keys()
)
def test_a_required_shape_checks_its_placement(
    phase: str, placed: Mapping[str, str | None], ok: bool
) -> None:
    checked = check(phase, placed)
    assert checked["ok"] is ok, checked
    assert checked["summary"]


# (phase, placement, the share it reports placed as preferred)
PREFERRED_CASES: dict[str, tuple[str, Mapping[str, str | None], float]] = {
    "preferred pod affinity: every pod beside another": (
        "preferred-pod-affinity",
        one_each(["zone-a-0", "zone-a-0", "zone-b-1", "zone-b-1"]),
        1.0,
    ),
    "preferred pod affinity: one of three alone": (
        "preferred-pod-affinity",
        one_each(["zone-a-0", "zone-a-0", "zone-b-1"]),
        0.667,
    ),
    "preferred pod affinity by namespace selector: all apart": (
        "preferred-affinity-ns",
        one_each(["zone-a-0", "zone-a-1"]),
        0.0,
    ),
    "preferred anti-affinity: fewer pods than nodes, every pod alone": (
        "preferred-anti-affinity",
        one_each(["zone-a-0", "zone-a-1", "zone-b-0"]),
        1.0,
    ),
    "preferred anti-affinity by namespace selector: two sharing while nodes are empty": (
        "preferred-anti-affinity-ns",
        one_each(["zone-a-0", "zone-a-0", "zone-b-0"]),
        0.333,
    ),
    # Six nodes the pods can use (the tainted and the preemption node excluded): at most 2 each.
    "preferred anti-affinity: 8 pods, two on each of two nodes, one on each other": (
        "preferred-anti-affinity",
        one_each([*EVERY_PLAIN_NODE, "zone-a-0", "zone-b-0"]),
        1.0,
    ),
    "preferred anti-affinity: 8 pods, three on one node": (
        "preferred-anti-affinity",
        one_each([*EVERY_PLAIN_NODE[:5], "zone-a-0", "zone-a-0", "zone-b-0"]),
        0.625,
    ),
    "preferred spread: within maxSkew 5": (
        "preferred-spread",
        one_each(["zone-a-0"] * 5 + ["zone-b-0"]),
        1.0,
    ),
    "preferred spread: 3 pods beyond maxSkew 5 of the empty zone": (
        "preferred-spread",
        one_each(["zone-a-0"] * 8 + ["zone-b-0"] * 2),
        0.7,
    ),
}


@pytest.mark.parametrize(
    ("phase", "placed", "share"), PREFERRED_CASES.values(), ids=PREFERRED_CASES.keys()
)
def test_a_preferred_shape_reports_the_share_placed_as_preferred(
    phase: str, placed: Mapping[str, str | None], share: float
) -> None:
    checked = check(phase, placed)
    assert checked["ok"] is True
    assert checked["on_preferred_share"] == pytest.approx(share, abs=0.001)


def test_preferred_spread_reports_the_zones_and_their_skew() -> None:
    checked = check("preferred-spread", one_each(["zone-a-0"] * 8 + ["zone-b-0"] * 2))
    assert checked["zones"] == {"zone-a": 8, "zone-b": 2, "zone-c": 0}
    assert checked["skew"] == 8


# The first three shapes' specs, as they were before the table: their JSON must not change.
FIRST_SPECS = {
    "anti-affinity": {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": own("anti-affinity"), "topologyKey": HOSTNAME}
                ]
            }
        }
    },
    "spread": {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": own("spread"),
            }
        ]
    },
    "preferred-affinity": {
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "preference": {
                            "matchExpressions": [
                                {"key": ZONE, "operator": "In", "values": ["zone-a"]}
                            ]
                        },
                    }
                ]
            }
        }
    },
}


@pytest.mark.parametrize("phase", FIRST_SPECS)
def test_the_first_shapes_keep_their_spec(phase: str) -> None:
    assert SHAPES[phase].spec(own(phase)) == FIRST_SPECS[phase]


def selectors(spec: Mapping[str, Any]) -> list[Any]:
    """The label selectors of every pod (anti-)affinity term and spread constraint of ``spec``."""
    found = [c["labelSelector"] for c in spec.get("topologySpreadConstraints", [])]
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = spec.get("affinity", {}).get(kind, {})
        found += [
            t["labelSelector"]
            for t in terms.get("requiredDuringSchedulingIgnoredDuringExecution", [])
        ]
        found += [
            t["podAffinityTerm"]["labelSelector"]
            for t in terms.get("preferredDuringSchedulingIgnoredDuringExecution", [])
        ]
    return found


@pytest.mark.parametrize("phase", SHAPES)
def test_every_term_of_a_shape_selects_its_own_phase(phase: str) -> None:
    spec = SHAPES[phase].spec(own(phase))
    assert selectors(spec) == [{"matchLabels": {PHASE_LABEL: phase}}] * len(selectors(spec))
    assert selectors(spec) or "nodeAffinity" in spec["affinity"], spec


def config(pods: int) -> Config:
    fields: dict[str, Any] = dict.fromkeys(Config.__dataclass_fields__, 0)
    fields |= {
        "nodes": (),
        "schedulers": (),
        "shaped_pods": dict.fromkeys(SHAPES, pods),
        "misc_pods": dict.fromkeys(MISC_PHASES, 0),
    }
    return Config(**fields)


# (pods asked for each shape, nodes, the one-per-node shapes' counts)
CAPS = {
    "room for all": (10, 100, {"anti-affinity": 10, "anti-affinity-ns": 10}),
    "anti-affinity at most the nodes, with its init pods half of them": (
        80,
        100,
        {"anti-affinity": 80, "anti-affinity-ns": 50},
    ),
}


@pytest.mark.parametrize(("pods", "nodes", "capped"), CAPS.values(), ids=CAPS.keys())
def test_one_per_node_shapes_are_capped_at_the_nodes(
    pods: int, nodes: int, capped: Mapping[str, int]
) -> None:
    counts = phase_pods(config(pods), "policy-scheduler", nodes)
    assert {phase: counts[phase] for phase in capped} == capped
    assert all(counts[phase] == pods for phase in SHAPES if phase not in capped)


def test_every_shape_has_its_report_in_the_order_a_run_goes() -> None:
    in_reports = [phase for phase in PHASE_RATIOS if phase in SHAPES]
    assert in_reports == list(SHAPES)
    assert set(SHAPES) <= REPORTS.keys()
    assert list(PREFERRING_SHAPES) == list(SHAPES)[3:]
