"""The operator's API client: JSON over aiohttp, on Kopf's event loop.

Every call the scheduler makes (binds, events, pod conditions, policy status, the Lease) is a
plain REST request whose body is a dict, so the client is a thin one: ``kubernetes``' config
loader supplies the server, the credentials and the CA (kubeconfig, exec plugins, in-cluster
token rotation), and aiohttp sends the requests over a bounded pool of keep-alive connections.

It replaced the generated synchronous client in a thread pool: under a burst, the profile of the
operator showed a third of its CPU in those threads (model validation, urllib3, thread hand-offs)
and the scheduling loop waiting for the GIL they held; on the loop, a request costs a few
coroutine steps and no thread.
"""

from __future__ import annotations

import contextlib
import json
import math
import ssl
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import aiohttp
from kubernetes import client, config

GROUP = "policy-scheduler.dev"
VERSION = "v1alpha1"
PLURAL = "schedulingpolicies"

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

REQUEST_TIMEOUT = 30.0
"""Seconds one request may take, connection included."""
_REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
TOKEN_REFRESH = 60.0
"""Seconds a bearer token is used before the credentials are asked again."""


class ApiError(Exception):
    """A request the API server answered with an error status (or could not be sent: status 0)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def path(*segments: str) -> str:
    """An API path from its segments, each quoted (names are DNS labels, but a path is a path)."""
    return "/" + "/".join(quote(segment, safe="") for segment in segments)


def pod_path(namespace: str, name: str, *subresource: str) -> str:
    return path("api", "v1", "namespaces", namespace, "pods", name, *subresource)


def _ssl_context(configuration: client.Configuration) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _message(status: int, reason: str | None, payload: bytes) -> str:
    """The API server's own message from its Status body, else the HTTP reason."""
    try:
        return str(json.loads(payload)["message"])
    except (TypeError, ValueError, KeyError):
        return f"{status} {reason or ''}".strip()


class Kube:
    """The API server the operator talks to, with at most ``concurrency`` requests in flight."""

    def __init__(self, kubeconfig: str | None, concurrency: int) -> None:
        configuration = client.Configuration()
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        else:
            config.load_incluster_config(client_configuration=configuration)
        self._configuration = configuration
        self._server = configuration.host.rstrip("/")
        self._ssl = _ssl_context(configuration)
        self._concurrency = concurrency
        self._session: aiohttp.ClientSession | None = None
        self._authorization: str | None = None
        self._authorization_at = -math.inf

    def _open(self) -> aiohttp.ClientSession:
        # Made on first use: a session belongs to the event loop it was made on, Kopf's.
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._concurrency, ssl=self._ssl),
                # Nothing from the environment: no proxy between the operator and its API server.
                trust_env=False,
            )
        return self._session

    def _headers(self, content_type: str) -> dict[str, str]:
        headers = {"Accept": JSON, "Content-Type": content_type}
        now = time.monotonic()
        if now - self._authorization_at >= TOKEN_REFRESH:
            # The loader's refresh hook renews expiring tokens (in-cluster, exec plugins), but
            # re-reads the kubeconfig to do it: once a minute, as client-go re-reads its token
            # file, not once per request. (The loaders store the token as "BearerToken", older
            # ones as "authorization".)
            self._authorization = self._configuration.get_api_key_with_prefix(
                "BearerToken", alias="authorization"
            )
            self._authorization_at = now
        if self._authorization:
            headers["Authorization"] = self._authorization
        return headers

    @contextlib.asynccontextmanager
    async def _answer(
        self,
        method: str,
        url_path: str,
        timeout: aiohttp.ClientTimeout,
        data: str | None = None,
        content_type: str = JSON,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """The server's answer, once its status says success; else :class:`ApiError` (status 0
        when no answer came, it broke off, or it was not JSON)."""
        try:
            async with self._open().request(
                method,
                self._server + url_path,
                data=data,
                headers=self._headers(content_type),
                timeout=timeout,
            ) as response:
                if response.status >= 300:
                    payload = await response.read()
                    raise ApiError(
                        response.status, _message(response.status, response.reason, payload)
                    )
                yield response
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            raise ApiError(0, f"{method} {url_path}: {error or type(error).__name__}") from error

    async def request(
        self,
        method: str,
        url_path: str,
        body: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        content_type: str = JSON,
    ) -> dict[str, Any]:
        """Send one request (``body``: an object, or a JSON patch's operations); the decoded
        answer of a 2xx, else :class:`ApiError`."""
        data = None if body is None else json.dumps(body)
        async with self._answer(method, url_path, _REQUEST_TIMEOUT, data, content_type) as answer:
            payload = await answer.read()
            decoded: dict[str, Any] = json.loads(payload) if payload else {}
        return decoded

    async def stream(self, url_path: str, read_timeout: float) -> AsyncIterator[dict[str, Any]]:
        """The objects of a newline-delimited JSON answer to a GET (a watch), as they arrive."""
        timeout = aiohttp.ClientTimeout(sock_connect=REQUEST_TIMEOUT, sock_read=read_timeout)
        async with self._answer("GET", url_path, timeout) as answer:
            # Lines are split here, not by aiohttp's line reader: it refuses lines longer than
            # its buffer, and an object with large annotations is one long line.
            pending = b""
            async for chunk in answer.content.iter_any():
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
