"""``policy-scheduler explain`` without an API server: a bound pod re-evaluated as if pending (its
nodeName and its own usage ignored) beside its recorded decision; a pending pod as before."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.explain import (
    NotServedError,
    as_pending,
    recorded_decision,
    report_of,
    snapshot_without,
)
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.simulate import ClusterDump

CREATED = "2026-01-01T00:00:00Z"
NAME_REJECTS = "node(s) didn't match the requested node name"


def node(name: str, cpu: str) -> NodeView:
    return NodeView(
        {
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
        }
    )


def raw_pod(
    name: str, cpu: str, node_name: str = "", phase: str = "Running", created: str = CREATED
) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "creationTimestamp": created,
        },
        "spec": {
            "schedulerName": "spread",
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        },
        "status": {"phase": phase},
    }


def policy(status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "policy-scheduler.dev/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "spread", "generation": 1, "creationTimestamp": CREATED},
        "spec": {
            # NodeName is what rejected every other node of a bound pod before.
            "predicates": [{"name": "NodeName"}, {"name": "NodeResourcesFit"}],
            "priorities": [{"name": "LeastAllocated", "weight": 1}],
        },
        "status": status or {},
    }


def decision(pod: str, node: str | None, time: str = "2026-01-01T00:00:01Z") -> dict[str, Any]:
    """A ``status.decisions`` entry, as the status writer records it."""
    if node is None:
        return {"time": time, "pod": pod, "node": None, "score": None, "candidates": []}
    return {
        "time": time,
        "pod": pod,
        "node": node,
        "score": 56.0,
        "candidates": [
            {"node": node, "score": 56.0, "scores": {"LeastAllocated": 56}},
            {"node": "other", "score": 12.0, "scores": {"LeastAllocated": 12}},
        ],
        "reasons": {},
    }


NODES = (node("small", "1"), node("big", "4"))
# "fill" takes 3 of big's 4 CPUs: counted against big, it would not fit there again.
FILL = raw_pod("fill", "3", "big")
FILL_DECISION = decision("ns/fill", "big")


def explained(raw: dict[str, Any], status: dict[str, Any], *others: dict[str, Any]) -> Any:
    """explain's report on ``raw``, with ``others`` (and ``raw`` when bound) assigned."""
    assigned = [PodView(p) for p in (raw, *others) if p["spec"]["nodeName"]]
    return report_of(raw, [policy(status)], ClusterDump(NODES, tuple(assigned)))


def test_as_pending_drops_only_the_node_name() -> None:
    bound = PodView(FILL)
    pending = as_pending(bound)
    assert (pending.node_name, pending.key, pending.uid) == ("", "ns/fill", "uid-fill")
    assert pending.requests == bound.requests
    assert FILL["spec"]["nodeName"] == "big"  # the pod's own object is left alone
    waiting = PodView(raw_pod("web", "1"))
    assert as_pending(waiting) is waiting


def test_the_snapshot_leaves_out_the_pod_itself_finished_pods_and_unknown_nodes() -> None:
    pods = [
        PodView(FILL),
        PodView(raw_pod("neighbour", "500m", "big")),
        PodView(raw_pod("done", "1", "small", phase="Succeeded")),
        PodView(raw_pod("elsewhere", "1", "gone")),
    ]
    snapshot = snapshot_without(PodView(FILL), ClusterDump(NODES, tuple(pods)))
    assert [info.name for info in snapshot] == ["small", "big"]
    big, small = snapshot.get("big"), snapshot.get("small")
    assert big is not None and small is not None
    assert list(big.pods) == ["uid-neighbour"]
    assert big.requested["cpu"] == 500
    assert small.pods == {}


def test_the_recorded_decision_is_the_newest_that_placed_this_pod() -> None:
    pod = PodView(FILL)
    newest = decision("ns/fill", "big", "2026-01-01T00:05:00Z")
    status: dict[str, Any] = {
        "decisions": [
            decision("ns/web", "small", "2026-01-01T00:06:00Z"),
            decision("ns/fill", None, "2026-01-01T00:05:30Z"),  # none fit: placed nothing
            newest,
            decision("ns/fill", "small", "2026-01-01T00:04:00Z"),
        ],
        "lastDecision": {"pod": "ns/web", "node": "small", "time": "2026-01-01T00:06:00Z"},
    }
    assert recorded_decision(status, pod) is newest


def test_without_decisions_the_last_decision_is_the_record() -> None:
    pod = PodView(FILL)
    last = {"pod": "ns/fill", "node": "big", "time": "2026-01-01T00:00:01Z"}
    assert recorded_decision({"decisions": [], "lastDecision": last}, pod) is last
    assert recorded_decision({"lastDecision": {**last, "pod": "ns/web"}}, pod) is None
    assert recorded_decision({}, pod) is None


def test_decisions_older_than_the_pod_were_about_an_earlier_pod_of_its_name() -> None:
    # A StatefulSet's pod comes back under its name: what placed the old one is not this one's.
    pod = PodView(raw_pod("fill", "3", "big", created="2026-01-02T00:00:00Z"))
    earlier = decision("ns/fill", "big", "2026-01-01T00:00:01Z")
    last = {"pod": "ns/fill", "node": "big", "time": "2026-01-01T00:00:01Z"}
    assert recorded_decision({"decisions": [earlier], "lastDecision": last}, pod) is None
    same_second = decision("ns/fill", "big", "2026-01-02T00:00:00Z")
    assert recorded_decision({"decisions": [same_second]}, pod) is same_second


def test_a_bound_pod_is_re_evaluated_as_if_it_were_pending() -> None:
    report = explained(FILL, {"decisions": [FILL_DECISION]})
    verdicts = {v.node: v for v in report.explanation.verdicts}
    # Not NodeName: "small" lacks the CPUs; "big" has them, once fill's own 3 are not counted.
    assert all(v.rejected_by != "NodeName" for v in verdicts.values())
    assert (verdicts["small"].rejected_by, verdicts["small"].reasons) == (
        "NodeResourcesFit",
        ("Insufficient cpu",),
    )
    assert verdicts["big"].candidate is not None
    assert report.lines() == [
        "pod ns/fill: bound to big; schedulerName spread is served by SchedulingPolicy spread "
        "(Enforce)",
        "recorded decision at 2026-01-01T00:00:01Z: big (score 56)",
        "  NODE   TOTAL  LeastAllocated",
        "  big    56     56",
        "  other  12     12",
        "now, as if it were pending (its nodeName ignored, its own usage not counted on big):",
        "feasible nodes: 1 of 2",
        "  NODE  TOTAL  LeastAllocated (x1)",
        "  big   56     56",
        "rejected nodes:",
        "  small  NodeResourcesFit: Insufficient cpu",
        "verdict: it is on big; if it were pending now, it would go to big (score 56)",
        "big is the policy's choice now",
    ]
    data = report.to_dict()
    assert data["boundTo"] == "big"
    assert data["recorded"] == FILL_DECISION
    assert data["verdict"] == {"nodes": ["big"], "score": 56.0, "matches": True}
    assert [n["node"] for n in data["nodes"]] == ["big", "small"]


def test_a_bound_pod_the_policy_keeps_no_decision_for() -> None:
    report = explained(FILL, {"decisions": [decision("ns/web", "small")]})
    assert report.to_dict()["recorded"] is None
    assert report.lines()[1] == (
        "recorded decision: none; SchedulingPolicy spread keeps no decision that placed this pod"
    )


def test_a_recorded_decision_without_scores() -> None:
    last = {"pod": "ns/fill", "node": "big", "time": "2026-01-01T00:00:01Z", "dryRun": True}
    report = explained(FILL, {"lastDecision": last})
    assert report.to_dict()["recorded"] == last
    lines = report.lines()
    assert lines[1] == (
        "recorded decision at 2026-01-01T00:00:01Z: big "
        "(status.lastDecision keeps no scores; DryRun: nothing was bound)"
    )
    assert lines[2].startswith("now, as if it were pending")


def test_a_recorded_decision_of_the_only_node_that_fits() -> None:
    # Taken unscored, as kube-scheduler takes it: status.decisions keeps it without a score.
    only = {**decision("ns/fill", "big"), "score": None, "candidates": []}
    report = explained(FILL, {"decisions": [only]})
    lines = report.lines()
    assert lines[1] == (
        "recorded decision at 2026-01-01T00:00:01Z: big (the only node that fits: not scored)"
    )
    assert lines[2].startswith("now, as if it were pending")


def test_a_bound_pod_whose_node_the_policy_would_not_choose_now() -> None:
    # On "small" it takes half the CPU; "big" would leave more free (87 against 68).
    report = explained(raw_pod("half", "500m", "small"), {})
    assert report.matches is False
    assert report.lines()[-2:] == [
        "verdict: it is on small; if it were pending now, it would go to big (score 87)",
        "small is not the policy's choice now: it scores 68",
    ]
    # Its node full of others now: NodeResourcesFit, not NodeName, says why.
    crowd = raw_pod("crowd", "800m", "small")
    report = explained(raw_pod("half", "500m", "small"), {}, crowd)
    assert report.lines()[-1] == (
        "small is not the policy's choice now: NodeResourcesFit rejects it: Insufficient cpu"
    )
    report = explained(raw_pod("lost", "500m", "gone"), {})
    assert (
        report.lines()[-1]
        == "gone is not the policy's choice now: it is not in the cluster any more"
    )


def test_a_bound_pod_that_would_fit_nowhere_now() -> None:
    report = explained(raw_pod("huge", "8", "big"), {})
    message = "0/2 nodes are available: 2 Insufficient cpu."
    assert report.lines()[-2:] == [
        f"verdict: it is on big; if it were pending now, it would fit nowhere: {message}",
        "big is not the policy's choice now: NodeResourcesFit rejects it: Insufficient cpu",
    ]
    assert report.to_dict()["verdict"] == {
        "nodes": [],
        "score": None,
        "message": message,
        "matches": False,
    }


def test_a_pending_pod_keeps_its_keys_and_lines() -> None:
    report = explained(raw_pod("web", "500m"), {"decisions": [decision("ns/web", "big")]})
    data = report.to_dict()
    assert "recorded" not in data
    assert list(data) == [
        "pod",
        "schedulerName",
        "policy",
        "mode",
        "boundTo",
        "lastMessage",
        "weights",
        "skipped",
        "nodes",
        "verdict",
    ]
    assert report.lines()[1:] == [
        "feasible nodes: 2 of 2",
        "  NODE   TOTAL  LeastAllocated (x1)",
        "  big    87     87",
        "  small  68     68",
        "verdict: it would go to big (score 87)",
        "it is pending although a node fits: the scheduler has not placed it yet "
        "(is policy-scheduler running?)",
    ]


def test_a_pod_no_policy_serves() -> None:
    theirs = raw_pod("theirs", "1")
    theirs["spec"]["schedulerName"] = "default-scheduler"
    with pytest.raises(NotServedError, match="no SchedulingPolicy serves schedulerName"):
        report_of(theirs, [policy()], ClusterDump(NODES, ()))


def gang_policy() -> dict[str, Any]:
    raw = policy()
    raw["spec"]["plugins"] = {"preEnqueue": [{"name": "GangScheduling"}]}
    return raw


def gang_member(name: str, cpu: str, node_name: str = "") -> dict[str, Any]:
    raw = raw_pod(name, cpu, node_name, "Running" if node_name else "Pending")
    raw["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "train"}
    return raw


def volcano_group(min_member: Any) -> tuple[str, dict[str, Any]]:
    return (
        "PodGroup.scheduling.volcano.sh",
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "ns", "uid": "train"},
            "spec": {"minMember": min_member},
        },
    )


GROUP_CASES = {
    "the pass places the group": (
        [volcano_group(2)],
        [gang_member("w0", "1"), gang_member("w1", "1")],
        [
            "pod group ns/train (volcano): minMember 2; 2 members exist, 0 placed",
            "  as a pass now: 2 pending members fit (ns/w0 on big, ns/w1 on big)",
            "  the group would be placed",
        ],
    ),
    "a member fits nowhere: what blocks the group": (
        [volcano_group(3)],
        [gang_member("w0", "2"), gang_member("w1", "2"), gang_member("w2", "2")],
        [
            "pod group ns/train (volcano): minMember 3; 3 members exist, 0 placed",
            "  as a pass now: 2 pending members fit (ns/w0 on big, ns/w1 on big)",
            "  1 fit nowhere:",
            "    ns/w2: 0/2 nodes are available: 2 Insufficient cpu.",
            "  the group would not be placed: minCount (3) cannot be satisfied: 2 scheduled, "
            "0 remaining",
        ],
    ),
    "too few members exist": (
        [volcano_group(3)],
        [gang_member("w0", "1")],
        [
            "pod group ns/train (volcano): minMember 3; 1 members exist, 0 placed",
            "  its members wait: waiting for minCount pods from a gang to appear in scheduling "
            "queue",
        ],
    ),
    "the group does not exist": (
        [],
        [gang_member("w0", "1")],
        [
            "pod group ns/train (volcano): minMember 0; 1 members exist, 0 placed",
            '  its members wait: waiting for pods\'s pod group "train" to appear in scheduling '
            "queue",
        ],
    ),
    "the group is invalid": (
        [volcano_group(-1)],
        [gang_member("w0", "1")],
        [
            "pod group ns/train (volcano): minMember 0; 1 members exist, 0 placed",
            "  its members wait: PodGroup ns/train: spec.minMember: must be a non-negative "
            "integer, got -1",
        ],
    ),
}


@pytest.mark.parametrize(("groups", "pods", "lines"), GROUP_CASES.values(), ids=GROUP_CASES.keys())
def test_a_gang_members_group_is_explained(
    groups: list[tuple[str, dict[str, Any]]], pods: list[dict[str, Any]], lines: list[str]
) -> None:
    cluster = ClusterDump.of_stored(NODES, [PodView(p) for p in pods], groups)
    report = report_of(pods[0], [gang_policy()], cluster)
    assert report.lines()[-len(lines) :] == lines
    assert report.to_dict()["podGroup"]["members"] == len(pods)
