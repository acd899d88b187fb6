"""``policy-scheduler explain``: why a pod is where it is, or still pending, on a live cluster.

Read-only, through the operator's own client and identity (:func:`~policy_scheduler.kube.
credentials.load`: the same kubeconfig, exec plugins and proxies as ``run``): the pod, the nodes,
the assigned pods, the SchedulingPolicies, and the objects of every other kind the operator
watches (:data:`~policy_scheduler.scheduling.kinds.KINDS`: what default topology spreading, pod
affinity, the volume plugins, DynamicResources and preemption read), at the paths the operator
watches them (:mod:`~policy_scheduler.kube.kinds`); an API the cluster may not serve that it does
not (404) has none. The policy that serves the pod's ``spec.schedulerName`` is found as
the operator finds it (:class:`~policy_scheduler.scheduling.policies.PolicyTable`: the oldest
claimant), and its pipeline is run against the cluster as it is now, with
:func:`~policy_scheduler.runtime.explanation.explain` keeping every node's verdict.

A bound pod is re-evaluated as if it were pending: without its ``spec.nodeName`` (which would
make every other node fail NodeName) and without its own usage on its node. Beside that comes the
decision that placed it, as the policy's status still records it, if it does. A pending pod for
which a post-filter preempted comes with that preemption as the status records it (the node it
was nominated to, the victims, why; in DryRun whom it would evict) and its
``status.nominatedNodeName``. A member of a gang (a pod group its policy's GangScheduling
serves) comes with its group: how many members exist and are placed, why they wait if the group
holds them, else how the group's pass would run now: which pending members fit where, which fit
nowhere and why, and whether the group would be placed.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from policy_scheduler.framework.interface import StatusError
from policy_scheduler.kube.client import ApiError, Kube, pod_path
from policy_scheduler.kube.credentials import CredentialsError, load
from policy_scheduler.kube.kinds import collection
from policy_scheduler.model.nodeinfo import Snapshot
from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.model.podgroups import GroupKey as PodGroupKey
from policy_scheduler.model.podgroups import group_key
from policy_scheduler.plugins.gang_scheduling import WAITING_FOR_MEMBERS, GangScheduling, gang_of
from policy_scheduler.policy.compiler import CompiledPolicy
from policy_scheduler.runtime.decision import Candidate
from policy_scheduler.runtime.explanation import Explanation, NodeVerdict, explain
from policy_scheduler.runtime.group_what_if import GroupWhatIf, what_if_group
from policy_scheduler.scheduling import kinds
from policy_scheduler.scheduling.policies import PolicyTable
from policy_scheduler.simulate import ClusterDump, snapshot_of


class ExplainError(Exception):
    """The cluster could not be read (no such pod, no access, a bad kubeconfig), or a plugin
    cannot decide the pod (its error status: a device selector that does not compile); one
    line."""


class NotServedError(Exception):
    """No valid SchedulingPolicy serves the pod's scheduler name; the message says which case."""


NOT_FOUND = 404
"""The status of a listing whose API the cluster does not serve, or of a pod that is not there."""
CONCURRENCY = 8
"""Listings read at once."""


def connect(kubeconfig: str | None, context: str | None = None) -> Kube:
    """A client for ``kubeconfig``, else $KUBECONFIG or ~/.kube/config, else the in-cluster
    service account, as ``run`` connects."""
    try:
        kube = Kube(load(kubeconfig, context), CONCURRENCY)
    except CredentialsError as error:
        raise ExplainError(f"cannot use the kubeconfig: {error}") from None
    # A refusal is this command's own one line on stderr, not also the operator's log line.
    kube.refusals.told = False
    return kube


def default_namespace(kube: Kube) -> str:
    """The current context's namespace, as kubectl uses it (the pod's own in a cluster)."""
    return kube.credentials.target.namespace


@dataclass(frozen=True)
class Report:
    """What explain found about one pod."""

    pod: PodView
    policy: CompiledPolicy
    explanation: Explanation
    """Every node's verdict for the pod as if it were pending now (see :func:`as_pending`)."""
    bound_to: str | None
    last_message: str | None
    """The pod's PodScheduled=False condition message: what a scheduler said last."""
    recorded: Mapping[str, Any] | None = None
    """For a bound pod: the decision that placed it, as the policy's status keeps it (see
    :func:`recorded_decision`); None when the status keeps none."""
    preemption: Mapping[str, Any] | None = None
    """For a pending pod: the newest decision that preempted for it, as the policy's status
    keeps it (see :func:`recorded_preemption`); None when it keeps none."""
    group: GroupReport | None = None
    """For a member of a gang whose policy has GangScheduling: its group (see
    :func:`group_report`)."""

    @property
    def best(self) -> tuple[str, ...]:
        return tuple(c.node for c in self.explanation.best)

    @property
    def matches(self) -> bool | None:
        """For a bound pod: whether its node is one the policy would choose now."""
        return None if self.bound_to is None else self.bound_to in self.best

    def to_dict(self) -> dict[str, Any]:
        best = self.explanation.best
        verdict: dict[str, Any] = {
            "nodes": [c.node for c in best],
            "score": best[0].score if best else None,
        }
        if not best:
            verdict["message"] = self.explanation.message
        if self.bound_to is not None:
            verdict["matches"] = self.matches
        # Only a bound pod has a decision that placed it; a pending pod's keys stay as they were.
        recorded: dict[str, Any] = (
            {}
            if self.bound_to is None
            else {"recorded": None if self.recorded is None else dict(self.recorded)}
        )
        # Only where there is one: a pending pod's other keys stay as they were.
        if self.pod.nominated_node_name:
            recorded["nominatedNodeName"] = self.pod.nominated_node_name
        if self.preemption is not None:
            recorded["preemption"] = dict(self.preemption)
        # Only for a gang's member: other pods' keys stay as they were.
        if self.group is not None:
            recorded["podGroup"] = self.group.to_dict()
        return {
            "pod": self.pod.key,
            "schedulerName": self.pod.scheduler_name,
            "policy": self.policy.name,
            "mode": str(self.policy.mode),
            "boundTo": self.bound_to,
            **recorded,
            "lastMessage": self.last_message,
            "weights": _weights(self.policy),
            "skipped": list(self.explanation.skipped),
            "nodes": [_node_dict(v) for v in _ordered(self.explanation.verdicts)],
            "verdict": verdict,
        }

    def lines(self) -> list[str]:
        """The report for people: the pod, for a bound pod its recorded decision, the feasible
        nodes' scores, the rejected nodes' reasons, what was skipped, and the verdict."""
        pod, policy = self.pod, self.policy
        state = f"bound to {self.bound_to}" if self.bound_to else "pending"
        lines = [
            f"pod {pod.key}: {state}; schedulerName {pod.scheduler_name} is served by "
            f"SchedulingPolicy {policy.name} ({policy.mode})"
        ]
        if self.bound_to is not None:
            lines += self._recorded_lines()
            lines.append(
                f"now, as if it were pending (its nodeName ignored, its own usage not counted "
                f"on {self.bound_to}):"
            )
        verdicts = _ordered(self.explanation.verdicts)
        feasible = [v.candidate for v in verdicts if v.candidate is not None]
        lines.append(f"feasible nodes: {len(feasible)} of {len(verdicts)}")
        if feasible:
            columns = {name: f"{name} (x{w})" for name, w in _weights(policy).items()}
            lines += _score_table(feasible, columns)
            best = set(self.best)
            lines += [
                f"devices on {v.node}: claim {claim}: {', '.join(devices)}"
                for v in verdicts
                if v.node in best
                for claim, devices in v.chosen.items()
            ]
        rejected = [v for v in verdicts if v.candidate is None]
        if rejected:
            lines.append("rejected nodes:")
            lines += _columns([[v.node, _rejection(v)] for v in rejected])
        if self.explanation.skipped:
            lines.append(f"skipped for this pod: {', '.join(self.explanation.skipped)}")
        lines += self._verdict()
        if self.group is not None:
            lines += self.group.lines()
        return lines

    def _recorded_lines(self) -> list[str]:
        """The decision that placed the pod, with its candidates' scores when the status kept
        them."""
        record = self.recorded
        if record is None:
            return [
                f"recorded decision: none; SchedulingPolicy {self.policy.name} keeps no decision "
                "that placed this pod"
            ]
        candidates = _recorded_candidates(record)
        score = record.get("score")
        if isinstance(score, int | float):
            notes = [f"score {score:g}"]
        elif "candidates" in record:
            # A status.decisions entry placed without a score: its node was the only one.
            notes = ["the only node that fits: not scored"]
        else:
            notes = ["status.lastDecision keeps no scores"]
        if record.get("dryRun"):
            notes.append("DryRun: nothing was bound")
        lines = [
            f"recorded decision at {record.get('time')}: {record.get('node')} ({'; '.join(notes)})"
        ]
        if candidates:
            # The plugins as the decision scored them: the policy may have changed since.
            lines += _score_table(candidates, {n: n for c in candidates for n in c.scores})
        return lines

    def _verdict(self) -> list[str]:
        goes = self._destination()
        message = self.explanation.message
        if self.bound_to is not None:
            now = f"it would {goes}" if goes else f"it would fit nowhere: {message}"
            return [
                f"verdict: it is on {self.bound_to}; if it were pending now, {now}",
                self._own_node(),
            ]
        lines = [f"verdict: it would {goes}" if goes else f"verdict: it fits nowhere: {message}"]
        if goes and self.policy.mode == "DryRun":
            lines.append("it stays pending: the policy is DryRun, which records but binds nothing")
        elif goes:
            lines.append(
                "it is pending although a node fits: the scheduler has not placed it yet "
                "(is policy-scheduler running?)"
            )
        if self.last_message:
            lines.append(f"last scheduling attempt: {self.last_message}")
        lines += self._preemption_lines()
        return lines

    def _preemption_lines(self) -> list[str]:
        """The node a preemption nominated the pending pod to, and the preemption recorded."""
        lines = []
        if self.pod.nominated_node_name:
            lines.append(
                f"nominated to {self.pod.nominated_node_name} by a preemption: it is placed "
                "there once the victims are gone, if it still fits"
            )
        record = self.preemption
        if record is None:
            return lines
        preemption = record.get("preemption")
        preemption = preemption if isinstance(preemption, Mapping) else {}
        victims = [str(v) for v in preemption.get("victims") or ()]
        count = preemption.get("victimCount")
        if isinstance(count, int) and count > len(victims):
            victims.append(f"and {count - len(victims)} more")
        told = ", ".join(victims) or "no pod"
        violations = preemption.get("pdbViolations")
        if violations:
            told += f" ({violations} against a PodDisruptionBudget)"
        node = preemption.get("node")
        did = (
            f"(DryRun) would have evicted {told} on {node}; nothing was evicted"
            if record.get("dryRun")
            else f"nominated it to {node}, evicting {told}"
        )
        lines.append(f"recorded preemption at {record.get('time')}: {did}")
        if preemption.get("why"):
            lines.append(f"  why: {preemption['why']}")
        return lines

    def _destination(self) -> str | None:
        """Where the pod would go now ("go to n1 (score 80)"); None when it fits nowhere."""
        best = self.explanation.best
        if not best:
            return None
        where = best[0].node if len(best) == 1 else f"one of {', '.join(self.best)}"
        ties = "" if len(best) == 1 else ", a tie broken by the order the nodes are found in"
        return f"go to {where} (score {best[0].score:g}{ties})"

    def _own_node(self) -> str:
        """The bound pod's node as the policy sees it now."""
        if self.matches:
            return f"{self.bound_to} is the policy's choice now"
        differs = f"{self.bound_to} is not the policy's choice now"
        for verdict in self.explanation.verdicts:
            if verdict.node == self.bound_to:
                if verdict.candidate is not None:
                    return f"{differs}: it scores {verdict.candidate.score:g}"
                return f"{differs}: {verdict.rejected_by} rejects it: {', '.join(verdict.reasons)}"
        return f"{differs}: it is not in the cluster any more"


def _weights(policy: CompiledPolicy) -> dict[str, int]:
    return {ws.scorer.name: ws.weight for ws in policy.pipeline.scorers}


def _ordered(verdicts: tuple[NodeVerdict, ...]) -> list[NodeVerdict]:
    """Feasible nodes first, best total first; then the rejected ones, by name."""
    return sorted(
        verdicts,
        key=lambda v: (v.candidate is None, -v.candidate.score if v.candidate else 0, v.node),
    )


def _rejection(verdict: NodeVerdict) -> str:
    """Which filter rejected the node and why, in detail where it says more."""
    why = f"{verdict.rejected_by}: {', '.join(verdict.reasons)}"
    return f"{why} ({verdict.detail})" if verdict.detail else why


def _node_dict(verdict: NodeVerdict) -> dict[str, Any]:
    """A node's verdict as JSON; ``detail`` and ``devices`` only where a filter gave them."""
    if verdict.candidate is None:
        rejected: dict[str, Any] = {
            "node": verdict.node,
            "feasible": False,
            "filter": verdict.rejected_by,
            "reasons": list(verdict.reasons),
        }
        if verdict.detail:
            rejected["detail"] = verdict.detail
        return rejected
    feasible: dict[str, Any] = {
        "node": verdict.node,
        "feasible": True,
        "score": verdict.candidate.score,
        "scores": dict(verdict.candidate.scores),
    }
    if verdict.chosen:
        feasible["devices"] = {claim: list(d) for claim, d in verdict.chosen.items()}
    return feasible


def _recorded_candidates(record: Mapping[str, Any]) -> list[Candidate]:
    """The candidates of a ``status.decisions`` entry (none in ``status.lastDecision``)."""
    return [
        Candidate(str(c.get("node")), c.get("score") or 0, dict(c.get("scores") or {}))
        for c in record.get("candidates") or ()
        if isinstance(c, Mapping)
    ]


def _score_table(candidates: Sequence[Candidate], columns: Mapping[str, str]) -> list[str]:
    """A row per candidate: its node, its total and each plugin's score, under ``columns``
    (plugin name -> header)."""
    rows = [["NODE", "TOTAL", *columns.values()]]
    rows += [
        [c.node, f"{c.score:g}", *(str(c.scores.get(name, "")) for name in columns)]
        for c in candidates
    ]
    return _columns(rows)


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def explain_pod(kube: Kube, name: str, namespace: str) -> Report:
    """Explain the pod ``namespace/name``; :class:`ExplainError` when the cluster cannot be read,
    :class:`NotServedError` when no valid policy serves the pod."""
    try:
        raw_pod, policies, cluster = asyncio.run(_read(kube, name, namespace))
    except ApiError as error:
        if error.status == NOT_FOUND and error.message.startswith("pods "):
            raise ExplainError(f'pod "{name}" not found in namespace "{namespace}"') from None
        raise ExplainError(f"cannot read the cluster: {error}") from None
    return report_of(raw_pod, policies, cluster)


async def _read(
    kube: Kube, name: str, namespace: str
) -> tuple[dict[str, Any], list[dict[str, Any]], ClusterDump]:
    """The pod, the SchedulingPolicies and the cluster, read at once."""
    try:
        pod, policies, cluster = await asyncio.gather(
            kube.request("GET", pod_path(namespace, name)),
            read_listing(kube, collection(kinds.POLICIES)),
            read_cluster(kube),
        )
        return pod, policies, cluster
    finally:
        await kube.close()


async def read_cluster(kube: Kube) -> ClusterDump:
    """What the operator's watches hold, read once: nodes, assigned pods, and the objects of
    every kind the cache keeps in stores (none of a kind whose API may not be served and is
    not)."""
    stored = [kind for kind in kinds.KINDS if kind.store is not None]
    nodes, assigned, *listed = await asyncio.gather(
        read_listing(kube, collection(kinds.NODES)),
        read_listing(kube, collection(kinds.PODS), fieldSelector="spec.nodeName!="),
        *(read_listing(kube, collection(kind), optional=kind.optional) for kind in stored),
    )
    # Listed items carry no kind: each is known by the kind listed.
    return ClusterDump.of_stored(
        map(NodeView, nodes),
        map(PodView, assigned),
        ((kind.name, raw) for kind, items in zip(stored, listed, strict=True) for raw in items),
    )


async def read_listing(
    kube: Kube, collection: str, *, optional: bool = False, **params: str
) -> list[dict[str, Any]]:
    """Every object of ``collection``, of every namespace; none when ``optional`` and the
    cluster does not serve its API (a 404: resource.k8s.io/v1 before Kubernetes 1.34), as the
    operator takes it."""
    items: list[dict[str, Any]] = []
    try:
        async for page in kube.pages(collection, {"limit": 500, **params}):
            items += page.get("items") or ()
    except ApiError as error:
        if not (optional and error.status == NOT_FOUND):
            raise
    return items


def report_of(
    raw_pod: Mapping[str, Any],
    policies: Iterable[Mapping[str, Any]],
    cluster: ClusterDump,
) -> Report:
    """Explain ``raw_pod`` with the SchedulingPolicies and the cluster as read (its pods: those
    assigned to nodes); :class:`NotServedError` when no valid policy serves the pod."""
    pod = PodView(raw_pod)
    policy, status = _serving_policy(policies, pod.scheduler_name)
    bound_to = pod.node_name or None
    try:
        explanation = explain(policy.pipeline, as_pending(pod), snapshot_without(pod, cluster))
    except StatusError as error:  # a plugin's error status: what the scheduler says too
        raise ExplainError(f"pod {pod.key} cannot be decided: {error}") from None
    return Report(
        pod,
        policy,
        explanation,
        bound_to,
        _unschedulable_message(raw_pod),
        None if bound_to is None else recorded_decision(status, pod),
        None if bound_to is not None else recorded_preemption(status, pod),
        group_report(pod, policy, cluster),
    )


@dataclass(frozen=True)
class GroupReport:
    """A gang member's group as explain sees it: how many members exist, are placed and wait,
    why it waits if it is held (its group missing or invalid, too few members), and else the
    group's pass as it would run now (:func:`~policy_scheduler.runtime.group_what_if.
    what_if_group`): which pending members fit where, which fit nowhere and why."""

    group: PodGroupKey
    min_member: int
    members: int
    placed: int
    held: str = ""
    what_if: GroupWhatIf | None = None

    def to_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "name": str(self.group),
            "api": self.group.api,
            "minMember": self.min_member,
            "members": self.members,
            "placed": self.placed,
        }
        if self.held:
            record["held"] = self.held
        if self.what_if is not None:
            record["fit"] = [{"pod": pod, "node": node} for pod, node in self.what_if.fit]
            record["blocked"] = [{"pod": p, "message": m} for p, m in self.what_if.blocked]
            record["verdict"] = self.what_if.verdict
        return record

    def lines(self) -> list[str]:
        lines = [
            f"pod group {self.group} ({self.group.api}): minMember {self.min_member}; "
            f"{self.members} members exist, {self.placed} placed"
        ]
        if self.held:
            return [*lines, f"  its members wait: {self.held}"]
        if self.what_if is None:
            return lines
        fit, blocked = self.what_if.fit, self.what_if.blocked
        where = ", ".join(f"{pod} on {node}" for pod, node in fit)
        lines.append(
            f"  as a pass now: {len(fit)} pending members fit" + (f" ({where})" if fit else "")
        )
        if blocked:
            lines.append(f"  {len(blocked)} fit nowhere:")
            lines += [f"    {pod}: {message}" for pod, message in blocked]
        verdict = self.what_if.verdict
        lines.append(
            f"  the group would not be placed: {verdict}"
            if verdict
            else "  the group would be placed"
        )
        return lines


def group_report(pod: PodView, policy: CompiledPolicy, cluster: ClusterDump) -> GroupReport | None:
    """The group of ``pod`` when it is a gang's member and its policy has GangScheduling; its
    pass runs on the cluster as read, with the pending members of the same scheduler name."""
    key = group_key(pod)
    if key is None or not any(isinstance(p, GangScheduling) for p in policy.extensions.pre_enqueue):
        return None
    state = snapshot_of(cluster)
    members = [
        other
        for other in cluster.pods
        if group_key(other) == key and not other.deleting and not other.terminated
    ]
    placed = sum(1 for other in members if other.node_name)
    group = gang_of(pod, state)
    if group is None:
        return None
    if isinstance(group, str):
        return GroupReport(key, 0, len(members), placed, held=group)
    report = GroupReport(key, group.min_member, len(members), placed)
    if len(members) < group.min_member:
        return dataclasses.replace(report, held=WAITING_FOR_MEMBERS)
    pending = sorted(
        (o for o in members if not o.node_name and o.scheduler_name == pod.scheduler_name),
        key=lambda other: other.scheduling_order,
    )
    what_if = what_if_group(policy.pipeline, state, pending, group.min_member, placed)
    return dataclasses.replace(report, what_if=what_if)


def as_pending(pod: PodView) -> PodView:
    """``pod`` without its ``spec.nodeName``: a bound pod as the scheduler saw it before binding,
    so that NodeName does not reject every other node."""
    if not pod.node_name:
        return pod
    spec = {key: value for key, value in pod.spec.items() if key != "nodeName"}
    return PodView({**pod.raw, "spec": spec})


def snapshot_without(pod: PodView, cluster: ClusterDump) -> Snapshot:
    """The cluster as simulate sees a cluster dump, except ``pod`` itself, so that a bound pod's
    own usage does not count against its node."""
    others = tuple(other for other in cluster.pods if other.uid != pod.uid)
    return snapshot_of(dataclasses.replace(cluster, pods=others))


def recorded_decision(status: Mapping[str, Any], pod: PodView) -> Mapping[str, Any] | None:
    """The newest decision placing ``pod`` that a SchedulingPolicy's ``status`` keeps: an entry of
    ``decisions`` (newest first, with the candidates' scores), else ``lastDecision`` (pod, node
    and time); None when it keeps none.

    Decisions made before the pod was created placed an earlier pod of the same name (a
    StatefulSet's pods come back under their names), so they are not this pod's."""
    decisions = status.get("decisions")
    for record in (*(decisions if isinstance(decisions, list) else ()), status.get("lastDecision")):
        if (
            isinstance(record, Mapping)
            and record.get("pod") == pod.key
            and record.get("node")
            and _not_before(record.get("time"), pod.creation_timestamp)
        ):
            return record
    return None


def recorded_preemption(status: Mapping[str, Any], pod: PodView) -> Mapping[str, Any] | None:
    """The newest decision for ``pod`` in a SchedulingPolicy's ``status.decisions`` with a
    ``preemption``, made since the pod was created; None when it keeps none."""
    decisions = status.get("decisions")
    for record in decisions if isinstance(decisions, list) else ():
        if (
            isinstance(record, Mapping)
            and record.get("pod") == pod.key
            and isinstance(record.get("preemption"), Mapping)
            and _not_before(record.get("time"), pod.creation_timestamp)
        ):
            return record
    return None


def _not_before(time: object, created: str) -> bool:
    """Whether the RFC 3339 ``time`` is not before ``created``; True when either cannot be read,
    as nothing then says the decision is another pod's."""
    try:
        return datetime.fromisoformat(str(time)) >= datetime.fromisoformat(created)
    except (ValueError, TypeError):  # TypeError: one has a time zone, the other none
        return True


def _serving_policy(
    policies: Iterable[Mapping[str, Any]], scheduler_name: str
) -> tuple[CompiledPolicy, Mapping[str, Any]]:
    """The policy serving ``scheduler_name``, compiled, with its status."""
    table = PolicyTable()
    statuses: dict[str, Mapping[str, Any]] = {}
    for obj in policies:
        entry, _ = table.apply(obj)
        status = obj.get("status")
        statuses[entry.name] = status if isinstance(status, Mapping) else {}
    owner = table.owner(scheduler_name)
    if owner is None:
        raise NotServedError(
            f"no SchedulingPolicy serves schedulerName {scheduler_name!r}: the pod belongs to "
            "another scheduler"
        )
    if owner.compiled is None:
        raise NotServedError(f"SchedulingPolicy {owner.name} is invalid: {'; '.join(owner.errors)}")
    return owner.compiled, statuses[owner.name]


def _unschedulable_message(raw_pod: Mapping[str, Any]) -> str | None:
    for condition in (raw_pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            message = condition.get("message")
            return str(message) if message else None
    return None
