"""The snapshot's node table stays equal to its NodeInfos, whatever order nodes and pods come and
go in, and its blocks read it correctly: resources (also beyond int64), counts, flags, labels,
images, taints, and the pod groups' counts per node."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from policy_scheduler.model.nodeinfo import ClusterState, NodeInfo, Snapshot
from policy_scheduler.model.nodetable import EXACT_LIMIT, LabelMap, NodeBlock, NodeTable, plus
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.model.quantity import CPU, MEMORY
from policy_scheduler.scheduling.cache import SchedulerCache

GPU = "example.com/gpu"
HUGE = "8Ei"  # 2**63: beyond int64


def node(
    name: str,
    zone: str = "a",
    taints: int = 0,
    cordoned: bool = False,
    allocatable: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A node; one with taints lists the image "web:1" too."""
    return {
        "metadata": {"name": name, "labels": {"zone": zone, "name": name}},
        "spec": {
            "unschedulable": cordoned,
            "taints": [{"key": f"t{i}", "effect": "NoSchedule"} for i in range(taints)],
        },
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10", **(allocatable or {})}
        },
    }


def pod(
    name: str, node_name: str, requests: dict[str, str] | None = None, port: int = 0
) -> PodView:
    container: dict[str, Any] = {"name": "c", "resources": {"requests": requests or {}}}
    if port:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    # Two label groups: pods named p1... and the others.
    labels = {"app": "one" if name.startswith("p1") else "other"}
    return PodView(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": labels},
            "spec": {"nodeName": node_name, "containers": [container]},
        }
    )


def columns(info: NodeInfo) -> dict[str, Any]:
    """What the table must hold for ``info``, read from the NodeInfo itself."""
    names = {*info.node.allocatable, *info.requested, CPU, MEMORY, GPU, "pods"}
    return {
        "allocatable": {n: info.node.allocatable.get(n, 0) for n in names},
        "requested": {n: info.requested.get(n, 0) for n in names},
        "nonzero": {n: info.nonzero_requested[n] for n in (CPU, MEMORY)},
        "pods": len(info.pods),
        "ports": len(info.used_ports),
        "taints": bool(info.node.taints),
        "image": "web:1" in info.node.image_sizes,
        "unschedulable": info.node.unschedulable,
        "zone": info.node.labels.get("zone"),
    }


def read(block: NodeBlock, i: int, names: set[str]) -> dict[str, Any]:
    """The same, as the block reads the ``i``-th node of it."""
    zones = LabelMap("zone", {"a": 1, "b": 2, "c": 3}, default=9, missing=0)
    return {
        "allocatable": {n: block.allocatable(n)[i] for n in names},
        "requested": {n: block.requested(n)[i] for n in names},
        "nonzero": {n: block.nonzero_requested(n)[i] for n in (CPU, MEMORY)},
        "pods": block.pod_count()[i],
        "ports": block.used_port_count()[i],
        "taints": bool(block.taint_sets()[i] != -1),
        "image": bool(block.lists_image("web:1")[i]),
        "unschedulable": bool(block.unschedulable()[i]),
        "zone": {0: None, 1: "a", 2: "b", 3: "c"}[int(block.lookup(zones)[i])],
    }


def assert_table_matches(snapshot: Snapshot) -> None:
    table = snapshot.table
    assert table.infos == list(snapshot)
    block = table.all()
    for i, info in enumerate(snapshot):
        assert table.position(info) == i
        expected = columns(info)
        assert read(block, i, set(expected["allocatable"])) == expected, info.name
    # Equal taints, equal codes; -1 for none.
    codes = block.taint_sets().tolist()
    taints = [info.node.taints for info in snapshot]
    for code, these in zip(codes, taints, strict=True):
        assert (code == -1) == (not these)
        assert [c == code for c in codes] == [t == these for t in taints]
    # Each pod group's counts per node, as arrays by position, equal its dict.
    for group in snapshot.label_groups.values():
        positions, counts = snapshot.node_counts(group).arrays()
        pairs = zip(positions.tolist(), counts.tolist(), strict=True)
        by_name = {table.infos[p].name: c for p, c in pairs}
        assert by_name == {info.name: n for info, n in group.nodes.items()}
    # A block in another order reads the same nodes.
    backwards = table.block(np.arange(len(table))[::-1])
    assert list(backwards) == list(snapshot)[::-1]


Step = Callable[[SchedulerCache], object]

STEPS: dict[str, list[Step]] = {
    "nodes and pods added": [
        lambda c: c.set_node(node("n1")),
        lambda c: c.set_node(node("n2", "b", taints=2, allocatable={GPU: "4"})),
        lambda c: c.set_pod(pod("p1", "n1", {"cpu": "1", "memory": "1Gi"})),
        lambda c: c.set_pod(pod("p2", "n2", {GPU: "1"}, port=80)),
        lambda c: c.set_pod(pod("p3", "n2")),  # no requests: the non-zero defaults count
    ],
    "pods removed and moved": [
        lambda c: c.set_node(node("n1")),
        lambda c: c.set_node(node("n2")),
        lambda c: c.set_pod(pod("p1", "n1", {"cpu": "1"}, port=80)),
        lambda c: c.assume(pod("p2", "", {"cpu": "2"}), "n1"),
        lambda c: c.set_pod(pod("p2", "n2", {"cpu": "2"})),  # bound elsewhere than assumed
        lambda c: c.delete_pod("p1"),
        lambda c: c.forget("p2"),  # confirmed: stays
    ],
    "a node in the middle removed, later ones move up": [
        lambda c: c.set_node(node("n1")),
        lambda c: c.set_node(node("n2", "b")),
        lambda c: c.set_node(node("n3", "c", taints=2)),
        lambda c: c.set_pod(pod("p3", "n3", {"memory": "1Gi"})),
        lambda c: c.delete_node("n2"),
        lambda c: c.set_pod(pod("p1", "n1", {"cpu": "3"})),
    ],
    "a node removed and back with its pods, at the end": [
        lambda c: c.set_node(node("n1")),
        lambda c: c.set_node(node("n2")),
        lambda c: c.set_pod(pod("p1", "n1", {"cpu": "1", GPU: "1"})),
        lambda c: c.delete_node("n1"),
        lambda c: c.set_node(node("n1", allocatable={GPU: "2"})),
    ],
    "a node changed in place: allocatable, taints, cordon, labels": [
        lambda c: c.set_node(node("n1", allocatable={GPU: "2"})),
        lambda c: c.set_node(node("n2")),
        lambda c: c.set_pod(pod("p1", "n1", {"cpu": "1"})),
        lambda c: c.set_node(
            node("n1", "c", taints=1, cordoned=True, allocatable={"cpu": "16"})
        ),  # GPU gone
    ],
    "more nodes than the first arrays hold": [
        *(lambda c, i=i: c.set_node(node(f"n{i}", "abc"[i % 3])) for i in range(40)),
        *(lambda c, i=i: c.set_pod(pod(f"p{i}", f"n{i}", {"cpu": "1"})) for i in range(0, 40, 3)),
        *(lambda c, i=i: c.delete_node(f"n{i}") for i in range(0, 40, 7)),
    ],
    "quantities beyond int64 stay exact": [
        lambda c: c.set_node(node("n1", allocatable={"memory": HUGE})),
        lambda c: c.set_node(node("n2")),
        lambda c: c.set_pod(pod("p1", "n2", {"memory": HUGE})),
        lambda c: c.set_pod(pod("p2", "n2", {"memory": HUGE})),
        lambda c: c.delete_pod("p1"),
    ],
}


@pytest.mark.parametrize("steps", STEPS.values(), ids=STEPS.keys())
def test_the_table_follows_every_change(steps: list[Step]) -> None:
    cache = SchedulerCache()
    for step in steps:
        step(cache)
        assert_table_matches(cache.snapshot)
    # And equals a table built afresh from the same nodes.
    assert_table_matches(Snapshot(list(cache.snapshot)))


def test_labels_asked_for_before_a_change_follow_it() -> None:
    cache = SchedulerCache()
    cache.set_node(node("n1", "a"))
    cache.set_node(node("n2", "b"))
    zones = LabelMap("zone", {"a": 1, "c": 3}, default=7, missing=-1)
    assert cache.snapshot.table.all().lookup(zones).tolist() == [1, 7]
    cache.set_node(node("n2", "c"))
    cache.set_node(node("n3", "a"))
    cache.delete_node("n1")
    unlabelled = node("n4")
    del unlabelled["metadata"]["labels"]["zone"]
    cache.set_node(unlabelled)
    # The same map, reused after the changes (a new value, "c", came in the meantime).
    assert cache.snapshot.table.all().lookup(zones).tolist() == [3, 1, -1]


def test_huge_quantities_switch_a_column_to_python_integers() -> None:
    snapshot = Snapshot([NodeInfo(NodeView(node("n1", allocatable={"memory": HUGE})))])
    block = snapshot.table.all()
    assert block.allocatable(MEMORY).dtype == object
    assert block.allocatable(CPU).dtype == np.int64
    assert block.allocatable(MEMORY).tolist() == [2**63]


@pytest.mark.parametrize(
    ("amount", "dtype"),
    [
        pytest.param(5, np.int64, id="small: int64"),
        pytest.param(EXACT_LIMIT, np.int64, id="at the limit: int64"),
        pytest.param(EXACT_LIMIT + 1, object, id="beyond the limit: Python integers"),
        pytest.param(-(2**70), object, id="far below: Python integers"),
    ],
)
def test_plus(amount: int, dtype: type) -> None:
    result = plus(np.array([1, 2], np.int64), amount)
    assert result.dtype == dtype
    assert result.tolist() == [1 + amount, 2 + amount]


def test_counted_label_maps_translate_to_other_tables() -> None:
    """A map made from one table's codes (as the plugins count pods per domain) gives the same
    numbers in another table, whose codes differ."""
    snapshot = ClusterState(NodeInfo(NodeView(node(f"n{i}", "abc"[i % 3]))) for i in range(5))
    other = NodeTable(reversed(list(snapshot)))
    pods = [pod(f"p{i}", f"n{i}") for i in range(5)]
    for i, p in enumerate(pods):
        snapshot.add_pod(snapshot.nodes[f"n{i}"], p)
    (group,) = (g for g in snapshot.label_groups.values() if g.pod.labels["app"] == "one")
    totals = snapshot.table.per_domain("zone", [snapshot.node_counts(group)])
    assert totals is not None
    counted = LabelMap.of_codes(snapshot.table, "zone", totals, missing=-1)
    # p1 on n1 (zone b); no other pod of group "one".
    assert snapshot.table.all().lookup(counted).tolist() == [0, 1, 0, 0, 1]
    assert other.all().lookup(counted).tolist() == [1, 0, 0, 1, 0]
    assert counted.mapping == {"b": 1}


def test_a_block_of_one_reads_a_node_outside_any_snapshot() -> None:
    info = NodeInfo(
        NodeView(node("n", taints=1, allocatable={GPU: "3"})), [pod("p", "n", {"cpu": "1"})]
    )
    expected = columns(info)
    assert read(NodeBlock.of(info), 0, set(expected["allocatable"])) == expected


def test_an_empty_table() -> None:
    table = NodeTable()
    block = table.all()
    assert (len(block), list(block), block.requested(CPU).tolist()) == (0, [], [])


@pytest.mark.parametrize(
    ("keys", "same"),
    [
        pytest.param(["zone"], [[0, 2], [1]], id="one key"),
        pytest.param(["zone", "disk"], [[0], [1], [2]], id="two keys"),
        pytest.param(["nothing"], [[0, 1, 2]], id="a key no node has: all alike"),
        pytest.param([], [[0, 1, 2]], id="no keys: all alike"),
    ],
)
def test_label_kinds(keys: list[str], same: list[list[int]]) -> None:
    raws = [node("n0", "a"), node("n1", "b"), node("n2", "a")]
    raws[0]["metadata"]["labels"]["disk"] = "ssd"
    kinds = Snapshot(NodeInfo(NodeView(raw)) for raw in raws).table.all().label_kinds(keys)
    assert kinds is not None
    assert sorted({tuple(i for i, k in enumerate(kinds) if k == kind) for kind in kinds}) == [
        tuple(group) for group in same
    ]


def test_label_kinds_beyond_int64_are_not_numbered() -> None:
    raw = node("n")
    raw["metadata"]["labels"].update({f"k{i}": "v" for i in range(60)})
    block = Snapshot([NodeInfo(NodeView(raw))]).table.all()
    assert block.label_kinds(f"k{i}" for i in range(60)) is None
