"""The operator's own HTTP endpoints: Prometheus metrics (``run --metrics URL``) and readiness
(``run --readiness URL``), served on the operator's event loop.

Kopf's server answers the liveness probe (``--liveness``) and takes no other route; a scrape and
a readiness check read the scheduler's queue, cache and watches, which only the event loop may
touch, so a server thread would race the scheduler. Endpoints that share a host and port share
one server (``--metrics http://0.0.0.0:8081/metrics --readiness http://0.0.0.0:8081/readyz``,
as deploy/ serves them). A URL without a port takes the endpoint's own default, never port 80,
which the image's non-root user may not bind.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CollectorRegistry

from policy_scheduler.metrics import scrape

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
OK = 200
UNAVAILABLE = 503


def metrics_route(registry: CollectorRegistry) -> Handler:
    """Serves ``registry`` to Prometheus."""

    async def serve(request: web.Request) -> web.StreamResponse:
        body, content_type = scrape(registry, request.headers.get("Accept", ""))
        return web.Response(body=body, headers={"Content-Type": content_type})

    return serve


def readiness_route(read: Callable[[], tuple[bool, Mapping[str, Any]]]) -> Handler:
    """Answers 200 while ``read()`` says ready, else 503, with its report as JSON."""

    async def serve(_: web.Request) -> web.StreamResponse:
        ready, report = read()
        return web.Response(
            body=orjson.dumps(report),
            status=OK if ready else UNAVAILABLE,
            content_type="application/json",
        )

    return serve


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where to serve one thing: an ``http://HOST:PORT/PATH`` URL, as Kopf's ``--liveness``."""

    host: str
    port: int
    path: str

    @classmethod
    def parse(cls, url: str, default_port: int, default_path: str) -> Endpoint:
        """Host defaults to localhost (as Kopf's), port to ``default_port``, path to
        ``default_path``."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or parts.query or parts.fragment:
            raise ValueError(f"{url!r} is not an http://HOST:PORT/PATH URL")
        try:
            port = parts.port or default_port
        except ValueError:
            raise ValueError(f"{url!r} has an invalid port") from None
        return cls(parts.hostname or "localhost", port, parts.path or default_path)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.path}"


class Servers:
    """Serves ``routes`` (an endpoint and its handler each), one server per host and port, until
    stopped."""

    def __init__(self, routes: Mapping[Endpoint, Handler]) -> None:
        self._apps: dict[tuple[str, int], web.Application] = {}
        for endpoint, handler in routes.items():
            app = self._apps.setdefault((endpoint.host, endpoint.port), web.Application())
            app.router.add_get(endpoint.path, handler)
        self._served = list(routes)
        self._runners: list[web.AppRunner] = []

    async def start(self) -> None:
        """Listen; an address that cannot be bound raises :class:`OSError` naming it."""
        for (host, port), app in self._apps.items():
            runner = web.AppRunner(app, handle_signals=False, access_log=None)
            await runner.setup()
            try:
                await web.TCPSite(runner, host, port).start()
            except OSError as error:
                await runner.cleanup()
                await self.stop()
                served = ", ".join(str(e) for e in self._served if (e.host, e.port) == (host, port))
                raise OSError(error.errno, f"cannot serve {served}: {error.strerror}") from None
            self._runners.append(runner)
        for endpoint in self._served:
            logger.info("serving %s", endpoint)

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
