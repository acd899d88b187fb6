"""The contract between the pipeline and its plugins, after kube-scheduler's framework.

A scheduling cycle runs each filter's ``pre_filter`` once per pod, then ``filter`` per node; then
each scorer's ``pre_score`` once over the feasible nodes, ``score`` per node and ``normalize`` over
all of them. Whatever ``pre_*`` returns is handed back to the per-node calls, so the per-pod work
(parsing the pod's affinity, counting pods per topology domain) happens once per cycle.

The pipeline asks for nodes in blocks (:class:`~policy_scheduler.model.nodetable.NodeBlock`):
``filter_nodes`` and ``score_nodes`` answer for a whole block, by default with ``filter`` and
``score`` per node. A plugin overrides them in one of two ways, so that each formula is written
once: with array operations over the block, its per-node method then asking the block method about
one node; or by asking its per-node method only about the nodes whose answer is not known without
it (:func:`filter_where`, :func:`filter_alike`, :func:`score_alike`). Either way a block answer
must equal the per-node answers.

A ``pre_filter`` or ``pre_score`` may return :data:`SKIP`, as kube-scheduler's PreFilter and
PreScore return a Skip status: the plugin has nothing to say about this pod, so its ``filter``
(every node passes it) or its ``score`` and ``normalize`` are not run in this cycle. What a
filter's pre-filter state says of the cluster as a whole (:meth:`Filter.pre_filter_result`,
kube-scheduler's PreFilterResult and a PreFilter's rejection) is read before any node is
filtered: only the nodes it names are, or none when it rejects the pod. A skipped
scorer adds nothing to a node's total and shows as 0 in the per-plugin breakdown, which is what
its scores would have been: plugins return SKIP only where kube-scheduler does, and there every
node would score the same 0.

Plugins read the snapshot and never change it. A filter says why a node does not fit with one or
more reason strings, the texts kube-scheduler uses, which the pipeline counts into messages such as
"0/5 nodes are available: 3 Insufficient cpu.".

A filter also says which cluster events can change its verdict (:attr:`Filter.wakes_on`, with an
optional :meth:`Filter.queueing_hint`), kube-scheduler's EventsToRegister and queueing hints: a
pod parked as unschedulable is tried again only after an event that could help a filter that
rejected it.

The scheduling loop's other extension points, after kube-scheduler's framework, are mixins that
a plugin adds only where it has something to do: :class:`PreEnqueue` (may the pod enter the
active queue), :class:`PostFilter` (when no node fits), :class:`Reserve` (claim what the chosen
node gives the pod, or release it), :class:`Permit` (a last veto before binding),
:class:`PreBind` (API writes the bind depends on) and :class:`PostBind`. Their ``state`` is the
plugin's own ``pre_filter`` result for the cycle, kept in the :class:`CycleState`.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Generic, Literal, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from policy_scheduler.framework.args import Args
from policy_scheduler.framework.events import ALL_EVENTS, ClusterEvent, EventKind
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.nodetable import Indices, NodeBlock

# Defined in the model, which names the objects it writes (a pod group's status); re-exported,
# as the plugins and the loop name it here.
from policy_scheduler.model.objects import ObjectRef as ObjectRef  # noqa: PLC0414
from policy_scheduler.model.objects import PodView

MAX_NODE_SCORE = 100
"""Every scorer's score, after normalization, lies in 0..MAX_NODE_SCORE."""


FITS: tuple[str, ...] = ()
"""What ``filter`` returns for a node that passes."""


class _Skip(enum.Enum):
    SKIP = "skip"


SKIP: Final = _Skip.SKIP
"""What ``pre_filter``/``pre_score`` return to skip the plugin's per-node work for this pod."""


Skip = Literal[_Skip.SKIP]


State = TypeVar("State")


Scores = npt.NDArray[np.int64]
"""One score per node of a block, in the block's order."""


Rejections = dict[tuple[str, ...], Indices]
"""The nodes of a block that a filter rejects, grouped by their reasons: each group's indices into
the block, ascending. Nodes in no group pass."""


class StatusError(Exception):
    """A plugin's Error status, as kube-scheduler's plugins return one (not a verdict on a node:
    something is broken, a device selector that does not compile, say): the pod's attempt ends
    with this message, as kube's, and the pod is tried again after its backoff."""


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """What a filter knows of the whole cluster once it has read the pod, before any node is
    filtered (kube-scheduler's PreFilterResult, and a PreFilter's UnschedulableAndUnresolvable
    status): only the nodes of ``node_names`` can fit it (None: any node can), or, when
    ``rejection`` says why, no node can."""

    node_names: frozenset[str] | None = None
    rejection: str = ""


ANY_NODE: Final = PreFilterResult()
"""A pre-filter that leaves every node to the filters."""


class Filter(ABC, Generic[State]):
    """A predicate: every filter of a policy must pass for a node to be feasible."""

    name: str

    draws_random: ClassVar[bool] = False
    """Whether ``filter`` draws from the cycle's random source, so that its verdicts depend on
    which nodes it is asked about, in which order. The pipeline then asks it only about the
    nodes that the node-by-node walk visits; with more than one such filter, node by node."""

    wakes_on: ClassVar[EventKind] = ALL_EVENTS
    """The events that can turn a node this filter rejected into one it accepts: a pod it
    rejected waits for one of them (or for the queue's timeout) before it is tried again."""

    wakes_on_if_watched: ClassVar[EventKind] = EventKind(0)
    """Events that may help too, but only in a policy whose other plugins have their kind
    watched: this filter asks for no watch of it (NodeResourcesFit and the DeviceClasses that
    only a policy with DynamicResources maps extended resources to)."""

    unresolvable_reasons: ClassVar[frozenset[str]] = frozenset()
    """The reasons of this filter that no preemption can help (kube-scheduler's
    UnschedulableAndUnresolvable): a node rejected for one of them is no candidate for
    evicting pods. The default, none: every rejection may be lifted by evicting pods."""

    resolvable_reasons: ClassVar[frozenset[str] | None] = None
    """For a filter most of whose reasons no preemption can help: the ones it can, every other
    reason being unresolvable (the empty set: none can). None: :attr:`unresolvable_reasons`
    decides."""

    pre_filter_counts_pods: ClassVar[bool] = False
    """Whether :meth:`pre_filter`'s state counts the pods of the snapshot (beyond the pod being
    scheduled and the cluster's other objects), and :meth:`add_pod` and :meth:`remove_pod`
    update it: the plugins kube-scheduler gives PreFilterExtensions, InterPodAffinity,
    PodTopologySpread and VolumeRestrictions. Every other state stays valid while a post-filter
    takes pods out of the snapshot and puts them back (:class:`WhatIf`)."""

    def add_pod(self, state: State, cycle: Cycle, pod: PodView, node: NodeInfo) -> State:
        """kube-scheduler's PreFilterExtensions.AddPod: ``state`` (of ``cycle``'s pod) as
        ``pre_filter`` would have made it had ``pod`` also been on ``node``, which a post-filter
        put back there (:class:`WhatIf`). A new state: ``state`` itself must not change, nor the
        verdicts it gives. Only asked of a filter that :attr:`pre_filter_counts_pods` and did
        not skip the pod: a pre-filter that skips the pod must skip it with fewer pods too, as
        kube-scheduler calls no PreFilterExtensions of a skipped plugin. The default: the
        state, which counts no pods."""
        return state

    def remove_pod(self, state: State, cycle: Cycle, pod: PodView, node: NodeInfo) -> State:
        """kube-scheduler's PreFilterExtensions.RemovePod: as :meth:`add_pod`, for ``pod`` taken
        out of ``node``."""
        return state

    def rejects_with(self, state: State, pod: PodView, node: NodeInfo, added: PodView) -> bool:
        """Whether ``filter`` would surely reject ``pod`` on ``node`` were ``added`` counted
        there too, told without counting it (a preemption's reprieve asks before it puts a
        victim back, which costs more than the question). False when unsure, as the default
        always is; True only where ``filter`` would then say so."""
        return False

    def unresolvable(
        self, pod: PodView, nodes: NodeBlock, reasons: Sequence[str]
    ) -> npt.NDArray[np.bool_]:
        """Which of ``nodes``, each rejected for ``reasons``, were rejected
        UnschedulableAndUnresolvable, as kube-scheduler's filter would say. By default all or
        none, by the reasons alone: when any of them is not one of :attr:`resolvable_reasons`,
        or, without those, is one of :attr:`unresolvable_reasons`."""
        if self.resolvable_reasons is not None:
            verdict = not self.resolvable_reasons.issuperset(reasons)
        else:
            verdict = not self.unresolvable_reasons.isdisjoint(reasons)
        return np.full(len(nodes), verdict)

    def queueing_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """Whether ``event``, one of ``wakes_on``, may let ``pod`` pass now (kube-scheduler's
        QueueingHintFn); the default says yes. A wrong "no" leaves a pod waiting up to the
        queue's timeout, so a hint answers no only where it is sure. It may read only what
        :attr:`PodView.hint_signature` holds of the pod: the queue asks once for all the parked
        pods that are alike."""
        return True

    def pre_filter(self, cycle: Cycle) -> State | Skip:
        """Per-pod preparation; its result is passed to every ``filter`` call of this cycle, or
        SKIP when every node passes."""
        return None  # type: ignore[return-value]

    def pre_filter_result(self, state: State) -> PreFilterResult:
        """What ``pre_filter``'s state says of the cluster as a whole; the default, nothing."""
        return ANY_NODE

    @abstractmethod
    def filter(self, state: State, pod: PodView, node: NodeInfo) -> Sequence[str]:
        """``FITS`` when the pod may run on ``node``, otherwise the reasons it may not."""

    def filter_nodes(self, state: State, pod: PodView, nodes: NodeBlock) -> Rejections:
        """The nodes of the block that ``filter`` rejects, grouped by their reasons."""
        return filter_each(self, state, pod, nodes)

    filter_builds_block: ClassVar[bool] = False
    """Whether ``filter`` asks ``filter_nodes`` about a block of the node that it builds
    (:meth:`NodeBlock.of`, a table of its own): :meth:`filter_one` then asks ``filter_nodes``
    about the snapshot's block, already built."""

    def filter_one(self, state: State, pod: PodView, node: NodeBlock) -> Sequence[str]:
        """``filter`` on the one node of the block ``node`` of a snapshot, as cheaply as the
        plugin can answer for one node (a post-filter asks about one node at a time): by
        ``filter``, or by ``filter_nodes`` when :attr:`filter_builds_block`."""
        if self.filter_builds_block:
            return reasons_of_one(self.filter_nodes(state, pod, node))
        return self.filter(state, pod, node[0])


class Explains(ABC, Generic[State]):
    """A filter that says more than its reasons, for ``explain``, ``simulate`` and the
    policy's decisions: in detail why it rejected a node, and what it chose on a node
    (DynamicResources: the allocator's reason, and the devices allocated per claim). Asked
    about the nodes it filtered in the cycle, with the state it filtered them with."""

    @abstractmethod
    def details(self, state: State) -> Mapping[str, str]:
        """Why, in detail, the filter rejected each node it has more to say about, by node
        name."""

    @abstractmethod
    def chosen(self, state: State, node: str) -> Mapping[str, tuple[str, ...]]:
        """What the filter chose for the pod on ``node``, by object (DynamicResources: each
        claim's devices); empty when nothing."""


class Scorer(ABC, Generic[State]):
    """A priority: scores each feasible node 0..100 for the pod."""

    name: str
    chooses_on_node: bool = False
    """Whether scoring a node also chooses what the pod gets there (beyond kube-scheduler: the
    devices DynamicResources reserves), so that the only feasible node must be scored too."""

    def pre_score(self, cycle: Cycle, nodes: NodeBlock) -> State | Skip:
        """Per-pod preparation over the feasible ``nodes`` (a block of the cycle's snapshot);
        given to ``score`` and ``normalize``, or SKIP when the plugin does not score this
        pod."""
        return None  # type: ignore[return-value]

    @abstractmethod
    def score(self, state: State, pod: PodView, node: NodeInfo) -> int:
        """The node's raw score; scorers without ``normalize`` return 0..MAX_NODE_SCORE."""

    def score_nodes(self, state: State, pod: PodView, nodes: NodeBlock) -> Scores:
        """The raw score of each node of the block."""
        return np.fromiter(
            (self.score(state, pod, node) for node in nodes), np.int64, count=len(nodes)
        )

    def normalize(self, state: State, scores: Scores) -> None:
        """Rescale ``scores`` (one per feasible node, in order) to 0..MAX_NODE_SCORE in place."""


class BadInput(str):
    """Why a PreEnqueue plugin holds a pod, when it is a broken object the pod's owner must fix
    (a pod group whose fields are invalid): the loop tells it on the pod (a FailedScheduling
    event and its PodScheduled condition), once, where kube-scheduler's PreEnqueue would hold
    the pod without a word."""

    __slots__ = ()


class PreEnqueue(ABC):
    """Decides whether a pending pod may enter the active queue at all (kube-scheduler's
    PreEnqueue): a pod held back costs no scheduling attempt, and is asked about again each time
    it changes, and after each cluster event of :attr:`asks_again_on` that
    :meth:`pre_enqueue_hint` does not rule out (kube's EventsToRegister of a PreEnqueue plugin,
    whose gated pods its queueing hints move)."""

    name: str

    asks_again_on: ClassVar[EventKind] = EventKind(0)
    """The cluster events after which a pod this plugin holds may pass; none by default: only a
    change of the pod itself can let it through."""

    @abstractmethod
    def pre_enqueue(self, pod: PodView, cluster: Snapshot) -> str | None:
        """None when ``pod`` may be scheduled; otherwise why it waits. ``cluster`` is the
        cluster as the scheduler's cache has it now."""

    def pre_enqueue_hint(self, pod: PodView, event: ClusterEvent) -> bool:
        """Whether ``event``, one of :attr:`asks_again_on`, may let the held ``pod`` pass; the
        default says yes."""
        return True


@dataclass(frozen=True, slots=True)
class Preemption:
    """Room a post-filter found for a pod no node fits, by evicting pods of lower priority
    (kube-scheduler's preemption candidate): the node the pod is nominated to, the pods to
    evict there, most important first, how many of them a PodDisruptionBudget protects, and why
    this node and these pods, for people (``status.decisions``, events, ``explain``)."""

    node: str
    victims: tuple[PodView, ...]
    pdb_violations: int = 0
    why: str = ""


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """What a post-filter has to say about a pod no node fits: its words for the
    FailedScheduling message (when it made room, the only words told), the room it found, if
    any, and whether it ends the post-filters (``final``: kube-scheduler's Error or
    UnschedulableAndUnresolvable status, after which no post-filter runs and only these words
    are told). The words of the post-filters that ran are joined with ", ", as kube-scheduler
    joins their reasons. ``waits_on`` names the node whose pods, still terminating, are why the
    pod may not preempt now (its nominated node): the loop then knows what the pod waits for.
    ``clears_nomination``: no room can be made for the pod, so a node it was nominated to holds
    no room for it any more (kube's PostFilterResult nominating no node). ``writes`` are merge
    patches of API objects that the post-filter asks for (DynamicResources deallocating a
    claim), made in the background through the :class:`ObjectWriter` (none in DryRun), then
    ``deletes`` (DynamicResources deleting the claim an earlier attempt made for a pod's extended
    resources), in that order."""

    message: str = ""
    preemption: Preemption | None = None
    final: bool = False
    waits_on: str = ""
    clears_nomination: bool = False
    writes: tuple[tuple[ObjectRef, Mapping[str, Any]], ...] = ()
    deletes: tuple[ObjectRef, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeStatuses:
    """What the filters said of a pod no node fits, for the post-filters (kube-scheduler's
    NodeToStatus): ``reasons`` counts why the nodes did not fit; ``unresolvable`` names the nodes
    rejected for a reason no preemption can help (UnschedulableAndUnresolvable: every node when
    a pre-filter rejected the pod, whose reason is ``pre_filter_rejection``), every other node
    was rejected for a reason that evicting pods may lift.

    ``what_if`` makes a :class:`WhatIf` for the cycle's pod: the policy's filters on one node of
    the snapshot as it is then, the pre-filters run once (a post-filter asks "and if these pods
    were gone?"; see :meth:`start_what_if`), the pods nominated to a node counted as the cycle's
    filters count them (:class:`NominatedPods`). ``pre_filtered`` names the filters whose pre-filter
    kube-scheduler would have run: those up to the one that rejected the pod, in policy order
    (None: all of them)."""

    reasons: Mapping[str, int]
    total_nodes: int
    unresolvable: frozenset[str]
    what_if: Callable[[Cycle], WhatIf]
    pre_filter_rejection: str = ""
    pre_filtered: frozenset[str] | None = None

    def resolvable(self, node: str) -> bool:
        """Whether evicting pods might make ``node`` fit (kube's Unschedulable status)."""
        return not self.pre_filter_rejection and node not in self.unresolvable

    def start_what_if(self, cycle: Cycle) -> WhatIf:
        """A :class:`WhatIf` for ``cycle``'s pod, to be made before any pod is taken out of the
        snapshot."""
        return self.what_if(cycle)


class WhatIf(ABC):
    """A post-filter's "and if these pods were gone?" about one cycle's pod, node by node
    (kube-scheduler's preemption dry run, which keeps the cycle's PreFilter state and updates it
    with the filters' PreFilterExtensions). The post-filter takes pods out of the snapshot and
    puts them back itself, telling :meth:`removed` and :meth:`added` of each pod right after the
    change that took it out or put it back (of pods taken out or put back together, after the
    lot), and puts back every pod it took out; :meth:`verdict` is the filters' verdict on a node of
    the snapshot as it is then. Nothing else may change the snapshot meanwhile."""

    @abstractmethod
    def removed(self, node: NodeInfo, pod: PodView) -> None:
        """``pod`` was taken out of ``node``."""

    @abstractmethod
    def added(self, node: NodeInfo, pod: PodView) -> None:
        """``pod`` was put back on ``node``."""

    @abstractmethod
    def verdict(self, node: NodeInfo) -> Sequence[str]:
        """The first failing filter's reasons on ``node``, FITS when the pod fits."""

    def rejects_with(self, node: NodeInfo, pod: PodView) -> bool:
        """Whether the verdict on ``node`` would surely not be FITS were ``pod`` put back
        there, told without putting it back (:meth:`Filter.rejects_with`). False when unsure,
        as the default always is."""
        return False


class PostFilter(ABC, Generic[State]):
    """Runs when no node fits the pod (kube-scheduler's PostFilter, where preemption lives)."""

    name: str

    @abstractmethod
    def post_filter(self, state: State, cycle: Cycle, statuses: NodeStatuses) -> PostFilterResult:
        """Try to make room for the pod; ``statuses`` says why each node did not fit."""


class Reserve(ABC, Generic[State]):
    """Claims what the chosen node gives the pod before the bind (volumes, devices), so that
    the next cycles, which do not wait for the bind, cannot give it away again."""

    name: str

    @abstractmethod
    def reserve(self, state: State, pod: PodView, node: str) -> str | None:
        """None when reserved; otherwise why not (the pod is then tried again later)."""

    @abstractmethod
    def unreserve(self, state: State, pod: PodView, node: str) -> None:
        """Release what ``reserve`` claimed: a later step failed. Must not fail itself."""

    async def unreserve_writes(
        self, state: State, pod: PodView, node: str, objects: ObjectWriter
    ) -> None:
        """API writes that undo what the binding cycle wrote (kube's Unreserve may write:
        DynamicResources takes the pod out of its claims' ``reservedFor``), run in the
        background after :meth:`unreserve`; an error is logged. The default writes nothing."""


class Permit(ABC, Generic[State]):
    """A last veto on the chosen node before the binding cycle starts."""

    name: str

    @abstractmethod
    def permit(self, state: State, pod: PodView, node: str) -> str | None:
        """None to let the pod bind; otherwise why not."""


NORMAL = "Normal"
WARNING = "Warning"
"""The types of an event (:meth:`ObjectWriter.event`)."""


class ObjectWriter(Protocol):
    """The port through which pre-binds write to the API server (and what they wait for), and
    tell of it in an event. A
    refused request raises an exception whose ``status`` is the HTTP status (409: the object
    changed since the ``resourceVersion`` the write gave)."""

    async def patch(self, ref: ObjectRef, patch: Mapping[str, Any]) -> Mapping[str, Any]:
        """Merge-patch the object; the object as the server returns it."""
        ...

    async def get(self, ref: ObjectRef) -> Mapping[str, Any]:
        """The object as the server has it now (to write it again after a conflict)."""
        ...

    async def create(self, ref: ObjectRef, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """Create ``body`` in the collection ``ref`` names (its ``name`` empty: the body may
        have a ``generateName``); the object as the server returns it."""
        ...

    async def delete(self, ref: ObjectRef) -> None:
        """Delete the object; one already gone is no error."""
        ...

    def event(self, pod: PodView, type_: str, reason: str, message: str, action: str) -> None:
        """Post an event about ``pod`` in the background, as the loop's own events are (kube's
        plugins record theirs through the framework handle's recorder)."""
        ...


class PreBind(ABC, Generic[State]):
    """API writes the bind depends on (a volume's claim, say), made in the binding cycle."""

    name: str

    @abstractmethod
    def pre_flight(self, state: State, pod: PodView, node: str) -> bool:
        """Whether :meth:`pre_bind` has work to do for the pod on ``node`` (kube-scheduler's
        PreBindPreFlight answering Success rather than Skip): the loop then writes the pod's
        ``nominatedNodeName`` first, so that others see where the pod is going while it waits."""

    @abstractmethod
    async def pre_bind(
        self, state: State, pod: PodView, node: str, objects: ObjectWriter
    ) -> str | None:
        """None when the pod may be bound; otherwise why not (the cycle is then undone)."""


class PostBind(ABC, Generic[State]):
    """Told after a successful bind (kube-scheduler's PostBind); informational."""

    name: str

    @abstractmethod
    def post_bind(self, state: State, pod: PodView, node: str) -> None:
        """The pod is bound to ``node``."""


class Reads:
    """A plugin that reads objects of kinds other than nodes and pods beyond those the events its
    filter wakes on are about (a Service's selector, a Namespace's labels, a
    PodDisruptionBudget): the scheduler watches a kind only while a served policy has a plugin
    that reads it or wakes on its events, as kube-scheduler starts an informer for each kind its
    enabled plugins take a lister of or register events for."""

    reads: ClassVar[frozenset[str]]
    """The kinds read, as :mod:`~policy_scheduler.scheduling.kinds` names them."""


def filter_each(
    plugin: Filter[State], state: State, pod: PodView, nodes: Sequence[NodeInfo]
) -> Rejections:
    """:meth:`Filter.filter_nodes` by ``filter`` per node; ``nodes`` may be any part of a block
    (the indices are into it), e.g. the only nodes that could fail."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, node in enumerate(nodes):
        reasons = plugin.filter(state, pod, node)
        if reasons:
            groups.setdefault(tuple(reasons), []).append(i)
    return {reasons: np.array(indices, np.intp) for reasons, indices in groups.items()}


def reasons_of_one(rejections: Rejections) -> tuple[str, ...]:
    """A one-node block's rejections as ``filter`` returns them."""
    return next(iter(rejections), FITS)


FilterFactory = Callable[[Args, str], Filter[Any]]


ScorerFactory = Callable[[Args, str], Scorer[Any]]
"""Factories take the plugin's ``args`` and their path in the policy (for errors); they raise
:class:`ArgsError` listing every problem with the args."""
