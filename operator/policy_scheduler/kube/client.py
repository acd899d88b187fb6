"""The synchronous ``kubernetes`` client, kept off the event loop.

Every call runs in a bounded thread pool whose size is also the client's connection pool size,
so concurrent binds neither queue for a socket nor block Kopf's event loop.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from kubernetes import client, config

T = TypeVar("T")

GROUP = "policy-scheduler.dev"
VERSION = "v1alpha1"
PLURAL = "schedulingpolicies"


class Kube:
    """API objects for the resources the operator touches, and the pool that calls them."""

    def __init__(self, kubeconfig: str | None, concurrency: int) -> None:
        configuration = client.Configuration()
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        else:
            config.load_incluster_config(client_configuration=configuration)
        configuration.connection_pool_maxsize = concurrency
        self.api = client.ApiClient(configuration)
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.coordination = client.CoordinationV1Api(self.api)
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="kube")

    async def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one blocking client call in the pool."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(function, *args, **kwargs))

    async def send(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Run one blocking client call whose answer is not needed.

        The answer is neither decoded into the client's models (time spent for nothing) nor left
        unread: with ``_preload_content=False`` the client hands back the raw HTTP response, and
        until that is read its connection is not returned to the pool, so every such call would
        open a new TLS connection (the profile's largest cost before this).
        """

        def call() -> None:
            response = function(*args, _preload_content=False, **kwargs)
            response.drain_conn()
            response.release_conn()

        await asyncio.get_running_loop().run_in_executor(self._pool, call)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.api.close()


def error_message(error: client.ApiException) -> str:
    """The API server's own message from a failed call (its Status body), else the HTTP reason."""
    try:
        return str(json.loads(error.body or "")["message"])
    except (TypeError, ValueError, KeyError):
        return f"{error.status} {error.reason}"
