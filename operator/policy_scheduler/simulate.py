"""Offline scheduling: place a cluster dump's pending pods with a policy, no API server involved.

The cluster file is what ``kubectl get nodes,pods,namespaces,services,replicationcontrollers,
replicasets,statefulsets,persistentvolumeclaims,persistentvolumes,storageclasses,csinodes,
resourceclaims -A -o yaml`` prints (a ``List``) or multi-document YAML of those kinds, as
:mod:`policy_scheduler.manifests` reads them: the nodes and pods, and what default topology
spreading (the Services' and controllers' selectors), pod affinity's ``namespaceSelector`` (the
Namespaces' labels), the volume plugins (PersistentVolumeClaims, PersistentVolumes,
StorageClasses, CSINodes) and DynamicResources (ResourceClaims) read, which a file may leave out.

:func:`simulate` runs the operator's own scheduling loop
(:class:`~policy_scheduler.scheduling.loop.Scheduler`) with in-memory ports: the dump's nodes and
pods are fed to it as a watch would, binds succeed in memory, events and statuses are kept in
memory, and the clock stands still, so each pending pod of the policy's scheduler is decided once,
in scheduling order, each placement counting against its node for the next (the cache's assumed
pods). Gated pods, pods being deleted and pods nominated elsewhere are treated as the operator
treats them. The policy is run as if ``mode: Enforce``, so that placements add up as they would.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from policy_scheduler.manifests import ManifestError, read_objects, type_name
from policy_scheduler.model import volumes, workloads
from policy_scheduler.model.namespaces import Namespaces
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import NodeView, PodView, Raw
from policy_scheduler.pipeline import Decision
from policy_scheduler.policy.compiler import Mode
from policy_scheduler.scheduling.loop import Scheduler
from policy_scheduler.scheduling.ports import BindResult, ObjectRef, Outcome, WriteResult


class ClusterFileError(ManifestError):
    """A cluster file that cannot be read; ``problems`` name the file and each bad object."""


@dataclass(frozen=True)
class ClusterDump:
    """The objects of a cluster file."""

    nodes: tuple[NodeView, ...]
    pods: tuple[PodView, ...]
    workloads: tuple[tuple[str, Raw], ...] = ()
    """Services, ReplicationControllers, ReplicaSets and StatefulSets, each with its kind."""
    namespaces: tuple[Raw, ...] = ()
    storage: tuple[tuple[str, Raw], ...] = ()
    """PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes and ResourceClaims,
    each with its kind."""

    @classmethod
    def of(cls, objects: Iterable[Any]) -> ClusterDump:
        """The dump of these objects (each with its ``kind``); ValueError for one that is none
        of the kinds a dump holds."""
        return cls._of([_parse(obj) for obj in objects])

    @classmethod
    def _of(cls, objects: Sequence[NodeView | PodView | tuple[str, Raw]]) -> ClusterDump:
        others = [o for o in objects if isinstance(o, tuple)]
        return cls(
            tuple(o for o in objects if isinstance(o, NodeView)),
            tuple(o for o in objects if isinstance(o, PodView)),
            tuple((kind, raw) for kind, raw in others if kind in workloads.KINDS),
            tuple(raw for kind, raw in others if kind == NAMESPACE),
            tuple((kind, raw) for kind, raw in others if kind in volumes.KINDS),
        )


NAMESPACE = "Namespace"
KINDS = ("Node", "Pod", NAMESPACE, *workloads.KINDS, *volumes.KINDS)
_EXPECTED = f"{', '.join(KINDS[:-1])} or {KINDS[-1]}"


def _parse(obj: Any) -> NodeView | PodView | tuple[str, Raw]:
    if not isinstance(obj, Mapping):
        raise ValueError(f"expected a Kubernetes object ({_EXPECTED}), got {type_name(obj)}")
    kind = obj.get("kind")
    if kind == "Node":
        return NodeView(obj)
    if kind == "Pod":
        pod = PodView(obj)
        # Parse the requests now, so a broken quantity is reported here, not mid-run.
        _ = pod.requests
        return pod
    if kind == volumes.PVC:
        # As a pod's requests: a claim's broken selector is reported here, not mid-run.
        _ = volumes.ClaimView(obj).selector
    if kind in KINDS:
        return str(kind), obj
    raise ValueError(
        f"kind is {kind!r}, expected {_EXPECTED}"
        if kind
        else f"kind is missing, expected {_EXPECTED}"
    )


def load_cluster(path: Path) -> ClusterDump:
    """Read a cluster dump; raises :class:`ClusterFileError` naming every bad object."""
    try:
        objects = read_objects(path, _EXPECTED, _parse)
    except ManifestError as error:
        raise ClusterFileError(error.problems) from None
    return ClusterDump._of(objects)


def snapshot_of(cluster: ClusterDump) -> Snapshot:
    """Nodes with the pods already placed on them (finished pods hold nothing), and the
    workloads' selectors, the namespaces' labels and the storage and device objects."""
    placed: dict[str, list[PodView]] = {}
    for pod in cluster.pods:
        if pod.node_name and not pod.terminated:
            placed.setdefault(pod.node_name, []).append(pod)
    selectors = workloads.Workloads()
    for kind, raw in cluster.workloads:
        selectors.set(kind, raw)
    labels = Namespaces()
    for raw in cluster.namespaces:
        labels.set(raw)
    storage = volumes.Volumes()
    for kind, raw in cluster.storage:
        storage.set(kind, raw)
    return Snapshot(
        (NodeInfo(node, placed.get(node.name, ())) for node in cluster.nodes),
        selectors,
        labels,
        storage,
    )


@dataclass
class InMemory:
    """The loop's ports kept in memory: what a run bound, told and wrote, in order."""

    binds: list[tuple[str, str]] = field(default_factory=list)
    events: list[tuple[str, str, str, str]] = field(default_factory=list)
    conditions: list[tuple[str, str]] = field(default_factory=list)
    """The pods set ``PodScheduled=False``, with the message."""
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

    def unschedulable(self, pod: PodView, message: str, nominated_node: str = "") -> None:
        self.conditions.append((pod.key, message))
        if nominated_node:
            self.nominations.append((pod.key, nominated_node))

    def clear_nomination(self, pod: PodView) -> None:
        self.nominations.append((pod.key, ""))

    async def preempt(
        self, victim: PodView, preemptor: PodView, node: str, condition_message: str
    ) -> bool:
        self.preemptions.append((victim.key, preemptor.key, node, condition_message))
        return True

    async def write(self, name: str, uid: str, body: Mapping[str, Any]) -> WriteResult:
        self.statuses[name] = body
        return WriteResult.WRITTEN

    async def patch(self, ref: ObjectRef, patch: Mapping[str, Any]) -> Mapping[str, Any]:
        self.patches.append((ref, patch))
        return patch


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
) -> list[Decision]:
    """Decide every pending pod that ``policy`` (a SchedulingPolicy that compiles) serves, in
    scheduling order, with the operator's loop; each decision reports its ``candidates`` best
    feasible nodes (None: all of them) with their scores."""
    enforced = copy.deepcopy(dict(policy))
    enforced.setdefault("spec", {})["mode"] = Mode.ENFORCE.value
    memory = InMemory()
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
    for kind, raw in cluster.workloads:
        scheduler.workload_changed(kind, raw)
    for raw in cluster.namespaces:
        scheduler.namespace_changed(raw)
    for kind, raw in cluster.storage:
        scheduler.storage_changed(kind, raw)
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
