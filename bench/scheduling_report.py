"""What bench_scheduling.py writes: the results as JSON, per phase a markdown table of every
scheduler and node count with a table of ratios (policy-scheduler against kube-scheduler and
against the two raw bind limits), and per phase a chart of throughput and p99 against node count.

Ratios, not absolute figures, are the point: on a shared machine absolute times drift between
runs, while the schedulers of one node count run back to back on identical state.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display here, and none wanted

import matplotlib.pyplot as plt

OURS, KUBE, RAW, RAW_EVENTS = "policy-scheduler", "kube-scheduler", "raw", "raw+events"
# The raw binders: binds only, and binds with the Scheduled event every scheduler posts.
LIMITS = (RAW, RAW_EVENTS)
# The phases they run (bench_scheduling.py): bound round-robin, the other phases' pods would break
# their constraints or claims, so for those the raws' burst is the limit.
RAW_PHASES = ("burst", "steady")
# The group sizes of the gang phases, one phase each ("gang-8", ...): the training jobs of
# eight workers, and a large one.
GANG_SIZES = (8, 64)
# The phases after scheduler_perf's misc/ and volumes/ cases (v1.37.2, their
# performance-config.yaml and templates/), in the order a run goes through them
# (bench_scheduling.py's PHASES).
MISC_PHASES = (
    "secrets",
    "in-tree-pvs",
    "csi-pvs",
    "daemonset",
    "finalizers",
    "gated",
    "mixed-churn",
)


def gang_phase(size: int) -> str:
    """The phase of the groups of ``size`` pods."""
    return f"gang-{size}"


KINDS = (OURS, KUBE, *LIMITS)
STYLES = {OURS: "tab:blue", KUBE: "tab:orange", RAW: "tab:gray", RAW_EVENTS: "black"}

Case = dict[str, Any]
# A ratio: its key in the JSON, its column in scheduling.md, its path in a case.
Figure = tuple[str, str, tuple[str, ...]]


PHASE_COLUMNS = (
    "nodes",
    "scheduler",
    "pods",
    "created/s",
    "pods/s",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "CPU ms/pod",
    "API requests/pod",
    "attempts/pod",
    "create call p50/p99 ms",
    "bound attempt p50/p99 ms",
)


def _p50_p99(latency: Mapping[str, Any] | None, bound: str = "") -> str | None:
    """A phase's "p50/p99" pair, each figure after ``bound`` (a bucket's bound, "≤"; "?" where
    the histogram has none); None where the phase has no such figures (an older run, a raw
    binder)."""
    if latency is None:
        return None
    return "/".join(
        "?" if latency[p] is None else bound + _cell(float(latency[p])) for p in ("p50", "p99")
    )


def _phase_cells(case: Case, phase: str, repeated: bool) -> list[Any]:
    """One row's cells under PHASE_COLUMNS for ``phase``; ``repeated``: each scheduler ran more
    than once at each node count, and the row says which run it is."""
    figures = case[phase]
    latency = figures["latency_ms"]
    return [
        case["nodes"],
        case["scheduler"] + (f" #{_repeat(case) + 1}" if repeated else ""),
        figures["pods"],
        figures["create_rate"],
        figures["throughput"],
        latency["p50"],
        latency["p90"],
        latency["p99"],
        figures["cpu_ms_per_pod"],
        figures["api_requests_per_pod"],
        figures.get("attempts_per_pod"),
        _p50_p99(figures.get("create_ms")),
        _p50_p99(figures.get("attempt_ms"), "≤"),
    ]


def _get(case: Case | None, *path: str) -> float | None:
    value: Any = case
    for key in path:
        if not isinstance(value, dict) or value.get(key) is None:
            return None
        value = value[key]
    return float(value)


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def _versus_kube(phase: str, *extra: Figure) -> tuple[Figure, ...]:
    """The figures every phase compares with kube-scheduler's, ``extra`` among them."""
    return (
        ("throughput_vs_kube", "pods/s ÷ kube", (phase, "throughput")),
        ("p50_vs_kube", "p50 ÷ kube", (phase, "latency_ms", "p50")),
        ("p99_vs_kube", "p99 ÷ kube", (phase, "latency_ms", "p99")),
        *extra,
        ("cpu_per_pod_vs_kube", "CPU/pod ÷ kube", (phase, "cpu_ms_per_pod")),
        ("requests_per_pod_vs_kube", "requests/pod ÷ kube", (phase, "api_requests_per_pod")),
        ("attempts_per_pod_vs_kube", "attempts/pod ÷ kube", (phase, "attempts_per_pod")),
    )


# The workload phases after scheduler_perf beyond the first three (bench_scheduling.SHAPES), in
# the order a run goes through them; True for those whose check reports the share of their pods
# placed as preferred, compared with kube-scheduler's (the others' require their placement).
PREFERRING_SHAPES = {
    "anti-affinity-ns": False,
    "pod-affinity": False,
    "preferred-anti-affinity": True,
    "node-affinity": False,
    "affinity-ns": False,
    "preferred-anti-affinity-ns": True,
    "preferred-spread": True,
    "node-inclusion": False,
    "preferred-pod-affinity": True,
    "preferred-affinity-ns": True,
}
PREFERRED_SHARE = ("on_preferred_vs_kube", "placed as preferred ÷ kube")

# Per phase, in the order a run goes through them: the figures of policy-scheduler divided by
# kube-scheduler's in its ratio table (beside the limits', LIMIT_COLUMNS).
PHASE_RATIOS: dict[str, tuple[Figure, ...]] = {
    "burst": _versus_kube("burst", ("peak_rss_vs_kube", "RSS ÷ kube", ("peak_rss_mib",))),
    "steady": _versus_kube("steady"),
    "storage": _versus_kube("storage"),
    "preemption": _versus_kube(
        "preemption",
        (
            "evicted_per_preemptor_vs_kube",
            "evicted/pod ÷ kube",
            ("preemption", "evicted_per_preemptor"),
        ),
    ),
    "anti-affinity": _versus_kube("anti-affinity"),
    "spread": _versus_kube("spread"),
    "preferred-affinity": _versus_kube(
        "preferred-affinity",
        (
            "on_preferred_vs_kube",
            "in preferred zone ÷ kube",
            ("correctness", "preferred-affinity", "on_preferred_share"),
        ),
    ),
    **{
        phase: _versus_kube(
            phase,
            *(
                [(*PREFERRED_SHARE, ("correctness", phase, "on_preferred_share"))]
                if preferred
                else []
            ),
        )
        for phase, preferred in PREFERRING_SHAPES.items()
    },
    **{phase: _versus_kube(phase) for phase in MISC_PHASES},
    "parked": _versus_kube("parked"),
    "dra": _versus_kube("dra"),
    **{
        gang_phase(size): _versus_kube(
            gang_phase(size),
            *(
                (f"group_{p}_vs_kube", f"group {p} ÷ kube", (gang_phase(size), "group_ms", p))
                for p in ("p50", "p90", "p99")
            ),
        )
        for size in GANG_SIZES
    },
}
LIMIT_COLUMNS = (
    ("throughput_vs_raw", "pods/s ÷ raw"),
    ("throughput_vs_raw_events", "pods/s ÷ raw+events"),
    ("p99_vs_raw_events", "p99 ÷ raw+events"),
    ("kube_throughput_vs_raw", "kube pods/s ÷ raw"),
    ("kube_throughput_vs_raw_events", "kube pods/s ÷ raw+events"),
)


def _repeat(case: Case) -> int:
    """Which of the runs at its node count ``case`` was (0 for a JSON of one run each)."""
    return int(case.get("repeat", 0))


def phase_ratios(cases: list[Case], phase: str) -> list[dict[str, Any]]:
    """Per node count and run where policy-scheduler ran ``phase`` (a key of PHASE_RATIOS): its
    figures divided by kube-scheduler's of the same run, and its and kube-scheduler's throughput
    (and its p99) divided by the raw binders'; for a phase not of RAW_PHASES, by their burst
    throughput (and p99 has no limit)."""
    # A run of the DRA steady state may have as many nodes as a run of the other phases.
    by = {
        (c["scheduler"], c["nodes"], _repeat(c)): c
        for c in cases
        if "correctness" in c and phase in c
    }
    by |= {
        (c["scheduler"], c["nodes"], _repeat(c)): c
        for c in cases
        if "correctness" in c and c["scheduler"] in LIMITS and "burst" in c
    }
    rows = []
    for nodes, repeat in sorted({(n, r) for kind, n, r in by if kind == OURS}):
        ours, kube = by.get((OURS, nodes, repeat)), by.get((KUBE, nodes, repeat))
        if ours is None or phase not in ours:
            continue
        row: dict[str, Any] = {"nodes": nodes, "repeat": repeat}
        for key, _, path in PHASE_RATIOS[phase]:
            row[key] = _ratio(_get(ours, *path), _get(kube, *path))
        raw, events = (by.get((kind, nodes, repeat)) for kind in LIMITS)
        limit = phase if phase in RAW_PHASES else "burst"
        for key, case in (("raw", raw), ("raw_events", events)):
            row[f"throughput_vs_{key}"] = _ratio(
                _get(ours, phase, "throughput"), _get(case, limit, "throughput")
            )
        # A latency limit only where the raw binders had the same pods to bind.
        row["p99_vs_raw_events"] = _ratio(
            _get(ours, phase, "latency_ms", "p99"), _get(events, phase, "latency_ms", "p99")
        )
        for key, case in (("raw", raw), ("raw_events", events)):
            row[f"kube_throughput_vs_{key}"] = _ratio(
                _get(kube, phase, "throughput"), _get(case, limit, "throughput")
            )
        rows.append(row)
    return rows


def ratio_spread(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per node count of ``rows`` (phase_ratios'): how many runs, and each ratio's median, lowest
    and highest over them (None where no run has it): the spread a claimed margin must beat."""
    spread = []
    for nodes in sorted({row["nodes"] for row in rows}):
        runs = [row for row in rows if row["nodes"] == nodes]
        summary: dict[str, Any] = {"nodes": nodes, "runs": len(runs)}
        for key in runs[0]:
            values = [row[key] for row in runs if row.get(key) is not None]
            if key not in ("nodes", "repeat"):
                summary[key] = (
                    {
                        "median": round(statistics.median(values), 3),
                        "min": min(values),
                        "max": max(values),
                    }
                    if values
                    else None
                )
        spread.append(summary)
    return spread


@dataclass(frozen=True)
class PhaseReport:
    """How scheduling.md shows a phase: its title (formatted with the run's config), a note
    under it, and columns of its own between PHASE_COLUMNS and the check."""

    title: str
    note: str = ""
    columns: tuple[tuple[str, Callable[[Case], Any]], ...] = ()


def _figure(*path: str) -> Callable[[Case], Any]:
    """A column read from the case's JSON along ``path`` (None where a key is missing)."""

    def cell(case: Case) -> Any:
        value: Any = case
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    return cell


def _checked(phase: str, *path: str) -> Callable[[Case], Any]:
    """A column read from the phase's own check in the case's correctness."""
    return _figure("correctness", phase, *path)


def _gang_report(size: int) -> PhaseReport:
    phase = gang_phase(size)
    return PhaseReport(
        f"Gang: {{gang_pods_{size}}} pods in groups of {size} (PodGroup gang.minCount {size}) "
        "on {gang_nodes} nodes",
        "On a control plane of its own with the gate GenericWorkload on (scheduling.k8s.io/"
        "v1beta1 PodGroup served; kube-scheduler's default profile gains its GangScheduling "
        "plugin; ours: the default profile with GangScheduling in spec.plugins.preEnqueue). The "
        "PodGroups are created first (not measured), then every member as a burst. group ms: "
        "from a group's last member created to its last member bound. told scheduled: groups "
        "whose PodGroupInitiallyScheduled condition is True at the end. partly bound: groups "
        "with some members bound and others not (must be 0).",
        (
            ("groups", _figure(phase, "groups")),
            *((f"group {p} ms", _figure(phase, "group_ms", p)) for p in ("p50", "p90", "p99")),
            ("told scheduled", _checked(phase, "told_scheduled")),
            ("partly bound", _checked(phase, "partly_bound_count")),
        ),
    )


REPORTS: dict[str, PhaseReport] = {
    "burst": PhaseReport(
        "Burst: {pods} pods",
        "created/s: the rate this harness's POSTs achieved; on a saturated machine it falls "
        "short of what was asked, and bounds pods/s.",
        (
            ("peak RSS MiB", lambda c: c.get("peak_rss_mib")),
            ("ready s", lambda c: c.get("ready_seconds")),
        ),
    ),
    "steady": PhaseReport("Steady arrival: {steady_rate:g} pods/s for {steady_seconds:g} s"),
    "storage": PhaseReport(
        "Storage: {storage_pods} pods, each with a WaitForFirstConsumer claim",
        "provision ms: the stand-in provisioner's own time per claim (selected node seen to "
        "claim bound), in every scheduler's latency alike. check: the run's, and every claim "
        "bound to a PV on its pod's node.",
        (
            ("provision ms p50", lambda c: c["storage"]["provision_ms"]["p50"]),
            ("provision ms p99", lambda c: c["storage"]["provision_ms"]["p99"]),
        ),
    ),
    "preemption": PhaseReport(
        "Preemption: {preemption_pods} high-priority pods, each needing the {victims_per_node} "
        "low-priority pods of one node evicted",
        "The low-priority pods are created bound (no scheduler places them, and none of it is "
        "measured); pods/s and latency are the high-priority pods', from creation to bound. "
        "evicted/pod: low-priority pods evicted per high-priority pod; ÷ min: all evicted over "
        "the fewest that make room. check: the run's, and every high-priority pod bound on a "
        "preemption node.",
        (
            ("evicted/pod", lambda c: c["preemption"]["evicted_per_preemptor"]),
            ("evicted ÷ min", _checked("preemption", "evicted_vs_minimum")),
        ),
    ),
    "anti-affinity": PhaseReport(
        "Anti-affinity: {anti_affinity_pods} pods (at most one per node), each with required "
        "pod anti-affinity per hostname to the others",
        "scheduler_perf's SchedulingPodAntiAffinity. shared nodes: nodes holding two of them "
        "(must be 0).",
        (("shared nodes", _checked("anti-affinity", "shared_nodes_count")),),
    ),
    "spread": PhaseReport(
        "Spread: {spread_pods} pods spread over the zones, maxSkew 1, DoNotSchedule",
        "scheduler_perf's TopologySpreading, with maxSkew 1. per zone: the phase's pods in each "
        "zone at the end; skew: the largest difference (at most 1).",
        (
            (
                "per zone",
                lambda c: "/".join(str(n) for n in (_checked("spread", "zones")(c) or {}).values()),
            ),
            ("skew", _checked("spread", "skew")),
        ),
    ),
    "preferred-affinity": PhaseReport(
        "Preferred affinity: {preferred_affinity_pods} pods preferring the zone "
        "{preferred_zone} (weight 100)",
        "SchedulingNodeAffinity's zone term of scheduler_perf as a preference. in preferred "
        "zone: the share of the phase's pods that went there.",
        (("in preferred zone", _checked("preferred-affinity", "on_preferred_share")),),
    ),
    "anti-affinity-ns": PhaseReport(
        "Anti-affinity by namespace selector: {anti_affinity_ns_pods} pods (at most half the "
        "nodes) after as many init pods in 10 namespaces, each with required anti-affinity per "
        "hostname to them all",
        "scheduler_perf's SchedulingRequiredPodAntiAffinityWithNSSelector (namespaces labelled "
        "team=devops). shared nodes: nodes holding two of the phase's pods, init pods included "
        "(must be 0).",
        (("shared nodes", _checked("anti-affinity-ns", "shared_nodes_count")),),
    ),
    "pod-affinity": PhaseReport(
        "Pod affinity: {pod_affinity_pods} pods after as many init pods, each with required pod "
        "affinity per zone to them all",
        "scheduler_perf's SchedulingPodAffinity: the init pods (in a namespace of their own, "
        "which the term lists beside the pods'; not measured) are created and bound first. "
        "zones: the zones holding the phase's pods, init pods included (must be 1: the first "
        "goes anywhere, every other where one is). The suite's nodes are all in one zone, ours "
        "in three.",
        (("zones", lambda c: len(_checked("pod-affinity", "zones")(c) or {})),),
    ),
    "preferred-anti-affinity": PhaseReport(
        "Preferred anti-affinity: {preferred_anti_affinity_pods} pods after as many init pods, "
        "each avoiding (weight 1) the nodes of them all",
        "scheduler_perf's SchedulingPreferredPodAntiAffinity (per hostname; the init pods in a "
        "namespace of their own, not measured). spread out: the share of the phase's pods, init "
        "pods included, on a node holding no more of them than an even spread over the nodes "
        "would.",
        (("spread out", _checked("preferred-anti-affinity", "on_preferred_share")),),
    ),
    "node-affinity": PhaseReport(
        "Node affinity: {node_affinity_pods} pods requiring two of the three zones",
        "scheduler_perf's SchedulingNodeAffinity (its zone1 and zone2; the suite's nodes are "
        "all in zone1, ours in three, so a third of them is excluded). off zones: pods on a node "
        "of the third zone (must be 0).",
        (("off zones", _checked("node-affinity", "off_zones_count")),),
    ),
    "affinity-ns": PhaseReport(
        "Pod affinity by namespace selector: {affinity_ns_pods} pods after as many init pods in "
        "10 namespaces, each with required pod affinity per zone to them all",
        "scheduler_perf's SchedulingRequiredPodAffinityWithNSSelector: the term's "
        "namespaceSelector picks the namespaces labelled team=devops (the init pods' and the "
        "benchmark's). zones: the zones holding the phase's pods, init pods included (must be 1).",
        (("zones", lambda c: len(_checked("affinity-ns", "zones")(c) or {})),),
    ),
    "preferred-anti-affinity-ns": PhaseReport(
        "Preferred anti-affinity by namespace selector: {preferred_anti_affinity_ns_pods} pods "
        "after as many init pods in 10 namespaces, each avoiding (weight 1) the nodes of them "
        "all",
        "scheduler_perf's SchedulingPreferredAntiAffinityWithNSSelector (namespaces labelled "
        "team=devops). spread out: as in preferred anti-affinity.",
        (("spread out", _checked("preferred-anti-affinity-ns", "on_preferred_share")),),
    ),
    "preferred-spread": PhaseReport(
        "Preferred spread: {preferred_spread_pods} pods spread over the zones, maxSkew 5, "
        "ScheduleAnyway",
        "scheduler_perf's PreferredTopologySpreading. per zone and skew: as in spread, reported, "
        "not required; within skew: the share of the pods within maxSkew of the emptiest zone.",
        (
            (
                "per zone",
                lambda c: "/".join(
                    str(n) for n in (_checked("preferred-spread", "zones")(c) or {}).values()
                ),
            ),
            ("skew", _checked("preferred-spread", "skew")),
            ("within skew", _checked("preferred-spread", "on_preferred_share")),
        ),
    ),
    "node-inclusion": PhaseReport(
        "Node inclusion: {node_inclusion_pods} pods spread per hostname, maxSkew 1, over the "
        "nodes their policies include",
        "scheduler_perf's SchedulingWithNodeInclusionPolicy: the phase adds a quarter as many "
        "nodes as its pods, tainted (a marker pod that tolerates the taint bound on the last: "
        "not measured); nodeTaintsPolicy and nodeAffinityPolicy Honor leave them, and the "
        "preemption phase's nodes (which the pods' node affinity refuses), out of the count. "
        "on excluded: pods on such a node (must be 0); skew: between included nodes (at most 1).",
        (
            ("on excluded", _checked("node-inclusion", "on_excluded_count")),
            ("skew", _checked("node-inclusion", "skew")),
        ),
    ),
    "preferred-pod-affinity": PhaseReport(
        "Preferred pod affinity: {preferred_pod_affinity_pods} pods after as many init pods, "
        "each preferring (weight 1) the nodes of them all",
        "scheduler_perf's SchedulingPreferredPodAffinity (per hostname; the init pods in a "
        "namespace of their own, not measured). with another: the share of the phase's pods, "
        "init pods included, on a node holding another of them.",
        (("with another", _checked("preferred-pod-affinity", "on_preferred_share")),),
    ),
    "preferred-affinity-ns": PhaseReport(
        "Preferred affinity by namespace selector: {preferred_affinity_ns_pods} pods after as "
        "many init pods in 10 namespaces, each preferring (weight 1) the nodes of them all",
        "scheduler_perf's SchedulingPreferredAffinityWithNSSelector (namespaces labelled "
        "team=devops). with another: as in preferred pod affinity.",
        (("with another", _checked("preferred-affinity-ns", "on_preferred_share")),),
    ),
    "secrets": PhaseReport(
        "Secrets: pods each with a secret volume",
        "scheduler_perf's SchedulingSecrets. check: the run's.",
    ),
    "in-tree-pvs": PhaseReport(
        "In-tree PVs: pods each with a claim bound to an AWS EBS PV",
        "scheduler_perf's SchedulingInTreePVs: each claim and PV created bound beforehand (not "
        "measured). check: the run's, and every claim still bound to its PV.",
    ),
    "csi-pvs": PhaseReport(
        "CSI PVs: pods each with a claim bound to a CSI PV",
        "scheduler_perf's SchedulingCSIPVs: a CSINode per node allowing 39 volumes of the "
        "driver, each claim and PV created bound beforehand (not measured). most on a node: "
        "EBS volumes (in-tree ones included) on the fullest node. check: the run's, every claim "
        "still bound, no node over its CSINode's count.",
        (("most on a node", _checked("csi-pvs", "most_on_a_node")),),
    ),
    "daemonset": PhaseReport(
        "Daemonset: pods pinned to one node (matchFields metadata.name)",
        "scheduler_perf's SchedulingDaemonset: a node of the phase's own, then its pods, "
        "requesting nothing, each with required node affinity to it by matchFields. off node: "
        "must be 0.",
        (("off node", _checked("daemonset", "off_node_count")),),
    ),
    "finalizers": PhaseReport(
        "Finalizers: pods arriving while as many pods with a finalizer are deleted",
        "scheduler_perf's SchedulingDeletedPodsWithFinalizers: the pods with a finalizer are "
        "created, then deleted 100 a second while the measured pods (requesting nothing) "
        "arrive; at the end their finalizers are removed. deleting bound: those bound before "
        "their deletion; delete/s: the deletions' rate achieved.",
        (
            ("deleting bound", lambda c: c["finalizers"].get("deleting_bound")),
            ("delete/s", lambda c: c["finalizers"].get("delete_rate")),
        ),
    ),
    "gated": PhaseReport(
        "Gated: pods arriving past gated pods, while bound ones are deleted",
        "scheduler_perf's SchedulingWhileGated, on one node of the phase's own: half as many "
        "pods with a scheduling gate held to the end, as many bound then deleted 50 a second "
        "while the measured pods arrive (delete/s: the rate achieved). gated bound: must be 0.",
        (
            ("held", lambda c: c["gated"].get("held")),
            ("delete/s", lambda c: c["gated"].get("delete_rate")),
            ("gated bound", _checked("gated", "bound_count")),
        ),
    ),
    "mixed-churn": PhaseReport(
        "Mixed churn: pods arriving while a node, a high-priority pod and a Service are "
        "created and deleted every second",
        "scheduler_perf's SchedulingWithMixedChurn (recreate): the churn's node has room for no "
        "pod and its pod asks for more cpu than any node has. rounds: objects created. churn "
        "bound: must be 0.",
        (
            ("rounds", lambda c: c["mixed-churn"].get("churn_rounds")),
            ("churn bound", _checked("mixed-churn", "bound_count")),
        ),
    ),
    "parked": PhaseReport(
        "Parked: {parked_pods} pods arriving while {unschedulable_pods} unschedulable pods are "
        "parked",
        "scheduler_perf's Unschedulable shape: pods that fit no node (a nodeSelector no node "
        "matches: no pod event can help them) are created and parked first (park s: until each "
        "is told PodScheduled=False, not measured), then the schedulable pods arrive as a burst "
        "and are measured. parked bound: must be 0.",
        (
            ("parked", lambda c: c["parked"].get("unschedulable")),
            ("park s", lambda c: c["parked"].get("park_seconds")),
            ("parked bound", _checked("parked", "bound_count")),
        ),
    ),
    "dra": PhaseReport(
        "DRA steady state: {dra_nodes} nodes of {dra_devices} devices, {dra_init_claims} "
        "allocated, {dra_in_flight} pods in flight for {dra_seconds:g} s",
        "scheduler_perf's SteadyStateClusterResourceClaimTemplate (half_500nodes), on a "
        "control plane of its own with kube-controller-manager (its resourceclaim controller "
        "makes each pod's claim from the template) and kwok, beside the scheduler on the same "
        "cores. Each pod seen bound is deleted and replaced until the time is up. pods/s: from "
        "the first pod created to the last bound. check: the run's, no device allocated twice, "
        "and each pod left has its claim allocated on its node.",
        (
            ("deleted", lambda c: c["dra"].get("deleted")),
            ("devices twice", lambda c: len(_checked("dra", "allocated_twice")(c) or [])),
        ),
    ),
    **{gang_phase(size): _gang_report(size) for size in GANG_SIZES},
}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(_cell(v) for v in row) + " |" for row in rows),
    ]


class _Config(dict[str, Any]):
    """A run's config for the titles: a key an older JSON lacks reads '?'."""

    def __missing__(self, key: str) -> str:
        return "?"


def _phase_section(results: dict[str, Any], phase: str) -> list[str]:
    report = REPORTS[phase]
    cases = [c for c in results["cases"] if phase in c and "correctness" in c]
    lines = ["", "## " + report.title.format_map(_Config(results["config"])), ""]
    if report.note:
        lines += [report.note, ""]
    lines += _table(
        [*PHASE_COLUMNS, *(column for column, _ in report.columns), "check"],
        [
            [
                *_phase_cells(c, phase, results["config"].get("repeats", 1) > 1),
                *(cell(c) for _, cell in report.columns),
                "ok" if c["correctness"]["ok"] and c[phase]["complete"] else "FAILED",
            ]
            for c in cases
        ],
    )
    rows = results["ratios"].get(phase)
    if rows:
        limits = (
            "the raw binders' own runs of the phase"
            if phase in RAW_PHASES
            else "the raw binders' burst (they run only burst and steady: bound round-robin, "
            "the other phases' pods would break their claims, priorities or constraints), and "
            "p99 has none"
        )
        keys = [
            *((key, column) for key, column, _ in PHASE_RATIOS[phase]),
            *LIMIT_COLUMNS,
        ]
        lines += [
            "",
            f"Ratios: policy-scheduler's figure divided by kube-scheduler's of the same run, and "
            f"throughput divided by the limits, {limits}:",
            "",
            *_table(
                ["nodes", "run", *(column for _, column in keys)],
                [[row["nodes"], row["repeat"] + 1, *(row[key] for key, _ in keys)] for row in rows],
            ),
        ]
        spread = results["ratio_spread"][phase]
        if any(summary["runs"] > 1 for summary in spread):
            lines += [
                "",
                "Over the runs: each ratio's median (lowest to highest).",
                "",
                *_table(
                    ["nodes", "runs", *(column for _, column in keys)],
                    [
                        [summary["nodes"], summary["runs"], *(_range(summary[k]) for k, _ in keys)]
                        for summary in spread
                    ],
                ),
            ]
    return lines


def _range(spread: Mapping[str, float] | None) -> str | None:
    """A ratio's "median (lowest to highest)" over the runs."""
    if spread is None:
        return None
    return f"{_cell(spread['median'])} ({_cell(spread['min'])} to {_cell(spread['max'])})"


def markdown(results: dict[str, Any]) -> str:
    config, cases = results["config"], results["cases"]
    lines = [
        "# Scheduling benchmark: policy-scheduler, kube-scheduler, the raw bind limits",
        "",
        f"Binder concurrency {config['concurrency']}; kube-scheduler client QPS/burst "
        f"{config['kube_qps']}; {results['machine']['cpus']} CPUs. Method and definitions: "
        "bench/bench_scheduling.py. raw: binds round-robin, nothing else; raw+events: binds "
        "and posts the one Scheduled event per pod every scheduler posts. Ratios: throughput "
        "higher is better; latency, CPU, memory, requests lower is better.",
    ]
    for phase in PHASE_RATIOS:
        if any(phase in c for c in cases):
            lines += _phase_section(results, phase)
    errors = [c for c in cases if "error" in c]
    if errors:
        lines += ["", "## Errors", ""]
        lines += [f"- {c['scheduler']} at {c['nodes']} nodes: {c['error']}" for c in errors]
    return "\n".join(lines) + "\n"


def chart(cases: list[Case], phase: str, path: Path) -> None:
    """Throughput and p99 of ``phase`` against node count, each scheduler that ran it (the median
    of its runs at a node count, their range as an error bar); the raw binders' burst
    throughput, dashed, where they did not run it (their limit for it)."""
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for kind in KINDS:
        mine = sorted(
            (c for c in cases if c["scheduler"] == kind and "burst" in c),
            key=lambda c: int(c["nodes"]),
        )
        own = sorted(
            (c for c in cases if c["scheduler"] == kind and phase in c),
            key=lambda c: int(c["nodes"]),
        )
        series: list[tuple[Any, list[Case], Callable[[Case], float | None], str, str]] = [
            (left, own, lambda c: _get(c, phase, "throughput"), "-", kind),
            (right, own, lambda c: _get(c, phase, "latency_ms", "p99"), "-", kind),
        ]
        if kind in LIMITS and not own:
            series.append(
                (left, mine, lambda c: _get(c, "burst", "throughput"), "--", f"{kind} (burst)")
            )
        for axes, runs, value, line, label in series:
            by_nodes: dict[int, list[float]] = {}
            for c in runs:
                if (v := value(c)) is not None:
                    by_nodes.setdefault(int(c["nodes"]), []).append(v)
            if by_nodes:
                # Over a node count's runs: the median, and the range as an error bar.
                nodes = sorted(by_nodes)
                medians = [statistics.median(by_nodes[n]) for n in nodes]
                below = [m - min(by_nodes[n]) for n, m in zip(nodes, medians, strict=True)]
                above = [max(by_nodes[n]) - m for n, m in zip(nodes, medians, strict=True)]
                axes.errorbar(
                    nodes,
                    medians,
                    yerr=[below, above],
                    fmt=line,
                    marker="o",
                    capsize=3,
                    color=STYLES[kind],
                    label=label,
                )
    left.set(title=f"{phase}: throughput", xlabel="nodes", ylabel="pods/s")
    left.set_ylim(bottom=0)
    # Latencies of one phase differ by orders of magnitude between schedulers and sizes.
    right.set(title=f"{phase}: creation-to-bound latency, p99", xlabel="nodes", ylabel="ms (log)")
    right.set_yscale("log")
    node_counts = sorted({c["nodes"] for c in cases})
    for axes in (left, right):
        if len(node_counts) > 1 and node_counts[-1] >= 10 * node_counts[0]:
            axes.set_xscale("log")
        axes.set_xticks(node_counts, [str(n) for n in node_counts])
        axes.grid(alpha=0.3, which="both")
        if axes.lines:
            axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_reports(results: dict[str, Any], out: Path, *, charts: bool = True) -> list[Path]:
    """scheduling.json, scheduling.md and (with ``charts``) scheduling-PHASE.png for each phase
    run, in ``out``; their paths."""
    cases = results["cases"]
    phases = [phase for phase in PHASE_RATIOS if any(phase in c for c in cases)]
    results["ratios"] = {phase: phase_ratios(cases, phase) for phase in phases}
    results["ratio_spread"] = {
        phase: ratio_spread(rows) for phase, rows in results["ratios"].items()
    }
    paths = [out / "scheduling.json", out / "scheduling.md"]
    paths[0].write_text(json.dumps(results, indent=2) + "\n")
    paths[1].write_text(markdown(results))
    for phase in phases if charts else ():
        paths.append(out / f"scheduling-{phase}.png")
        chart(cases, phase, paths[-1])
    return paths
