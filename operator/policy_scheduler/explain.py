"""``policy-scheduler explain``: why a pod is where it is, or still pending, on a live cluster.

Read-only, with pykube-ng: the pod, the nodes, the assigned pods and the SchedulingPolicies. The
policy that serves the pod's ``spec.schedulerName`` is found as the operator finds it
(:class:`~policy_scheduler.serving.PolicyTable`: the oldest claimant), and its pipeline is run
against the cluster as it is now, with :func:`~policy_scheduler.pipeline.explain` keeping every
node's verdict. A bound pod is left out of the picture, so it is explained as if it were being
scheduled now, next to the node it actually runs on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pykube
import requests
import yaml

from policy_scheduler.model.objects import NodeView, PodView
from policy_scheduler.pipeline import Explanation, NodeVerdict, explain
from policy_scheduler.policy.compiler import CompiledPolicy
from policy_scheduler.policy.schema import API_VERSION, KIND
from policy_scheduler.serving import PolicyTable
from policy_scheduler.simulate import ClusterDump, snapshot_of


class ExplainError(Exception):
    """The cluster could not be read (no such pod, no access, a bad kubeconfig); one line."""


class NotServedError(Exception):
    """No valid SchedulingPolicy serves the pod's scheduler name; the message says which case."""


class _SchedulingPolicy(pykube.objects.APIObject):  # type: ignore[misc]
    # Declared rather than discovered (pykube.object_factory), which would cost a request.
    version = API_VERSION
    endpoint = "schedulingpolicies"
    kind = KIND


# What reading a kubeconfig and talking to the API server can raise: pykube's own errors (HTTP
# statuses, a missing file), the transport's, and a kubeconfig that is no YAML or lacks a field.
_READ_ERRORS = (
    pykube.exceptions.KubernetesError,
    requests.RequestException,
    yaml.YAMLError,
    OSError,
    KeyError,
    TypeError,
    ValueError,
)


def connect(kubeconfig: str | None) -> pykube.HTTPClient:
    """A client for ``kubeconfig``, else $KUBECONFIG or ~/.kube/config, else the in-cluster
    service account."""
    try:
        config = (
            pykube.KubeConfig.from_file(kubeconfig) if kubeconfig else pykube.KubeConfig.from_env()
        )
        return pykube.HTTPClient(config)
    except _READ_ERRORS as error:
        raise ExplainError(f"cannot use the kubeconfig: {_describe(error)}") from None


def default_namespace(api: pykube.HTTPClient) -> str:
    """The current context's namespace, as kubectl uses it."""
    return str(api.config.namespace)


@dataclass(frozen=True)
class Report:
    """What explain found about one pod."""

    pod: PodView
    policy: CompiledPolicy
    explanation: Explanation
    bound_to: str | None
    last_message: str | None
    """The pod's PodScheduled=False condition message: what a scheduler said last."""

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
        return {
            "pod": self.pod.key,
            "schedulerName": self.pod.scheduler_name,
            "policy": self.policy.name,
            "mode": str(self.policy.mode),
            "boundTo": self.bound_to,
            "lastMessage": self.last_message,
            "weights": _weights(self.policy),
            "skipped": list(self.explanation.skipped),
            "nodes": [_node_dict(v) for v in _ordered(self.explanation.verdicts)],
            "verdict": verdict,
        }

    def lines(self) -> list[str]:
        """The report for people: the pod, the feasible nodes' scores, the rejected nodes'
        reasons, what was skipped, and the verdict."""
        pod, policy = self.pod, self.policy
        state = f"bound to {self.bound_to}" if self.bound_to else "pending"
        lines = [
            f"pod {pod.key}: {state}; schedulerName {pod.scheduler_name} is served by "
            f"SchedulingPolicy {policy.name} ({policy.mode})"
        ]
        verdicts = _ordered(self.explanation.verdicts)
        feasible = [v.candidate for v in verdicts if v.candidate is not None]
        weights = _weights(policy)
        lines.append(f"feasible nodes: {len(feasible)} of {len(verdicts)}")
        if feasible:
            rows = [["NODE", "TOTAL", *(f"{name} (x{w})" for name, w in weights.items())]]
            rows += [
                [c.node, f"{c.score:g}", *(str(c.scores.get(name, "")) for name in weights)]
                for c in feasible
            ]
            lines += _columns(rows)
        rejected = [v for v in verdicts if v.candidate is None]
        if rejected:
            lines.append("rejected nodes:")
            lines += _columns(
                [[v.node, f"{v.rejected_by}: {', '.join(v.reasons)}"] for v in rejected]
            )
        if self.explanation.skipped:
            lines.append(f"skipped for this pod: {', '.join(self.explanation.skipped)}")
        lines += self._verdict()
        return lines

    def _verdict(self) -> list[str]:
        best = self.explanation.best
        if best:
            where = best[0].node if len(best) == 1 else f"one of {', '.join(self.best)}"
            ties = "" if len(best) == 1 else ", a tie broken at random"
            would = f"it would go to {where} (score {best[0].score:g}{ties})"
        else:
            would = f"it fits nowhere: {self.explanation.message}"
        if self.bound_to is not None:
            lines = [f"verdict: if it were scheduled now, {would}"]
            if self.matches:
                lines.append(f"it is on {self.bound_to}, which matches")
            else:
                lines.append(f"it is on {self.bound_to}, which differs: {self._bound_node()}")
            return lines
        lines = [f"verdict: {would}"]
        if best and self.policy.mode == "DryRun":
            lines.append("it stays pending: the policy is DryRun, which records but binds nothing")
        elif best:
            lines.append(
                "it is pending although a node fits: the scheduler has not placed it yet "
                "(is policy-scheduler running?)"
            )
        if self.last_message:
            lines.append(f"last scheduling attempt: {self.last_message}")
        return lines

    def _bound_node(self) -> str:
        """The pod's own node as the policy sees it now."""
        for verdict in self.explanation.verdicts:
            if verdict.node == self.bound_to:
                if verdict.candidate is not None:
                    return f"it scores {verdict.candidate.score:g} now"
                return f"{verdict.rejected_by} rejects it now: {', '.join(verdict.reasons)}"
        return "that node is not in the cluster any more"


def _weights(policy: CompiledPolicy) -> dict[str, int]:
    return {ws.scorer.name: ws.weight for ws in policy.pipeline.scorers}


def _ordered(verdicts: tuple[NodeVerdict, ...]) -> list[NodeVerdict]:
    """Feasible nodes first, best total first; then the rejected ones, by name."""
    return sorted(
        verdicts,
        key=lambda v: (v.candidate is None, -v.candidate.score if v.candidate else 0, v.node),
    )


def _node_dict(verdict: NodeVerdict) -> dict[str, Any]:
    if verdict.candidate is None:
        return {
            "node": verdict.node,
            "feasible": False,
            "filter": verdict.rejected_by,
            "reasons": list(verdict.reasons),
        }
    return {
        "node": verdict.node,
        "feasible": True,
        "score": verdict.candidate.score,
        "scores": dict(verdict.candidate.scores),
    }


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def explain_pod(api: pykube.HTTPClient, name: str, namespace: str) -> Report:
    """Explain the pod ``namespace/name``; :class:`ExplainError` when the cluster cannot be read,
    :class:`NotServedError` when no valid policy serves the pod."""
    try:
        raw_pod = pykube.Pod.objects(api, namespace=namespace).get_by_name(name).obj
        policies = [p.obj for p in _SchedulingPolicy.objects(api)]
        nodes = [NodeView(n.obj) for n in pykube.Node.objects(api)]
        assigned = [
            p.obj
            for p in pykube.Pod.objects(api, namespace=pykube.all).filter(
                field_selector="spec.nodeName!="
            )
        ]
    except pykube.exceptions.ObjectDoesNotExist:
        raise ExplainError(f'pod "{name}" not found in namespace "{namespace}"') from None
    except _READ_ERRORS as error:
        raise ExplainError(f"cannot read the cluster: {_describe(error)}") from None
    pod = PodView(raw_pod)
    policy = _serving_policy(policies, pod.scheduler_name)
    # The pod itself is taken out, so that a bound pod is decided as if it were pending.
    others = tuple(view for view in map(PodView, assigned) if view.uid != pod.uid)
    snapshot = snapshot_of(ClusterDump(tuple(nodes), others))
    return Report(
        pod,
        policy,
        explain(policy.pipeline, pod, snapshot),
        pod.node_name or None,
        _unschedulable_message(raw_pod),
    )


def _serving_policy(policies: list[dict[str, Any]], scheduler_name: str) -> CompiledPolicy:
    table = PolicyTable()
    for obj in policies:
        table.apply(obj)
    owner = table.owner(scheduler_name)
    if owner is None:
        raise NotServedError(
            f"no SchedulingPolicy serves schedulerName {scheduler_name!r}: the pod belongs to "
            "another scheduler"
        )
    if owner.compiled is None:
        raise NotServedError(f"SchedulingPolicy {owner.name} is invalid: {'; '.join(owner.errors)}")
    return owner.compiled


def _unschedulable_message(raw_pod: Mapping[str, Any]) -> str | None:
    for condition in (raw_pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            message = condition.get("message")
            return str(message) if message else None
    return None


def _describe(error: BaseException) -> str:
    """One line for an error, whatever raised it."""
    if isinstance(error, pykube.exceptions.HTTPError):
        return f"{error} (HTTP {error.code})"
    if isinstance(error, requests.ConnectionError):
        return f"cannot connect to the API server ({type(error).__name__})"
    if isinstance(error, KeyError):
        return f"missing field {error}"
    text = " ".join(str(error).split())
    return text or type(error).__name__
