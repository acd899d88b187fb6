"""The operator's API client: paths, credentials, and what it makes of a refused connection, an
error status, an answer that is not JSON and a silent watch (against test_kube_transport.py's
server of canned answers)."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from test_kube_transport import CannedServer, listening

from policy_scheduler.kube import transport
from policy_scheduler.kube.client import JSON, ApiError, Kube, path, pod_path
from policy_scheduler.kube.credentials import load


@pytest.mark.parametrize(
    ("segments", "expected"),
    [
        pytest.param(("api", "v1", "namespaces"), "/api/v1/namespaces", id="plain segments"),
        pytest.param(("apis", "a.b", "v1", "x y"), "/apis/a.b/v1/x%20y", id="space is quoted"),
        pytest.param(("api", "a/b"), "/api/a%2Fb", id="a slash cannot add a segment"),
    ],
)
def test_path(segments: tuple[str, ...], expected: str) -> None:
    assert path(*segments) == expected


def test_pod_path_names_the_subresource() -> None:
    assert pod_path("ns", "web-0", "binding") == "/api/v1/namespaces/ns/pods/web-0/binding"


def kubeconfig(tmp_path: Path, server: str) -> str:
    """A kubeconfig for ``server`` with a token (test_lease_fence.py uses it too)."""
    config = tmp_path / "kubeconfig"
    config.write_text(
        f"""apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {{server: "{server}", insecure-skip-tls-verify: true}}
users:
- name: operator
  user: {{token: secret-token}}
contexts:
- name: local
  context: {{cluster: local, user: operator}}
current-context: local
"""
    )
    return str(config)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_requests_carry_the_kubeconfig_token(tmp_path: Path) -> None:
    kube = Kube(load(kubeconfig(tmp_path, f"https://127.0.0.1:{_closed_port()}")), concurrency=1)
    headers = asyncio.run(kube._headers(JSON))
    assert headers["Authorization"] == "Bearer secret-token"
    assert headers["Content-Type"] == JSON


def test_an_unreachable_server_is_an_api_error_naming_the_request(tmp_path: Path) -> None:
    kube = Kube(load(kubeconfig(tmp_path, f"https://127.0.0.1:{_closed_port()}")), concurrency=1)

    async def scenario() -> None:
        try:
            with pytest.raises(ApiError) as raised:
                await kube.request("POST", pod_path("ns", "web-0", "binding"), {})
        finally:
            await kube.close()
        assert raised.value.status == 0
        assert raised.value.message.startswith("POST /api/v1/namespaces/ns/pods/web-0/binding: ")

    asyncio.run(scenario())


def sized(status: str, body: bytes) -> bytes:
    """An answer with ``body`` and its Content-Length."""
    return f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


@pytest.mark.parametrize(
    ("answer", "status", "message"),
    [
        pytest.param(
            sized("404 Not Found", b'{"message": "pods \\"x\\" gone"}'),
            404, 'pods "x" gone', id="an error status carries the server's message",
        ),
        pytest.param(
            sized("404 Not Found", b"404 page not found"),
            404, "404 Not Found", id="an error status without a Status body: the HTTP reason",
        ),
        pytest.param(
            sized("200 OK", b"hello"),
            0, "GET /api/v1/pods/x: unexpected character, expected a JSON value",
            id="a success that is not JSON",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{",
            0, "GET /api/v1/pods/x: " + transport.CUT_OFF, id="an answer cut off",
        ),
    ],
)  # fmt: skip
def test_a_failed_request_is_an_api_error(
    tmp_path: Path, answer: bytes, status: int, message: str
) -> None:
    async def scenario() -> None:
        async with canned(tmp_path, CannedServer(answer, close=True)) as kube:
            with pytest.raises(ApiError) as raised:
                await kube.request("GET", "/api/v1/pods/x")
        assert raised.value.status == status
        assert raised.value.message.startswith(message)

    asyncio.run(scenario())


def test_a_namespace_being_deleted_is_not_told_as_a_refused_permission(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The API server's 403 for new content in a terminating namespace (its NamespaceLifecycle
    # admission): the operator's RBAC allows the request, so there is nothing to re-apply.
    status = {
        "kind": "Status",
        "status": "Failure",
        "message": 'events "web.1" is forbidden: unable to create new content in namespace ns '
        "because it is being terminated",
        "reason": "Forbidden",
        "details": {
            "name": "web.1",
            "kind": "events",
            "causes": [
                {
                    "reason": "NamespaceTerminating",
                    "message": "namespace ns is being terminated",
                    "field": "metadata.namespace",
                }
            ],
        },
        "code": 403,
    }
    answer = sized("403 Forbidden", json.dumps(status).encode())

    async def scenario() -> None:
        async with canned(tmp_path, CannedServer(answer, close=True)) as kube:
            with pytest.raises(ApiError) as raised:
                await kube.request("POST", "/api/v1/namespaces/ns/events", {})
            assert raised.value.status == 403
            assert not kube.refusals

    with caplog.at_level(logging.ERROR, logger="policy_scheduler.kube.refusals"):
        asyncio.run(scenario())
    assert not caplog.records


def test_a_watch_silent_past_its_read_timeout_is_an_api_error(tmp_path: Path) -> None:
    # One object, in two chunks; then nothing, on a connection kept open.
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    answer = head + b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (b'{"type": ', b'"ADDED"}\n'))

    async def scenario() -> None:
        seen: list[str] = []
        async with canned(tmp_path, CannedServer(answer)) as kube:
            with pytest.raises(ApiError) as raised:
                async for event in kube.stream("/api/v1/pods?watch=1", read_timeout=0.2):
                    seen.append(event["type"])
        assert seen == ["ADDED"]
        assert raised.value.status == 0
        assert raised.value.message == "GET /api/v1/pods?watch=1: TimeoutError"

    asyncio.run(scenario())


@asynccontextmanager
async def canned(tmp_path: Path, server: CannedServer) -> AsyncIterator[Kube]:
    """A client of a server that answers every request with the same bytes."""
    async with listening(server) as url:
        kube = Kube(load(kubeconfig(tmp_path, url)), concurrency=1)
        try:
            yield kube
        finally:
            await kube.close()
