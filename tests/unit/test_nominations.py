"""The nominated pods by node (:mod:`policy_scheduler.scheduling.nominations`): kept in step with
the pods' nominations, alone and as the loop keeps them from what the watch shows (nominated,
nominated elsewhere, cleared, the pod deleted, bound or being deleted)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from test_loop import Raw, Run, changed, delete_pod, feed, node, pod

from policy_scheduler.model.objects import PodView
from policy_scheduler.scheduling.nominations import Nominations


def by_node(
    nominations: Nominations, nodes: tuple[str, ...] = ("n1", "n2", "")
) -> dict[str, list[str]]:
    """Each node's nominated pods, by name, as the index has them; every node's must be what a
    scan of all of them finds."""
    found = {}
    for name in nodes:
        indexed = [p.name for p in nominations.on(name)]
        assert indexed == [p.name for p in nominations.values() if p.nominated_node_name == name]
        if indexed:
            found[name] = indexed
    return found


def view(name: str, nominated: str) -> PodView:
    return PodView(pod(name, scheduler="other", nominated=nominated))


@dataclass(frozen=True)
class Step:
    """Set a pod's view (nominated to ``node``, "" for none) or, with ``gone``, delete it."""

    name: str
    node: str = ""
    gone: bool = False


INDEX_CASES = {
    "nominated": ([Step("a", "n1")], {"n1": ["a"]}),
    "two on one node": ([Step("a", "n1"), Step("b", "n1")], {"n1": ["a", "b"]}),
    "nominated again to the same node": ([Step("a", "n1"), Step("a", "n1")], {"n1": ["a"]}),
    "nominated elsewhere": (
        [Step("a", "n1"), Step("b", "n1"), Step("a", "n2")],
        {"n1": ["b"], "n2": ["a"]},
    ),
    "deleted": ([Step("a", "n1"), Step("b", "n2"), Step("a", gone=True)], {"n2": ["b"]}),
    "the last of its node deleted": ([Step("a", "n1"), Step("a", gone=True)], {}),
}


@pytest.mark.parametrize("steps, expected", INDEX_CASES.values(), ids=INDEX_CASES)
def test_the_index_by_node_follows_each_pods_nomination(
    steps: list[Step], expected: dict[str, list[str]]
) -> None:
    nominations = Nominations()
    for step in steps:
        if step.gone:
            del nominations[step.name]
        else:
            nominations[step.name] = view(step.name, step.node)
    assert by_node(nominations) == expected
    assert sorted(nominations) == sorted(name for names in expected.values() for name in names)


def test_a_pod_nominated_nowhere_is_on_no_node() -> None:
    assert Nominations().on("n1") == []


# Pods of another scheduler: the loop only keeps what the watch shows of their nominations.
A = pod("a", scheduler="other", nominated="n1")
B = pod("b", scheduler="other", nominated="n1")


@dataclass(frozen=True)
class Watched:
    name: str
    steps: tuple[Raw | str, ...]
    """Pods the watch shows added or changed, or the name of one it shows deleted."""
    expected: dict[str, list[str]]


WATCHED = [
    Watched("nominated", (A,), {"n1": ["a"]}),
    Watched("two on one node", (A, B), {"n1": ["a", "b"]}),
    Watched(
        "nominated to another node",
        (A, B, changed(A, status__nominatedNodeName="n2")),
        {"n1": ["b"], "n2": ["a"]},
    ),
    Watched(
        "nomination cleared", (A, B, changed(A, status__nominatedNodeName=None)), {"n1": ["b"]}
    ),
    Watched("pod deleted", (A, B, "a"), {"n1": ["b"]}),
    Watched("pod bound", (A, B, changed(A, spec__nodeName="n2")), {"n1": ["b"]}),
    Watched(
        "pod being deleted",
        (A, B, changed(A, metadata__deletionTimestamp="2026-01-01T00:00:09Z")),
        {"n1": ["b"]},
    ),
]


@pytest.mark.parametrize("case", WATCHED, ids=[case.name for case in WATCHED])
def test_the_loop_keeps_the_index_in_step_with_the_watch(case: Watched) -> None:
    run = Run()
    feed(node("n1"), node("n2"))(run)
    for step in case.steps:
        if isinstance(step, str):
            delete_pod(pod(step, scheduler="other"))(run)
        else:
            feed(step)(run)
    assert by_node(run.scheduler._nominated) == case.expected
