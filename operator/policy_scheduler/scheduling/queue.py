"""Pending pods waiting for a decision, in kube-scheduler's three queues and its gated pods.

- **active**: ready to be decided, highest priority first, then oldest;
- **backoff**: tried and failed (bind error, or unschedulable and then moved back), waiting
  1 s, 2 s, 4 s ... up to 10 s by attempt before they are active again. As in kube-scheduler
  v1.37 (SchedulerPopFromBackoffQ, on by default), a pod moved back from unschedulable does not
  wait out its backoff when no pod is active: the one whose backoff ends first is decided at
  once. A pod whose bind failed (kube-scheduler's error backoff) always waits;
- **unschedulable**: no node fit; they wait until a cluster change that could help them (the
  loop decides which, from the filters that rejected each pod: :meth:`SchedulingQueue.move`) or
  at most five minutes. They are kept in groups of pods that any event helps alike (same
  scheduler name, same rejecting filters, same :attr:`~policy_scheduler.model.objects.PodView.
  hint_signature`), so that an event costs one question per group, not one per pod: with
  thousands of parked pods and an event per bind, per-pod questions cost more than the
  attempts they save. The groups of pods that wait for their preemption's victims are also
  kept by the node they wait on, with a log of their changes, so that a deletion asks only
  those its node may concern (:mod:`~policy_scheduler.scheduling.waiting`);
- **gated**: held back by a pre-enqueue plugin (scheduling gates, a claim not made yet); they
  cost no attempt and become active when a change of the pod, or a cluster event the plugin
  asks again on, lets them through. They are kept by the plugin that holds them, so that an
  event costs nothing for the pods of plugins it cannot help.

The queue keeps no clock of its own; callers pass ``now`` (monotonic seconds), so the behaviour is
exact in tests. A pod the loop has popped is "in flight" until it is reported back.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum

from policy_scheduler.framework.events import EventKind
from policy_scheduler.model.objects import PodView
from policy_scheduler.model.podgroups import group_key
from policy_scheduler.plugins.gang_scheduling import NAME as GANG

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
UNSCHEDULABLE_TIMEOUT = 300.0
NO_EVENTS = EventKind(0)


class Where(Enum):
    """Where a queued pod waits (or that a cycle has it: in flight)."""

    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"
    GATED = "gated"
    IN_FLIGHT = "in-flight"


@dataclass(slots=True)
class QueuedPod:
    """A pending pod and where it waits."""

    pod: PodView
    where: Where = Where.ACTIVE
    attempts: int = 0
    ready_at: float = 0.0  # backoff: when it may be active again
    parked_at: float = 0.0  # unschedulable: since when
    last_failure: str = field(default="")  # the last FailedScheduling message, not to repeat it
    # Unschedulable: the filters that rejected it, whose events may help it.
    rejected_by: frozenset[str] = frozenset()
    # Unschedulable: the node where its preemption's victims terminate, while it waits for them.
    waits_on: str = ""
    # Gated: the pre-enqueue plugin that holds it ("" for the loop's own hold, a preemption).
    gated_by: str = ""

    @property
    def alike(self) -> Hashable:
        """What makes parked pods equal to an event: the key of its group. A pod waiting for
        its victims is asked about with those of its priority waiting on the same node; a
        gang's member its pass rejected, with the members of its own pod group."""
        waiting = (self.waits_on, self.pod.priority) if self.waits_on else None
        group = group_key(self.pod) if GANG in self.rejected_by else None
        return (self.pod.scheduler_name, self.rejected_by, self.pod.hint_signature, waiting, group)


def backoff_duration(attempts: int) -> float:
    """1 s after the first attempt, doubling with each further one, at most 10 s."""
    return min(INITIAL_BACKOFF * (1 << max(attempts - 1, 0)), MAX_BACKOFF)


class SchedulingQueue:
    """The pending pods of every policy, by uid."""

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPod] = {}
        # Heaps and the parked dict may hold stale entries (a pod that moved on); each entry's
        # ``where`` is the truth, checked when an item comes out.
        self._active: list[tuple[tuple[int, str, str], int, str]] = []
        # Backing off after being moved back from unschedulable, and after an error.
        self._backoff: list[tuple[float, int, str]] = []
        self._error_backoff: list[tuple[float, int, str]] = []
        # Exactly the unschedulable uids: oldest first, and by group (QueuedPod.alike), each
        # group with its place in the order the groups formed.
        self._parked: dict[str, None] = {}
        self._groups: dict[Hashable, dict[str, None]] = {}
        self._formed: dict[Hashable, int] = {}
        # The groups by the node their pods wait on for their victims ("" for those that wait
        # on none); and the keys of the waiting groups formed, changed or gone since
        # :meth:`waiting_changes` last told them.
        self._by_waits_on: dict[str, dict[Hashable, None]] = {}
        self._waiting_changed: dict[Hashable, None] = {}
        # Exactly the gated uids, by the plugin that holds them, and the events it asks again on.
        self._gated: dict[str, dict[str, None]] = {}
        self._asks_again_on: dict[str, EventKind] = {}
        self._sequence = 0

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def get(self, uid: str) -> QueuedPod | None:
        return self._pods.get(uid)

    def counts(self) -> dict[str, int]:
        """How many pods wait in each queue (and are in flight), for metrics."""
        result = {where.value: 0 for where in Where}
        for entry in self._pods.values():
            result[entry.where.value] += 1
        return result

    def add(self, pod: PodView, now: float, moves: bool = True) -> None:
        """A pending pod appeared or changed. A change may make a parked pod fit, so it moves,
        unless ``moves`` is False (a change only of the pod's status, which cannot help it)."""
        entry = self._pods.get(pod.uid)
        if entry is None:
            entry = self._pods[pod.uid] = QueuedPod(pod)
            self._push(entry)
            return
        if entry.where is Where.UNSCHEDULABLE:
            # The changed pod may be alike other pods than before (its requests changed).
            self._ungroup(entry)
            entry.pod = pod
            self._group(entry)
            if moves:
                self._unpark(entry, now)
            return
        entry.pod = pod
        if entry.where is Where.GATED:
            self._leave_parked(entry)
            self._push(entry)

    def gate(self, pod: PodView, by: str = "", asks_again_on: EventKind = NO_EVENTS) -> None:
        """Hold ``pod`` out of the active queue (the pre-enqueue plugin ``by`` said so; "" for
        the loop's own reasons) until it is added again; the events after which ``by`` asks
        about it again are ``asks_again_on``."""
        entry = self._pods.get(pod.uid)
        if entry is None:
            entry = self._pods[pod.uid] = QueuedPod(pod)
        elif entry.where is Where.IN_FLIGHT:
            entry.pod = pod
            return  # the cycle reports back; the next change of the pod asks again
        self._leave_parked(entry)
        entry.pod = pod
        entry.where = Where.GATED
        entry.gated_by = by
        self._gated.setdefault(by, {})[pod.uid] = None
        self._asks_again_on[by] = asks_again_on

    def gated(self, kind: EventKind | None = None) -> list[QueuedPod]:
        """The gated pods whose plugin asks about them again after an event of ``kind``; all
        of them without it."""
        return [
            self._pods[uid]
            for by, uids in self._gated.items()
            if kind is None or kind & self._asks_again_on[by]
            for uid in uids
        ]

    def delete(self, uid: str) -> None:
        """The pod is gone, or bound: it leaves the queue wherever it is."""
        entry = self._pods.pop(uid, None)
        if entry is not None:
            self._leave_parked(entry)

    def pop(self, now: float) -> QueuedPod | None:
        """The next pod to decide, or None when no pod is ready now; it is then in flight. With
        no pod active, a pod backing off after a move (not after an error) is ready."""
        self._flush(now)
        while self._active:
            _, _, uid = heapq.heappop(self._active)
            entry = self._pods.get(uid)
            if entry is not None and entry.where is Where.ACTIVE:
                return self._take(entry)
        while self._backoff:
            entry = self._backing_off(heapq.heappop(self._backoff))
            if entry is not None:
                return self._take(entry)
        return None

    def take(self, uid: str) -> QueuedPod | None:
        """The pod ``uid`` out of the active, backoff or unschedulable queue, then in flight,
        whatever its turn (a group pass takes the other members of the popped pod's group);
        None when it waits in none of them."""
        entry = self._pods.get(uid)
        if entry is None or entry.where in (Where.GATED, Where.IN_FLIGHT):
            return None
        self._leave_parked(entry)
        return self._take(entry)

    def _backing_off(self, item: tuple[float, int, str]) -> QueuedPod | None:
        """The pod of a backoff heap's item, if the item is not stale (the pod moved on)."""
        ready_at, _, uid = item
        entry = self._pods.get(uid)
        if entry is not None and entry.where is Where.BACKOFF and entry.ready_at == ready_at:
            return entry
        return None

    @staticmethod
    def _take(entry: QueuedPod) -> QueuedPod:
        entry.where = Where.IN_FLIGHT
        entry.attempts += 1
        return entry

    def unschedulable(
        self,
        uid: str,
        message: str,
        now: float,
        rejected_by: frozenset[str] = frozenset(),
        waits_on: str = "",
    ) -> None:
        """The popped pod fit no node (``rejected_by`` said no): park it until something that
        could help it happens; ``waits_on`` names the node where its victims terminate."""
        entry = self._pods.get(uid)
        if entry is not None:
            self._leave_parked(entry)
            entry.where = Where.UNSCHEDULABLE
            entry.parked_at = now
            entry.last_failure = message
            entry.rejected_by = rejected_by
            entry.waits_on = waits_on
            self._parked[uid] = None
            self._group(entry)

    def retry_later(self, uid: str, now: float) -> None:
        """The popped pod's bind failed: try again after its backoff."""
        entry = self._pods.get(uid)
        if entry is not None:
            self._back_off(entry, now + backoff_duration(entry.attempts), self._error_backoff)

    def move(
        self,
        now: float,
        helps: Callable[[QueuedPod], bool] | None = None,
        waiting: Iterable[Hashable] | None = None,
    ) -> int:
        """Something happened that might let parked pods fit: move back those that ``helps``
        accepts (all without it). ``helps`` is asked about one pod of each group and must
        answer alike for the others. With ``waiting``, of the groups whose pods wait for their
        victims only those it names are asked (the caller knows ``helps`` refuses the others),
        in the same order as all would be. How many moved."""
        if waiting is None:
            keys = list(self._groups)
        else:
            asked = {key: None for key in waiting if key in self._groups}
            keys = sorted([*self._by_waits_on.get("", ()), *asked], key=self._formed.__getitem__)
        moved = 0
        for key in keys:
            uids = self._groups[key]
            if helps is None or helps(self._pods[next(iter(uids))]):
                members = list(uids)
                for uid in members:
                    self._unpark(self._pods[uid], now)
                moved += len(members)
        return moved

    def waiting_on(self, node: str) -> list[Hashable]:
        """The groups whose pods wait for their victims on ``node``."""
        return list(self._by_waits_on.get(node, ())) if node else []

    def waiting_changes(self) -> list[Hashable]:
        """The waiting groups formed, joined, left or gone since the last call."""
        changed = list(self._waiting_changed)
        self._waiting_changed.clear()
        return changed

    def head(self, key: Hashable) -> QueuedPod | None:
        """The pod of the group ``key`` that :meth:`move` asks about; None when it is gone."""
        uids = self._groups.get(key)
        return None if uids is None else self._pods[next(iter(uids))]

    def next_wakeup(self, now: float) -> float | None:
        """When a waiting pod becomes ready by itself; None when nothing waits on time."""
        self._flush(now)
        times = [heap[0][0] for heap in (self._backoff, self._error_backoff) if heap]
        oldest = next(iter(self._parked), None)
        if oldest is not None:
            times.append(self._pods[oldest].parked_at + UNSCHEDULABLE_TIMEOUT)
        return min(times, default=None)

    def entries(self, where: Where) -> Iterator[QueuedPod]:
        return (e for e in self._pods.values() if e.where is where)

    def _push(self, entry: QueuedPod) -> None:
        entry.where = Where.ACTIVE
        self._sequence += 1
        heapq.heappush(self._active, (entry.pod.scheduling_order, self._sequence, entry.pod.uid))

    def _back_off(
        self, entry: QueuedPod, ready_at: float, heap: list[tuple[float, int, str]]
    ) -> None:
        entry.where = Where.BACKOFF
        entry.ready_at = ready_at
        self._sequence += 1
        heapq.heappush(heap, (ready_at, self._sequence, entry.pod.uid))

    def _leave_parked(self, entry: QueuedPod) -> None:
        """Whatever the entry's next place, it is no longer parked nor gated (if it was)."""
        if entry.where is Where.GATED:
            held = self._gated[entry.gated_by]
            del held[entry.pod.uid]
            if not held:
                del self._gated[entry.gated_by]
            return
        if entry.where is not Where.UNSCHEDULABLE:
            return
        del self._parked[entry.pod.uid]
        self._ungroup(entry)

    def _group(self, entry: QueuedPod) -> None:
        key = entry.alike
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = {}
            self._sequence += 1
            self._formed[key] = self._sequence
            self._by_waits_on.setdefault(entry.waits_on, {})[key] = None
        group[entry.pod.uid] = None
        if entry.waits_on:
            self._waiting_changed[key] = None

    def _ungroup(self, entry: QueuedPod) -> None:
        key = entry.alike
        group = self._groups[key]
        del group[entry.pod.uid]
        if entry.waits_on:
            self._waiting_changed[key] = None
        if not group:
            del self._groups[key]
            del self._formed[key]
            same = self._by_waits_on[entry.waits_on]
            del same[key]
            if not same:
                del self._by_waits_on[entry.waits_on]

    def _unpark(self, entry: QueuedPod, now: float) -> None:
        self._leave_parked(entry)
        # A pod that failed a moment ago still serves its backoff, as in kube-scheduler.
        ready_at = entry.parked_at + backoff_duration(entry.attempts)
        if now < ready_at:
            self._back_off(entry, ready_at, self._backoff)
        else:
            self._push(entry)

    def _flush(self, now: float) -> None:
        for heap in (self._backoff, self._error_backoff):
            while heap and heap[0][0] <= now:
                entry = self._backing_off(heapq.heappop(heap))
                if entry is not None:
                    self._push(entry)
        while self._parked:
            entry = self._pods[next(iter(self._parked))]
            if entry.parked_at + UNSCHEDULABLE_TIMEOUT > now:
                break
            self._leave_parked(entry)
            self._push(entry)
