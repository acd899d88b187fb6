"""The CPU one API request costs the operator: its client (``Kube`` over kube/transport.py)
beside aiohttp's client, against a real kube-apiserver.

Starts a control plane (``hack/controlplane/up`` into a temporary directory, torn down at the
end), creates a namespace and a ConfigMap in it, then, on uvloop as the operator runs, sends
through each client, after a warm-up, ``--requests`` event POSTs (shaped as the operator's
``Scheduled`` events), ``--concurrency`` at once, and as many GETs of the ConfigMap. They go in
``--blocks`` blocks, the two clients' in turn, each block timed by ``time.process_time()``, this
process's CPU (the control plane runs in its own processes), JSON encoding and decoding included,
and by the wall clock. The CPU per request is the median block's: a block that shared the
machine with a burst of something else does not move it.

``Kube`` is constructed as the operator constructs it (``Kube(kubeconfig, concurrency=N)``).
The aiohttp client does what ``Kube.request`` does (headers, orjson, the status check, the
timeout) over one ``ClientSession`` with as many connections, as the operator's client did
before kube/transport.py replaced it.

    python bench/bench_transport.py [--requests N] [--concurrency C] [--blocks B]

The machine's other load moves the wall time; the CPU per request much less, which makes it the
figure to compare between runs and commits.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvloop
import yaml
from harness.controlplane import ControlPlane
from raw_binder import event_body

from policy_scheduler.kube.client import Kube, path
from policy_scheduler.kube.credentials import load

NAMESPACE = "bench-transport"
CONFIGMAP = "one"
WARM_UP = 300

Send = Callable[[str, str, dict[str, Any] | None], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Phase:
    """One block of requests: how many, the CPU they took (seconds) and the wall time."""

    requests: int
    cpu: float
    wall: float


@dataclass(frozen=True)
class Figures:
    """One client's blocks of one method."""

    blocks: list[Phase]

    @property
    def requests(self) -> int:
        return sum(block.requests for block in self.blocks)

    @property
    def ms_per_request(self) -> float:
        return statistics.median(1000 * block.cpu / block.requests for block in self.blocks)

    @property
    def wall(self) -> float:
        return sum(block.wall for block in self.blocks)


def scheduled(i: int) -> dict[str, Any]:
    """The ``Scheduled`` event of a pod, as the operator's Recorder posts one for a pod it bound."""
    return event_body(NAMESPACE, f"web-{i}", f"00000000-0000-0000-0000-{i:012d}", "node", "bench")


async def measure(send: Send, method: str, count: int, concurrency: int) -> Phase:
    """``count`` requests, ``concurrency`` at once, each from its own worker's loop."""
    events_path = path("api", "v1", "namespaces", NAMESPACE, "events")
    get_path = path("api", "v1", "namespaces", NAMESPACE, "configmaps", CONFIGMAP)
    numbers = iter(range(count))

    async def worker() -> None:
        for i in numbers:
            if method == "POST":
                await send("POST", events_path, scheduled(i))
            else:
                await send("GET", get_path, None)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Phase(count, time.process_time() - cpu, time.perf_counter() - wall)


class AiohttpClient:
    """``Kube.request``'s work over aiohttp's client."""

    def __init__(self, kubeconfig: Path, concurrency: int) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self._server = cluster["server"]
        self._token = f"Bearer {config['users'][0]['user']['token']}"
        self._ssl = ssl.create_default_context(cafile=cluster["certificate-authority"])
        self._concurrency = concurrency
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> AiohttpClient:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._concurrency, ssl=self._ssl),
            trust_env=False,
        )
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(
        self, method: str, url_path: str, body: dict[str, Any] | None
    ) -> dict[str, Any]:
        assert self._session is not None
        headers = {
            "Accept": "application/json",
            "Content-Type": "application/json",
            "Authorization": self._token,
        }
        data = None if body is None else orjson.dumps(body)
        async with (
            asyncio.timeout(30.0),
            self._session.request(
                method, self._server + url_path, data=data, headers=headers
            ) as response,
        ):
            payload = await response.read()
            if response.status >= 300:
                raise RuntimeError(f"{method} {url_path}: {response.status} {payload[:200]!r}")
        decoded: dict[str, Any] = orjson.loads(payload) if payload else {}
        return decoded


async def bench(
    kubeconfig: Path, requests: int, concurrency: int, blocks: int
) -> dict[str, dict[str, Figures]]:
    """Per client, per method, its figures."""
    kube = Kube(load(str(kubeconfig)), concurrency=concurrency)
    try:
        await kube.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        await kube.request(
            "POST",
            path("api", "v1", "namespaces", NAMESPACE, "configmaps"),
            {"metadata": {"name": CONFIGMAP}, "data": {"key": "value"}},
        )
        async with AiohttpClient(kubeconfig, concurrency) as aiohttp_client:
            clients: dict[str, Send] = {
                "Kube (kube/transport.py)": kube.request,
                "aiohttp's client": aiohttp_client.request,
            }
            phases: dict[str, dict[str, list[Phase]]] = {
                name: {"POST": [], "GET": []} for name in clients
            }
            for send in clients.values():
                await measure(send, "POST", WARM_UP, concurrency)
                await measure(send, "GET", WARM_UP, concurrency)
            for _block in range(blocks):
                for method in ("POST", "GET"):
                    for name, send in clients.items():
                        phase = await measure(send, method, requests // blocks, concurrency)
                        phases[name][method].append(phase)
    finally:
        await kube.close()
    return {
        name: {method: Figures(measured) for method, measured in methods.items()}
        for name, methods in phases.items()
    }


def table(results: dict[str, dict[str, Figures]]) -> str:
    lines = [
        "| client | requests | POST ms CPU/request | GET ms CPU/request | POST wall s "
        "| GET wall s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, figures in results.items():
        post, get = figures["POST"], figures["GET"]
        lines.append(
            f"| {name} | {post.requests} | {post.ms_per_request:.3f} | {get.ms_per_request:.3f} "
            f"| {post.wall:.2f} | {get.wall:.2f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=3000, help="POSTs, then GETs (3000)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests at once (16)")
    parser.add_argument("--blocks", type=int, default=5, help="blocks of requests (5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-transport-") as state:
        state_dir = Path(state) / "cluster"
        try:
            ControlPlane.up(state_dir)
            results = uvloop.run(
                bench(state_dir / "kubeconfig", args.requests, args.concurrency, args.blocks)
            )
        finally:
            ControlPlane(state_dir).down()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
