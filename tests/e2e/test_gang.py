"""Gang scheduling (issue 31) on the operator, for each pod group API it reads: Volcano's PodGroup
(scheduling.volcano.sh/v1beta1, members named by the annotation scheduling.k8s.io/group-name),
scheduler-plugins' (scheduling.x-k8s.io/v1alpha1, the label scheduling.x-k8s.io/pod-group), and
Kubernetes' own (scheduling.k8s.io/v1beta1, ``spec.schedulingGroup``; its parity with
kube-scheduler is test_parity_gang's).

All run on ``gang_cluster`` (the native API served) with the test CRDs of the other two
installed (``pod_group_crds``), each with a policy of its own over its own nodes (label
``pool``) that has GangScheduling under ``spec.plugins.preEnqueue``. A group that fits is bound
whole; one that does not binds no pod and leaves nothing reserved; of two groups competing for
room only one can have, one is placed and the other waits, neither half placed; a group that
cannot be placed is retried with backoff, and its timeout (scheduler-plugins'
``scheduleTimeoutSeconds``) is honoured; a group preempts only to fit whole; its status is
written as that API's own scheduler writes it; a group with a bad ``minMember`` has its members
told which field is wrong while the operator goes on serving other pods.

No kubelet runs: where a victim is evicted the test stands in for it, force-deleting a pod once
it is being deleted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from harness.e2e import Cluster, Operator, bound, events, items, wait_for
from harness.objects import (
    GROUP_APIS,
    NATIVE,
    SCHEDULER_PLUGINS,
    VOLCANO,
    member,
    node,
    pod,
    pod_group,
    policy,
)

pytestmark = [pytest.mark.gang_cluster, pytest.mark.usefixtures("pod_group_crds")]

# Far longer than any of these takes; a timeout only says something never happened.
GENEROUS = 60.0
# What a group not placed within its timeout is told, after why (group_cycle).
TIMED_OUT = "not placed within its timeout of"
PRIORITIES = {"low": 100, "high": 1000}

RESOURCES = {
    NATIVE: "podgroups.scheduling.k8s.io",
    VOLCANO: "podgroups.scheduling.volcano.sh",
    SCHEDULER_PLUGINS: "podgroups.scheduling.x-k8s.io",
}
"""Each API's PodGroup resource, as kubectl names it."""


@pytest.fixture(params=GROUP_APIS)
def api(request: pytest.FixtureRequest) -> str:
    """The pod group API under test."""
    name: str = request.param
    return name


class Gang:
    """One test's pool of nodes, its policy ``gang-<pool>`` with GangScheduling, its namespace,
    and the operator serving it."""

    def __init__(self, cluster: Cluster, namespace: str, pool: str, api: str) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.pool = pool
        self.api = api
        self.scheduler = f"gang-{pool}"

    def policy(self, **plugins_args: Any) -> dict[str, Any]:
        """The pool's policy: NodeResourcesFit, LeastAllocated, DefaultPreemption and
        GangScheduling (with ``plugins_args`` as its args, if any)."""
        gang: dict[str, Any] = {"name": "GangScheduling"}
        if plugins_args:
            gang["args"] = plugins_args
        return policy(
            self.scheduler,
            self.pool,
            postFilters=[{"name": "DefaultPreemption"}],
            plugins={"preEnqueue": [gang]},
        )

    def nodes(self, *cpus: str) -> None:
        """Nodes ``<pool>-0``, ``<pool>-1``... of ``cpus`` each, in the pool."""
        self.cluster.apply(
            *(
                node(f"{self.pool}-{i}", cpu=cpu, labels={"pool": self.pool})
                for i, cpu in enumerate(cpus)
            )
        )

    def group(self, name: str, min_member: Any, **args: Any) -> None:
        self.cluster.apply(pod_group(self.api, name, min_member, **args), namespace=self.namespace)

    def pods(
        self,
        group: str | None,
        *names: str,
        cpu: str = "1",
        priority: str | None = None,
        on: str | None = None,
    ) -> None:
        """Pods ``names`` for the policy, members of ``group`` if given; of PriorityClass
        ``<pool>-<priority>`` if given; bound to node ``on`` from the start if given."""
        extra: dict[str, Any] = {}
        if priority is not None:
            extra["priorityClassName"] = f"{self.pool}-{priority}"
        if on is not None:
            extra["nodeName"] = on
        made = [pod(name, self.scheduler, cpu=cpu, extra=extra) for name in names]
        self.cluster.apply(
            *(m if group is None else member(m, self.api, group) for m in made),
            namespace=self.namespace,
        )

    def bound(self) -> dict[str, str]:
        return bound(self.cluster, self.namespace)

    def told(self, name: str) -> list[str]:
        """The FailedScheduling messages pod ``name`` was told, oldest first."""
        return [
            e["message"]
            for e in sorted(
                events(self.cluster, self.namespace, "FailedScheduling"),
                key=lambda e: e.get("eventTime") or e.get("firstTimestamp") or "",
            )
            if e["involvedObject"]["name"] == name
        ]

    def status(self, group: str) -> dict[str, Any]:
        found = json.loads(
            self.cluster.kubectl(
                "get", RESOURCES[self.api], group, "-n", self.namespace, "-o", "json"
            ).stdout
        )
        status: dict[str, Any] = found.get("status") or {}
        return status

    def kubelet(self) -> None:
        """Finish the deletion of the pods being deleted, as their kubelet would."""
        for p in items(self.cluster, "pods", "-n", self.namespace):
            if p["metadata"].get("deletionTimestamp"):
                self.cluster.kubectl(
                    "delete", "pod", p["metadata"]["name"], "-n", self.namespace,
                    "--grace-period=0", "--force", check=False,
                )  # fmt: skip


@pytest.fixture
def gang(
    gang_cluster: Cluster, namespace: str, pool: str, operator: Operator, api: str
) -> Iterator[Gang]:
    """The test's Gang, its policy created and the operator started."""
    made = Gang(gang_cluster, namespace, pool, api)
    gang_cluster.apply(
        *(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"{pool}-{name}", "labels": {"pool": pool}},
                "value": value,
            }
            for name, value in PRIORITIES.items()
        )
    )
    gang_cluster.apply(made.policy())
    operator.start()
    yield made
    gang_cluster.kubectl("delete", "pods", "--all", "-n", namespace, "--grace-period=0", "--force")
    gang_cluster.kubectl("delete", "priorityclasses", "-l", f"pool={pool}", "--wait=false")


def settled(probe: Any, seconds: float = 3.0) -> None:
    """``probe()`` stays true for ``seconds`` (what should not happen does not, meanwhile)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert probe(), "changed while it should have held"
        time.sleep(0.2)


def members_of(names: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {name: where for name, where in names.items() if name.startswith(prefix)}


# --- the status each API's own scheduler writes ---------------------------------------------------


def scheduled_status(api: str, status: Mapping[str, Any]) -> bool:
    """Whether ``status`` says the group is scheduled, as that API's scheduler writes it:
    kube's PodGroupInitiallyScheduled condition True (reason Scheduled); Volcano's phase Running
    (its session's: allocated members reach minMember) with its gang plugin's Scheduled
    condition; scheduler-plugins' phase Scheduling (at least minMember scheduled, not yet
    running: the phases of running pods are its controller's) and a scheduleStartTime."""
    conditions: dict[str, dict[str, Any]] = {c["type"]: c for c in status.get("conditions") or ()}
    if api == NATIVE:
        said = conditions.get("PodGroupInitiallyScheduled", {})
        return bool(said.get("status") == "True" and said.get("reason") == "Scheduled")
    if api == VOLCANO:
        said = conditions.get("Scheduled", {})
        return bool(status.get("phase") == "Running" and said.get("status") == "True")
    return bool(status.get("phase") == "Scheduling" and status.get("scheduleStartTime"))


def unschedulable_status(api: str, status: Mapping[str, Any]) -> bool:
    """Whether ``status`` says the group could not be placed, as that API's scheduler writes it:
    kube's PodGroupInitiallyScheduled False (Unschedulable); Volcano's Unschedulable condition
    (NotEnoughResources, "<n>/<members> tasks in gang unschedulable: <why>"), phase Pending;
    scheduler-plugins' phase Pending, with a scheduleStartTime."""
    conditions: dict[str, dict[str, Any]] = {c["type"]: c for c in status.get("conditions") or ()}
    if api == NATIVE:
        said = conditions.get("PodGroupInitiallyScheduled", {})
        return bool(said.get("status") == "False" and said.get("reason") == "Unschedulable")
    if api == VOLCANO:
        said = conditions.get("Unschedulable", {})
        return bool(
            said.get("status") == "True"
            and said.get("reason") == "NotEnoughResources"
            and "tasks in gang unschedulable: " in said.get("message", "")
            and status.get("phase") == "Pending"
        )
    return bool(status.get("phase") == "Pending" and status.get("scheduleStartTime"))


# --- the tests ------------------------------------------------------------------------------------


def test_a_group_that_fits_is_bound_whole_and_says_so(gang: Gang) -> None:
    """Three members of a group of four wait, untried; the fourth arrives and all four are
    bound, spread as LeastAllocated spreads them, and the group's status says so."""
    gang.nodes("2", "2")
    gang.group("train", 4)
    gang.pods("train", "train-0", "train-1", "train-2")
    # Three of four: PreEnqueue holds them, untried.
    settled(lambda: not gang.bound() and not gang.told("train-0"))
    gang.pods("train", "train-3")
    wait_for("the group bound", lambda: len(gang.bound()) == 4)
    placed = gang.bound()
    assert sorted(placed.values()) == sorted([f"{gang.pool}-0"] * 2 + [f"{gang.pool}-1"] * 2)
    wait_for(
        "the group's status written",
        lambda: scheduled_status(gang.api, gang.status("train")),
    )


def test_a_group_that_does_not_fit_binds_nothing_and_holds_nothing(gang: Gang) -> None:
    """Room for three of four members: none is bound, each is told why, the status says so;
    then a pod of no group, as large as three members, fits where they did not bind."""
    gang.nodes("3")
    gang.group("train", 4)
    gang.pods("train", *(f"train-{i}" for i in range(4)))
    wait_for(
        "every member told why",
        lambda: all(gang.told(f"train-{i}") for i in range(4)),
    )
    assert gang.bound() == {}
    assert any("minCount (4) cannot be satisfied" in m for m in gang.told("train-0"))
    wait_for(
        "the group's status written",
        lambda: unschedulable_status(gang.api, gang.status("train")),
    )
    gang.pods(None, "alone", cpu="3")
    wait_for("the pod of no group bound", lambda: "alone" in gang.bound())
    settled(lambda: set(gang.bound()) == {"alone"})


def test_two_competing_groups_one_placed_whole_the_other_waits(gang: Gang) -> None:
    """Room for one group of two: created together, one is bound whole and the other waits,
    neither half placed; once the first is gone the other is bound."""
    gang.nodes("2")
    gang.group("a", 2)
    gang.group("b", 2)
    gang.pods("a", "a-0", "a-1")
    gang.pods("b", "b-0", "b-1")
    wait_for("one group bound", lambda: len(gang.bound()) == 2)

    def whole() -> bool:
        placed = gang.bound()
        return len(members_of(placed, "a-")) in (0, 2) and len(members_of(placed, "b-")) in (0, 2)

    settled(lambda: whole() and len(gang.bound()) == 2)
    first = "a-" if members_of(gang.bound(), "a-") else "b-"
    other = "b-" if first == "a-" else "a-"
    wait_for("the other told why", lambda: gang.told(f"{other}0") or gang.told(f"{other}1"))
    gang.cluster.kubectl(
        "delete", "pods", f"{first}0", f"{first}1", "-n", gang.namespace,
        "--grace-period=0", "--force",
    )  # fmt: skip
    wait_for("the other group bound", lambda: len(members_of(gang.bound(), other)) == 2)


def test_a_group_that_cannot_be_placed_is_retried_with_backoff(gang: Gang) -> None:
    """A group that does not fit is not tried again and again while nothing changes (kube's
    backoff: 1 s doubling to 10 s, and an unschedulable pod waits for an event that may help);
    a node that makes room has it placed whole."""
    gang.nodes("1")
    gang.group("train", 2)
    gang.pods("train", "train-0", "train-1")
    wait_for("the members told why", lambda: gang.told("train-0"))
    time.sleep(8.0)
    # At most the attempts of backoffs of 1, 2 and 4 s in 8 s: a scheduler trying the group
    # over and over would have told far more.
    assert len(gang.told("train-0")) <= 4, gang.told("train-0")
    gang.nodes("1", "1")
    wait_for("the group bound", lambda: len(gang.bound()) == 2)


@pytest.mark.parametrize("api", [SCHEDULER_PLUGINS])
def test_a_groups_timeout_is_honoured(gang: Gang) -> None:
    """scheduler-plugins' ``scheduleTimeoutSeconds``: a group that fails again once its timeout
    has passed since its first failure is told so, and its status's scheduleStartTime starts
    again; room made later still places it whole."""
    gang.nodes("1")
    gang.group("train", 3, timeout=2)
    gang.pods("train", "train-0", "train-1", "train-2")
    wait_for("the members told why", lambda: gang.told("train-0"))
    first = gang.status("train").get("scheduleStartTime")
    assert first, gang.status("train")
    assert not any(TIMED_OUT in m for m in gang.told("train-0"))
    # Past the timeout (what the test is about), a node that helps, not enough, has the group
    # tried again.
    time.sleep(3.0)
    gang.nodes("1", "1")
    wait_for(
        "the members told the group timed out",
        lambda: any(TIMED_OUT + " 2s" in m for m in gang.told("train-0")),
    )
    assert gang.bound() == {}
    wait_for(
        "the schedule start time restarted",
        lambda: gang.status("train").get("scheduleStartTime", first) != first,
    )
    gang.nodes("1", "1", "1")
    wait_for("the group bound", lambda: len(gang.bound()) == 3)


def test_a_group_preempts_only_to_fit_whole(gang: Gang) -> None:
    """Two nodes, each full with a low-priority pod and one high (above the group): a
    high-priority group of two members of 1 cpu, each node able to free one cpu. Evicting both
    low pods makes room for the whole group: both are evicted and the group bound. A second
    group of three of the same priority finds no room even by evicting: it evicts nothing."""
    gang.nodes("2", "2")
    for i in range(2):
        gang.pods(None, f"low-{i}", priority="low", on=f"{gang.pool}-{i}")
        gang.pods(None, f"keep-{i}", priority="high", on=f"{gang.pool}-{i}")
    args = {} if gang.api == SCHEDULER_PLUGINS else {"priority_class": f"{gang.pool}-high"}
    gang.group("big", 3, **args)
    gang.pods("big", "big-0", "big-1", "big-2", priority="high")
    wait_for("the big group told why", lambda: gang.told("big-0"))

    def nobody_evicted() -> bool:
        pods = items(gang.cluster, "pods", "-n", gang.namespace)
        return not any(p["metadata"].get("deletionTimestamp") for p in pods) and len(pods) == 7

    settled(nobody_evicted)
    # Without kube-controller-manager, nothing removes a native group's protection finalizer.
    gang.cluster.kubectl("delete", RESOURCES[gang.api], "big", "-n", gang.namespace, "--wait=false")
    gang.cluster.kubectl(
        "delete", "pods", "big-0", "big-1", "big-2", "-n", gang.namespace,
        "--grace-period=0", "--force",
    )  # fmt: skip
    gang.group("train", 2, **args)
    gang.pods("train", "train-0", "train-1", priority="high")

    def placed() -> bool:
        gang.kubelet()
        return len(members_of(gang.bound(), "train-")) == 2

    wait_for("the group bound after evicting the low pods", placed, timeout=GENEROUS)
    left = {p["metadata"]["name"] for p in items(gang.cluster, "pods", "-n", gang.namespace)}
    assert left == {"keep-0", "keep-1", "train-0", "train-1"}


@pytest.mark.parametrize("api", [VOLCANO, SCHEDULER_PLUGINS])
def test_a_min_member_not_an_integer_is_refused_by_the_api_server(gang: Gang) -> None:
    """The CRDs' schemas (as the APIs publish them) refuse a minMember that is not an
    integer: the user is told at once, naming the field."""
    created = gang.cluster.kubectl(
        "apply", "-n", gang.namespace, "-f", "-",
        stdin=json.dumps(pod_group(gang.api, "train", "three")), check=False,
    )  # fmt: skip
    assert created.returncode != 0
    assert "spec.minMember" in created.stderr, created.stderr


@pytest.mark.parametrize("api", [VOLCANO, SCHEDULER_PLUGINS])
def test_a_bad_group_holds_its_members_saying_why_and_the_operator_serves_on(gang: Gang) -> None:
    """A PodGroup the schema lets through but the model cannot read (a minResources quantity
    that is none): its members are held, each told which field is wrong, once; a pod of no
    group is bound meanwhile."""
    gang.nodes("4")
    gang.group("train", 2, min_resources={"cpu": "lots"})
    gang.pods("train", "train-0", "train-1")
    wait_for(
        "the members told spec.minResources is wrong",
        lambda: all(
            any("spec.minResources" in m and "lots" in m for m in gang.told(name))
            for name in ("train-0", "train-1")
        ),
    )
    gang.pods(None, "alone")
    wait_for("the pod of no group bound", lambda: "alone" in gang.bound())
    assert set(gang.bound()) == {"alone"}
    assert len(gang.told("train-0")) == 1, gang.told("train-0")
