"""Kopf wiring: the operator's login, start and stop, which start and stop the scheduler.

- SchedulingPolicies, nodes and pods are listed and watched by the scheduler itself
  (:meth:`KubeScheduler.watch`, with :mod:`policy_scheduler.kube.informer`, which says why not
  through Kopf), started with the operator and stopped with it. Policies went through Kopf's
  ``on.event`` once; but a listing after a broken watch tells what exists, not what vanished,
  so a policy deleted meanwhile went on scheduling. Nothing is written onto the objects (no
  finalizers, no progress annotations), and Kopf's own log lines are not posted as events.
- The handlers are coroutines: Kopf runs a plain function in a thread pool, which costs a thread
  hand-off per event and lets the scheduler's state change under the scheduling loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import kopf

from policy_scheduler.kube.leader import LeaderElection
from policy_scheduler.kube.scheduler import KubeScheduler
from policy_scheduler.metrics import Endpoint, MetricsServer


def register(
    registry: kopf.OperatorRegistry,
    replica: KubeScheduler,
    *,
    in_cluster: bool,
    election: LeaderElection | None,
    on_lost: Callable[[], None],
    metrics: Endpoint | None = None,
) -> None:
    """Attach the scheduler's handlers to ``registry``; ``on_lost`` is called when the Lease is
    lost (the command line exits there, as kube-scheduler does, and is restarted). With
    ``metrics``, every replica, leading or not, serves the scheduler's metrics there."""
    tasks: list[asyncio.Task[None]] = []
    server = MetricsServer(replica.metrics.registry, metrics) if metrics else None

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        # The same identity as the scheduler's own client: $KUBECONFIG, or the pod's account.
        if in_cluster:
            return kopf.login_with_service_account(**kwargs)
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.startup(registry=registry)
    async def start(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        if server is not None:
            try:
                await server.start()
            except OSError as error:
                # Not worth retrying: the operator stops, and says why.
                raise kopf.PermanentError(f"cannot serve metrics on {metrics}: {error}") from None
        loop = asyncio.get_running_loop()
        tasks.append(loop.create_task(replica.watch(), name="watches"))
        tasks.append(loop.create_task(replica.serve(election, on_lost=on_lost), name="scheduler"))

    @kopf.on.cleanup(registry=registry)
    async def stop(**_: Any) -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await replica.shutdown(election)
        if server is not None:
            await server.stop()
