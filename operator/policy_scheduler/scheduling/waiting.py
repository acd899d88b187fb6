"""Whether an assigned pod's deletion can help a preemptor that waits for its victims.

A pod that preempted waits parked while its victims terminate on its nominated node. kube-
scheduler's NodeResourcesFit hint takes the deletion of any assigned pod, on any node, for one
that may help the pods it rejected; and with no other pod ready, the queue tries a pod moved back
at once, its backoff notwithstanding. So every waiting preemptor is tried again at every deletion
in the cluster, and each try fails the same way: no node has room, and DefaultPreemption does not
let it preempt again while a pod of lower priority is terminating by preemption on its nominated
node. Where victims take long to go (a kubelet with thousands to stop), that is a full scheduling
cycle per waiting preemptor per deletion, which takes the cores the victims' deletions need.

The deletion of a pod on node X changed X and nothing else, for the filters whose verdict on a
node reads only that node's pods (not InterPodAffinity, PodTopologySpread or VolumeRestrictions,
which count pods across a topology or the cluster: a deletion on X may change their verdict on
other nodes). A preemptor that only such filters rejected can, after it, only end its try
differently from its last if X now fits it, or if it may preempt again. :class:`Waiting` answers
for one such event that neither is so, and the pod stays parked, when:

- no filter that rejected it at its last try counts pods beyond a node
  (``Filter.pre_filter_counts_pods``);
- its last try preempted, or was refused preemption for its victims terminating, on the node
  ``waits_on`` that its view still names as nominated (kube's eligibility reads the view);
- a pod of lower priority is still terminating by preemption there (the deleted one was not the
  last);
- its policy's NodeResourcesFit still finds no room for it on X, counting the pods nominated to X
  that hold room against it, as a cycle's filters would.

Otherwise the filters' own hints decide, as for any parked pod. The outcome of every try is
unchanged; the tries that could only fail are not made.

Asking every waiting pod at every deletion would cost, with hundreds of preemptors waiting while
thousands of victims go, more than the tries it saves. All but the last condition read only the
pod, its policy and the node it waits on, whatever node X is; and the last, for a pod that waits
on another node than X, reads only X and what the pod is alike in (its NodeResourcesFit,
priority and requests). So :class:`WaitingBook` keeps, between deletions, the queue's groups of
waiting pods by whether the first conditions hold and, where they do, by that likeness; it asks
again about a group only once the queue tells it the group changed, or the cache that the node
it waits on did (its pods or itself: :meth:`~.cache.SchedulerCache.touched`). A deletion on X
then asks only about the groups for which they do not hold, those that wait on X, and those of
a likeness that X fits: each other group would be answered that it stays parked.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable

from policy_scheduler.framework.events import ClusterEvent
from policy_scheduler.framework.interface import Filter
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins import node_resources_fit
from policy_scheduler.plugins.default_preemption import victims_terminating
from policy_scheduler.plugins.dra_extended import TAKEN_ON, is_dra_extended_name
from policy_scheduler.policy.compiler import CompiledPolicy
from policy_scheduler.scheduling.cache import SchedulerCache
from policy_scheduler.scheduling.nominations import Nominations
from policy_scheduler.scheduling.queue import QueuedPod, SchedulingQueue

Alike = tuple[Filter[object], int, frozenset[tuple[str, int]]]
"""What the answer for a pod nominated elsewhere depends on: its policy's NodeResourcesFit, its
priority and its requests (the first of its ``hint_signature``)."""


class Waiting:
    """One assigned pod's deletion, asked about the parked pods that wait for their victims
    (see the module's docstring). Built per event; it reads the cache as the event left it."""

    def __init__(
        self,
        cache: SchedulerCache,
        nominated: Nominations,
        rng: random.Random,
        event: ClusterEvent,
    ) -> None:
        self._cache = cache
        self._nominated = nominated
        self._rng = rng
        self.node = None if event.node is None else cache.snapshot.get(event.node.name)
        # The pods nominated to X, once a pod asks (most deletions find none waiting).
        self._nominated_here: list[PodView] | None = None
        # Whether X fits a pod, by what that depends on, for the pods nominated elsewhere.
        self._fits: dict[Hashable, bool] = {}
        # _fit_filter's answers, by scheduler name (one policy each) and rejecting filters.
        self._fit_filters: dict[tuple[str, frozenset[str]], Filter[object] | None] = {}

    def still(self, entry: QueuedPod, policy: CompiledPolicy) -> bool:
        """Whether ``entry`` still waits for its victims after the event, so that a try now
        could only fail as its last did."""
        node = self.node
        alike = None if node is None else self.waits(entry, policy)
        if node is None or alike is None:
            return False
        if entry.waits_on == node.name:
            return not self._fit(alike[0], entry.pod, node)
        return not self.fits(alike, entry.pod)

    def waits(self, entry: QueuedPod, policy: CompiledPolicy) -> Alike | None:
        """Whether ``entry`` waits for its victims whatever node the event is on (all but the
        last condition of the module's docstring): what the answer for it then depends on (see
        :meth:`fits`); None when it does not."""
        pod = entry.pod
        if not entry.waits_on or pod.nominated_node_name != entry.waits_on:
            return None
        key = (pod.scheduler_name, entry.rejected_by)
        if key in self._fit_filters:
            fit = self._fit_filters[key]
        else:
            fit = self._fit_filters[key] = _fit_filter(policy, entry.rejected_by)
        waited = self._cache.snapshot.get(entry.waits_on)
        if fit is None or waited is None or not victims_terminating(pod, waited):
            return None
        return (fit, pod.priority, pod.hint_signature[0])

    def fits(self, alike: Alike, pod: PodView) -> bool:
        """Whether the event's node X fits ``pod``, nominated elsewhere, by ``alike`` (its
        NodeResourcesFit, priority and requests): pods alike get the same answer."""
        fits = self._fits.get(alike)
        if fits is None:
            assert self.node is not None
            fits = self._fits[alike] = self._fit(alike[0], pod, self.node)
        return fits

    def _fit(self, fit: Filter[object], pod: PodView, node: NodeInfo) -> bool:
        """Whether ``fit`` (NodeResourcesFit) passes ``pod`` on ``node``, the event's node, with
        the pods nominated there that hold room against it counted."""
        if self._nominated_here is None:
            self._nominated_here = self._nominated.on(node.name)
        cycle = Cycle(pod, self._cache.snapshot, self._rng)
        # Whether devices may serve an extended resource the node lacks is DynamicResources'
        # to say when the pod is tried: taken as so here, so that no deletion that may help is
        # missed (at worst an attempt for nothing).
        cycle.shared[TAKEN_ON] = frozenset(n for n in pod.requests if is_dra_extended_name(n))
        with self._cache.nominated(self._cache.holding_room(pod, self._nominated_here)):
            return not fit.filter(fit.pre_filter(cycle), pod, node)


class WaitingBook:
    """The groups of parked pods that wait for their victims, kept between deletions by what
    their answer depends on, so that a deletion asks only those whose answer may differ from
    staying parked (see the module's docstring). One per loop; it follows the queue's waiting
    groups and the cache's nodes through their logs (:meth:`SchedulingQueue.waiting_changes`,
    :meth:`SchedulerCache.touched`)."""

    def __init__(self) -> None:
        # The groups that wait whatever node a deletion is on, by what the answer for them
        # then depends on (Waiting.waits), each with the pod it was asked about.
        self._alike: dict[Alike, dict[Hashable, PodView]] = {}
        self._alike_of: dict[Hashable, Alike] = {}
        # The other waiting groups: asked at every deletion.
        self._always: dict[Hashable, None] = {}

    def asked(
        self,
        waiting: Waiting,
        queue: SchedulingQueue,
        touched: Iterable[str],
        policy_of: Callable[[str], CompiledPolicy | None],
    ) -> list[Hashable] | None:
        """The waiting groups that ``waiting``'s deletion is to ask about (``touched``: the
        nodes the cache says changed since the last deletion); None: all of them. Those left
        out would stay parked: they wait on another node, whose state has not changed since
        they were last asked, and the deletion's node does not fit them."""
        changed = queue.waiting_changes()
        for name in touched:
            changed.extend(queue.waiting_on(name))
        for key in changed:
            self._forget(key)
            head = queue.head(key)
            if head is None:
                continue
            policy = policy_of(head.pod.scheduler_name)
            alike = None if policy is None else waiting.waits(head, policy)
            if alike is None:
                self._always[key] = None
            else:
                self._alike.setdefault(alike, {})[key] = head.pod
                self._alike_of[key] = alike
        node = waiting.node
        if node is None:
            return None
        here = queue.waiting_on(node.name)
        asked = [*self._always, *here]
        for alike, groups in self._alike.items():
            # Asked of a pod nominated elsewhere, as Waiting.still asks it.
            elsewhere = next(
                (pod for pod in groups.values() if pod.nominated_node_name != node.name), None
            )
            if elsewhere is not None and waiting.fits(alike, elsewhere):
                asked.extend(groups)
        return asked

    def _forget(self, key: Hashable) -> None:
        self._always.pop(key, None)
        alike = self._alike_of.pop(key, None)
        if alike is not None:
            groups = self._alike[alike]
            del groups[key]
            if not groups:
                del self._alike[alike]


def _fit_filter(policy: CompiledPolicy, rejected_by: frozenset[str]) -> Filter[object] | None:
    """The policy's NodeResourcesFit, unless it has none or a filter of ``rejected_by`` is not
    the policy's or counts pods beyond a node: then a deletion may help on other nodes."""
    for name in rejected_by:
        rejecting = policy.pipeline.filter_named(name)
        if rejecting is None or rejecting.pre_filter_counts_pods:
            return None
    return policy.pipeline.filter_named(node_resources_fit.NAME)
