"""List-then-watch of one resource kind, feeding the scheduler's cache: no store, indexer, delta
queue or resync of its own, as client-go's informers have; each object is handed on as it comes.

An informer lists the objects (in pages), hands each to ``on_change``, says it is synced, then
watches from the listing's resourceVersion and hands on every change and deletion as it comes.
When the watch ends (the server's timeout) it resumes from the last resourceVersion seen; when
that is too old (410 Gone) or anything fails, it says it is no longer synced (changes may be
missed until the next listing), lists again after a backoff, and reports the objects that
vanished meanwhile as deleted, so nothing stays counted that no longer exists.

Every watch of the operator is one of these (nodes, pods, SchedulingPolicies, the Services,
controllers and Namespaces that default spreading and pod affinity read, and the storage and
device objects that the volume plugins and DynamicResources read), rather than Kopf's: under a
burst, Kopf's per-event machinery (per-object workers, loggers, diff bases, handler states)
takes a fifth of the operator's CPU, and Kopf's index readiness wakes every waiting per-object
worker for each object listed, which takes 13 s to start on 1,000 nodes and minutes on
5,000. The scheduler needs none of that machinery: a decoded object, in order, per event. What
it keeps of each object is the informer's ``keep``: of a ReplicaSet, say, only its selector.

A watch that stops delivering (a connection dead without a word) is noticed within
:data:`READ_TIMEOUT`: the API server sends a bookmark on every watch at least once a minute, so
a longer silence is no quiet cluster. :attr:`Informer.last_sync` is when the informer last knew
itself current (a listing, an event, a bookmark): its age, exported per kind, shows a watch that
is stuck; ``synced`` whether it is current at all (a 403 after RBAC drift leaves it unsynced).
Relists after a failure back off, jittered (:func:`~policy_scheduler.kube.retry.jittered`).

An ``optional`` informer follows an API that a cluster may not serve (resource.k8s.io/v1 before
Kubernetes 1.34, or turned off by the API server's ``--runtime-config``): when its listing
answers 404, it says once that the API is not served, takes the collection as empty (and synced,
so that the scheduler does not wait for it forever) and lists again every
:data:`NOT_SERVED_RETRY` seconds, in case the API is turned on later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

from policy_scheduler.kube.client import ApiError, Kube
from policy_scheduler.kube.retry import jittered

logger = logging.getLogger(__name__)

Handler = Callable[[Mapping[str, Any]], None]
SyncHandler = Callable[[bool], None]
Keep = Callable[[dict[str, Any]], dict[str, Any]]

PAGE_SIZE = 500
WATCH_SECONDS = 300
"""How long the server keeps one watch open (client-go picks 5 to 10 minutes)."""
BOOKMARK_PERIOD = 60.0
"""The API server's watch cache sends a bookmark on every watch about this often."""
READ_TIMEOUT = BOOKMARK_PERIOD + 30.0
"""Seconds of silence after which a watch's connection is taken for dead."""
BACKOFF_INITIAL = 0.8
BACKOFF_MAX = 30.0
GONE = 410
NOT_FOUND = 404
NOT_SERVED_RETRY = 60.0
"""Seconds between listings of an optional collection whose API is not served."""


def _uid(raw: Mapping[str, Any]) -> str:
    return str((raw.get("metadata") or {}).get("uid", ""))


def _resource_version(raw: Mapping[str, Any]) -> str:
    return str((raw.get("metadata") or {}).get("resourceVersion", ""))


def trimmed(raw: dict[str, Any]) -> dict[str, Any]:
    """The object without ``metadata.managedFields``: the field managers' bookkeeping, often a
    third of a pod's bytes, which nothing in the scheduler reads (kube-scheduler's informers drop
    it too). With 10,000 pods, memory that matters."""
    metadata = raw.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return raw


class _ExpiredError(Exception):
    """The watch's resourceVersion is no longer available: list again."""


class Informer:
    """Keeps ``on_change``/``on_delete`` told about every object of one collection."""

    def __init__(
        self,
        kube: Kube,
        collection: str,
        on_change: Handler,
        on_delete: Handler,
        *,
        field_selector: str = "",
        on_synced: SyncHandler = lambda synced: None,
        keep: Keep = trimmed,
        page_size: int = PAGE_SIZE,
        optional: bool = False,
    ) -> None:
        """``on_synced`` is told True after every listing has been handed on, False when the
        watch breaks off, until the next listing. ``keep`` is what is handed on and remembered
        of each object (it must keep ``metadata.uid`` and ``metadata.resourceVersion``): by
        default all but ``metadata.managedFields``. ``page_size`` objects are listed at a time.
        ``optional``: a 404 means the API is not served, and the collection empty (see the
        module's docstring)."""
        self.collection = collection
        self.synced = asyncio.Event()
        """Set while the objects handed on are current: from a listing until the watch breaks."""
        self._kube = kube
        self._on_change = on_change
        self._on_delete = on_delete
        self._on_synced = on_synced
        self._field_selector = field_selector
        self._keep = keep
        self._page_size = page_size
        self._optional = optional
        self.served = True
        """False while an optional collection's API answers 404 (it is then taken as empty)."""
        self.last_sync: float | None = None
        """When (``time.monotonic``) the informer last knew itself current: the end of a
        listing, or a watch event or bookmark; None before its first listing."""
        # The objects last handed on, by uid: what a relisting compares against.
        self._known: dict[str, Mapping[str, Any]] = {}

    def _params(self, **params: str | int) -> dict[str, str | int]:
        """A listing's or watch's query: ``params`` and the informer's field selector."""
        if self._field_selector:
            params["fieldSelector"] = self._field_selector
        return params

    async def run(self) -> None:
        """List and watch until cancelled; errors are logged and retried, never raised."""
        backoff = BACKOFF_INITIAL
        while True:
            try:
                version = await self._list()
                backoff = BACKOFF_INITIAL
                while True:
                    version = await self._watch(version)
            except _ExpiredError:
                logger.info("watch of %s expired; listing again", self.collection)
                self._unsynced()
                continue
            except ApiError as error:
                if self._optional and error.status == NOT_FOUND:
                    self._not_served(error)
                    await asyncio.sleep(NOT_SERVED_RETRY)
                    continue
                logger.warning(
                    "watch of %s failed (%s); retrying in %.1f s",
                    self.collection,
                    error.message,
                    backoff,
                )
                self._unsynced()
            await asyncio.sleep(jittered(backoff))
            backoff = min(backoff * 2, BACKOFF_MAX)

    async def _list(self) -> str:
        items: list[Mapping[str, Any]] = []
        metadata: Mapping[str, Any] = {}
        async for page in self._kube.pages(self.collection, self._params(limit=self._page_size)):
            items += map(self._keep, page.get("items") or ())
            metadata = page.get("metadata") or {}
        if not self.served:
            logger.info("%s is served now; following it", self.collection)
            self.served = True
        listed = {_uid(raw): raw for raw in items}
        for uid in self._known.keys() - listed.keys():
            self._hand(self._on_delete, self._known[uid])
        self._known = listed
        for raw in items:
            self._hand(self._on_change, raw)
        self.last_sync = time.monotonic()
        self.synced.set()
        self._on_synced(True)
        return str(metadata.get("resourceVersion", ""))

    def _not_served(self, error: ApiError) -> None:
        """The API of an optional collection answered 404: it has no objects (those handed on
        before it went away are deleted), and waiting for it would stop the scheduler for good,
        so it counts as synced. Said once, not at every listing."""
        if self.served:
            logger.warning(
                "%s is not served by this API server (%s); taken as empty, listed again every "
                "%.0f s",
                self.collection,
                error.message,
                NOT_SERVED_RETRY,
            )
            self.served = False
        for raw in self._known.values():
            self._hand(self._on_delete, raw)
        self._known = {}
        self.last_sync = time.monotonic()
        if not self.synced.is_set():
            self.synced.set()
            self._on_synced(True)

    def forget(self) -> None:
        """Hand on every object known as deleted, and forget it: the informer, its task
        cancelled, no longer follows the collection and keeps nothing of it (its ``on_synced``
        is not told: the one who stopped it knows). Run again, it lists afresh."""
        known, self._known = self._known, {}
        for raw in known.values():
            self._hand(self._on_delete, raw)
        self.synced.clear()

    def _unsynced(self) -> None:
        if self.synced.is_set():
            self.synced.clear()
            self._on_synced(False)

    async def _watch(self, version: str) -> str:
        """Follow the watch from ``version``; the last version seen when the server ends it."""
        params = self._params(
            watch=1,
            resourceVersion=version,
            allowWatchBookmarks="true",
            timeoutSeconds=WATCH_SECONDS,
        )
        url = f"{self.collection}?{urlencode(params)}"
        async for event in self._kube.stream(url, read_timeout=READ_TIMEOUT):
            self.last_sync = time.monotonic()
            kind = event.get("type")
            raw = event.get("object") or {}
            if kind == "ERROR":
                if raw.get("code") == GONE:
                    raise _ExpiredError
                raise ApiError(int(raw.get("code") or 0), str(raw.get("message", raw)))
            raw = self._keep(raw)
            version = _resource_version(raw) or version
            if kind == "DELETED":
                self._known.pop(_uid(raw), None)
                self._hand(self._on_delete, raw)
            elif kind in ("ADDED", "MODIFIED"):
                self._known[_uid(raw)] = raw
                self._hand(self._on_change, raw)
        return version

    def _hand(self, handler: Handler, raw: Mapping[str, Any]) -> None:
        # One object the scheduler cannot take must not stop the others from arriving.
        try:
            handler(raw)
        except Exception:
            name = (raw.get("metadata") or {}).get("name")
            logger.exception("%s: could not take %s", self.collection, name)
