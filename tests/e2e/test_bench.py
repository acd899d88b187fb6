"""The scheduling benchmark (bench/bench_scheduling.py) runs end to end at a tiny size.

It starts its own control planes in a state directory of its own, so this checks that the harness
works and that its numbers are sane (every pod bound, every phase's own check passed, ratios
positive, the reports written), not how fast anything is: the machine running the tests is shared.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
NODES, PODS, RATE, SECONDS, STORAGE, PREEMPTION = 20, 60, 10, 5, 12, 4
# The workload phases: anti-affinity at most one per node, so fewer than NODES.
ANTI_AFFINITY, SPREAD, PREFERRED, PARKED, UNSCHEDULABLE = 10, 12, 12, 30, 20
ZONES = 3
# The workload phases after scheduler_perf beyond the first three, in the order they run: a few
# pods each (anti-affinity-ns at most half the nodes, its init pods taking the other half).
SHAPES = dict.fromkeys(
    (
        "anti-affinity-ns",
        "pod-affinity",
        "preferred-anti-affinity",
        "node-affinity",
        "affinity-ns",
        "preferred-anti-affinity-ns",
        "preferred-spread",
        "node-inclusion",
        "preferred-pod-affinity",
        "preferred-affinity-ns",
    ),
    6,
)
# Those without init pods: the others' checks count as many init pods as pods.
NO_INIT_PODS = ("node-affinity", "preferred-spread", "node-inclusion")
# The misc and volume shapes of scheduler_perf: pods of each (gated: also half as many held gated,
# and as many bound then deleted).
MISC = {
    "secrets": 6,
    "in-tree-pvs": 4,
    "csi-pvs": 4,
    "daemonset": 6,
    "finalizers": 4,
    "gated": 4,
    "mixed-churn": 6,
}
# The DRA steady state: its nodes, devices per node (half allocated first), pods in flight.
DRA_NODES, DRA_DEVICES, DRA_IN_FLIGHT, DRA_SECONDS = 10, 4, 3, 3
# The gang phases: their nodes, and pods of each (rounded down to whole groups: 16 of 8, 2 of 64).
GANG_NODES, GANG_PODS = 10, 130
GANG_GROUPS = {"gang-8": 16, "gang-64": 2}
# The runs on a control plane of their own, after the others: their phases.
ALONE = ("dra", *GANG_GROUPS)
VICTIMS_PER_NODE = 10
SCHEDULERS = ("policy-scheduler", "kube-scheduler", "raw", "raw+events")
DECIDERS = ("policy-scheduler", "kube-scheduler")
RAW_PHASES = {"burst": PODS, "steady": RATE * SECONDS}
PHASES = {
    **RAW_PHASES,
    "storage": STORAGE,
    "preemption": PREEMPTION,
    "anti-affinity": ANTI_AFFINITY,
    "spread": SPREAD,
    "preferred-affinity": PREFERRED,
    **SHAPES,
    **MISC,
    "parked": PARKED,
}
TITLES = (
    "## Burst",
    "## Steady",
    "## Storage",
    "## Preemption",
    "## Anti-affinity",
    "## Spread",
    "## Preferred affinity",
    "## Anti-affinity by namespace selector",
    "## Pod affinity",
    "## Preferred anti-affinity",
    "## Node affinity",
    "## Pod affinity by namespace selector",
    "## Preferred anti-affinity by namespace selector",
    "## Preferred spread",
    "## Node inclusion",
    "## Preferred pod affinity",
    "## Preferred affinity by namespace selector",
    "## Secrets",
    "## In-tree PVs",
    "## CSI PVs",
    "## Daemonset",
    "## Finalizers",
    "## Gated",
    "## Mixed churn",
    "## Parked",
)


def test_the_benchmark_compares_the_schedulers_and_the_limits_and_checks_their_work(
    tmp_path: Path,
) -> None:
    out = tmp_path / "results"
    run = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "bench_scheduling.py"),
            *("--nodes", str(NODES), "--pods", str(PODS)),
            *("--steady-rate", str(RATE), "--steady-seconds", str(SECONDS)),
            *("--dir", str(tmp_path / "control-plane"), "--out", str(out)),
            *("--timeout", "60"),
            *("--storage-pods", str(STORAGE)),
            *("--preemption-pods", str(PREEMPTION)),
            *("--anti-affinity-pods", str(ANTI_AFFINITY)),
            *("--spread-pods", str(SPREAD)),
            *("--preferred-affinity-pods", str(PREFERRED)),
            *(arg for phase, pods in SHAPES.items() for arg in (f"--{phase}-pods", str(pods))),
            *("--parked-pods", str(PARKED), "--unschedulable-pods", str(UNSCHEDULABLE)),
            *(arg for phase, pods in MISC.items() for arg in (f"--{phase}-pods", str(pods))),
            *("--dra-nodes", str(DRA_NODES), "--dra-devices", str(DRA_DEVICES)),
            *("--dra-in-flight", str(DRA_IN_FLIGHT), "--dra-seconds", str(DRA_SECONDS)),
            *("--gang-nodes", str(GANG_NODES), "--gang-pods", str(GANG_PODS)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-5000:]
    # Progress, one line per phase with counts.
    for kind in SCHEDULERS:
        assert f"{kind}, {NODES} nodes: fresh control plane" in run.stderr
    assert f"burst: {PODS}/{PODS} bound" in run.stderr
    assert f"parked: {UNSCHEDULABLE} unschedulable pods parked" in run.stderr
    assert "check ok" in run.stderr

    results = json.loads((out / "scheduling.json").read_text())
    cases = {case["scheduler"]: case for case in results["cases"] if not set(ALONE) & case.keys()}
    assert set(cases) == set(SCHEDULERS)
    for kind, case in cases.items():
        assert case["nodes"] == NODES
        deciding = kind in DECIDERS
        phases = PHASES if deciding else RAW_PHASES
        assert [phase for phase in PHASES if phase in case] == list(phases), kind
        for phase, pods in phases.items():
            figures = case[phase]
            assert figures["complete"], (kind, phase)
            assert figures["bound"] == figures["pods"] == pods, (kind, phase)
            assert figures["throughput"] > 0
            latency = figures["latency_ms"]
            assert 0 < latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["p100"]
            # Every pod needs at least its binding; the scheduler's own requests only.
            assert figures["api_requests_per_pod"] >= 1, (kind, phase)
            assert figures["api_requests_all_clients"]["POST pods/binding"] >= pods
            # A scheduler decided each pod at least once (a preemptor: fail, evict, bind).
            least = 2 if phase == "preemption" else 1
            assert deciding is (figures["attempts_per_pod"] is not None), (kind, phase)
            assert not deciding or figures["attempts_per_pod"] >= least, (kind, phase)
            # Where the latency went: the create calls, and the attempts that bound each pod
            # (bucket bounds, from the scheduler's own histogram: a raw binder has none).
            create = figures["create_ms"]
            assert 0 < create["p50"] <= create["p99"], (kind, phase)
            bound = figures["attempt_ms"]
            assert deciding is (bound is not None), (kind, phase)
            assert not deciding or 0 < bound["p50"] <= bound["p99"], (kind, phase)
        assert case["cpu_seconds_total"] > 0
        assert case["peak_rss_mib"] > 0
        correctness = case["correctness"]
        assert correctness["ok"], (kind, correctness)
        # The preemption phase leaves its marker pod and its high-priority pods, each of which
        # evicted one node's low-priority pods: none of those is left; the node-inclusion,
        # daemonset and gated phases their marker pods. The parked pods stay; the init pods are
        # in namespaces of their own; the deleted, gated and churn pods are gone.
        left = 1 + sum(phases.values())
        if deciding:
            left += 1 + UNSCHEDULABLE + 3
        assert correctness["pods"] == left, kind
        assert correctness["parked_pods"] == (UNSCHEDULABLE if deciding else 0), kind
        if not deciding:
            assert not {"storage", "preemption", "anti-affinity", "parked"} & correctness.keys()
            continue
        # Every claim bound by the stand-in provisioner to a PV on its pod's node; the
        # scheduler wrote each claim's selected node (a request of its own per pod).
        assert correctness["storage"]["claims_bound"] == STORAGE, (kind, correctness)
        assert not correctness["storage"]["wrong_node"], (kind, correctness)
        assert case["storage"]["provision_ms"]["p50"] > 0
        assert case["storage"]["api_requests_per_pod"] >= 2, kind
        # Every high-priority pod bound on a preemption node, after the low-priority pods of
        # one node were evicted for it (the stand-in kubelet force-deleted them), no more.
        figures, checked = case["preemption"], correctness["preemption"]
        assert checked["preemptors_bound"] == PREEMPTION, (kind, checked)
        assert not checked["off_preemption_nodes"], (kind, checked)
        assert checked["evicted"] == checked["evicted_minimum"] == PREEMPTION * VICTIMS_PER_NODE
        assert figures["evicted_per_preemptor"] == VICTIMS_PER_NODE, kind
        assert figures["evicted_other"] == 0, kind
        assert not figures["kubelet_errors"], kind
        # The scheduler's own requests: at least a delete per victim and the binding.
        assert figures["api_requests_per_pod"] >= VICTIMS_PER_NODE + 1, kind
        # Anti-affinity: one pod per node; spread: the zones within maxSkew 1.
        anti = correctness["anti-affinity"]
        assert anti["nodes_used"] == ANTI_AFFINITY, (kind, anti)
        assert anti["shared_nodes_count"] == 0, (kind, anti)
        spread = correctness["spread"]
        assert len(spread["zones"]) == ZONES, (kind, spread)
        assert sum(spread["zones"].values()) == SPREAD, (kind, spread)
        assert spread["skew"] <= 1, (kind, spread)
        # Preferred affinity: reported; with room everywhere, most go to the preferred zone.
        preferred = correctness["preferred-affinity"]
        assert preferred["pods"] == PREFERRED, (kind, preferred)
        assert preferred["on_preferred_share"] > 0.5, (kind, preferred)
        # The shapes after scheduler_perf: each one's own check (its init pods counted too).
        for phase, pods in SHAPES.items():
            checked = correctness[phase]
            assert checked["ok"], (kind, phase, checked)
            init = 0 if phase in NO_INIT_PODS else pods
            assert checked["pods"] == pods + init, (kind, phase, checked)
        # Parked: none of the unschedulable pods bound, each told PodScheduled=False.
        assert case["parked"]["unschedulable"] == UNSCHEDULABLE, kind
        assert case["parked"]["park_seconds"] > 0, kind
        parked = correctness["parked"]
        assert parked["parked"] == UNSCHEDULABLE, (kind, parked)
        assert parked["bound_count"] == 0, (kind, parked)
        assert not parked["not_unschedulable"], (kind, parked)
        check_misc(case)
    # The raw binder makes one request per pod, its binding (a retried 429 aside), and posts no
    # events; raw+events posts the one Scheduled event per pod a scheduler posts, no more.
    bound_by_raws = 1 + sum(RAW_PHASES.values())
    assert 1 <= cases["raw"]["burst"]["api_requests_per_pod"] < 1.1
    assert cases["raw"]["correctness"]["scheduled_events"] == 0
    assert cases["raw+events"]["correctness"]["scheduled_events"] == bound_by_raws
    assert not cases["raw+events"]["correctness"]["scheduled_more_than_once"]
    assert cases["raw+events"]["burst"]["api_requests_all_clients"]["POST events"] >= 1
    for kind in DECIDERS:
        # One Scheduled event per pod, give or take one posted after the check's list.
        assert cases[kind]["correctness"]["scheduled_events"] >= sum(PHASES.values())

    check_dra(results, run.stderr)
    check_gang(results, run.stderr)

    ratios = results["ratios"]
    assert list(ratios) == [*PHASES, *ALONE]
    for phase, rows in ratios.items():
        if phase in ALONE:
            continue
        (row,) = rows
        assert (row["nodes"], row["repeat"]) == (NODES, 0)
        # One run each: the spread over the runs is that run's ratio.
        (spread,) = results["ratio_spread"][phase]
        assert spread["runs"] == 1
        assert spread["throughput_vs_kube"]["median"] == row["throughput_vs_kube"]
        # Against kube-scheduler and both limits (for the phases the raws do not run, their
        # burst); a latency limit only where the raws bound the same pods.
        for key, value in row.items():
            if key == "p99_vs_raw_events" and phase not in RAW_PHASES:
                assert value is None, (phase, row)
            elif key not in ("nodes", "repeat"):
                assert value is not None and value > 0, (phase, key, row)
        assert {"throughput_vs_kube", "throughput_vs_raw", "throughput_vs_raw_events"} <= set(row)

    table = (out / "scheduling.md").read_text()
    for kind in SCHEDULERS:
        assert f"| {NODES} | {kind} |" in table
    for title in (*TITLES, "## DRA steady state", "## Gang: 128 pods in groups of 8"):
        assert title in table
    assert table.count("| pods/s ÷ raw+events |") == len(PHASES) + len(ALONE)
    assert table.count("| create call p50/p99 ms | bound attempt p50/p99 ms |") == len(
        PHASES
    ) + len(ALONE)
    assert table.count("| group p50 ÷ kube | group p90 ÷ kube | group p99 ÷ kube |") == 2
    for phase in (*PHASES, *ALONE):
        chart = out / f"scheduling-{phase}.png"
        assert chart.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), phase


def check_dra(results: dict[str, Any], progress: str) -> None:
    """The DRA steady state ran for both deciders on a control plane of its own: its pods churned
    (each bound one deleted and replaced), every one bound, no device allocated twice, the pods
    left with their claims (made by the resourceclaim controller) allocated on their node; and
    its ratio against kube-scheduler."""
    assert f"kube-scheduler, {DRA_NODES} nodes (DRA): fresh control plane" in progress
    runs = {case["scheduler"]: case for case in results["cases"] if "dra" in case}
    assert set(runs) == set(DECIDERS)
    for kind, case in runs.items():
        assert case["nodes"] == DRA_NODES, kind
        assert [phase for phase in (*PHASES, "dra") if phase in case] == ["dra"], kind
        figures = case["dra"]
        assert figures["complete"], (kind, figures)
        assert figures["bound"] == figures["pods"] > DRA_IN_FLIGHT, (kind, figures)
        # Every pod bound while the time ran was replaced; the last ones stay.
        assert figures["deleted"] >= figures["pods"] - 2 * DRA_IN_FLIGHT, (kind, figures)
        assert not figures["churn_errors"], (kind, figures)
        assert figures["throughput"] > 0 and figures["cpu_ms_per_pod"] > 0, kind
        assert figures["attempts_per_pod"] >= 1, kind
        # The claim's allocation and reservation are the scheduler's writes, beside the bind.
        assert figures["api_requests_per_pod"] >= 2, kind
        checked = case["correctness"]
        assert checked["ok"], (kind, checked)
        dra = checked["dra"]
        assert not dra["allocated_twice"] and not dra["not_on_node"], (kind, dra)
        assert dra["devices_allocated"] >= DRA_NODES * DRA_DEVICES // 2, (kind, dra)
    (row,) = results["ratios"]["dra"]
    assert row["nodes"] == DRA_NODES
    for key in ("throughput_vs_kube", "cpu_per_pod_vs_kube", "requests_per_pod_vs_kube"):
        assert row[key] is not None and row[key] > 0, (key, row)


def check_gang(results: dict[str, Any], progress: str) -> None:
    """The gang phases ran for both deciders on a control plane of their own: every group bound
    whole, its time from its last member created to its last bound measured; kube-scheduler told
    each group scheduled in its PodGroup's condition; and their ratios against kube-scheduler."""
    assert f"kube-scheduler, {GANG_NODES} nodes (gang): fresh control plane" in progress
    runs = {case["scheduler"]: case for case in results["cases"] if "gang-8" in case}
    assert set(runs) == set(DECIDERS)
    for kind, case in runs.items():
        assert case["nodes"] == GANG_NODES, kind
        assert [phase for phase in (*PHASES, *ALONE) if phase in case] == list(GANG_GROUPS)
        checked = case["correctness"]
        assert checked["ok"], (kind, checked)
        for phase, groups in GANG_GROUPS.items():
            figures = case[phase]
            assert figures["complete"], (kind, phase, figures)
            assert figures["bound"] == figures["pods"] == 128, (kind, phase)
            assert figures["groups"] == figures["groups_bound"] == groups, (kind, phase)
            group = figures["group_ms"]
            assert 0 < group["p50"] <= group["p90"] <= group["p99"], (kind, phase, group)
            # A group's time is at most its last bound member's own latency.
            assert group["p99"] <= figures["latency_ms"]["p100"], (kind, phase)
            gang = checked[phase]
            assert gang["groups"] == groups and gang["partly_bound_count"] == 0, (kind, gang)
            if kind == "kube-scheduler":
                assert gang["told_scheduled"] == groups, gang
    for phase in GANG_GROUPS:
        (row,) = results["ratios"][phase]
        assert row["nodes"] == GANG_NODES
        for key in ("throughput_vs_kube", "group_p50_vs_kube", "group_p99_vs_kube"):
            assert row[key] is not None and row[key] > 0, (phase, key, row)


def check_misc(case: dict[str, Any]) -> None:
    """The misc and volume shapes' own checks passed, and what they report adds up."""
    correctness, kind = case["correctness"], case["scheduler"]
    for phase in ("in-tree-pvs", "csi-pvs"):
        assert not correctness[phase]["unbound_claims"], (kind, correctness[phase])
    assert correctness["csi-pvs"]["most_on_a_node"] <= 39, kind
    assert correctness["daemonset"]["off_node_count"] == 0, (kind, correctness["daemonset"])
    assert case["finalizers"]["deleting"] == MISC["finalizers"], kind
    gated = correctness["gated"]
    assert gated["held"] == case["gated"]["held"] == MISC["gated"] // 2, (kind, gated)
    assert gated["bound_count"] == 0, (kind, gated)
    churn = correctness["mixed-churn"]
    assert case["mixed-churn"]["churn_rounds"] >= 1, kind
    assert churn["bound_count"] == 0 and not churn["left"], (kind, churn)
