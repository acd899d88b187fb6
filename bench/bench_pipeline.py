"""How fast one policy decides: scheduling decisions per second of the pipeline alone.

Builds synthetic clusters (by default 500 and 5,000 nodes with varied allocatable, zones, some
taints and images, and 10 placed pods per node, some of them with labels that affinity terms
select and some with anti-affinity of their own), compiles a kube-default-like policy through
``compile_policy`` and decides a stream of pending pods on one core, assuming each pod onto its
node as the operator does, so that every decision sees the previous ones.

The headline figures (decisions per second, mean and p99 milliseconds per decision) come from a
run with the plugins as they are. A second, separate pass wraps every plugin in a timer and reports
each plugin's share of the decision time; the wrappers cost time of their own, so that pass is
never used for the headline.

    python bench/bench_pipeline.py [--nodes 500 5000] [--decisions N] [--seed S] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from policy_scheduler.framework.interface import Filter, Rejections, Scorer, Scores
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import ClusterState, NodeInfo
from policy_scheduler.model.nodetable import NodeBlock
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.policy.compiler import compile_policy
from policy_scheduler.policy.load import read_policy_file
from policy_scheduler.runtime.framework import WeightedScorer
from policy_scheduler.runtime.schedule_one import Pipeline

PODS_PER_NODE = 10
ZONES = ("zone-a", "zone-b", "zone-c", "zone-d")
APPS = tuple(f"app-{i}" for i in range(20))
IMAGES = (
    ("registry.example/web:1.4", 180 * 1024 * 1024),
    ("registry.example/api:2.0", 350 * 1024 * 1024),
    ("registry.example/batch:7", 900 * 1024 * 1024),
)
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

# kube-scheduler's default profile, as a SchedulingPolicy.
# The example policy that mirrors kube-scheduler's default profile: one definition for the
# examples, the parity test and this benchmark.
POLICY_FILE = Path(__file__).resolve().parents[1] / "examples" / "policies" / "default-profile.yaml"


def _node(i: int, rng: random.Random) -> dict[str, Any]:
    cpu = rng.choice((4, 8, 16, 32))
    spec: dict[str, Any] = {}
    roll = rng.random()
    if roll < 0.05:
        spec["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    elif roll < 0.10:
        spec["taints"] = [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
    elif roll < 0.11:
        spec["unschedulable"] = True
    images = [
        {"names": [name, f"{name.rpartition(':')[0]}@sha256:{n:064x}"], "sizeBytes": size}
        for n, (name, size) in enumerate(IMAGES)
        if rng.random() < 0.3
    ]
    return {
        "metadata": {
            "name": f"node-{i}",
            "labels": {
                HOSTNAME: f"node-{i}",
                ZONE: ZONES[i % len(ZONES)],
                "node.kubernetes.io/instance-type": f"m{cpu}",
                **({"disk": "ssd"} if rng.random() < 0.5 else {}),
            },
        },
        "spec": spec,
        "status": {
            "allocatable": {
                "cpu": str(cpu),
                "memory": f"{cpu * 4}Gi",
                "pods": "110",
                "ephemeral-storage": "100Gi",
            },
            "images": images,
        },
    }


def _container(rng: random.Random, name: str = "main") -> dict[str, Any]:
    requests = rng.choice(
        (
            {},
            {"cpu": "100m", "memory": "128Mi"},
            {"cpu": "250m", "memory": "256Mi"},
            {"cpu": "500m", "memory": "1Gi"},
            {"cpu": "1", "memory": "2Gi"},
            {"cpu": "50m"},
        )
    )
    return {
        "name": name,
        "image": rng.choice(IMAGES)[0],
        "resources": {"requests": requests} if requests else {},
    }


def _anti_affinity(app: str, required: bool) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME}
    if required:
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": term}
            ]
        }
    }


def placed_pod(uid: str, node: str, rng: random.Random) -> dict[str, Any]:
    """A running pod: mixed requests; 60% carry an app label, a few have anti-affinity."""
    labels = {"app": rng.choice(APPS)} if rng.random() < 0.6 else {}
    spec: dict[str, Any] = {"nodeName": node, "containers": [_container(rng)]}
    roll = rng.random()
    if labels and roll < 0.01:
        spec["affinity"] = _anti_affinity(labels["app"], required=True)
    elif labels and roll < 0.05:
        spec["affinity"] = _anti_affinity(labels["app"], required=False)
    return {
        "metadata": {"name": uid, "namespace": "default", "uid": uid, "labels": labels},
        "spec": spec,
        "status": {"phase": "Running"},
    }


def pending_pod(uid: str, rng: random.Random) -> dict[str, Any]:
    """A pod to place: plain, spread over zones, anti-affine to its app, pinned or tolerating."""
    app = rng.choice(APPS)
    spec: dict[str, Any] = {
        "schedulerName": "bench",
        "containers": [_container(rng, f"c{n}") for n in range(rng.choice((1, 1, 2)))],
    }
    roll = rng.random()
    if roll < 0.15:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    elif roll < 0.30:
        spec["affinity"] = _anti_affinity(app, required=False)
    elif roll < 0.33:
        spec["affinity"] = _anti_affinity(app, required=True)
    elif roll < 0.40:
        spec["nodeSelector"] = {"disk": "ssd"}
    elif roll < 0.45:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "gpu"}]
    return {
        "metadata": {"name": uid, "namespace": "default", "uid": uid, "labels": {"app": app}},
        "spec": spec,
    }


def build_cluster(nodes: int, seed: int) -> ClusterState:
    rng = random.Random(seed)
    infos = []
    for i in range(nodes):
        view = NodeView(_node(i, rng))
        pods = (
            PodView(placed_pod(f"placed-{i}-{k}", view.name, rng)) for k in range(PODS_PER_NODE)
        )
        infos.append(NodeInfo(view, pods))
    return ClusterState(infos)


def pending_pods(count: int, seed: int) -> list[PodView]:
    rng = random.Random(seed + 1)
    return [PodView(pending_pod(f"pending-{n}", rng)) for n in range(count)]


def new_pipeline() -> Pipeline:
    return compile_policy(read_policy_file(POLICY_FILE)[0]).pipeline


@dataclass(frozen=True, slots=True)
class Result:
    nodes: int
    decisions: int
    unschedulable: int
    decisions_per_second: float
    mean_ms: float
    p99_ms: float
    plugin_share: dict[str, float]


def run_decisions(
    pipeline: Pipeline, snapshot: ClusterState, pods: Sequence[PodView], seed: int
) -> tuple[list[float], int]:
    """Decide every pod in turn, assuming each onto its node; per-decision seconds and how many
    pods found no node."""
    rng = random.Random(seed)
    durations = []
    unschedulable = 0
    clock = time.perf_counter
    for pod in pods:
        started = clock()
        decision = pipeline.decide(pod, snapshot, rng)
        durations.append(clock() - started)
        if decision.node is None:
            unschedulable += 1
        else:
            snapshot.add_pod(snapshot.nodes[decision.node], pod)
    return durations, unschedulable


class _Timer:
    """Seconds spent per plugin (``predicate:Name`` / ``priority:Name``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def timing(self, key: str) -> Iterator[None]:
        """Add the time spent in the ``with`` block to ``key``'s."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - started


class _TimedFilter(Filter[Any]):
    def __init__(self, inner: Filter[Any], timer: _Timer) -> None:
        self.inner, self.timer, self.name = inner, timer, inner.name
        self.key = f"predicate:{inner.name}"

    def pre_filter(self, cycle: Cycle) -> Any:
        with self.timer.timing(self.key):
            return self.inner.pre_filter(cycle)

    def filter(self, state: Any, pod: PodView, node: NodeInfo) -> Sequence[str]:
        with self.timer.timing(self.key):
            return self.inner.filter(state, pod, node)

    def filter_nodes(self, state: Any, pod: PodView, nodes: NodeBlock) -> Rejections:
        with self.timer.timing(self.key):
            return self.inner.filter_nodes(state, pod, nodes)


class _TimedScorer(Scorer[Any]):
    def __init__(self, inner: Scorer[Any], timer: _Timer) -> None:
        self.inner, self.timer, self.name = inner, timer, inner.name
        self.key = f"priority:{inner.name}"

    def pre_score(self, cycle: Cycle, nodes: NodeBlock) -> Any:
        with self.timer.timing(self.key):
            return self.inner.pre_score(cycle, nodes)

    def score(self, state: Any, pod: PodView, node: NodeInfo) -> int:
        with self.timer.timing(self.key):
            return self.inner.score(state, pod, node)

    def score_nodes(self, state: Any, pod: PodView, nodes: NodeBlock) -> Scores:
        with self.timer.timing(self.key):
            return self.inner.score_nodes(state, pod, nodes)

    def normalize(self, state: Any, scores: Scores) -> None:
        with self.timer.timing(self.key):
            self.inner.normalize(state, scores)


def profile_plugins(nodes: int, decisions: int, seed: int) -> dict[str, float]:
    """Each plugin's share of the decision time (the rest is the pipeline's own work), measured
    on a fresh cluster with every plugin wrapped in a timer."""
    plain = new_pipeline()
    timer = _Timer()
    timed = Pipeline(
        [_TimedFilter(f, timer) for f in plain.filters],
        [WeightedScorer(_TimedScorer(w.scorer, timer), w.weight) for w in plain.scorers],
        plain.percentage_of_nodes_to_score,
        plain.node_pool,
    )
    durations, _ = run_decisions(
        timed, build_cluster(nodes, seed), pending_pods(decisions, seed), seed
    )
    total = sum(durations)
    shares = {key: seconds / total for key, seconds in timer.seconds.items()}
    shares["pipeline (own work)"] = 1.0 - sum(shares.values())
    return dict(sorted(shares.items(), key=lambda item: -item[1]))


def bench(nodes: int, decisions: int, seed: int, profile: bool) -> Result:
    snapshot = build_cluster(nodes, seed)
    pods = pending_pods(decisions, seed)
    # Parse-once work (requests, affinity terms) of the placed pods is warmed by a throwaway
    # decision, as a long-running operator has it warm.
    warmup = new_pipeline()
    warmup.decide(PodView(pending_pod("warmup", random.Random(seed))), snapshot, random.Random())
    durations, unschedulable = run_decisions(new_pipeline(), snapshot, pods, seed)
    total = sum(durations)
    ordered = sorted(durations)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return Result(
        nodes=nodes,
        decisions=decisions,
        unschedulable=unschedulable,
        decisions_per_second=decisions / total,
        mean_ms=statistics.fmean(durations) * 1000,
        p99_ms=p99 * 1000,
        plugin_share=profile_plugins(nodes, decisions, seed) if profile else {},
    )


def _table(results: Sequence[Result]) -> str:
    lines = [
        f"{'nodes':>7} {'decisions':>9} {'unsched.':>8} {'decisions/s':>11} "
        f"{'mean ms':>8} {'p99 ms':>8}"
    ]
    lines += [
        f"{r.nodes:>7} {r.decisions:>9} {r.unschedulable:>8} {r.decisions_per_second:>11.1f} "
        f"{r.mean_ms:>8.2f} {r.p99_ms:>8.2f}"
        for r in results
    ]
    for r in results:
        if r.plugin_share:
            lines.append(f"\nshare of decision time at {r.nodes} nodes (timed pass):")
            lines += [f"  {key:<32} {share:>6.1%}" for key, share in r.plugin_share.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--decisions", type=int, default=1000, help="pending pods per cluster")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-profile", action="store_true", help="skip the per-plugin pass")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    results = [bench(n, args.decisions, args.seed, not args.no_profile) for n in args.nodes]
    if args.json:
        json.dump([asdict(r) for r in results], sys.stdout, indent=2)
        print()
    else:
        print(_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
