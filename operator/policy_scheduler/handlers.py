"""Kopf wiring: the watches that feed the scheduler, and its start and stop.

Settings a scheduler needs from Kopf:

- nodes and pods are *indexed*: Kopf calls index handlers for every object of the initial
  listings before it calls any regular handler, so by the time the first regular handler runs the
  cache holds every node and every assigned pod, and no decision is made on a partial picture.
  The index handlers keep nothing in Kopf's indices (they return ``{}``); they feed the cache.
  Deletions, which index handlers do not see, arrive through ``on.event``.
- pods are watched with a server-side field selector that drops finished pods, as kube-scheduler's
  own informer does. Assigned pods of every scheduler must be seen (they use node resources), so
  the selector cannot narrow the watch to pending pods of our scheduler names.
- nothing is written onto pods or nodes: no finalizers, no progress annotations; Kopf's own log
  lines are not posted as Kubernetes events.
"""

from __future__ import annotations

import asyncio
from typing import Any

import kopf

from policy_scheduler.kube.client import GROUP, PLURAL, VERSION
from policy_scheduler.kube.leader import LeaderElection
from policy_scheduler.kube.scheduler import Scheduler
from policy_scheduler.metrics import Endpoint, MetricsServer

TERMINAL_PHASES = "status.phase!=Succeeded,status.phase!=Failed"


def register(
    registry: kopf.OperatorRegistry,
    scheduler: Scheduler,
    *,
    in_cluster: bool,
    election: LeaderElection | None,
    stop_flag: asyncio.Event,
    metrics: Endpoint | None = None,
) -> None:
    """Attach the scheduler's handlers to ``registry``; ``stop_flag`` is set when the Lease is
    lost, so the process ends as kube-scheduler's does and its supervisor restarts it. With
    ``metrics``, every replica, leading or not, serves the scheduler's metrics there."""
    tasks: list[asyncio.Task[None]] = []
    server = MetricsServer(scheduler.metrics.registry, metrics) if metrics else None

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        # The same identity as the scheduler's own client: $KUBECONFIG, or the pod's account.
        if in_cluster:
            return kopf.login_with_service_account(**kwargs)
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.startup(registry=registry)
    async def start(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.watching.field_selectors["pods"] = TERMINAL_PHASES
        if server is not None:
            try:
                await server.start()
            except OSError as error:
                # Not worth retrying: the operator stops, and says why.
                raise kopf.PermanentError(f"cannot serve metrics on {metrics}: {error}") from None
        tasks.append(
            asyncio.get_running_loop().create_task(
                scheduler.serve(election, on_lost=stop_flag.set), name="scheduler"
            )
        )

    @kopf.on.cleanup(registry=registry)
    async def stop(**_: Any) -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await scheduler.shutdown(election)
        if server is not None:
            await server.stop()

    @kopf.index("nodes", registry=registry)
    def node_seen(body: kopf.Body, **_: Any) -> dict[str, Any]:
        scheduler.node_changed(body)
        return {}

    @kopf.on.event("nodes", registry=registry)
    def node_event(type: str, name: str, **_: Any) -> None:
        if type == "DELETED":
            scheduler.node_deleted(name)
        scheduler.ready()

    @kopf.index("pods", registry=registry)
    def pod_seen(body: kopf.Body, **_: Any) -> dict[str, Any]:
        scheduler.pod_changed(body)
        return {}

    @kopf.on.event("pods", registry=registry)
    def pod_event(type: str, body: kopf.Body, **_: Any) -> None:
        if type == "DELETED":
            scheduler.pod_deleted(body)
        scheduler.ready()

    @kopf.on.event(GROUP, VERSION, PLURAL, registry=registry)
    def policy_event(type: str, name: str, body: kopf.Body, **_: Any) -> None:
        if type == "DELETED":
            scheduler.policy_deleted(name)
        else:
            scheduler.policy_changed(body)
