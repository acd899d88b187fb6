"""What a preemptor costs the decision path, in process: the preemption phase of
``bench_scheduling.py`` without the API server.

Builds the scheduler's cache with ``--nodes`` plain nodes and ``--preemptors`` preemption nodes
(4 cpu, labelled, each filled exactly with 10 low-priority pods of 400m), as the scheduling
benchmark's preemption phase does, and compiles the default profile. Then, for each of
``--preemptors`` high-priority pods that select the preemption nodes and ask for a whole node's
cpu, in turn: the decision (no node fits; the pods nominated before it hold their nodes' room),
then DefaultPreemption's post-filter (its dry run and pick). Each preemption is then made as the
loop makes it: the victims terminating by preemption, the preemptor nominated to their node;
once more than ``--lag`` are pending, the oldest is done (its victims deleted, its preemptor
bound), as the stand-in kubelet's deletions lag behind the preemptions in the live benchmark.
Prints the CPU microseconds per preemptor of the decision and of the post-filter.

Then the same workload through the operator's loop (:class:`~policy_scheduler.scheduling.
scheduler.Scheduler` with the in-memory ports ``simulate`` uses, its clock standing still), for
what the victims' deletions cost while preemptors wait for them: each preemptor is created and
decided (it preempts), the watch then shows its victims terminating and its nomination, and it
waits parked; once more than ``--lag`` wait, the oldest one's victims are deleted, one watch
event each (the loop's handling of an assigned pod's deletion, which asks the waiting preemptors
whether it may help them: :mod:`policy_scheduler.scheduling.waiting`), and its preemptor, freed
by the last, is bound; at the end the rest are done alike. Only the deletions' handling is
timed: it prints the CPU microseconds per deletion, per deletion and preemptor waiting then,
and per preemptor (all the deletions' CPU ÷ the preemptors, as the live phase counts CPU per
pod), with the deletions made and the preemptors bound. With ``--profile``, each part's
functions that took the most of it (cProfile, cumulative).

    python bench/bench_preemption.py [--nodes 100 1000] [--preemptors 500] [--lag 250] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import random
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policy_scheduler.framework.interface import Preemption
from policy_scheduler.framework.types import NO_NOMINATED, Cycle, NominatedPods
from policy_scheduler.model.objects import (
    DISRUPTION_TARGET,
    PREEMPTION_BY_SCHEDULER,
    PodView,
)
from policy_scheduler.plugins.default_preemption import NAME as DEFAULT_PREEMPTION
from policy_scheduler.policy.compiler import CompiledPolicy, compile_policy
from policy_scheduler.policy.load import read_policy_file
from policy_scheduler.scheduling.cache import SchedulerCache
from policy_scheduler.scheduling.preemption import nominated_to
from policy_scheduler.scheduling.queue import Where
from policy_scheduler.scheduling.scheduler import Scheduler
from policy_scheduler.simulate import FrozenClock, InMemory

POLICY_FILE = Path(__file__).resolve().parents[1] / "examples" / "policies" / "default-profile.yaml"
PREEMPTION_LABEL = "bench.policy-scheduler.dev/preemption"
NODE_CPU = 4
VICTIMS_PER_NODE = 10
LOW, HIGH = 100, 1000
STARTED = "2026-01-01T00:00:00Z"


def node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": str(NODE_CPU), "memory": "16Gi", "pods": "110"}},
    }


def pod(name: str, priority: int, cpu_m: int, node_name: str = "") -> PodView:
    """A pod of the phase: on the preemption nodes only; bound to ``node_name`` if given."""
    spec: dict[str, Any] = {
        "schedulerName": "default-profile",
        "priority": priority,
        "nodeSelector": {PREEMPTION_LABEL: "true"},
        "containers": [
            {"name": "main", "resources": {"requests": {"cpu": f"{cpu_m}m", "memory": "1Gi"}}}
        ],
    }
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "bench", "uid": name, "labels": {"app": name[:4]}},
        "spec": spec,
    }
    if node_name:
        spec["nodeName"] = node_name
        raw["status"] = {"phase": "Running", "startTime": STARTED}
    return PodView(raw)


def build_cache(plain: int, preemption: int) -> SchedulerCache:
    """``plain`` nodes the preemptors cannot use, then ``preemption`` nodes each filled exactly
    with VICTIMS_PER_NODE low-priority pods."""
    cache = SchedulerCache()
    for i in range(plain):
        cache.set_node(node(f"node-{i:05d}", {}))
    victim_m = NODE_CPU * 1000 // VICTIMS_PER_NODE
    for n in range(preemption):
        name = f"preempt-{n:05d}"
        cache.set_node(node(name, {PREEMPTION_LABEL: "true"}))
        for v in range(VICTIMS_PER_NODE):
            cache.set_pod(pod(f"low-{n:05d}-{v:02d}", LOW, victim_m, name))
    return cache


def terminating(victim: PodView) -> PodView:
    """``victim`` as the watch shows it once evicted: deleting, with the DisruptionTarget
    condition a scheduler's preemption sets."""
    condition = {"type": DISRUPTION_TARGET, "status": "True", "reason": PREEMPTION_BY_SCHEDULER}
    raw = victim.raw
    metadata = {**raw["metadata"], "deletionTimestamp": STARTED}
    return PodView(
        {**raw, "metadata": metadata, "status": {**raw["status"], "conditions": [condition]}}
    )


@dataclass(frozen=True, slots=True)
class Totals:
    """CPU seconds of the decisions and of the post-filters, and the victims chosen."""

    preemptors: int
    decide: float
    post_filter: float
    victims: int


def microseconds_each(seconds: float, count: int) -> float:
    """Microseconds each of ``seconds`` spent on ``count`` things (preemptors, deletions)."""
    if count <= 0:
        raise ValueError(f"count must be positive, got {count}")
    return seconds * 1e6 / count


class Preemptions:
    """The preemptions made and not yet done, as the loop holds them while the stand-in kubelet
    deletes the victims: each preemptor nominated to its node (holding its room), its victims
    terminating there; the oldest done (victims deleted, preemptor bound) once more than
    ``lag`` are pending."""

    def __init__(self, cache: SchedulerCache, lag: int) -> None:
        self.cache = cache
        self.lag = lag
        self.pending: deque[tuple[PodView, str, tuple[PodView, ...]]] = deque()
        self.nominated: dict[str, PodView] = {}

    def holding_room(self, preemptor: PodView) -> NominatedPods:
        """What the loop's ``_holding_room`` tells the cycle of ``preemptor``."""
        by_node: dict[str, list[PodView]] = {}
        for name, other in self.cache.holding_room(preemptor, self.nominated.values()):
            by_node.setdefault(name, []).append(other)
        return NominatedPods(by_node, self.cache.nominated) if by_node else NO_NOMINATED

    def made(self, preemptor: PodView, preemption: Preemption) -> None:
        victims = tuple(terminating(victim) for victim in preemption.victims)
        for victim in victims:
            self.cache.set_pod(victim)
        self.nominated[preemptor.uid] = nominated_to(preemptor, preemption.node)
        self.pending.append((preemptor, preemption.node, victims))
        while len(self.pending) > self.lag:
            done, name, gone = self.pending.popleft()
            for victim in gone:
                self.cache.delete_pod(victim.uid)
            del self.nominated[done.uid]
            raw = done.raw
            self.cache.set_pod(PodView({**raw, "spec": {**raw["spec"], "nodeName": name}}))


def run(
    policy: CompiledPolicy, cache: SchedulerCache, preemptors: int, lag: int, seed: int
) -> Totals:
    """Each preemptor's decision and post-filter, timed apart; each preemption then made."""
    rng = random.Random(seed)
    preemption = next(p for p in policy.extensions.post_filter if p.name == DEFAULT_PREEMPTION)
    made = Preemptions(cache, lag)
    state = cache.snapshot
    clock = time.process_time
    decide = post = 0.0
    victims = 0
    for i in range(preemptors):
        preemptor = pod(f"high-{i:05d}", HIGH, NODE_CPU * 1000)
        started = clock()
        nominated = made.holding_room(preemptor)
        decision = policy.pipeline.decide(preemptor, state, rng, None, nominated, statuses=True)
        decided = clock()
        if decision.node is not None:
            raise RuntimeError(f"{preemptor.key} fit node {decision.node} without preemption")
        statuses = policy.pipeline.node_statuses(decision, nominated)
        result = preemption.post_filter(None, Cycle(preemptor, state, rng), statuses)
        post += clock() - decided
        decide += decided - started
        if result.preemption is None:
            raise RuntimeError(f"{preemptor.key} found no preemption: {result.message}")
        made.made(preemptor, result.preemption)
        victims += len(result.preemption.victims)
    return Totals(preemptors, decide, post, victims)


@dataclass(frozen=True, slots=True)
class Deletions:
    """CPU seconds the loop spent on the victims' deletions; how many there were; the
    preemptors waiting parked, summed over the deletions; the preemptors bound."""

    preemptors: int
    seconds: float
    deletions: int
    waiting: int
    bound: int


class Loop:
    """The operator's loop with in-memory ports, fed the preemption phase's cluster and told
    what the watch would show; the victims' deletions timed (and profiled, with a profiler)."""

    def __init__(
        self, plain: int, preemption: int, seed: int, profiler: cProfile.Profile | None
    ) -> None:
        self.memory = InMemory()
        memory = self.memory
        self.scheduler = Scheduler(
            memory, memory, memory, memory, memory, evictor=memory, clock=FrozenClock(), seed=seed
        )
        self.profiler = profiler
        self.victims: dict[str, PodView] = {}
        cache = build_cache(plain, preemption)
        for info in cache.snapshot.nodes.values():
            self.scheduler.node_changed(info.node.raw)
            for victim in info.pods.values():
                self.victims[victim.key] = victim
                self.scheduler.pod_changed(victim.raw)
        self.scheduler.policy_changed(read_policy_file(POLICY_FILE)[0])
        self.seconds = 0.0
        self.deletions = 0
        self.waiting = 0

    def preempt(self, runner: asyncio.Runner, preemptor: PodView) -> tuple[str, list[PodView]]:
        """``preemptor`` created and decided: it preempts; the watch then shows its victims
        terminating and its nomination, and it waits parked. Its node and victims."""
        seen = len(self.memory.preemptions)
        self.scheduler.pod_changed(preemptor.raw)
        runner.run(self.scheduler.run_until_idle())
        evicted = self.memory.preemptions[seen:]
        if not evicted:
            raise RuntimeError(f"{preemptor.key} did not preempt")
        where = evicted[0][2]
        gone = [terminating(self.victims[key]) for key, *_ in evicted]
        for victim in gone:
            self.scheduler.pod_changed(victim.raw)
        self.scheduler.pod_changed(nominated_to(preemptor, where).raw)
        entry = self.scheduler.queue.get(preemptor.uid)
        if entry is None or (entry.where, entry.waits_on) != (Where.UNSCHEDULABLE, where):
            raise RuntimeError(f"{preemptor.key} does not wait for its victims on {where}")
        return where, gone

    def done(
        self, runner: asyncio.Runner, preemptor: PodView, where: str, gone: list[PodView]
    ) -> None:
        """The victims deleted, each a watch event timed; the preemptor, freed by the last,
        decided and bound, and shown bound."""
        waiting = sum(
            1 for entry in self.scheduler.queue.entries(Where.UNSCHEDULABLE) if entry.waits_on
        )
        clock = time.process_time
        for victim in gone:
            if self.profiler is not None:
                self.profiler.enable()
            started = clock()
            self.scheduler.pod_deleted(victim.raw)
            self.seconds += clock() - started
            if self.profiler is not None:
                self.profiler.disable()
        self.deletions += len(gone)
        self.waiting += waiting * len(gone)
        runner.run(self.scheduler.run_until_idle())
        if self.memory.binds[-1:] != [(preemptor.key, where)]:
            raise RuntimeError(f"{preemptor.key} was not bound to {where} once its victims left")
        raw = preemptor.raw
        self.scheduler.pod_changed({**raw, "spec": {**raw["spec"], "nodeName": where}})


def run_loop(
    plain: int, preemptors: int, lag: int, seed: int, profiler: cProfile.Profile | None = None
) -> Deletions:
    """The preemptors through the loop, in turn; once more than ``lag`` wait, the oldest one's
    victims deleted; at the end the rest's. Only the deletions are timed."""
    loop = Loop(plain, preemptors, seed, profiler)
    pending: deque[tuple[PodView, str, list[PodView]]] = deque()
    with asyncio.Runner() as runner:
        for i in range(preemptors):
            preemptor = pod(f"high-{i:05d}", HIGH, NODE_CPU * 1000)
            pending.append((preemptor, *loop.preempt(runner, preemptor)))
            while len(pending) > lag:
                loop.done(runner, *pending.popleft())
        while pending:
            loop.done(runner, *pending.popleft())
    return Deletions(preemptors, loop.seconds, loop.deletions, loop.waiting, len(loop.memory.binds))


def print_profile(profiler: cProfile.Profile | None) -> None:
    """cProfile's top functions, by cumulative time, when ``--profile`` asked for them."""
    if profiler is not None:
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(40)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--preemptors", type=int, default=500)
    parser.add_argument(
        "--lag",
        type=int,
        default=250,
        help="preemptions pending (victims terminating, preemptor nominated) before the oldest "
        "is done",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions")
    args = parser.parse_args(argv)
    print(
        f"{'nodes':>6} {'preemptors':>10} {'decide µs':>10} {'post-filter µs':>15} {'victims':>8}"
    )
    for plain in args.nodes:
        policy = compile_policy(read_policy_file(POLICY_FILE)[0])
        cache = build_cache(plain, args.preemptors)
        profiler = cProfile.Profile() if args.profile else None
        if profiler is not None:
            profiler.enable()
        totals = run(policy, cache, args.preemptors, args.lag, args.seed)
        if profiler is not None:
            profiler.disable()
        print(
            f"{plain:>6} {totals.preemptors:>10} "
            f"{microseconds_each(totals.decide, totals.preemptors):>10.0f} "
            f"{microseconds_each(totals.post_filter, totals.preemptors):>15.0f} "
            f"{totals.victims / totals.preemptors:>8.1f}"
        )
        print_profile(profiler)
    print(
        f"\n{'nodes':>6} {'preemptors':>10} {'deletions':>9} {'deletion µs':>11} "
        f"{'µs/deletion/waiting':>19} {'deletions µs/preemptor':>22} {'bound':>6}"
    )
    for plain in args.nodes:
        profiler = cProfile.Profile() if args.profile else None
        deletions = run_loop(plain, args.preemptors, args.lag, args.seed, profiler)
        print(
            f"{plain:>6} {deletions.preemptors:>10} {deletions.deletions:>9} "
            f"{microseconds_each(deletions.seconds, deletions.deletions):>11.0f} "
            f"{microseconds_each(deletions.seconds, deletions.waiting):>19.2f} "
            f"{microseconds_each(deletions.seconds, deletions.preemptors):>22.0f} "
            f"{deletions.bound:>6}"
        )
        print_profile(profiler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
