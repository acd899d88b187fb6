"""Per-node accounting (what is requested, which ports are taken, which pods run there) and the
cluster snapshot that one scheduling decision reads.

This mirrors kube-scheduler's ``framework.NodeInfo``. Two classes hold the nodes:

- :class:`Snapshot` is what a scheduling cycle and its plugins read: the nodes in a stable order
  with cluster-wide indexes (pods per label group, pods with affinity terms per affinity group,
  nodes per image and per label value), so that a decision's work grows with what the pod asks
  for rather than with the cluster, and the :class:`~.nodetable.NodeTable` (the per-node numbers
  as arrays), so that plugins compute over blocks of nodes; beside the nodes, the selectors of
  the Services and controllers (:class:`~.workloads.Workloads`), the Namespaces' labels
  (:class:`~.namespaces.Namespaces`), the storage and device objects
  (:class:`~.volumes.Volumes`), the PodDisruptionBudgets
  (:class:`~.disruption.DisruptionBudgets`) and the pod groups of every API
  (:class:`~.podgroups.PodGroups`). It has no method that changes it.
- :class:`ClusterState` is the same structure kept live: the scheduler's cache changes it as
  nodes come and go and pods are assumed, bound and deleted. Every change goes through its
  methods, which update the NodeInfo, the indexes, the table and each pod group's counts per
  node (:meth:`Snapshot.node_counts`) together. A NodeInfo knows nothing of the state that holds
  it; the table points to NodeInfos, never the other way.

A pod counted again as it was (the watch's bound view of a pod assumed on that node, a status
update of a bound pod: :func:`counts_alike`) only takes the place of the view it replaces: every
index already holds what it would count, so nothing is taken out and added again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from policy_scheduler.model.disruption import DisruptionBudgets
from policy_scheduler.model.group_members import GroupMembers
from policy_scheduler.model.namespaces import Namespaces
from policy_scheduler.model.nodetable import NodeCounts, NodeTable
from policy_scheduler.model.objects import (
    AffinityGroup,
    HostPort,
    NodeView,
    PodView,
    Raw,
    Resources,
    add_into,
)
from policy_scheduler.model.podgroups import PodGroups
from policy_scheduler.model.quantity import CPU, MEMORY
from policy_scheduler.model.volumes import Volumes
from policy_scheduler.model.workloads import Workloads

LabelGroup = tuple[str, bool, frozenset[tuple[str, str]]]


_COUNTED = (
    "requests",
    "nonzero_requests",
    "host_ports",
    "label_group",
    "claim_names",
    "has_pod_affinity",
    "affinity_group",
)
"""What the state and its NodeInfos read of a pod (besides its uid and namespace): cached
properties of PodView, each derived from the pod's name, namespace, labels, deletion and spec
(``spec.nodeName`` aside), and for the requests its resize status, alone."""


def _subtract(total: Resources, amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) - amount


def _tally(counts: dict[Any, list[Any]], key: object, pod: PodView, delta: int) -> None:
    """Add ``delta`` to ``key``'s count in ``counts``, as [its first pod, count]."""
    counted = counts.get(key)
    if counted is None:
        counts[key] = [pod, delta]
    else:
        counted[1] += delta


def counts_alike(counted: PodView, pod: PodView) -> bool:
    """Whether ``pod`` counts in the state exactly as ``counted`` does: two views of one pod
    with the same name, namespace, labels, deletion, spec but for ``spec.nodeName`` and resize
    status (:attr:`~policy_scheduler.model.objects.PodView.resize_status`), whatever else differs
    (the rest of the status, resourceVersion, annotations), so every property of
    :data:`_COUNTED` is equal. False when unsure: such a pod is taken out and added again."""
    return (
        counted.uid == pod.uid
        and counted.name == pod.name
        and counted.namespace == pod.namespace
        and counted.deleting == pod.deleting
        and counted.labels == pod.labels
        and _same_spec_but_node(counted.spec, pod.spec)
        and counted.resize_status == pod.resize_status
    )


def _same_spec_but_node(spec: Raw, other: Raw) -> bool:
    if spec == other:
        return True
    if spec.get("nodeName") == other.get("nodeName"):
        return False
    return {**spec, "nodeName": None} == {**other, "nodeName": None}


def _carry_parsed(counted: PodView, pod: PodView) -> None:
    """Give ``pod`` what ``counted`` (which counts alike) has already parsed of :data:`_COUNTED`,
    so that taking ``pod`` out later parses nothing again (a cached property is kept in the
    instance's ``__dict__`` under its name)."""
    parsed, into = vars(counted), vars(pod)
    for name in _COUNTED:
        if name in parsed and name not in into:
            into[name] = parsed[name]


_HOLDINGS = ("label_groups", "nonzero_requested", "pods", "preempted", "requested", "used_ports")
"""What a NodeInfo holds of its pods: every slot but ``node``."""


class NodeInfo:
    """A node and the pods on it (assumed or bound), with their summed requests."""

    __slots__ = (
        "label_groups",
        "node",
        "nonzero_requested",
        "pods",
        "preempted",
        "requested",
        "used_ports",
    )

    def __init__(self, node: NodeView, pods: Iterable[PodView] = ()) -> None:
        self.node = node
        self.pods: dict[str, PodView] = {}
        self.requested: Resources = {}
        # Only CPU and memory have scoring defaults; the other resources score as requested.
        self.nonzero_requested: Resources = {CPU: 0, MEMORY: 0}
        self.used_ports: list[HostPort] = []
        # The pods per PodView.label_group, as [one of them, how many]: selectors are matched
        # once per group instead of once per pod (a node's pods mostly share a few label sets).
        self.label_groups: dict[LabelGroup, list[Any]] = {}
        # The priorities of its pods terminating by preemption, by uid: what DefaultPreemption
        # asks of a preemptor's nominated node, and the loop at every deletion for each
        # preemptor waiting for its victims.
        self.preempted: dict[str, int] = {}
        for pod in pods:
            self._add(pod)

    @property
    def name(self) -> str:
        return self.node.name

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"

    # Private: once a NodeInfo is in a ClusterState, only the state may change it, so that its
    # indexes follow.
    def _add(self, pod: PodView) -> None:
        self.pods[pod.uid] = pod
        add_into(self.requested, pod.requests)
        nonzero = pod.nonzero_requests
        self.nonzero_requested[CPU] += nonzero.get(CPU, 0)
        self.nonzero_requested[MEMORY] += nonzero.get(MEMORY, 0)
        self.used_ports.extend(pod.host_ports)
        group = self.label_groups.get(pod.label_group)
        if group is None:
            self.label_groups[pod.label_group] = [pod, 1]
        else:
            group[1] += 1
        self._note_preempted(pod)

    def _remove(self, uid: str) -> PodView | None:
        pod = self.pods.pop(uid, None)
        if pod is None:
            return None
        self.preempted.pop(uid, None)
        _subtract(self.requested, pod.requests)
        nonzero = pod.nonzero_requests
        self.nonzero_requested[CPU] -= nonzero.get(CPU, 0)
        self.nonzero_requested[MEMORY] -= nonzero.get(MEMORY, 0)
        for port in pod.host_ports:
            self.used_ports.remove(port)
        group = self.label_groups[pod.label_group]
        group[1] -= 1
        if not group[1]:
            del self.label_groups[pod.label_group]
        return pod

    def _replace(self, counted: PodView, pod: PodView) -> None:
        """Hold ``pod`` instead of ``counted``, which counts alike: the pods and their ports in
        the order that taking ``counted`` out and adding ``pod`` would leave; the sums stay."""
        del self.pods[pod.uid]
        self.pods[pod.uid] = pod
        if pod.host_ports:
            for port in pod.host_ports:
                self.used_ports.remove(port)
            self.used_ports.extend(pod.host_ports)
        group = self.label_groups[pod.label_group]
        if group[0] is counted:
            group[0] = pod
        # Its status may differ: the DisruptionTarget condition comes by an update of it.
        self.preempted.pop(pod.uid, None)
        self._note_preempted(pod)

    def _swap_holdings(self, other: NodeInfo) -> None:
        """Exchange what this NodeInfo and ``other`` hold of their pods (their nodes stay), each
        keeping a 0 for every resource the other's pods requested, so that the table writes
        every column the pods it held had a number in (:meth:`NodeTable._write_pods`)."""
        for name in self.requested.keys() - other.requested.keys():
            other.requested[name] = 0
        for name in other.requested.keys() - self.requested.keys():
            self.requested[name] = 0
        for name in _HOLDINGS:
            mine = getattr(self, name)
            setattr(self, name, getattr(other, name))
            setattr(other, name, mine)

    def _note_preempted(self, pod: PodView) -> None:
        # ``deleting`` first: most pods are not, and need not have their conditions read.
        if pod.deleting and pod.terminating_by_preemption:
            self.preempted[pod.uid] = pod.priority


class PodGroup:
    """Pods that every selector (or every affinity term) treats alike: one of them, to match
    against, and how many of them run on each node."""

    __slots__ = ("counts", "nodes", "pod")

    def __init__(self, pod: PodView) -> None:
        self.pod = pod
        self.nodes: dict[NodeInfo, int] = {}
        # The same counts by the nodes' positions in the snapshot's table, once asked for (see
        # Snapshot.node_counts); None until then, and after a node left (positions moved).
        self.counts: NodeCounts | None = None


class Snapshot:
    """All nodes with their pods, in a stable order, and the Services', controllers',
    Namespaces', storage objects', budgets' and pod groups' parts that decisions read, as one
    decision sees them: read only."""

    def __init__(
        self,
        nodes: Iterable[NodeInfo] = (),
        workloads: Workloads | None = None,
        namespaces: Namespaces | None = None,
        volumes: Volumes | None = None,
        disruption_budgets: DisruptionBudgets | None = None,
        *,
        pod_groups: PodGroups | None = None,
    ) -> None:
        self.workloads = Workloads() if workloads is None else workloads
        # The PodDisruptionBudgets, which preemption spares the pods of where it can.
        self.disruption_budgets = (
            DisruptionBudgets() if disruption_budgets is None else disruption_budgets
        )
        # The groups whose members are placed all or nothing (GangScheduling).
        self.pod_groups = PodGroups() if pod_groups is None else pod_groups
        self.namespaces = Namespaces() if namespaces is None else namespaces
        self.volumes = Volumes() if volumes is None else volumes
        # The pods, pending or not, of each pod group: a gang's PreEnqueue counts them.
        self.group_members = GroupMembers()
        # "namespace/claim" -> how many pods on the nodes use that PersistentVolumeClaim
        # (kube-scheduler's NodeInfo.PVCRefCounts, summed over the nodes).
        self.claim_users: dict[str, int] = {}
        self.nodes: dict[str, NodeInfo] = {}
        # The same nodes in the same order, with their numbers as arrays.
        self.table = NodeTable()
        self.label_groups: dict[LabelGroup, PodGroup] = {}
        self.affinity_groups: dict[AffinityGroup, PodGroup] = {}
        # Image name -> each node listing it, with the size that node reports.
        self.images: dict[str, dict[NodeInfo, int]] = {}
        # Label key -> value -> how many nodes carry it (the topology domains that exist).
        self.label_values: dict[str, dict[str, int]] = {}
        for info in nodes:
            self._add_node(info)

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.nodes.values())

    def get(self, name: str) -> NodeInfo | None:
        return self.nodes.get(name)

    def _add_node(self, info: NodeInfo) -> None:
        self.nodes[info.name] = info
        self.table.append(info)
        self._count_node(info, 1)
        for pod in info.pods.values():
            self._count_pod(info, pod, 1)

    def _count_node(self, info: NodeInfo, delta: int) -> None:
        for image, size in info.node.image_sizes.items():
            holders = self.images.setdefault(image, {})
            if delta > 0:
                holders[info] = size
            else:
                del holders[info]
                if not holders:
                    del self.images[image]
        for key, value in info.node.labels.items():
            values = self.label_values.setdefault(key, {})
            count = values.get(value, 0) + delta
            if count:
                values[value] = count
            else:
                del values[value]
                if not values:
                    del self.label_values[key]

    def _count_pod(self, info: NodeInfo, pod: PodView, delta: int) -> None:
        self._count(self.label_groups, pod.label_group, pod, info, delta)
        self._count_claims(pod, delta)
        if pod.has_pod_affinity:
            self._count(self.affinity_groups, pod.affinity_group, pod, info, delta)

    def _count_pods(self, info: NodeInfo, pods: Sequence[PodView], delta: int) -> None:
        """:meth:`_count_pod` for each of ``pods``, with one count per group they fall in (the
        group's first pod standing for it, as the first one counted would)."""
        labels: dict[LabelGroup, list[Any]] = {}
        affinity: dict[AffinityGroup, list[Any]] = {}
        for pod in pods:
            _tally(labels, pod.label_group, pod, delta)
            if pod.has_pod_affinity:
                _tally(affinity, pod.affinity_group, pod, delta)
            if pod.claim_names:
                self._count_claims(pod, delta)
        for index, counts in ((self.label_groups, labels), (self.affinity_groups, affinity)):
            for key, (pod, n) in counts.items():
                self._count(index, key, pod, info, n)

    def _count_claims(self, pod: PodView, delta: int) -> None:
        for claim in pod.claim_names:
            key = f"{pod.namespace}/{claim}"
            users = self.claim_users.get(key, 0) + delta
            if users:
                self.claim_users[key] = users
            else:
                del self.claim_users[key]

    def _count(
        self, groups: dict[Any, PodGroup], key: object, pod: PodView, info: NodeInfo, delta: int
    ) -> None:
        group = groups.get(key)
        if group is None:
            group = groups[key] = PodGroup(pod)
        count = group.nodes.get(info, 0) + delta
        if count:
            group.nodes[info] = count
        else:
            del group.nodes[info]
            if not group.nodes:
                del groups[key]
        if group.counts is not None:
            group.counts.set(info, self.table.position(info), count)

    def matching_groups(self, matches: Callable[[PodView], bool]) -> Iterator[PodGroup]:
        """The label groups whose pods ``matches`` accepts.

        ``matches`` must depend only on what ``PodView.label_group`` holds (a label or namespace
        selector): it is asked once per group in the whole snapshot, not once per pod.
        """
        return (group for group in self.label_groups.values() if matches(group.pod))

    def node_counts(self, group: PodGroup) -> NodeCounts:
        """How many of the group's pods run on each node that has any, by the nodes' positions
        in the table."""
        if group.counts is None:
            group.counts = NodeCounts.of(self.table, group.nodes.items())
        return group.counts

    def image_size(self, image: str) -> int:
        """The size of ``image`` as the first node in snapshot order that lists it reports it,
        as kube-scheduler's image state keeps the first size it sees; 0 when no node lists it."""
        holders = self.images.get(image)
        if not holders:
            return 0
        sizes = set(holders.values())
        if len(sizes) == 1:
            return sizes.pop()
        # Nodes disagree (rare): take the first in snapshot order.
        return next(holders[info] for info in self.nodes.values() if info in holders)


class ClusterState(Snapshot):
    """The live nodes and pods that the scheduler's cache keeps: a :class:`Snapshot` whose
    methods below change it, keeping its indexes and table equal to its NodeInfos. (Its
    ``workloads``, ``namespaces``, ``volumes``, ``disruption_budgets`` and ``pod_groups`` change
    through their own ``set`` and ``delete``.)"""

    def add_node(self, info: NodeInfo) -> None:
        """Add a node with its pods (a node of that name already here is replaced)."""
        if info.name in self.nodes:
            self.remove_node(info.name)
        self._add_node(info)

    def remove_node(self, name: str) -> NodeInfo | None:
        """Take a node and its pods out; the NodeInfo is returned, no longer indexed here."""
        info = self.nodes.pop(name, None)
        if info is None:
            return None
        self.table.remove(info)
        # The nodes after it moved up in the table: the groups' arrays are built anew if asked.
        for group in (*self.label_groups.values(), *self.affinity_groups.values()):
            group.counts = None
        self._count_node(info, -1)
        for pod in info.pods.values():
            self._count_pod(info, pod, -1)
        return info

    def replace_node(self, info: NodeInfo, node: NodeView) -> None:
        """The Node object of ``info`` changed (labels, images, taints, ...); its pods stay, and
        so does its place in the snapshot's order."""
        self._count_node(info, -1)
        info.node = node
        self.table.node_changed(info)
        self._count_node(info, 1)

    def add_pod(self, info: NodeInfo, pod: PodView) -> None:
        """Count ``pod`` on ``info`` (a node of this state); a pod with its uid is replaced: by
        taking its view's place when it counts alike (:func:`counts_alike`), else by taking the
        old one out first."""
        counted = info.pods.get(pod.uid)
        if counted is not None:
            if counts_alike(counted, pod):
                self._replace_pod(info, counted, pod)
                return
            self.remove_pod(info, pod.uid)
        info._add(pod)
        self._count_pod(info, pod, 1)
        self.table.pods_changed(info)

    def remove_pod(self, info: NodeInfo, uid: str) -> PodView | None:
        """Stop counting the pod ``uid`` on ``info``; the pod, or None if it was not there."""
        pod = info._remove(uid)
        if pod is not None:
            self._count_pod(info, pod, -1)
            self.table.pods_changed(info)
        return pod

    @contextmanager
    def set_aside(self, info: NodeInfo, uids: Collection[str]) -> Iterator[list[PodView]]:
        """Take the pods ``uids`` of ``info`` out for the ``with`` block (a preemption's
        what-if), which gets them in the node's order; at its end ``info`` holds again exactly
        what it held, its pods in their order, and every index and the table count them again.
        Within the block pods may be added to ``info`` and taken out as with :meth:`add_pod`
        and :meth:`remove_pod`; those added and still there at its end are taken out.

        What taking each pod out and adding it back would do, for less: ``info`` is given the
        holdings of a NodeInfo of the pods kept, counted afresh, while its own are set aside
        whole and given back; the indexes change once per group of pods."""
        out = [pod for uid, pod in info.pods.items() if uid in uids]
        shelf = NodeInfo(info.node, (pod for uid, pod in info.pods.items() if uid not in uids))
        info._swap_holdings(shelf)
        self._count_pods(info, out, -1)
        self.table.pods_changed(info)
        try:
            yield out
        finally:
            held, now = shelf.pods, info.pods
            self._count_pods(info, [pod for uid, pod in now.items() if uid not in held], -1)
            self._count_pods(info, [pod for uid, pod in held.items() if uid not in now], 1)
            info._swap_holdings(shelf)
            self.table.pods_changed(info)

    def _replace_pod(self, info: NodeInfo, counted: PodView, pod: PodView) -> None:
        """``pod`` in the place of ``counted``, which counts alike: the numbers and counts stay;
        a group's pod to match against (any of its pods would do) becomes ``pod`` where it was
        ``counted``, so that the view replaced is not kept alive for that."""
        _carry_parsed(counted, pod)
        info._replace(counted, pod)
        group = self.label_groups[pod.label_group]
        if group.pod is counted:
            group.pod = pod
        if pod.has_pod_affinity:
            group = self.affinity_groups[pod.affinity_group]
            if group.pod is counted:
                group.pod = pod
