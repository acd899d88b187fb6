"""Prometheus metrics: kube-scheduler's names where we measure the same thing, ours otherwise.

Each :class:`Metrics` keeps its own :class:`~prometheus_client.CollectorRegistry` (never the
process-wide default one), so tests can make several and only what is registered here is served.
:mod:`~policy_scheduler.serving` serves it (``run --metrics URL``).

kube-scheduler v1.37's metrics, with their names, labels, buckets and meaning (``profile`` is the
SchedulingPolicy that decided, our counterpart of a kube-scheduler profile):

- ``scheduler_schedule_attempts_total{result, profile}`` counter: attempts to schedule a pod.
  ``scheduled`` is counted when the bind succeeded, ``unschedulable`` when no node fit, ``error``
  when a plugin raised or the bind did not go through (rejected, the pod bound by someone else or
  deleted meanwhile: kube-scheduler counts a failed binding cycle as an error too). A DryRun
  policy binds nothing, so its decisions that found a node are not ``scheduled`` attempts; they
  are counted by ``policy_scheduler_decisions_recorded_total{mode="DryRun"}``. Pods waiting for a
  policy that does not compile make no attempt, as pods of an unknown profile in kube-scheduler.
- ``scheduler_scheduling_attempt_duration_seconds{result, profile}`` histogram: from the start
  of an attempt to its result above, the bind included for ``scheduled``.
- ``scheduler_scheduling_algorithm_duration_seconds`` histogram: the policy's filter and score
  pipeline alone, for every decision (DryRun ones too).
- ``scheduler_pod_scheduling_attempts`` histogram: attempts a pod took, observed when it is bound.
- ``scheduler_podgroup_schedule_attempts_total{result, profile}`` counter: a gang's passes
  (GangScheduling), ``scheduled`` (its members placed, on their way to their binds),
  ``unschedulable``, or ``waiting_on_preemption`` (its preemption evicts for it). A pass is not
  counted in ``scheduler_schedule_attempts_total``' ``scheduled`` until each member is bound.
- ``scheduler_podgroup_scheduling_attempt_duration_seconds{result, profile}`` histogram: a pass,
  from the pop of its first member to its result; ``scheduler_podgroup_scheduling_algorithm_
  duration_seconds`` histogram: its members' decisions.
- ``scheduler_pending_pods{queue}`` gauge: pods waiting in the ``active``, ``backoff``,
  ``unschedulable`` and ``gated`` queues (``gated``: held by a pre-enqueue plugin, scheduling
  gates among them, or a preemptor while its victims are evicted), and v1.37's pod-group
  queues ``incomplete`` and ``pending``, always empty here (a gang's members wait in the
  others).
  Popped pods are not pending, as in kube-scheduler; those being bound are
  ``policy_scheduler_binds_in_flight``.
- ``scheduler_cache_size{type}`` gauge: ``nodes`` and ``pods`` (assumed pods included) in the
  cache. kube-scheduler's third type, ``assumed_pods``, is not exported.
- ``leader_election_master_status{name}`` gauge: 1 while this process holds the Lease ``name``,
  0 while it stands by; absent without leader election.
- ``process_*``: the process's CPU, memory, file descriptors and start time.

Not exported:

- ``scheduler_pod_scheduling_sli_duration_seconds``: it needs the time of a pod's first
  attempt, which the queue does not keep;
- ``scheduler_framework_extension_point_duration_seconds``,
  ``scheduler_plugin_execution_duration_seconds``: the pipeline is timed as a whole;
- ``scheduler_unschedulable_pods{plugin}``: failures are counted by message, not by plugin;
- preemption metrics (``scheduler_preemption_attempts_total``, ``scheduler_preemption_victims``):
  not counted; each preemption is told by its events and the policy's status;
- ``scheduler_queue_incoming_pods_total``, ``scheduler_goroutines``.

Ours:

- ``policy_scheduler_binds_in_flight`` gauge: binding cycles started and not finished (in
  PreBind, waiting for one of the concurrent bind slots, or calling the API server).
- ``policy_scheduler_bind_duration_seconds{result}`` histogram: one ``pods/binding`` call, by
  outcome: ``bound``, ``taken`` (409: already bound), ``gone`` (404: deleted), ``failed``.
- ``policy_scheduler_status_writes_total{result}`` counter: policy status PATCHes, ``success``,
  ``not_found`` (the policy was deleted) or ``error``.
- ``policy_scheduler_decisions_recorded_total{policy, mode, result}`` counter: decisions the
  policy's status took in (its counts, ``lastDecision`` and, up to ``spec.history``,
  ``decisions``); ``mode`` is ``Enforce`` or ``DryRun``, ``result`` is ``scheduled`` (a node was
  chosen; bound, in Enforce) or ``unschedulable`` (recorded once per distinct message).
- ``policy_scheduler_policy_valid{policy}`` gauge: 1 when the policy compiles, else 0.
- ``policy_scheduler_watch_synced{kind}`` gauge: 1 while the watch of ``kind`` (``pods``,
  ``nodes``, ``policies``, ...) is current, 0 from its start or a break until it has
  listed again (no pod is decided meanwhile; a 403 after RBAC drift keeps it at 0).
- ``policy_scheduler_watch_sync_age_seconds{kind}`` gauge: seconds since that watch last showed
  itself current (a listing, an event, or the bookmark the API server sends every minute): above
  a minute or two, the watch is stuck or failing. Absent before its first listing.
- ``policy_scheduler_api_refusals_total{verb, resource, code}`` counter: requests the API server
  refused, by RBAC verb and resource (``create events``, ``patch pods/status``) and status
  (``403``: no permission, ``401``: credentials not accepted), and requests sent without a
  credential because none could be had (``code="credentials"``, verb and resource empty: an
  exec plugin or an OIDC refresh failed). The first of each kind is logged at once.

Gauges of what the scheduler holds are read when scraped, not updated on every event: the
scheduling loop pays nothing for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from policy_scheduler.scheduling.ports import SchedulerState

WatchState = Mapping[str, tuple[bool, float | None]]
"""Per watched kind: whether its watch is current, and seconds since it last was (None: never)."""

PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated", "incomplete", "pending")
"""kube-scheduler v1.37's queues: the last two hold members of pod groups (the pods waiting for
their PodGroup to be seen, and those waiting for the rest of their group); this scheduler has
no pod groups, so they stay empty, as kube-scheduler's do on a cluster without them."""


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Histogram bucket bounds as client_golang's ``ExponentialBuckets``: ``count`` bounds, the
    first ``start``, each next ``factor`` times the one before."""
    if start <= 0 or factor <= 1 or count < 1:
        raise ValueError("exponential buckets need start > 0, factor > 1 and count >= 1")
    return tuple(start * factor**i for i in range(count))


# kube-scheduler's buckets: 1 ms up to about 16 s, for attempts and bind calls alike.
LATENCY_BUCKETS = exponential_buckets(0.001, 2, 15)


class _StateCollector(Collector):
    def __init__(self, read: Callable[[], SchedulerState]) -> None:
        self._read = read

    def collect(self) -> Iterator[Metric]:
        state = self._read()
        pending = GaugeMetricFamily(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type: active, backoff, unschedulable, gated, "
            "incomplete, pending.",
            labels=["queue"],
        )
        for queue in PENDING_QUEUES:
            pending.add_metric([queue], state.pending_pods.get(queue, 0))
        yield pending
        cache = GaugeMetricFamily(
            "scheduler_cache_size",
            "Number of nodes and pods (assumed pods included) in the scheduler cache.",
            labels=["type"],
        )
        cache.add_metric(["nodes"], state.nodes)
        cache.add_metric(["pods"], state.pods)
        yield cache
        yield GaugeMetricFamily(
            "policy_scheduler_binds_in_flight",
            "Binds started and not finished (waiting for a bind slot or calling the API server).",
            value=state.binds_in_flight,
        )
        valid = GaugeMetricFamily(
            "policy_scheduler_policy_valid",
            "1 when the SchedulingPolicy compiles, else 0.",
            labels=["policy"],
        )
        for policy, ok in sorted(state.policies_valid.items()):
            valid.add_metric([policy], 1 if ok else 0)
        yield valid


class _WatchCollector(Collector):
    def __init__(self, read: Callable[[], WatchState]) -> None:
        self._read = read

    def collect(self) -> Iterator[Metric]:
        watches = self._read()
        synced = GaugeMetricFamily(
            "policy_scheduler_watch_synced",
            "1 while the watch of the kind is current (listed, not broken off), else 0.",
            labels=["kind"],
        )
        age = GaugeMetricFamily(
            "policy_scheduler_watch_sync_age_seconds",
            "Seconds since the watch of the kind last showed itself current (a listing, an "
            "event or a bookmark).",
            labels=["kind"],
        )
        for kind, (current, seconds) in sorted(watches.items()):
            synced.add_metric([kind], 1 if current else 0)
            if seconds is not None:
                age.add_metric([kind], seconds)
        yield synced
        yield age


class Metrics:
    """One scheduler's metrics, in a registry of their own: the loop's
    :class:`~policy_scheduler.scheduling.ports.MetricsSink`, exported for Prometheus."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self._attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=self.registry,
        )
        self._attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._pod_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=exponential_buckets(1, 2, 5),
            registry=self.registry,
        )
        self._group_attempts = Counter(
            "scheduler_podgroup_schedule_attempts",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means a "
            "pod group could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=self.registry,
        )
        self._group_duration = Histogram(
            "scheduler_podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds",
            ["result", "profile"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._group_algorithm = Histogram(
            "scheduler_podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._bind_duration = Histogram(
            "policy_scheduler_bind_duration_seconds",
            "Latency of one pods/binding call in seconds, by outcome: bound, taken, gone, failed.",
            ["result"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._status_writes = Counter(
            "policy_scheduler_status_writes",
            "SchedulingPolicy status writes, by result: success, not_found, error.",
            ["result"],
            registry=self.registry,
        )
        self._decisions = Counter(
            "policy_scheduler_decisions_recorded",
            "Decisions added to a SchedulingPolicy's status, by mode and result.",
            ["policy", "mode", "result"],
            registry=self.registry,
        )
        self._refusals = Counter(
            "policy_scheduler_api_refusals",
            "Requests the API server refused (code 401 or 403), by RBAC verb and resource, and "
            "requests for which no credential could be had (code 'credentials').",
            ["verb", "resource", "code"],
            registry=self.registry,
        )
        self._leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
            registry=self.registry,
        )

    def read_state(self, read: Callable[[], SchedulerState]) -> None:
        """Report what ``read`` returns at each scrape."""
        self.registry.register(_StateCollector(read))

    def read_watches(self, read: Callable[[], WatchState]) -> None:
        """Report each watch's state, as ``read`` returns it, at each scrape."""
        self.registry.register(_WatchCollector(read))

    def api_refused(self, verb: str, resource: str, code: str) -> None:
        self._refusals.labels(verb, resource, code).inc()

    def read_lease(self, name: str, leading: Callable[[], bool]) -> None:
        """Report at each scrape whether this process holds the Lease ``name``."""
        self._leader.labels(name).set_function(lambda: 1.0 if leading() else 0.0)

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        self._attempts.labels(result, profile).inc()
        self._attempt_duration.labels(result, profile).observe(seconds)

    def algorithm(self, seconds: float) -> None:
        self._algorithm_duration.observe(seconds)

    def group_attempt(self, result: str, profile: str, seconds: float, algorithm: float) -> None:
        self._group_attempts.labels(result, profile).inc()
        self._group_duration.labels(result, profile).observe(seconds)
        self._group_algorithm.observe(algorithm)

    def pod_scheduled(self, attempts: int) -> None:
        self._pod_attempts.observe(attempts)

    def bind(self, result: str, seconds: float) -> None:
        self._bind_duration.labels(result).observe(seconds)

    def status_write(self, result: str) -> None:
        self._status_writes.labels(result).inc()

    def decision_recorded(self, policy: str, mode: str, result: str) -> None:
        self._decisions.labels(policy, mode, result).inc()


def scrape(registry: CollectorRegistry, accept: str) -> tuple[bytes, str]:
    """The registry's samples, and their content type: the text format, or OpenMetrics when
    the scraper asks for it (Prometheus does)."""
    encode, content_type = choose_encoder(accept)
    return encode(registry), content_type
