"""Parity with kube-scheduler's DynamicResources (issue 30): devices allocated from ResourceSlices
for ResourceClaims, as kube-scheduler v1.37.2's structured allocator does.

Allocation changes the cluster (a claim allocated, reserved, protected by a finalizer), so the
gated-pod trick of test_parity cannot serve; as test_parity_preemption does, each scenario is built
twice, on two disjoint sides of one bare control plane: one served by kube-scheduler, the other by
the operator with a policy made from examples/policies/default-profile.yaml (which has
DynamicResources, as kube's default profile). A side's nodes, DeviceClasses, ResourceSlices (their
pools and driver) and extended resource are named ``<prefix>-<side>-...`` and its claims and pods
live in the namespace ``<prefix>-<side>``; every pod is kept to its side's nodes by a nodeSelector,
so a pod sees only its side's devices. The policy has no nodeSelector: both schedulers see every
node, count the other side's under "node(s) didn't match Pod's node affinity/selector", and their
messages are comparable word for word once each side's names are replaced.

Each pod is submitted to both sides and, once both have decided (bound, or a FailedScheduling
event), what each did is compared: the node, the first FailedScheduling message, and each of the
pod's claims as the API has it then (``status.allocation`` without its timestamp, with device
names: v1.37's allocator walks pools and devices in a fixed order, so kube's choice on a node is
deterministic; ``reservedFor``; the finalizers). Each scenario also says what kube-scheduler does
(the node, its message, the devices), which is what the real binary was seen to do: that checks
the scenario exercises what it claims to.

No DRA driver runs: where kube-scheduler waits for a driver (binding conditions), the test stands
in for it.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.e2e import Cluster, Operator, items
from harness.objects import (
    device,
    device_class,
    exactly,
    first_available,
    match_attribute,
    node,
    pod,
    resource_claim,
    resource_slice,
    subrequest,
    taint,
    toleration,
    version,
)
from harness.sides import Side as SideBase
from harness.sides import Sides as SidesOf
from harness.sides import report, settle_both

DEFAULT_PROFILE = Path(__file__).resolve().parents[2] / "examples/policies/default-profile.yaml"
SIDE_LABEL = "dra.policy-scheduler.dev/side"
TEST_LABEL = "dra.policy-scheduler.dev/test"
ADMIN_ACCESS = "resource.kubernetes.io/admin-access"
FINALIZER = "resource.kubernetes.io/delete-protection"
KUBE_SCHEDULER = "default-scheduler"
TIMEOUT = 90.0
# Once a side decided a pod, how long its events and claim writes may take to arrive.
SETTLE = 2.0
# How long a side told FailedScheduling is watched for a later bind, when kube binds the pod.
RETRY = 10.0
# The random suffix of a name made by generateName (a claim for an extended resource).
GENERATED = re.compile(r"-extended-resources-[a-z0-9]{5}\b")


@dataclass(frozen=True)
class Side(SideBase):
    """One copy of a scenario, with its nodes and device objects."""

    @property
    def driver(self) -> str:
        """This side's DRA driver: its devices' attributes and capacities are in its domain."""
        return f"{self.prefix}-{self.name}-gpu.example.com"

    def normal(self, text: str) -> str:
        return GENERATED.sub("-extended-resources-<random>", super().normal(text))

    def node(self, suffix: str, *, cpu: str = "4") -> dict[str, Any]:
        labels = {SIDE_LABEL: self.namespace, TEST_LABEL: self.prefix}
        return node(self.named(suffix), cpu=cpu, labels=labels)

    def gpus(self, node_suffix: str, *devices: dict[str, Any], **slice_args: Any) -> dict[str, Any]:
        """The ResourceSlice of this side's driver for the node ``node_suffix``: one pool per
        node, named after it (one slice unless ``slice_args`` say otherwise)."""
        name = self.named(node_suffix)
        return resource_slice(
            name,
            self.driver,
            name,
            node=slice_args.pop("node", name),
            devices=devices,
            labels={TEST_LABEL: self.prefix},
            **slice_args,
        )

    def device_class(self, suffix: str = "gpu", **args: Any) -> dict[str, Any]:
        """This side's class ``suffix``: its driver's devices (and ``selectors``, if given)."""
        selectors = (f'device.driver == "{self.driver}"', *args.pop("selectors", ()))
        return device_class(
            self.named(suffix), selectors=selectors, labels={TEST_LABEL: self.prefix}, **args
        )

    def attribute(self, name: str) -> str:
        """``device.attributes[<driver>].<name>`` in CEL."""
        return f'device.attributes["{self.driver}"].{name}'

    def capacity(self, name: str) -> str:
        """``device.capacity[<driver>].<name>`` in CEL."""
        return f'device.capacity["{self.driver}"].{name}'

    def pod(
        self,
        name: str,
        *,
        cpu: str = "100m",
        claims: Mapping[str, str] | None = None,
        requests: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """A pod kept to this side's nodes, using the claims ``claims`` (pod claim name ->
        ResourceClaim name)."""
        return pod(
            name,
            self.scheduler,
            cpu=cpu,
            claims=claims,
            requests=requests,
            extra={"nodeSelector": {SIDE_LABEL: self.namespace}},
        )


@dataclass(frozen=True)
class Expect:
    """What kube-scheduler does with a pod: the node it binds it to (a suffix; None: pending),
    its first FailedScheduling message (``{all}`` for the number of nodes in the cluster,
    ``{others}`` for those not on the pod's side), and the devices allocated to each claim
    (claim -> "request pool device" per result, in order)."""

    node: str | None
    message: str | None = None
    devices: Mapping[str, Sequence[str]] = field(default_factory=dict)


Driver = Callable[[Cluster, Side], None]
"""One pass of a stand-in for the side's DRA driver, while the pod is being decided."""


@dataclass
class Step:
    """A pod to submit (to both sides) and what kube-scheduler does with it."""

    pod: dict[str, Any]
    expect: Expect
    driver: Driver | None = None


@dataclass
class Scenario:
    """A side's nodes, cluster-scoped objects (DeviceClasses, ResourceSlices), namespaced ones
    (ResourceClaims) and the pods in order."""

    nodes: list[dict[str, Any]]
    cluster_objects: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    steps: list[Step]


@dataclass
class Outcome:
    """What one scheduler did with one pod, in the side's normal form."""

    node: str | None = None
    failed: str | None = None
    claims: dict[str, Any] = field(default_factory=dict)
    """The pod's claims: claim name -> allocation, reservedFor and finalizers."""

    def lines(self) -> list[str]:
        return [
            f"node={self.node}",
            f"failed={self.failed!r}",
            *(f"claim {name}: {json.dumps(what)}" for name, what in sorted(self.claims.items())),
        ]


COMPARED = ("node", "failed", "claims")

Build = Callable[[Side], Scenario]


Sides = SidesOf[Side]


def dra_policy(name: str) -> dict[str, Any]:
    """default-profile.yaml (with DynamicResources, as kube's default profile), over every node,
    serving ``name``."""
    policy: dict[str, Any] = yaml.safe_load(DEFAULT_PROFILE.read_text())
    policy["metadata"] = {"name": name, "labels": {TEST_LABEL: name}}
    policy["spec"].pop("nodeSelector", None)
    return policy


@pytest.fixture
def sides(cluster: Cluster, operator: Operator) -> Iterator[Sides]:
    served = cluster.kubectl("api-resources", "--api-group=resource.k8s.io").stdout
    if "resourceslices" not in served:
        pytest.skip("resource.k8s.io/v1 is not served by this control plane")
    prefix = f"dra-{uuid.uuid4().hex[:6]}"
    kube = Side("kube", prefix, KUBE_SCHEDULER)
    ours = Side("ours", prefix, f"{prefix}-policy")
    for side in (kube, ours):
        # Admin access is allowed only in namespaces labelled so.
        cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": side.namespace, "labels": {ADMIN_ACCESS: "true"}},
            }
        )
    cluster.apply(dra_policy(ours.scheduler))
    operator.start()
    try:
        yield Sides(cluster, kube, ours)
    finally:
        for side in (kube, ours):
            cluster.kubectl(
                "delete", "pods", "--all", "-n", side.namespace, "--grace-period=0", "--force"
            )
            # No controller removes the claims' delete protection here.
            for claim in items(cluster, "resourceclaims.resource.k8s.io", "-n", side.namespace):
                cluster.kubectl(
                    "patch",
                    "resourceclaims.resource.k8s.io",
                    claim["metadata"]["name"],
                    "-n",
                    side.namespace,
                    "--type=merge",
                    "-p",
                    '{"metadata": {"finalizers": null}}',
                    check=False,
                )
            cluster.kubectl("delete", "namespace", side.namespace, "--wait=false")
        selector = f"{TEST_LABEL}={prefix}"
        cluster.kubectl(
            "delete",
            "nodes,deviceclasses.resource.k8s.io,resourceslices.resource.k8s.io",
            "-l",
            selector,
            "--wait=false",
        )
        cluster.kubectl("delete", "schedulingpolicies", ours.scheduler, "--wait=false", check=False)


class Watch:
    """One side's pod: what its scheduler did with it."""

    def __init__(self, cluster: Cluster, side: Side, step: Step) -> None:
        self.cluster = cluster
        self.side = side
        self.step = step
        self.name = step.pod["metadata"]["name"]
        self.outcome = Outcome()
        self.decided_at: float | None = None

    def poll(self) -> bool:
        """One look; True once the side is settled."""
        if self.step.driver is not None:
            self.step.driver(self.cluster, self.side)
        found = json.loads(
            self.cluster.kubectl(
                "get", "pod", self.name, "-n", self.side.namespace, "-o", "json"
            ).stdout
        )
        bound_to = found["spec"].get("nodeName")
        self.outcome.node = self.side.normal(bound_to) if bound_to else None
        failed = [
            e.get("message", "")
            for e in sorted(
                items(self.cluster, "events", "-n", self.side.namespace),
                key=lambda e: e.get("eventTime") or e.get("firstTimestamp") or "",
            )
            if e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == self.name
        ]
        self.outcome.failed = self.side.normal(failed[0]) if failed else None
        self.outcome.claims = {
            self.side.normal(name): self.claim(name) for name in claim_names(found)
        }
        decided = self.outcome.node is not None or self.outcome.failed is not None
        if decided and self.decided_at is None:
            self.decided_at = time.monotonic()
        # A pod told FailedScheduling that kube binds may yet be retried and bound.
        wait = RETRY if self.outcome.node is None and self.step.expect.node else SETTLE
        return self.decided_at is not None and time.monotonic() - self.decided_at >= wait

    def claim(self, name: str) -> Any:
        """The claim's allocation (without its timestamp), reservedFor and finalizers, in the
        side's normal form; None while it does not exist."""
        got = self.cluster.kubectl(
            "get",
            "resourceclaims.resource.k8s.io",
            name,
            "-n",
            self.side.namespace,
            "-o",
            "json",
            check=False,
        )
        if got.returncode != 0:
            return None
        found = json.loads(got.stdout)
        status = found.get("status", {})
        allocation = dict(status.get("allocation") or {})
        allocation.pop("allocationTimestamp", None)
        reserved = sorted(r["name"] for r in status.get("reservedFor", ()))
        what = {
            "allocation": allocation,
            "reservedFor": reserved,
            "finalizers": found["metadata"].get("finalizers", []),
        }
        normal: Any = json.loads(self.side.normal(json.dumps(what, sort_keys=True)))
        return normal

    def devices(self) -> dict[str, list[str]]:
        """Claim -> "request pool device" per allocated device."""
        return {
            name: [
                f"{r['request']} {r['pool']} {r['device']}"
                for r in what["allocation"].get("devices", {}).get("results", ())
            ]
            for name, what in self.outcome.claims.items()
            if what is not None and what["allocation"]
        }


def claim_names(found: Mapping[str, Any]) -> list[str]:
    """The ResourceClaims a pod uses: named in its spec, generated from templates (its
    resourceClaimStatuses), and the claim kube-scheduler made for its extended resources."""
    names = [
        c["resourceClaimName"]
        for c in found["spec"].get("resourceClaims", ())
        if c.get("resourceClaimName")
    ]
    status = found.get("status", {})
    names += [
        s["resourceClaimName"]
        for s in status.get("resourceClaimStatuses", ())
        if s.get("resourceClaimName")
    ]
    extended = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    return names + ([extended] if extended else [])


def run(sides: Sides, build: Build) -> None:
    """Build the scenario on both sides, submit each pod to both, wait until both schedulers
    decided it, then compare; all differences at the end."""
    cluster = sides.cluster
    scenarios = {side.name: build(side) for side in sides.both()}
    for side in sides.both():
        scenario = scenarios[side.name]
        cluster.apply(*scenario.nodes, *scenario.cluster_objects)
        if scenario.claims:
            cluster.apply(*scenario.claims, namespace=side.namespace)
    # Both schedulers learn of nodes, slices, classes and claims through their watches; give
    # them a moment, as nothing in the API tells when their caches have caught up.
    time.sleep(1.0)
    every = len(items(cluster, "nodes"))
    mine = len(items(cluster, "nodes", "-l", f"{SIDE_LABEL}={sides.kube.namespace}"))
    problems: list[str] = []
    for i, kube_step in enumerate(scenarios["kube"].steps):
        watches = [Watch(cluster, side, scenarios[side.name].steps[i]) for side in sides.both()]
        for watch in watches:
            cluster.apply(watch.step.pod, namespace=watch.side.namespace)
        found = settle_both(watches, TIMEOUT)
        kube, ours = (w.outcome for w in watches)
        name = kube_step.pod["metadata"]["name"]
        summary = report(name, kube.lines(), ours.lines())
        found += [
            f"scenario: {p}" for p in unexpected(watches[0], kube_step.expect, every, every - mine)
        ]
        found += [
            f"{what} differs: kube {getattr(kube, what)!r}, ours {getattr(ours, what)!r}"
            for what in COMPARED
            if getattr(kube, what) != getattr(ours, what)
        ]
        if found:
            problems.append("\n".join([*found, summary]))
    assert not problems, "\n\n".join(problems)


def unexpected(watch: Watch, expect: Expect, every: int, others: int) -> list[str]:
    """How kube-scheduler's outcome differs from what the scenario says it does."""
    kube = watch.outcome
    problems = []
    if kube.node != expect.node:
        problems.append(f"expected kube-scheduler to bind on {expect.node}")
    if expect.message is not None:
        message = expect.message.format(all=every, others=others)
        if kube.failed != message:
            problems.append(f"expected kube-scheduler to say {message!r}")
    devices = watch.devices()
    if {k: list(v) for k, v in expect.devices.items()} != devices:
        problems.append(f"expected kube-scheduler to allocate {dict(expect.devices)}")
    return problems


# --- the scenarios -------------------------------------------------------------------------------

NOT_ALLOCATABLE = (
    "0/{all} nodes are available: {mine} cannot allocate all claims, {others} node(s) didn't "
    "match Pod's node affinity/selector. preemption: 0/{all} nodes are available: {all} "
    "Preemption is not helpful for scheduling."
)
# A Filter error (kube's fatal allocator errors): the pod is told it in these words, no count.
FILTER_ERROR = 'running "DynamicResources" filter plugin: '


def not_allocatable(mine: int) -> str:
    """kube's message for a pod whose claims no node of its side can satisfy (as many nodes on
    each side: kube lists equal counts by their text)."""
    return NOT_ALLOCATABLE.replace("{mine}", str(mine))


def gpu(name: str, **attributes: Any) -> dict[str, Any]:
    return device(name, attributes=attributes)


def test_exact_count(sides: Sides) -> None:
    """ExactCount: a node with too few devices is skipped; the devices are taken in the
    slice's order."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a"), side.node("b", cpu="2")],
            cluster_objects=[
                side.device_class(),
                side.gpus("a", gpu("gpu-0"), gpu("gpu-1")),
                side.gpus("b", gpu("gpu-0"), gpu("gpu-1"), gpu("gpu-2"), gpu("gpu-3")),
            ],
            claims=[
                resource_claim("three", [exactly("gpu", side.named("gpu"), count=3)]),
                resource_claim("two", [exactly("gpu", side.named("gpu"), count=2)]),
            ],
            steps=[
                # a is roomier, but has two devices only.
                Step(
                    side.pod("p1", claims={"gpu": "three"}),
                    Expect("b", devices={"three": ["gpu b gpu-0", "gpu b gpu-1", "gpu b gpu-2"]}),
                ),
                Step(
                    side.pod("p2", claims={"gpu": "two"}),
                    Expect("a", devices={"two": ["gpu a gpu-0", "gpu a gpu-1"]}),
                ),
            ],
        )

    run(sides, build)


def test_selectors_on_attributes_and_capacities(sides: Sides) -> None:
    """Request selectors: a string attribute, a capacity compared as a quantity, a semantic
    version."""

    def build(side: Side) -> Scenario:
        big = f'{side.capacity("memory")}.compareTo(quantity("40Gi")) >= 0'
        a100 = f'{side.attribute("model")} == "a100"'
        recent = f'{side.attribute("firmware")}.isGreaterThan(semver("1.2.0"))'
        return Scenario(
            nodes=[side.node("a"), side.node("b", cpu="2")],
            cluster_objects=[
                side.device_class(),
                side.gpus("a", card("gpu-0", "a100", "20Gi", "1.1.0")),
                side.gpus(
                    "b",
                    card("gpu-0", "t4", "16Gi", "1.3.0"),
                    card("gpu-1", "a100", "80Gi", "1.3.0"),
                    card("gpu-2", "t4", "16Gi", "1.3.0"),
                ),
            ],
            claims=[
                resource_claim("big", [exactly("gpu", side.named("gpu"), selectors=[a100, big])]),
                resource_claim("a100", [exactly("gpu", side.named("gpu"), selectors=[a100])]),
                resource_claim("recent", [exactly("gpu", side.named("gpu"), selectors=[recent])]),
            ],
            steps=[
                # a is roomier, but its a100 has 20Gi.
                Step(
                    side.pod("p1", claims={"gpu": "big"}),
                    Expect("b", devices={"big": ["gpu b gpu-1"]}),
                ),
                Step(
                    side.pod("p2", claims={"gpu": "a100"}),
                    Expect("a", devices={"a100": ["gpu a gpu-0"]}),
                ),
                # a's firmware is too old; b's first device is free.
                Step(
                    side.pod("p3", claims={"gpu": "recent"}),
                    Expect("b", devices={"recent": ["gpu b gpu-0"]}),
                ),
            ],
        )

    run(sides, build)


def card(name: str, model: str, memory: str, firmware: str) -> dict[str, Any]:
    """A GPU of ``model`` with ``memory`` and a firmware version."""
    return device(
        name,
        attributes={"model": model, "firmware": version(firmware)},
        capacity={"memory": memory},
    )


def test_all_devices(sides: Sides) -> None:
    """allocationMode All: every device of the class on the node."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a", cpu="2"), side.node("b")],
            cluster_objects=[
                side.device_class(),
                side.gpus("a", gpu("gpu-0"), gpu("gpu-1")),
                side.gpus("b", gpu("gpu-0"), gpu("gpu-1"), gpu("gpu-2")),
            ],
            claims=[resource_claim("all", [exactly("gpu", side.named("gpu"), count="All")])],
            steps=[
                Step(
                    side.pod("p1", claims={"gpu": "all"}),
                    Expect("b", devices={"all": ["gpu b gpu-0", "gpu b gpu-1", "gpu b gpu-2"]}),
                ),
            ],
        )

    run(sides, build)


def test_same_numa_constraint(sides: Sides) -> None:
    """matchAttribute: two devices on one NUMA node (met on b only), then three (met nowhere)."""

    def build(side: Side) -> Scenario:
        numa = match_attribute(f"{side.driver}/numa")
        return Scenario(
            nodes=[side.node("a"), side.node("b", cpu="2")],
            cluster_objects=[
                side.device_class(),
                side.gpus("a", gpu("gpu-0", numa=0), gpu("gpu-1", numa=1)),
                side.gpus("b", gpu("gpu-0", numa=0), gpu("gpu-1", numa=1), gpu("gpu-2", numa=1)),
            ],
            claims=[
                resource_claim(
                    "pair", [exactly("gpu", side.named("gpu"), count=2)], constraints=[numa]
                ),
                resource_claim(
                    "trio", [exactly("gpu", side.named("gpu"), count=3)], constraints=[numa]
                ),
            ],
            steps=[
                Step(
                    side.pod("p1", claims={"gpu": "pair"}),
                    Expect("b", devices={"pair": ["gpu b gpu-1", "gpu b gpu-2"]}),
                ),
                Step(side.pod("p2", claims={"gpu": "trio"}), Expect(None, not_allocatable(2))),
            ],
        )

    run(sides, build)


def test_first_available(sides: Sides) -> None:
    """firstAvailable: the first alternative (a big GPU) is taken, so the second (any GPU) is
    allocated, named ``gpu/small``."""

    def build(side: Side) -> Scenario:
        big = f'{side.capacity("memory")}.compareTo(quantity("40Gi")) >= 0'
        return Scenario(
            nodes=[side.node("a"), side.node("b", cpu="2")],
            cluster_objects=[
                side.device_class(),
                side.gpus("a", card("small-0", "t4", "16Gi", "1.0.0")),
                side.gpus("b", card("big-0", "a100", "80Gi", "1.0.0")),
            ],
            claims=[
                resource_claim("big", [exactly("gpu", side.named("gpu"), selectors=[big])]),
                resource_claim(
                    "either",
                    [
                        first_available(
                            "gpu",
                            subrequest("big", side.named("gpu"), selectors=[big]),
                            subrequest("small", side.named("gpu")),
                        )
                    ],
                ),
            ],
            steps=[
                Step(
                    side.pod("p1", claims={"gpu": "big"}),
                    Expect("b", devices={"big": ["gpu b big-0"]}),
                ),
                Step(
                    side.pod("p2", claims={"gpu": "either"}),
                    Expect("a", devices={"either": ["gpu/small a small-0"]}),
                ),
            ],
        )

    run(sides, build)


def test_exhausted_pool(sides: Sides) -> None:
    """The one device is allocated: the next claim fits nowhere."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a")],
            cluster_objects=[side.device_class(), side.gpus("a", gpu("gpu-0"))],
            claims=[
                resource_claim("first", [exactly("gpu", side.named("gpu"))]),
                resource_claim("second", [exactly("gpu", side.named("gpu"))]),
            ],
            steps=[
                Step(
                    side.pod("p1", claims={"gpu": "first"}),
                    Expect("a", devices={"first": ["gpu a gpu-0"]}),
                ),
                Step(side.pod("p2", claims={"gpu": "second"}), Expect(None, not_allocatable(1))),
            ],
        )

    run(sides, build)


def test_claim_shared_by_two_pods(sides: Sides) -> None:
    """A claim allocated for one pod keeps the next pod that uses it on the same node, reserved
    for both."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a"), side.node("b", cpu="2")],
            cluster_objects=[
                side.device_class(),
                side.gpus("a", gpu("gpu-0")),
                side.gpus("b", gpu("gpu-0")),
            ],
            claims=[resource_claim("shared", [exactly("gpu", side.named("gpu"))])],
            steps=[
                Step(
                    side.pod("p1", claims={"gpu": "shared"}),
                    Expect("a", devices={"shared": ["gpu a gpu-0"]}),
                ),
                # b is roomier now, but the claim's devices are on a.
                Step(
                    side.pod("p2", cpu="1500m", claims={"gpu": "shared"}),
                    Expect("a", devices={"shared": ["gpu a gpu-0"]}),
                ),
            ],
        )

    run(sides, build)


def test_device_limit(sides: Sides) -> None:
    """A claim may have at most 32 devices: 33 are refused with kube's words although the node
    has 40."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a")],
            cluster_objects=[
                side.device_class(),
                side.gpus("a", *(gpu(f"gpu-{i}") for i in range(40))),
            ],
            claims=[
                resource_claim("many", [exactly("gpu", side.named("gpu"), count=33)]),
                resource_claim(
                    "split",
                    [
                        exactly("one", side.named("gpu"), count=17),
                        exactly("two", side.named("gpu"), count=16),
                    ],
                ),
            ],
            steps=[
                Step(
                    side.pod("p1", claims={"gpu": "many"}),
                    Expect(
                        None,
                        FILTER_ERROR + "claim <ns>/many, request gpu: adding 33 devices exceeds "
                        "the claim limit of 32, with 0 already accounted for",
                    ),
                ),
                Step(
                    side.pod("p2", claims={"gpu": "split"}),
                    Expect(
                        None,
                        FILTER_ERROR + "claim <ns>/split, request two: adding 16 devices exceeds "
                        "the claim limit of 32, with 17 already accounted for",
                    ),
                ),
            ],
        )

    run(sides, build)


def test_admin_access(sides: Sides) -> None:
    """A request with adminAccess gets a device that is allocated already."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a")],
            cluster_objects=[side.device_class(), side.gpus("a", gpu("gpu-0"))],
            claims=[
                resource_claim("user", [exactly("gpu", side.named("gpu"))]),
                resource_claim("monitor", [exactly("gpu", side.named("gpu"), admin_access=True)]),
            ],
            steps=[
                Step(
                    side.pod("p1", claims={"gpu": "user"}),
                    Expect("a", devices={"user": ["gpu a gpu-0"]}),
                ),
                Step(
                    side.pod("p2", claims={"gpu": "monitor"}),
                    Expect("a", devices={"monitor": ["gpu a gpu-0"]}),
                ),
            ],
        )

    run(sides, build)


def test_device_taints(sides: Sides) -> None:
    """A tainted device is allocated only to a request that tolerates its taint."""

    def build(side: Side) -> Scenario:
        dirty = taint("example.com/unhealthy")
        return Scenario(
            nodes=[side.node("a"), side.node("b", cpu="2")],
            cluster_objects=[
                side.device_class(),
                side.gpus("a", device("gpu-0", taints=[dirty])),
                side.gpus("b", gpu("gpu-0")),
            ],
            claims=[
                resource_claim("plain", [exactly("gpu", side.named("gpu"))]),
                resource_claim(
                    "tolerant",
                    [
                        exactly(
                            "gpu",
                            side.named("gpu"),
                            tolerations=[toleration("example.com/unhealthy")],
                        )
                    ],
                ),
                resource_claim("late", [exactly("gpu", side.named("gpu"))]),
            ],
            steps=[
                # a is roomier, but its device is tainted.
                Step(
                    side.pod("p1", claims={"gpu": "plain"}),
                    Expect("b", devices={"plain": ["gpu b gpu-0"]}),
                ),
                Step(
                    side.pod("p2", claims={"gpu": "tolerant"}),
                    Expect("a", devices={"tolerant": ["gpu a gpu-0"]}),
                ),
                Step(side.pod("p3", claims={"gpu": "late"}), Expect(None, not_allocatable(2))),
            ],
        )

    run(sides, build)


def test_partitionable_devices(sides: Sides) -> None:
    """Partitionable devices: a whole GPU and its two halves draw on one counter set, published
    in a slice of its own in the node's pool; a half in use leaves no room for the whole."""

    def build(side: Side) -> Scenario:
        pool = side.named("a")
        counters = resource_slice(
            side.named("a-counters"),
            side.driver,
            pool,
            node=pool,
            slice_count=2,
            shared_counters={"gpu-0": {"memory": "40Gi"}},
            labels={TEST_LABEL: side.prefix},
        )
        whole, half = (f'{side.attribute("size")} == "{size}"' for size in ("whole", "half"))
        return Scenario(
            nodes=[side.node("a")],
            cluster_objects=[
                side.device_class(),
                counters,
                side.gpus(
                    "a",
                    part("whole", "whole", "40Gi"),
                    part("half-0", "half", "20Gi"),
                    part("half-1", "half", "20Gi"),
                    slice_count=2,
                ),
            ],
            claims=[
                resource_claim("half", [exactly("gpu", side.named("gpu"), selectors=[half])]),
                resource_claim("whole", [exactly("gpu", side.named("gpu"), selectors=[whole])]),
                resource_claim("other", [exactly("gpu", side.named("gpu"), selectors=[half])]),
            ],
            steps=[
                Step(
                    side.pod("p1", claims={"gpu": "half"}),
                    Expect("a", devices={"half": ["gpu a half-0"]}),
                ),
                Step(side.pod("p2", claims={"gpu": "whole"}), Expect(None, not_allocatable(1))),
                Step(
                    side.pod("p3", claims={"gpu": "other"}),
                    Expect("a", devices={"other": ["gpu a half-1"]}),
                ),
            ],
        )

    run(sides, build)


def part(name: str, size: str, memory: str) -> dict[str, Any]:
    """A partition of the GPU gpu-0, drawing ``memory`` from its counter set."""
    return device(name, attributes={"size": size}, consumes_counters={"gpu-0": {"memory": memory}})


def test_consumable_capacity(sides: Sides) -> None:
    """A device that allows multiple allocations is shared by two claims, each consuming part of
    its memory; a third that does not fit in what is left gets nothing."""

    def build(side: Side) -> Scenario:
        shared = device("gpu-0", capacity={"memory": "40Gi"}, allow_multiple_allocations=True)
        return Scenario(
            nodes=[side.node("a")],
            cluster_objects=[side.device_class(), side.gpus("a", shared)],
            claims=[
                resource_claim(
                    name, [exactly("gpu", side.named("gpu"), capacity={"memory": memory})]
                )
                for name, memory in (("first", "30Gi"), ("second", "10Gi"), ("third", "1Gi"))
            ],
            steps=[
                Step(
                    side.pod("p1", claims={"gpu": "first"}),
                    Expect("a", devices={"first": ["gpu a gpu-0"]}),
                ),
                Step(
                    side.pod("p2", claims={"gpu": "second"}),
                    Expect("a", devices={"second": ["gpu a gpu-0"]}),
                ),
                Step(side.pod("p3", claims={"gpu": "third"}), Expect(None, not_allocatable(1))),
            ],
        )

    run(sides, build)


ATTACHED, FAILED = "example.com/attached", "example.com/failed"


def attach(claim: str) -> Driver:
    """The stand-in driver: once ``claim`` is allocated, its devices' binding condition is set
    True in the claim's status, as the driver would once the device is attached."""

    def act(cluster: Cluster, side: Side) -> None:
        got = cluster.kubectl(
            "get", "resourceclaims.resource.k8s.io", claim, "-n", side.namespace, "-o", "json"
        )
        status = json.loads(got.stdout).get("status", {})
        allocation = status.get("allocation")
        if not allocation or status.get("devices"):
            return
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        condition = {
            "type": ATTACHED,
            "status": "True",
            "reason": "Attached",
            "message": "",
            "lastTransitionTime": now,
        }
        devices = [
            {
                "driver": r["driver"],
                "pool": r["pool"],
                "device": r["device"],
                "conditions": [condition],
            }
            for r in allocation["devices"]["results"]
        ]
        cluster.kubectl(
            "patch",
            "resourceclaims.resource.k8s.io",
            claim,
            "-n",
            side.namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"devices": devices}}),
        )

    return act


def test_binding_conditions(sides: Sides) -> None:
    """A device with a binding condition: the claim is allocated (the result carries the
    condition) and the pod bound only once the driver reports the condition True."""

    def build(side: Side) -> Scenario:
        slow = device(
            "gpu-0",
            binding_conditions=[ATTACHED],
            binding_failure_conditions=[FAILED],
            binds_to_node=True,
        )
        return Scenario(
            nodes=[side.node("a")],
            cluster_objects=[side.device_class(), side.gpus("a", slow)],
            claims=[resource_claim("attached", [exactly("gpu", side.named("gpu"))])],
            steps=[
                Step(
                    side.pod("p1", claims={"gpu": "attached"}),
                    Expect("a", devices={"attached": ["gpu a gpu-0"]}),
                    driver=attach("attached"),
                ),
            ],
        )

    run(sides, build)


def test_extended_resource_backed_by_a_device_class(sides: Sides) -> None:
    """A pod asking for the extended resource of a DeviceClass (extendedResourceName) and no
    claim: the scheduler makes a claim for it and allocates a device of the class."""

    def build(side: Side) -> Scenario:
        resource = f"example.com/{side.named('gpu')}"
        return Scenario(
            nodes=[side.node("a"), side.node("b", cpu="2")],
            cluster_objects=[
                side.device_class(extended_resource_name=resource),
                side.gpus("b", gpu("gpu-0"), gpu("gpu-1")),
            ],
            claims=[],
            steps=[
                # a is roomier, but has no device; the request is named after the container and
                # the resource's place among its requests (cpu, the class's, memory).
                Step(
                    side.pod("p1", requests={resource: "2"}),
                    Expect(
                        "b",
                        devices={
                            "p1-extended-resources-<random>": [
                                "container-0-request-1 b gpu-0",
                                "container-0-request-1 b gpu-1",
                            ]
                        },
                    ),
                ),
                Step(side.pod("p2", requests={resource: "1"}), Expect(None, not_allocatable(2))),
            ],
        )

    run(sides, build)


def test_incomplete_pool(sides: Sides) -> None:
    """A pool whose slices are not all published yet: an ExactCount request passes it by (the
    roomier node has only that pool), an All request is refused with kube's error."""

    def build(side: Side) -> Scenario:
        return Scenario(
            nodes=[side.node("a"), side.node("b", cpu="2")],
            cluster_objects=[
                side.device_class(),
                side.gpus("a", gpu("gpu-0"), gpu("gpu-1"), slice_count=2),
                side.gpus("b", gpu("gpu-0")),
            ],
            claims=[
                resource_claim("one", [exactly("gpu", side.named("gpu"))]),
                resource_claim("all", [exactly("gpu", side.named("gpu"), count="All")]),
            ],
            steps=[
                Step(
                    side.pod("p1", claims={"gpu": "one"}),
                    Expect("b", devices={"one": ["gpu b gpu-0"]}),
                ),
                Step(
                    side.pod("p2", claims={"gpu": "all"}),
                    Expect(
                        None,
                        FILTER_ERROR + "claim <ns>/all, request gpu: asks for all devices, but "
                        "resource pool gpu.example.com/a is currently being updated",
                    ),
                ),
            ],
        )

    run(sides, build)


def test_cel_runtime_error(sides: Sides) -> None:
    """A selector that fails at run time (an attribute the device lacks): kube's error."""

    def build(side: Side) -> Scenario:
        missing = f"{side.attribute('missing')} == 1"
        return Scenario(
            nodes=[side.node("a")],
            cluster_objects=[side.device_class(), side.gpus("a", gpu("gpu-0", numa=0))],
            claims=[
                resource_claim("bad", [exactly("gpu", side.named("gpu"), selectors=[missing])])
            ],
            steps=[
                Step(
                    side.pod("p1", claims={"gpu": "bad"}),
                    Expect(
                        None,
                        FILTER_ERROR + "claim <ns>/bad: selector #0 on device "
                        "gpu.example.com/a/gpu-0: CEL runtime error: no such key: missing. "
                        "consider using CEL optional chaining (.? followed by orValue()) or "
                        "guarding the check with has() for optional fields",
                    ),
                )
            ],
        )

    run(sides, build)
