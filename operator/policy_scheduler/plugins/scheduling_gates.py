"""SchedulingGates: a pod with ``spec.schedulingGates`` waits outside the active queue
(kube-scheduler's SchedulingGates PreEnqueue plugin).

The API server refuses to bind a gated pod, so trying costs a request and an error; the gates'
owner (Kueue, say) removes them when the pod may run, and the pod's update lets it in. The loop
runs this plugin for every policy, as kube-scheduler enables it in every profile: no policy can
usefully do without it. The message is kube-scheduler's.
"""

from __future__ import annotations

from policy_scheduler.framework.interface import PreEnqueue
from policy_scheduler.model.nodeinfo import Snapshot
from policy_scheduler.model.objects import PodView

NAME = "SchedulingGates"


class SchedulingGates(PreEnqueue):
    """Holds a pod while it has scheduling gates."""

    name = NAME

    def pre_enqueue(self, pod: PodView, cluster: Snapshot) -> str | None:
        gates = pod.scheduling_gates
        if not gates:
            return None
        return f"waiting for scheduling gates: [{' '.join(gates)}]"
