"""Watches that time and count what the schedulers write: when each pod of the benchmarks'
namespace is first bound, and the writes to the objects of a collection."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from harness.kube import Api, ApiError, follow
from harness.workload import NAMESPACE, log

PROGRESS_SECONDS = 2.0


class Following:
    """A watch of ``path`` (with ``params``), listed first and then followed from a thread of its
    own until ``close``; each event handed to ``seen``, a broken watch to ``broken``, which says
    where to go on from (see kube.follow)."""

    def __init__(self, api: Api, path: str, **params: str) -> None:
        self.api = api
        self.path = path
        self.params = params
        self._stop = threading.Event()
        version = self._list()
        self._thread = threading.Thread(
            target=follow,
            args=(api, path, version, self._stop),
            kwargs={"on_event": self.seen, "on_broken": self.broken, **params},
            name=f"watch {path}",
        )
        self._thread.start()

    def _list(self) -> str:
        """The resourceVersion to watch from."""
        raise NotImplementedError

    def seen(self, kind: str, obj: dict[str, Any]) -> None:
        raise NotImplementedError

    def broken(self, error: Exception) -> str | None:
        raise NotImplementedError

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.api.session.close()


class BindWatch(Following):
    """When each pod of the namespace is first seen bound, by this process's clock; and every
    bound pod it lists or is told of (ADDED, MODIFIED) handed to its ``listeners`` too (the
    preemption phase's stand-in kubelet: a victim is a bound pod that gets a
    deletionTimestamp)."""

    def __init__(self, api: Api) -> None:
        self.bound: dict[str, float] = {}
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        self._changed = threading.Condition()
        path = f"/api/v1/namespaces/{NAMESPACE}/pods"
        super().__init__(api, path, fieldSelector="spec.nodeName!=")

    def _record(self, pods: Sequence[dict[str, Any]]) -> None:
        now = time.monotonic()
        with self._changed:
            for bound in pods:
                self.bound.setdefault(bound["metadata"]["name"], now)
            self._changed.notify_all()
        for listener in self.listeners:
            for bound in pods:
                listener(bound)

    def _list(self) -> str:
        page = self.api.get(self.path, **self.params)
        self._record(page["items"])
        version: str = page["metadata"]["resourceVersion"]
        return version

    def seen(self, kind: str, obj: dict[str, Any]) -> None:
        if kind in ("ADDED", "MODIFIED"):
            self._record([obj])

    def broken(self, error: Exception) -> str:
        log(f"  watch broke ({error}); listing again")
        # Pods bound while the watch was down get the time of the list: late, never early.
        return self._list()

    def wait(
        self,
        names: Sequence[str],
        timeout: float,
        progress: Callable[[int], str],
        alive: Callable[[], None],
    ) -> bool:
        """Until every pod in ``names`` is bound (True) or ``timeout`` passes (False), saying
        ``progress(bound)`` every few seconds."""
        deadline = time.monotonic() + timeout
        next_progress = time.monotonic() + PROGRESS_SECONDS
        with self._changed:
            while True:
                bound = sum(1 for name in names if name in self.bound)
                if bound == len(names):
                    return True
                now = time.monotonic()
                if now > deadline:
                    log(f"  timed out after {timeout:.0f} s: {progress(bound)}")
                    return False
                if now >= next_progress:
                    alive()
                    log(f"  {progress(bound)}")
                    next_progress = now + PROGRESS_SECONDS
                self._changed.wait(min(next_progress, deadline) - now)


class WriteCounter(Following):
    """The writes to the objects of a collection, counted per ``key(object)`` from a watch:
    every ADDED (when ``created``) and MODIFIED the API server reports, whoever wrote. A watch
    that breaks resumes where it was; one the server ends with 410 Gone (too far behind) is
    listed again, and the writes in between are lost: ``gaps`` counts those."""

    def __init__(
        self, api: Api, path: str, key: Callable[[Any], str], created: bool, **params: str
    ) -> None:
        self.key = key
        self.counted = {"MODIFIED", "ADDED"} if created else {"MODIFIED"}
        self.counts: collections.Counter[str] = collections.Counter()
        self.gaps = 0
        self._lock = threading.Lock()
        super().__init__(api, path, **params)

    def _list(self) -> str:
        version: str = self.api.get(self.path, limit="1", **self.params)["metadata"][
            "resourceVersion"
        ]
        return version

    def snapshot(self) -> collections.Counter[str]:
        with self._lock:
            return collections.Counter(self.counts)

    def total(self) -> int:
        with self._lock:
            return sum(self.counts.values())

    @property
    def lost(self) -> bool:
        """Whether writes went uncounted (a watch ended with 410 Gone)."""
        return self.gaps > 0

    def seen(self, kind: str, obj: dict[str, Any]) -> None:
        if kind in self.counted:
            with self._lock:
                self.counts[self.key(obj)] += 1

    def broken(self, error: Exception) -> str | None:
        log(f"  watch of {self.path} broke ({error})")
        if isinstance(error, ApiError) and error.status == 410:
            self.gaps += 1
            return self._list()
        return None
