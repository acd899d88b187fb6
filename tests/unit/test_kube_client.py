"""The operator's API client, without a server: paths, credentials, and a refused connection."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from policy_scheduler.kube.client import JSON, ApiError, Kube, path, pod_path


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
    kube = Kube(kubeconfig(tmp_path, f"https://127.0.0.1:{_closed_port()}"), concurrency=1)
    headers = kube._headers(JSON)
    assert headers["Authorization"] == "Bearer secret-token"
    assert headers["Content-Type"] == JSON


def test_an_unreachable_server_is_an_api_error_naming_the_request(tmp_path: Path) -> None:
    kube = Kube(kubeconfig(tmp_path, f"https://127.0.0.1:{_closed_port()}"), concurrency=1)

    async def scenario() -> None:
        try:
            with pytest.raises(ApiError) as raised:
                await kube.request("POST", pod_path("ns", "web-0", "binding"), {})
        finally:
            await kube.close()
        assert raised.value.status == 0
        assert raised.value.message.startswith("POST /api/v1/namespaces/ns/pods/web-0/binding: ")

    asyncio.run(scenario())
