"""The filters' PreFilterExtensions (``add_pod``/``remove_pod``, kube-scheduler's AddPod/RemovePod)
and the pipeline's what-if built on them: a state updated for a pod taken out of its node, or put
back, gives the verdicts its pre-filter gives on the snapshot as it then is; the state it was
made from never changes; and a what-if that takes pods out and puts them back answers as the
filters asked afresh at every step, ending where it started."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from policy_scheduler.framework.interface import FITS, SKIP, Filter
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import ClusterState, NodeInfo
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.model.volumes import PVC, Volumes
from policy_scheduler.plugins import (
    inter_pod_affinity,
    node_resources_fit,
    pod_topology_spread,
    volume_restrictions,
)
from policy_scheduler.runtime.schedule_one import Pipeline

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def pod(name: str, labels: Mapping[str, str] | None = None, cpu: int = 1, **spec: Any) -> PodView:
    container = {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}
    return PodView(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": name,
                "labels": dict(labels or {}),
            },
            "spec": {"containers": [container], **spec},
        }
    )


def node(name: str, zone: str, *pods: PodView, cpu: int = 8) -> NodeInfo:
    raw = {
        "metadata": {"name": name, "labels": {HOSTNAME: name, ZONE: zone}},
        "status": {"allocatable": {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}},
    }
    return NodeInfo(NodeView(raw), pods)


def required(kind: str, selector: Mapping[str, str], key: str = HOSTNAME) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": dict(selector)}, "topologyKey": key}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def spread(selector: Mapping[str, str], key: str = HOSTNAME, **extra: Any) -> list[Any]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": dict(selector)},
            **extra,
        }
    ]


def claim_volume(name: str) -> dict[str, Any]:
    return {"name": f"v-{name}", "persistentVolumeClaim": {"claimName": name}}


WEB = {"app": "web"}
DB = {"app": "db"}


def verdicts(plugin: Filter[Any], state: Any, incoming: PodView, snapshot: ClusterState) -> Any:
    """Each node's reasons, by name (a skipped filter passes every node)."""
    if state is SKIP:
        return {info.name: FITS for info in snapshot.table.infos}
    block = snapshot.table.all()
    found = {info.name: FITS for info in block}
    for reasons, indices in plugin.filter_nodes(state, incoming, block).items():
        for i in indices.tolist():
            found[block[i].name] = reasons
    return found


# (case, the filter, the pod being scheduled, the nodes, the pod taken out, and the verdicts
# on n1 and n2 once it is out)
CASES = [
    (
        "the pod's anti-affinity: its victim gone, its node fits",
        inter_pod_affinity.new_filter({}, "i"),
        pod("p", affinity=required("podAntiAffinity", DB)),
        [node("n1", "a", pod("db", DB)), node("n2", "a", pod("db2", DB))],
        "db",
        (FITS, (inter_pod_affinity.ANTI_AFFINITY_NOT_MATCH,)),
    ),
    (
        "an existing pod's anti-affinity: gone with it",
        inter_pod_affinity.new_filter({}, "i"),
        pod("p", WEB),
        [
            node("n1", "a", pod("x", affinity=required("podAntiAffinity", WEB))),
            node("n2", "a", pod("y", affinity=required("podAntiAffinity", WEB, ZONE))),
        ],
        "y",
        ((inter_pod_affinity.EXISTING_ANTI_AFFINITY_NOT_MATCH,), FITS),
    ),
    (
        "the pod's affinity: its only match gone, no node fits",
        inter_pod_affinity.new_filter({}, "i"),
        pod("p", affinity=required("podAffinity", WEB, ZONE)),
        [node("n1", "a", pod("w", WEB)), node("n2", "b")],
        "w",
        ((inter_pod_affinity.AFFINITY_NOT_MATCH,), (inter_pod_affinity.AFFINITY_NOT_MATCH,)),
    ),
    (
        "the pod's affinity to its own kind: its only match gone, it is the first of its group",
        inter_pod_affinity.new_filter({}, "i"),
        pod("p", WEB, affinity=required("podAffinity", WEB, ZONE)),
        [node("n1", "a", pod("w", WEB)), node("n2", "b")],
        "w",
        (FITS, FITS),
    ),
    (
        "topology spread over hosts: one fewer on n1 lowers its skew",
        pod_topology_spread.new_filter({"defaultingType": "List"}, "s"),
        pod("p", WEB, topologySpreadConstraints=spread(WEB)),
        [node("n1", "a", pod("w1", WEB), pod("w2", WEB)), node("n2", "a", pod("w3", WEB))],
        "w1",
        (FITS, FITS),
    ),
    (
        "topology spread over hosts: the minimum falls with the last pod of a domain",
        pod_topology_spread.new_filter({"defaultingType": "List"}, "s"),
        pod("p", WEB, topologySpreadConstraints=spread(WEB)),
        [node("n1", "a", pod("w1", WEB)), node("n2", "a", pod("w2", WEB))],
        "w2",
        ((pod_topology_spread.CONSTRAINTS_NOT_MATCH,), FITS),
    ),
    (
        "topology spread over zones: a pod of another selector counts nowhere",
        pod_topology_spread.new_filter({"defaultingType": "List"}, "s"),
        pod("p", WEB, topologySpreadConstraints=spread(WEB, ZONE)),
        [node("n1", "a", pod("w1", WEB), pod("d", DB)), node("n2", "b")],
        "d",
        ((pod_topology_spread.CONSTRAINTS_NOT_MATCH,), FITS),
    ),
    (
        "topology spread with minDomains above the domains: the minimum stays 0",
        pod_topology_spread.new_filter({"defaultingType": "List"}, "s"),
        pod("p", WEB, topologySpreadConstraints=spread(WEB, minDomains=3)),
        [node("n1", "a", pod("w1", WEB), pod("w2", WEB)), node("n2", "a")],
        "w1",
        ((pod_topology_spread.CONSTRAINTS_NOT_MATCH,), FITS),
    ),
    (
        "a ReadWriteOncePod claim: its only user gone, every node fits",
        volume_restrictions.new_filter({}, "v"),
        pod("p", volumes=[claim_volume("c")]),
        [node("n1", "a", pod("u", volumes=[claim_volume("c")])), node("n2", "a")],
        "u",
        (FITS, FITS),
    ),
    (
        "a ReadWriteOncePod claim: one of its two users gone, still in use",
        volume_restrictions.new_filter({}, "v"),
        pod("p", volumes=[claim_volume("c")]),
        [
            node("n1", "a", pod("u", volumes=[claim_volume("c")])),
            node("n2", "a", pod("v", volumes=[claim_volume("c")])),
        ],
        "u",
        (
            (volume_restrictions.READ_WRITE_ONCE_POD_CONFLICT,),
            (volume_restrictions.READ_WRITE_ONCE_POD_CONFLICT,),
        ),
    ),
]


def cluster(nodes: Sequence[NodeInfo]) -> ClusterState:
    volumes = Volumes()
    volumes.set(
        PVC,
        {
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"accessModes": ["ReadWriteOncePod"]},
        },
    )
    return ClusterState(nodes, volumes=volumes)


@pytest.mark.parametrize(
    ("case", "plugin", "incoming", "nodes", "out", "expected"),
    CASES,
    ids=[case[0] for case in CASES],
)
def test_remove_and_add_pod_follow_the_snapshot(  # noqa: PLR0917
    case: str,
    plugin: Filter[Any],
    incoming: PodView,
    nodes: list[NodeInfo],
    out: str,
    expected: tuple[Sequence[str], Sequence[str]],
) -> None:
    assert plugin.pre_filter_counts_pods, case
    snapshot = cluster(nodes)
    cycle = Cycle(incoming, snapshot)
    state = plugin.pre_filter(cycle)
    assert state is not SKIP, case
    before = verdicts(plugin, state, incoming, snapshot)
    info = next(i for i in snapshot.table.infos if out in i.pods)
    taken = snapshot.remove_pod(info, out)
    assert taken is not None
    removed = plugin.remove_pod(state, cycle, taken, info)
    fresh = plugin.pre_filter(cycle)
    assert verdicts(plugin, removed, incoming, snapshot) == verdicts(
        plugin, fresh, incoming, snapshot
    ), case
    got = verdicts(plugin, removed, incoming, snapshot)
    assert (tuple(got["n1"]), tuple(got["n2"])) == tuple(map(tuple, expected)), case
    # The state it was made from is unchanged, and putting the pod back restores the verdicts.
    assert verdicts(plugin, state, incoming, snapshot) == before, case
    snapshot.add_pod(info, taken)
    restored = plugin.add_pod(removed, cycle, taken, info)
    assert verdicts(plugin, restored, incoming, snapshot) == before, case


def test_topology_spread_counts_are_restored_exactly() -> None:
    plugin = pod_topology_spread.new_filter({"defaultingType": "List"}, "s")
    incoming = pod("p", WEB, topologySpreadConstraints=spread(WEB) + spread(WEB, ZONE))
    snapshot = cluster(
        [node("n1", "a", pod("w1", WEB), pod("w2", WEB)), node("n2", "b", pod("w3", WEB))]
    )
    cycle = Cycle(incoming, snapshot)
    state: Any = plugin.pre_filter(cycle)
    info = snapshot.nodes["n1"]
    current = state
    for name in ("w1", "w2"):
        taken = snapshot.remove_pod(info, name)
        assert taken is not None
        current = plugin.remove_pod(current, cycle, taken, info)
        fresh: Any = plugin.pre_filter(cycle)
        assert current.minimums == fresh.minimums
        assert [t.tolist() for t in current.totals] == [t.tolist() for t in fresh.totals]
    for name in ("w1", "w2"):
        taken = pod(name, WEB)
        snapshot.add_pod(info, taken)
        current = plugin.add_pod(current, cycle, taken, info)
    assert current.minimums == state.minimums
    assert [t.tolist() for t in current.totals] == [t.tolist() for t in state.totals]


def test_a_pod_nothing_counts_leaves_the_state_itself() -> None:
    plugin = inter_pod_affinity.new_filter({}, "i")
    incoming = pod("p", affinity=required("podAntiAffinity", DB))
    snapshot = cluster([node("n1", "a", pod("db", DB), pod("other"))])
    cycle = Cycle(incoming, snapshot)
    state: Any = plugin.pre_filter(cycle)
    info = snapshot.nodes["n1"]
    taken = snapshot.remove_pod(info, "other")
    assert taken is not None
    assert plugin.remove_pod(state, cycle, taken, info) is state


def policy() -> Pipeline:
    return Pipeline(
        [
            node_resources_fit.new_filter({}, "f"),
            volume_restrictions.new_filter({}, "v"),
            pod_topology_spread.new_filter({"defaultingType": "List"}, "s"),
            inter_pod_affinity.new_filter({}, "i"),
        ],
        [],
    )


def test_the_what_if_answers_as_the_filters_asked_afresh() -> None:
    """Pods taken out of nodes and put back at random, every verdict compared with the one the
    pipeline gives running every pre-filter anew; at the end, the verdicts of the start."""
    rng = random.Random(7)
    anti = required("podAntiAffinity", {"role": "x"})
    kinds: list[dict[str, Any]] = [
        {"labels": WEB},
        {"labels": DB},
        {"labels": {"role": "x"}},
        {"labels": WEB, "affinity": required("podAntiAffinity", {"app": "p"}, ZONE)},
        *({"labels": {}} for _ in range(4)),
        {"labels": DB, "volumes": [claim_volume("c")]},
    ]
    nodes = [
        node(
            f"n{n}",
            "ab"[n % 2],
            *(pod(f"q{n}-{i}", cpu=1, **rng.choice(kinds)) for i in range(rng.randrange(1, 5))),
            cpu=4,
        )
        for n in range(6)
    ]
    snapshot = cluster(nodes)
    incoming = pod(
        "p",
        {"app": "p", **WEB},
        cpu=2,
        affinity=anti,
        topologySpreadConstraints=spread(WEB, maxSkew=2) + spread(DB, ZONE),
        volumes=[claim_volume("c")],
    )
    pipeline = policy()
    cycle = Cycle(incoming, snapshot)
    what_if = pipeline.what_if(cycle)
    infos = list(snapshot.table.infos)
    requested = snapshot.table.all().requested("cpu")
    start = [pipeline.refilter(cycle, info) for info in infos]
    assert [tuple(what_if.verdict(info)) for info in infos] == start
    out: list[tuple[NodeInfo, PodView]] = []
    for _ in range(100):
        if out and (rng.random() < 0.4 or not any(i.pods for i in infos)):
            info, taken = out.pop(rng.randrange(len(out)))
            snapshot.add_pod(info, taken)
            what_if.added(info, taken)
        else:
            info = rng.choice([i for i in infos if i.pods])
            taken = snapshot.remove_pod(info, rng.choice(list(info.pods)))  # type: ignore[assignment]
            assert taken is not None
            out.append((info, taken))
            what_if.removed(info, taken)
        for other in infos:
            assert tuple(what_if.verdict(other)) == pipeline.refilter(cycle, other)
    for info, taken in reversed(out):
        snapshot.add_pod(info, taken)
        what_if.added(info, taken)
    assert [tuple(what_if.verdict(info)) for info in infos] == start
    assert np.array_equal(snapshot.table.all().requested("cpu"), requested)
