"""The harness's Kubernetes API client, for the tests, the benchmarks and the raw binder.

Plain ``requests`` over one pooled session, with the token and CA of a kubeconfig as
``hack/controlplane/up`` writes them. The generated ``kubernetes`` client would build and parse
model objects for every call; here the client must cost the harness (and the raw binder, whose CPU
is measured) as little as possible, so bodies are bytes or plain dicts.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import requests
import yaml
from requests.adapters import HTTPAdapter

from harness.controlplane import CRD
from harness.wait import poll

# Answers worth trying again: the server was busy (APF's 429) or restarting a connection.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
ATTEMPTS = 5


class ApiError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"{status}: {text[:300]}")
        self.status = status


class Api:
    """One identity (a kubeconfig's token) on one API server, with ``pool`` keep-alive sockets."""

    def __init__(self, kubeconfig: Path, pool: int = 16) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.server: str = cluster["server"]
        self.session = requests.Session()
        # Nothing from the environment: a REQUESTS_CA_BUNDLE would replace the cluster's CA, and
        # a proxy has no business between us and 127.0.0.1.
        self.session.trust_env = False
        self.session.verify = cluster["certificate-authority"]
        self.session.headers["Authorization"] = f"Bearer {config['users'][0]['user']['token']}"
        self.session.headers["Content-Type"] = "application/json"
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=pool)
        self.session.mount("https://", adapter)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        ok: frozenset[int] = frozenset(),
        *,
        content_type: str | None = None,
    ) -> requests.Response:
        """The response of a 2xx answer or of a status in ``ok``; retried on 429 and 5xx.
        ``content_type`` replaces the session's ``application/json`` (patches need their own)."""
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        headers = {"Content-Type": content_type} if content_type else None
        for attempt in range(ATTEMPTS):
            try:
                response = self.session.request(
                    method,
                    self.server + path,
                    data=data,
                    params=params,
                    headers=headers,
                    timeout=60,
                )
            except requests.ConnectionError:
                if attempt == ATTEMPTS - 1:
                    raise
            else:
                if response.ok or response.status_code in ok:
                    return response
                if response.status_code not in RETRY_STATUSES or attempt == ATTEMPTS - 1:
                    raise ApiError(response.status_code, response.text)
            time.sleep(0.2 * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def get(self, path: str, **params: str) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", path, params=params).json()
        return result

    def post(self, path: str, body: bytes | Mapping[str, Any], exists_ok: bool = False) -> int:
        """POST and return the status; 409 (already there) counts as done when ``exists_ok``,
        since a create retried after a lost answer may find its own object."""
        ok = frozenset({409}) if exists_ok else frozenset()
        return self.request("POST", path, body, ok=ok).status_code

    def merge_patch(self, path: str, body: Mapping[str, Any]) -> None:
        """A JSON merge patch (RFC 7386): the fields of ``body`` set, the rest left alone."""
        self.request("PATCH", path, body, content_type="application/merge-patch+json")

    def list_items(self, path: str, **params: str) -> list[dict[str, Any]]:
        """Every item of a list, page by page (the server caps what one answer holds)."""
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            page = self.get(path, limit="1000", **({"continue": token} if token else {}), **params)
            items += page.get("items") or []
            token = page["metadata"].get("continue") or ""
            if not token:
                return items

    def watch(self, path: str, resource_version: str, **params: str) -> Iterator[dict[str, Any]]:
        """Watch events from ``resource_version`` until the server ends the stream."""
        query = {"watch": "1", "resourceVersion": resource_version, **params}
        with self.session.get(
            self.server + path, params=query, stream=True, timeout=(10, 3600)
        ) as response:
            if not response.ok:
                raise ApiError(response.status_code, response.text)
            # chunk_size=None hands over each event as it arrives rather than when a buffer fills:
            # the arrival time is the measurement.
            for line in response.iter_lines(chunk_size=None):
                if line:
                    yield json.loads(line)

    def metrics(self) -> str:
        return self.request("GET", "/metrics").text


def follow(
    api: Api,
    path: str,
    version: str,
    stop: threading.Event,
    *,
    on_event: Callable[[str, dict[str, Any]], None],
    on_broken: Callable[[Exception], str | None],
    **params: str,
) -> None:
    """Follow the watch of ``path`` from ``version`` until ``stop`` is set, each event but
    bookmarks handed to ``on_event(type, object)``. A short server-side timeout lets the caller's
    thread see ``stop`` soon, and each reconnection resumes from the last resourceVersion, so
    nothing is missed. When the watch breaks, ``on_broken(error)``, half a second later, says
    where to go on from: a resourceVersion (it listed again), or None (where it was)."""
    while not stop.is_set():
        try:
            for event in api.watch(
                path, version, allowWatchBookmarks="true", timeoutSeconds="5", **params
            ):
                obj = event["object"]
                if event["type"] == "ERROR":
                    raise ApiError(obj.get("code", 0), obj.get("message", ""))
                version = obj["metadata"]["resourceVersion"]
                if event["type"] != "BOOKMARK":
                    on_event(event["type"], obj)
        except (ApiError, OSError, ValueError) as error:
            if stop.is_set():
                return
            time.sleep(0.5)
            with contextlib.suppress(ApiError, OSError, ValueError):
                version = on_broken(error) or version


def create_objects(api: Api, *files: Path) -> None:
    """Every object of the YAML ``files`` created, as ``kubectl create -f`` would (on a fresh
    control plane, where apply has nothing to merge): straight through the API, since a kubectl
    process per file costs most of a second to start."""
    for file in files:
        for doc in yaml.safe_load_all(file.read_text()):
            if not doc:
                continue
            group_version, kind = doc["apiVersion"], doc["kind"]
            base = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
            namespace = doc["metadata"].get("namespace")
            scope = f"/namespaces/{namespace}" if namespace else ""
            plural = kind.lower()[:-1] + "ies" if kind.endswith("y") else kind.lower() + "s"
            api.post(f"{base}{scope}/{plural}", doc, exists_ok=True)


def wait_established(api: Api, crd: str = CRD, timeout: float = 60.0) -> None:
    """Until the CRD ``crd`` is Established and its resources are served."""

    def established() -> bool:
        status = api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
        conditions = status.get("status", {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    poll(f"the CRD {crd} established", established, timeout, 0.1)
