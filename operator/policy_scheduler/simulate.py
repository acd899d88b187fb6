"""Offline scheduling: place a cluster dump's pending pods with a policy, no API server involved.

The cluster file is what ``kubectl get nodes,pods,namespaces,services,replicationcontrollers,
replicasets,statefulsets,persistentvolumeclaims,persistentvolumes,storageclasses,csinodes,
csidrivers,csistoragecapacities,volumeattachments,resourceclaims,poddisruptionbudgets,
priorityclasses -A -o yaml``
prints (a ``List``) or multi-document YAML (with ``podgroups.scheduling.k8s.io``,
``podgroups.scheduling.x-k8s.io`` and ``podgroups.scheduling.volcano.sh`` for gang scheduling:
the PodGroups of the three APIs, told apart by their ``apiVersion``), as
:mod:`policy_scheduler.manifests` reads them: the
nodes and pods, and the objects of every other kind the operator watches
(:data:`~policy_scheduler.scheduling.kinds.KINDS`: what default topology spreading, pod
affinity's ``namespaceSelector``, the volume plugins, DynamicResources and preemption read),
which a file may leave out. Objects of any other kind (a dump of ``kubectl get all,...``
holds Deployments, ConfigMaps, Events, ...) are skipped and counted (:attr:`ClusterDump.skipped`).
A pod without ``spec.priority`` (written by hand: the API server sets it on every pod it admits)
gets its priority from the file's PriorityClasses, as admission would give it
(:mod:`~policy_scheduler.model.priority_classes`).

:func:`simulate` runs the operator's own scheduling loop
(:class:`~policy_scheduler.scheduling.scheduler.Scheduler`) with in-memory ports: the dump's objects
are fed to it as the operator's watches feed it (:mod:`~policy_scheduler.kube.scheduler`), binds
succeed in memory, events and statuses are kept in
memory, and the clock stands still, so each pending pod of the policy's scheduler is decided once,
in scheduling order, each placement counting against its node for the next (the cache's assumed
pods). Gated pods, pods being deleted and pods nominated elsewhere are treated as the operator
treats them. The policy is run as if ``mode: Enforce``, so that placements add up as they would.
"""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from policy_scheduler.manifests import ManifestError, read_objects, type_name
from policy_scheduler.model import disruption, namespaces, priority_classes, workloads
from policy_scheduler.model.nodeinfo import ClusterState, NodeInfo
from policy_scheduler.model.objects import NodeView, ObjectError, PodView, Raw
from policy_scheduler.model.priority_classes import PriorityClass, PriorityClasses
from policy_scheduler.policy.compiler import Mode
from policy_scheduler.runtime.decision import Decision
from policy_scheduler.scheduling import kinds
from policy_scheduler.scheduling.ports import (
    BindResult,
    ObjectRef,
    Outcome,
    PreemptedBy,
    WriteResult,
)
from policy_scheduler.scheduling.scheduler import Scheduler


class ClusterFileError(ManifestError):
    """A cluster file that cannot be read; ``problems`` name the file and each bad object."""


@dataclass(frozen=True)
class ClusterDump:
    """The objects of a cluster file that simulate uses, and how many of each other kind it
    skipped."""

    nodes: tuple[NodeView, ...]
    pods: tuple[PodView, ...]
    """With their priority resolved from the file's PriorityClasses, as the API server's
    admission would have (:meth:`~policy_scheduler.model.priority_classes.PriorityClasses.
    admit`)."""
    workloads: tuple[tuple[str, Raw], ...] = ()
    """Services, ReplicationControllers, ReplicaSets and StatefulSets, each with its kind."""
    namespaces: tuple[Raw, ...] = ()
    storage: tuple[tuple[str, Raw], ...] = ()
    """PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers,
    CSIStorageCapacities, VolumeAttachments, ResourceClaims, ResourceSlices, DeviceClasses and
    DeviceTaintRules, and the objects of every other
    kind declared (:data:`~policy_scheduler.scheduling.kinds.STORES`) but the above, each with
    its kind."""
    disruption_budgets: tuple[Raw, ...] = ()
    skipped: tuple[tuple[str, int], ...] = ()
    """The kinds of the file's objects that simulate does not use, by name, with how many."""

    @property
    def skipped_objects(self) -> int:
        return sum(count for _, count in self.skipped)

    def skipped_kinds(self) -> str:
        """The kinds skipped, for people: "ConfigMap (5), Deployment (7)"."""
        return ", ".join(f"{kind} ({count})" for kind, count in self.skipped)

    @classmethod
    def of(cls, objects: Iterable[Any]) -> ClusterDump:
        """The dump of these objects (each with its ``kind``); ValueError for one that is no
        Kubernetes object or a broken one, and for pods whose priority cannot be resolved."""
        return cls._of([_parse(obj) for obj in objects])

    @classmethod
    def _of(cls, objects: Sequence[_Parsed], where: str = "") -> ClusterDump:
        """The dump of parsed objects; ManifestError, each problem starting with ``where``, for
        every pod naming a PriorityClass that does not exist."""
        others = [o for o in objects if isinstance(o, tuple)]
        classes = PriorityClasses(o for o in objects if isinstance(o, PriorityClass))
        pods: list[PodView] = []
        problems: list[str] = []
        for pod in (o for o in objects if isinstance(o, PodView)):
            try:
                pods.append(classes.admit(pod))
            except ObjectError as error:
                problems.append(f"{where}{error}")
        if problems:
            raise ManifestError(problems)
        return cls.of_stored(
            (o for o in objects if isinstance(o, NodeView)),
            pods,
            ((kind, raw) for kind, raw in others if kind in kinds.STORES),
            tuple(sorted(Counter(kind for kind, _ in others if kind not in KINDS).items())),
        )

    @classmethod
    def of_stored(
        cls,
        nodes: Iterable[NodeView],
        pods: Iterable[PodView],
        stored: Iterable[tuple[str, Raw]],
        skipped: tuple[tuple[str, int], ...] = (),
    ) -> ClusterDump:
        """The dump of these nodes and pods and ``stored`` objects (of the kinds
        :data:`~policy_scheduler.scheduling.kinds.STORES`, each with its kind)."""
        grouped = tuple(stored)
        return cls(
            tuple(nodes),
            tuple(pods),
            tuple((kind, raw) for kind, raw in grouped if kind in workloads.KINDS),
            tuple(raw for kind, raw in grouped if kind == namespaces.KIND),
            tuple((kind, raw) for kind, raw in grouped if kind not in _GROUPED),
            tuple(raw for kind, raw in grouped if kind == disruption.KIND),
            skipped,
        )

    def stored(self) -> Iterator[tuple[str, Raw]]:
        """Every object of the kinds the cache keeps in stores, with its kind."""
        yield from self.workloads
        yield from ((namespaces.KIND, raw) for raw in self.namespaces)
        yield from self.storage
        yield from ((disruption.KIND, raw) for raw in self.disruption_budgets)


_GROUPED = frozenset({*workloads.KINDS, namespaces.KIND, disruption.KIND})
"""The kinds a :class:`ClusterDump` keeps apart from :attr:`ClusterDump.storage`."""
KINDS = (
    *(kind.name for kind in kinds.KINDS if kind is not kinds.POLICIES),
    priority_classes.KIND,
)
"""The kinds simulate takes from a cluster dump: every kind the operator watches but the
policies (simulate is given its own), and the PriorityClasses that admission would have given
hand-written pods their priority from."""
_EXPECTED = f"{', '.join(KINDS[:-1])} or {KINDS[-1]}"

_Parsed = NodeView | PodView | PriorityClass | tuple[str, Raw]


def _parse(obj: Any) -> _Parsed:
    """The object as simulate keeps it; any kind it does not use, with its kind, to be counted.
    ValueError for what is no Kubernetes object, and for an object of a kind simulate uses that
    the API server would not hold (a broken quantity, selector, flag or PriorityClass)."""
    if not isinstance(obj, Mapping):
        raise ValueError(f"expected a Kubernetes object ({_EXPECTED}), got {type_name(obj)}")
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ValueError(
            f"kind is {kind!r}, expected {_EXPECTED}"
            if kind
            else f"kind is missing, expected {_EXPECTED}"
        )
    if kind == "Node":
        return NodeView(obj)
    if kind == "Pod":
        pod = PodView(obj)
        # Parse the requests now, so a broken quantity is reported here, not mid-run.
        _ = pod.requests
        return pod
    if kind == priority_classes.KIND:
        return PriorityClass.of(obj)
    kind = kinds.dump_kind(obj)
    declared = kinds.NAMED.get(kind)
    if declared is not None and declared.check is not None:
        # As a pod's requests: a claim's broken selector, a CSIStorageCapacity's broken
        # quantity, a budget's broken selector (which preemption would take for one that
        # protects nothing), ... are reported here, not mid-run.
        declared.check(obj)
    return kind, obj


def load_cluster(path: Path) -> ClusterDump:
    """Read a cluster dump; raises :class:`ClusterFileError` naming every bad object, or saying
    that the file holds no object simulate uses."""
    try:
        objects = read_objects(path, _EXPECTED, _parse)
        dump = ClusterDump._of(objects, f"{path}: ")
    except ManifestError as error:
        raise ClusterFileError(error.problems) from None
    if dump.skipped_objects == len(objects):
        raise ClusterFileError([f"{path}: holds no {_EXPECTED}, only {dump.skipped_kinds()}"])
    return dump


def snapshot_of(cluster: ClusterDump) -> ClusterState:
    """Nodes with the pods already placed on them (finished pods hold nothing), and the objects
    of the other kinds in their stores, as the cache keeps them."""
    placed: dict[str, list[PodView]] = {}
    for pod in cluster.pods:
        if pod.node_name and not pod.terminated:
            placed.setdefault(pod.node_name, []).append(pod)
    state = ClusterState(NodeInfo(node, placed.get(node.name, ())) for node in cluster.nodes)
    for kind, raw in cluster.stored():
        kinds.STORES[kind].set(state, raw)
    return state


@dataclass
class InMemory:
    """The loop's ports kept in memory: what a run bound, told and wrote, in order."""

    binds: list[tuple[str, str]] = field(default_factory=list)
    events: list[tuple[str, str, str, str]] = field(default_factory=list)
    conditions: list[tuple[str, str]] = field(default_factory=list)
    """The pods set ``PodScheduled=False, reason=Unschedulable``, with the message."""
    errors: list[tuple[str, str]] = field(default_factory=list)
    """The pods set ``PodScheduled=False, reason=SchedulerError``, with the message (their
    nomination cleared in the same write)."""
    nominations: list[tuple[str, str]] = field(default_factory=list)
    """The pods whose ``nominatedNodeName`` was written, with the node ("" when cleared)."""
    preemptions: list[tuple[str, str, str, str]] = field(default_factory=list)
    """The victims a preemption would evict: (victim, preemptor, node, condition message).
    Nothing is evicted: the victims stay in the run's cluster."""
    statuses: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    patches: list[tuple[ObjectRef, Mapping[str, Any]]] = field(default_factory=list)

    async def bind(self, pod: PodView, node: str) -> BindResult:
        self.binds.append((pod.key, node))
        return BindResult(Outcome.BOUND)

    def event(self, pod: PodView, type_: str, reason: str, message: str, action: str) -> None:
        self.events.append((pod.key, type_, reason, message))

    async def drain(self) -> None:
        pass

    def unschedulable(self, pod: PodView, message: str, nominated_node: str | None = None) -> None:
        self.conditions.append((pod.key, message))
        if nominated_node is not None:
            self.nominations.append((pod.key, nominated_node))

    def scheduler_error(self, pod: PodView, message: str) -> None:
        self.errors.append((pod.key, message))

    def nominate(self, pod: PodView, node: str) -> None:
        self.nominations.append((pod.key, node))

    async def preempt(
        self, victim: PodView, preemptor: PodView, by: PreemptedBy, condition_message: str
    ) -> bool:
        self.preemptions.append((victim.key, preemptor.key, by.where, condition_message))
        return True

    async def write(self, name: str, uid: str, body: Mapping[str, Any]) -> WriteResult:
        self.statuses[name] = body
        return WriteResult.WRITTEN

    async def patch(self, ref: ObjectRef, patch: Mapping[str, Any]) -> Mapping[str, Any]:
        self.patches.append((ref, patch))
        return patch

    async def create(self, ref: ObjectRef, body: Mapping[str, Any]) -> Mapping[str, Any]:
        # Named as the API server would, from its generateName; kept with the patches.
        metadata = dict(body.get("metadata") or {})
        metadata.setdefault("name", f"{metadata.get('generateName', '')}simulated")
        created = {**body, "metadata": metadata}
        self.patches.append((ref, created))
        return created

    async def delete(self, ref: ObjectRef) -> None:
        self.patches.append((ref, {}))

    async def get(self, ref: ObjectRef) -> Mapping[str, Any]:
        # Only a conflict makes a plugin read an object again, and no patch here conflicts.
        raise LookupError(f"simulate keeps no API objects to read {ref}")


class FrozenClock:
    """A clock that does not move: parked and backed-off pods stay where they are."""

    def __init__(self, at: float = 0.0) -> None:
        self.at = at

    def monotonic(self) -> float:
        return self.at

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.at, UTC)


def simulate(
    policy: Mapping[str, Any],
    cluster: ClusterDump,
    seed: int | None = None,
    *,
    candidates: int | None = 3,
    memory: InMemory | None = None,
) -> list[Decision]:
    """Decide every pending pod that ``policy`` (a SchedulingPolicy that compiles) serves, in
    scheduling order, with the operator's loop; each decision reports its ``candidates`` best
    feasible nodes (None: all of them) with their scores. What the run bound, told, nominated
    and would have evicted is kept in ``memory``, when given, for a caller that wants more than
    the decisions."""
    enforced = copy.deepcopy(dict(policy))
    enforced.setdefault("spec", {})["mode"] = Mode.ENFORCE.value
    memory = InMemory() if memory is None else memory
    decisions: list[Decision] = []
    scheduler = Scheduler(
        memory,
        memory,
        memory,
        memory,
        memory,
        evictor=memory,
        clock=FrozenClock(),
        seed=seed,
        on_decision=decisions.append,
    )
    for kind, raw in cluster.stored():
        scheduler.changed(kind, raw)
    for node in cluster.nodes:
        scheduler.node_changed(node.raw)
    for pod in cluster.pods:
        scheduler.pod_changed(pod.raw)
    scheduler.policy_changed(enforced)
    entry = scheduler.policies.get(str(enforced.get("metadata", {}).get("name", "")))
    if entry is not None and entry.compiled is not None:
        entry.compiled.pipeline.candidates_to_report = candidates
    asyncio.run(scheduler.run_until_idle())
    return decisions
