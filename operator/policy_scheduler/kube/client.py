"""The operator's API client: JSON over HTTP/1.1, on Kopf's event loop.

Every call the scheduler makes (binds, events, pod conditions, policy status, the Lease) is a
plain REST request whose body is a dict, so the client is a thin one: the process's
:class:`~policy_scheduler.kube.credentials.Credentials` say where the server is and what to
send it (a token kept current: exec plugins, token files, OIDC), and
:class:`~policy_scheduler.kube.transport.Pool` sends the requests over a bounded pool of
keep-alive connections. The JSON is orjson's: every pod the watch brings is decoded here, and a
pod of the benchmark decodes in 12 µs on it against 28 µs on the standard library's.

It runs on the event loop, not as a generated synchronous client in a thread pool: under a
burst, such threads take a third of the operator's CPU (model validation, urllib3, thread
hand-offs) and hold the GIL the scheduling loop waits for; on the loop, a request costs a few
coroutine steps and no thread. (The transport's docstring says why it is not aiohttp's.)

A request refused as unauthenticated (401) is sent once more with credentials fetched afresh:
a token that expired in flight, or one rotated under us, costs one retry and no failure. What
the API server refuses (401, 403) is told to :class:`Refusals`: the first refusal of each kind
of request is logged at once, naming what was refused, and every one is counted, since a
permission taken away (RBAC older than the code) is something only a person can fix.

With leader election, the client is fenced (:meth:`Kube.fence`): a write (POST, PUT, PATCH,
DELETE) is sent only while this replica leads by its own clock, else it fails with
:class:`NotLeading`. Binds, events, pod conditions and status all go through here, so a leader
frozen past its renew deadline (SIGSTOP, a stalled VM) writes nothing when it resumes: a standby
may hold the Lease by then, and a bind decided on the old leader's picture would overcommit the
nodes the new leader fills. The fence is checked at the last moment, on a connection already
open, in the same step of the event loop as the write of the request's bytes: a check before
the connection's opening (TCP, TLS) would leave a wait in between, and a leader frozen in there
would send its bind on resuming, checked before it froze. What a request meets once
sent (the network) is what the Lease's margin over the renew deadline is for, as in client-go.
Reads and watches are never fenced.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import platform
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import orjson

from policy_scheduler import __version__
from policy_scheduler.kube.credentials import Credentials, CredentialsError
from policy_scheduler.kube.refusals import Refusals
from policy_scheduler.kube.transport import HttpError, Pool, Response

logger = logging.getLogger(__name__)

GROUP = "policy-scheduler.dev"
VERSION = "v1alpha1"
PLURAL = "schedulingpolicies"

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

REQUEST_TIMEOUT = 30.0
"""Seconds one request may take, connection included; a watch, until its answer starts."""
UNAUTHORIZED = 401
FORBIDDEN = 403
USER_AGENT = (
    f"policy-scheduler/{__version__} ({platform.system().lower()}/{platform.machine()}) "
    f"python/{platform.python_version()}"
)
"""What the API server's audit log and metrics name the operator by."""
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""The methods the fence holds back."""


class ApiError(Exception):
    """A request the API server answered with an error status (or could not be sent: status 0)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class NotLeading(ApiError):  # noqa: N818 (not a fault: a write held back on purpose)
    """A write not sent because this replica may no longer lead: its Lease's renew deadline has
    passed by its own clock, so a standby may hold the Lease. Status 0, as for a request that was
    not answered, but certain: nothing reached the API server. Not worth retrying, nor reading
    back: a replica past its deadline never leads again (it exits)."""

    def __init__(self, method: str, url_path: str, lease: str) -> None:
        super().__init__(
            0,
            f"{method} {url_path}: not sent: the renew deadline of Lease {lease} has passed by "
            "this replica's clock, so it may no longer lead",
        )


def path(*segments: str) -> str:
    """An API path from its segments, each quoted (names are DNS labels, but a path is a path)."""
    return "/" + "/".join(quote(segment, safe="") for segment in segments)


def pod_path(namespace: str, name: str, *subresource: str) -> str:
    return path("api", "v1", "namespaces", namespace, "pods", name, *subresource)


def _message(status: int, reason: str | None, payload: bytes) -> str:
    """The API server's own message from its Status body, else the HTTP reason."""
    try:
        return str(orjson.loads(payload)["message"])
    except (TypeError, ValueError, KeyError):
        return f"{status} {reason or ''}".strip()


def _namespace_terminating(payload: bytes) -> bool:
    """Whether an error's Status body says its namespace is being deleted: the 403 of admission
    (NamespaceLifecycle) to new content there, which no RBAC rule changes."""
    try:
        causes = orjson.loads(payload)["details"]["causes"]
        return any(cause.get("reason") == "NamespaceTerminating" for cause in causes)
    except (TypeError, ValueError, KeyError, AttributeError):
        return False


class Kube:
    """The API server the operator talks to, as ``credentials`` say, with at most
    ``concurrency`` requests in flight."""

    def __init__(self, credentials: Credentials, concurrency: int) -> None:
        self.credentials = credentials
        self.refusals = Refusals(credentials.target.source)
        """What the API server refused, told once per kind and counted."""
        self._concurrency = concurrency
        self._pool: Pool | None = None
        self._may_write: Callable[[], bool] | None = None
        self._lease = ""

    def fence(self, may_write: Callable[[], bool], lease: str) -> None:
        """From now on, send a write only while ``may_write()`` says this replica leads; else
        raise :class:`NotLeading`, naming ``lease`` (``namespace/name``). Taking the Lease and
        giving it up, which a replica does while it does not lead, pass ``fenced=False``."""
        self._may_write = may_write
        self._lease = lease

    def _open(self) -> Pool:
        # Made on first use: its connections belong to the event loop they were opened on, Kopf's.
        if self._pool is None:
            target = self.credentials.target
            self._pool = Pool(
                target.server,
                self.credentials.ssl_context,
                self._concurrency,
                proxy=target.proxy,
            )
        return self._pool

    async def _headers(self, content_type: str) -> dict[str, str]:
        headers = {"Accept": JSON, "Content-Type": content_type, "User-Agent": USER_AGENT}
        authorization = await self.credentials.authorization()
        if authorization:
            headers["Authorization"] = authorization
        return headers

    @contextlib.asynccontextmanager
    async def _answer(
        self,
        method: str,
        url_path: str,
        data: bytes | None = None,
        content_type: str = JSON,
        *,
        fenced: bool = True,
    ) -> AsyncIterator[tuple[Response, asyncio.Timeout]]:
        """The server's answer, once its status says success, with the deadline of the whole
        exchange (:data:`REQUEST_TIMEOUT` from now, for the caller to move); else
        :class:`ApiError` (status 0 when no answer came in time, it broke off, it was not JSON,
        or no credential could be had), or :class:`NotLeading` for a ``fenced`` write the fence
        holds back. A 401 is tried once more with credentials fetched afresh."""
        hold_back = None
        if fenced and method in WRITES and self._may_write is not None:
            hold_back = functools.partial(self._hold_back, self._may_write, method, url_path)
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT) as deadline:
                for last in (False, True):
                    headers = await self._headers(content_type)
                    async with self._open().request(
                        method, url_path, headers, data, before_send=hold_back
                    ) as response:
                        if response.status == UNAUTHORIZED and not last:
                            await response.read()
                            self.credentials.refused(headers.get("Authorization"))
                            continue
                        if response.status >= 300:
                            payload = await response.read()
                            message = _message(response.status, response.reason, payload)
                            refused = response.status in (UNAUTHORIZED, FORBIDDEN)
                            if refused and not _namespace_terminating(payload):
                                self.refusals.refused(method, url_path, response.status, message)
                            raise ApiError(response.status, message)
                        if self.refusals:
                            self.refusals.allowed(method, url_path)
                        yield response, deadline
                        return
        except CredentialsError as error:
            self.refusals.no_credentials(str(error))
            raise ApiError(0, f"{method} {url_path}: no credentials: {error}") from error
        except (HttpError, OSError, TimeoutError, ValueError) as error:
            # A timeout's text is empty: its kind says what happened.
            reason = str(error) or type(error).__name__
            raise ApiError(0, f"{method} {url_path}: {reason}") from error

    def _hold_back(self, may_write: Callable[[], bool], method: str, url_path: str) -> None:
        if not may_write():
            raise NotLeading(method, url_path, self._lease)

    async def request(
        self,
        method: str,
        url_path: str,
        body: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        content_type: str = JSON,
        *,
        fenced: bool = True,
    ) -> dict[str, Any]:
        """Send one request (``body``: an object, or a JSON patch's operations); the decoded
        answer of a 2xx, else :class:`ApiError`. A write is held to the fence (:meth:`fence`)
        unless ``fenced`` is false: the Lease's own requests."""
        data = None if body is None else orjson.dumps(body)
        async with self._answer(method, url_path, data, content_type, fenced=fenced) as (
            answer,
            _deadline,
        ):
            payload = await answer.read()
            decoded: dict[str, Any] = orjson.loads(payload) if payload else {}
        return decoded

    async def pages(
        self, collection: str, params: Mapping[str, str | int]
    ) -> AsyncIterator[dict[str, Any]]:
        """The pages of a listing of ``collection`` (with ``params``: ``limit``, a field
        selector), following each page's ``continue`` token to the last."""
        token = ""
        while True:
            query = {**params, **({"continue": token} if token else {})}
            page = await self.request("GET", f"{collection}?{urlencode(query)}")
            yield page
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return

    async def stream(self, url_path: str, read_timeout: float) -> AsyncIterator[dict[str, Any]]:
        """The objects of a newline-delimited JSON answer to a GET (a watch), as they arrive;
        :class:`ApiError` once none has come for ``read_timeout`` seconds."""
        loop = asyncio.get_running_loop()
        async with self._answer("GET", url_path) as (answer, deadline):
            pending = b""
            pieces = answer.chunks()
            while True:
                # The wait for bytes is timed, not the reader's handling of an object.
                deadline.reschedule(loop.time() + read_timeout)
                chunk = await anext(pieces, None)
                deadline.reschedule(None)
                if chunk is None:
                    break
                # An object is one line, however long (large annotations), and may come in
                # several chunks.
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    if line.strip():
                        yield orjson.loads(line)

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
