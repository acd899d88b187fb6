"""Kopf wiring: the operator's login, probes, start and stop, which start and stop the scheduler.

- **Login**: Kopf's own client (its API discovery at start-up) goes out as the scheduler's does,
  through the process's one :class:`~policy_scheduler.kube.credentials.Credentials`: an aiohttp
  session (Kopf's :class:`kopf.AiohttpSession`) that asks them for the ``Authorization`` header
  of every request and sends a 401'd one again once with a fresh credential, on their TLS
  context and proxy. So an exec plugin's token that expires every few minutes, a rotated token
  file or an OIDC refresh serve Kopf as they serve the scheduler; Kopf's ``login_with_kubeconfig``
  knew none of them. Kopf neither scans nor watches what it does not handle
  (``settings.scanning.disabled``): the scheduler watches for itself.
- **Probes**: Kopf's liveness endpoint (``--liveness``) reports the scheduling loop's heartbeat
  and fails (500) while the replica leads and its loop has stopped turning; readiness
  (``--readiness``, on the operator's own server, :mod:`~policy_scheduler.serving`) holds while
  every watch is current and the replica leads or could. A root task (the watches, the
  scheduling) that ends is a death, not a health problem: ``on_dead`` is told, and the command
  line exits for the supervisor to restart it, as kube-scheduler does.
- **Admission** (``--admission``): Kopf's validating webhook, served by every replica, refuses
  at ``kubectl apply`` a SchedulingPolicy that ``policy-scheduler validate`` refuses, in the same
  words (:func:`~policy_scheduler.policy.compiler.check`), and warns of one that ``validate``
  warns of. Its certificate is shared by the replicas through a Secret, and the webhook
  configuration is made to trust its CA (:mod:`~policy_scheduler.kube.certificates`).
- SchedulingPolicies, nodes and pods are listed and watched by the scheduler itself
  (:meth:`KubeScheduler.watch`, with :mod:`policy_scheduler.kube.informer`, which says why not
  through Kopf). Nothing is written onto the objects (no finalizers, no progress annotations),
  and Kopf's own log lines are not posted as events.
- The handlers are coroutines: Kopf runs a plain function in a thread pool, which costs a thread
  hand-off per event and lets the scheduler's state change under the scheduling loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import kopf

from policy_scheduler.kube import certificates
from policy_scheduler.kube.client import GROUP, PLURAL, UNAUTHORIZED, USER_AGENT, VERSION, ApiError
from policy_scheduler.kube.credentials import Credentials, CredentialsError
from policy_scheduler.kube.leader import LeaderElection
from policy_scheduler.kube.scheduler import KubeScheduler, Unhealthy
from policy_scheduler.policy.compiler import check
from policy_scheduler.serving import Endpoint, Handler, Servers, metrics_route, readiness_route

logger = logging.getLogger(__name__)

INVALID = 422
WEBHOOK = "validate"
"""The validating webhook's handler id: Kopf serves it at ``/validate``."""


@dataclass(frozen=True)
class Admission:
    """Where the validating webhook listens, the names its certificate must carry, and where
    the certificate and the CA bundle are kept."""

    host: str
    port: int
    names: tuple[str, ...]
    namespace: str
    secret: str
    configuration: str


def kopf_session(credentials: Credentials) -> kopf.AiohttpSession:
    """Kopf's client session, on ``credentials``: each request gets the current
    ``Authorization``, and one refused with 401 is sent once more with a fresh one."""

    async def authorize(
        request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType
    ) -> aiohttp.ClientResponse:
        for last in (False, True):
            try:
                authorization = await credentials.authorization()
            except CredentialsError as error:
                raise aiohttp.ClientError(f"no credentials: {error}") from error
            if authorization:
                request.headers["Authorization"] = authorization
            response = await handler(request)
            if response.status != UNAUTHORIZED or last:
                return response
            response.release()
            credentials.refused(authorization)
        raise AssertionError("unreachable")  # pragma: no cover

    target = credentials.target
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, ssl=credentials.ssl_context()),
        headers={"User-Agent": USER_AGENT},
        middlewares=(authorize,),
        proxy=target.proxy,
        trust_env=False,
    )
    return kopf.AiohttpSession(
        aiohttp_session=session, server=target.server, default_namespace=target.namespace
    )


def register(
    registry: kopf.OperatorRegistry,
    replica: KubeScheduler,
    credentials: Credentials,
    *,
    election: LeaderElection | None,
    on_lost: Callable[[], None],
    on_dead: Callable[[str, BaseException | None], None],
    metrics: Endpoint | None = None,
    readiness: Endpoint | None = None,
    admission: Admission | None = None,
) -> None:
    """Attach the scheduler's handlers to ``registry``; ``on_lost`` is called when the Lease is
    lost, ``on_dead(task, error)`` when a root task ends (the command line exits at either, as
    kube-scheduler does, and is restarted). With ``metrics`` and ``readiness``, every replica,
    leading or not, serves them there."""
    tasks: list[asyncio.Task[None]] = []
    folders: list[Path] = []
    routes: dict[Endpoint, Handler] = {}
    if metrics is not None:
        routes[metrics] = metrics_route(replica.metrics.registry)
    if readiness is not None:
        routes[readiness] = readiness_route(replica.readiness)
    servers = Servers(routes)

    @kopf.on.login(registry=registry)
    async def login(**_: Any) -> kopf.AiohttpSession:
        return kopf_session(credentials)

    @kopf.on.probe(id="scheduling", registry=registry)
    async def scheduling(**_: Any) -> dict[str, Any]:
        try:
            return replica.liveness()
        except Unhealthy as unhealthy:
            # Permanent, so that Kopf answers the probe at once (500) instead of retrying.
            raise kopf.PermanentError(str(unhealthy)) from None

    if admission is not None:

        @kopf.on.validate(
            GROUP, VERSION, PLURAL, id=WEBHOOK, operations=["CREATE", "UPDATE"], registry=registry
        )
        async def validate(body: kopf.Body, warnings: list[str], **_: Any) -> None:
            verdict = check(body)
            warnings.extend(verdict.warnings)
            if verdict.errors:
                raise kopf.AdmissionError("\n".join(verdict.errors), code=INVALID)

    @kopf.on.startup(registry=registry)
    async def start(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.scanning.disabled = True
        if admission is not None:
            folders.append(Path(tempfile.mkdtemp(prefix="policy-scheduler-")))
            settings.admission.server = await _admission_server(replica, admission, folders[0])
        try:
            await servers.start()
        except OSError as error:
            # Not worth retrying: the operator stops, and says why.
            raise kopf.PermanentError(error.strerror) from None
        loop = asyncio.get_running_loop()
        tasks.append(loop.create_task(replica.watch(), name="watches"))
        tasks.append(loop.create_task(replica.serve(election, on_lost=on_lost), name="scheduling"))
        for task in tasks:
            task.add_done_callback(ended)

    def ended(task: asyncio.Task[None]) -> None:
        # The scheduling task returns only once on_lost has been told; anything else is death.
        if not task.cancelled() and (
            task.exception() is not None or task.get_name() != "scheduling"
        ):
            on_dead(task.get_name(), task.exception())

    @kopf.on.cleanup(registry=registry)
    async def stop(**_: Any) -> None:
        for task in tasks:
            task.remove_done_callback(ended)
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await replica.shutdown(election)
        await servers.stop()
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


async def _admission_server(
    replica: KubeScheduler, admission: Admission, files: Path
) -> kopf.WebhookServer:
    """Kopf's webhook server for ``admission``, on the replicas' shared certificate, once the
    webhook configuration trusts its CA (a configuration that cannot be read or written is said
    at once: the webhook still serves whatever calls it). Kopf loads a certificate only from
    files: they are written into ``files``, the process's private folder."""
    kube = replica.kube
    try:
        certificate = await certificates.serving_certificate(
            kube, admission.namespace, admission.secret, admission.names
        )
    except ApiError as error:
        raise kopf.PermanentError(
            f"cannot get the webhook's certificate from Secret "
            f"{admission.namespace}/{admission.secret}: {error}"
        ) from None
    try:
        await certificates.trust(kube, admission.configuration, certificate.ca)
    except ApiError as error:
        logger.error(
            "cannot make ValidatingWebhookConfiguration %s trust the webhook's CA (%s): "
            "the API server will not call the webhook until it does",
            admission.configuration,
            error,
        )
    cert, key = files / "tls.crt", files / "tls.key"
    for path, data in ((cert, certificate.cert), (key, certificate.key)):
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
            out.write(data)
    return kopf.WebhookServer(
        addr=admission.host, port=admission.port, certfile=str(cert), pkeyfile=str(key)
    )
