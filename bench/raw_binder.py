"""The raw bind limit: binds pods round-robin onto nodes, deciding nothing.

It reads pods from standard input, one a line, ``NAME UID`` (the harness writes each one as soon
as the pod's POST has returned), and binds each through the ``pods/binding`` subresource onto the
next node of a fixed list, with the same number of concurrent requests as policy-scheduler's
binder. No watch, no cache, no scoring: what is left is the cost of the binds themselves, so its
throughput is the most any scheduler could reach on this API server with this workload. It runs
as a process of its own so that its CPU and memory are measured as the schedulers' are.

With ``--events`` it also posts, for every pod it bound, the one ``Scheduled`` event any
scheduler posts: a core/v1 Event shaped as policy-scheduler's (operator/policy_scheduler/kube/
events.py: the same fields, the same naming; the message in kube-scheduler's words, without
policy-scheduler's policy-and-score suffix), from a pool of its own of
``--event-concurrency`` requests (policy-scheduler's POST_CONCURRENCY), so that, as there, events
never hold a bind's slot. That is the limit a scheduler can really reach: every scheduler owes
the API server a bind and an event per pod.

    python bench/raw_binder.py --kubeconfig F --namespace NS --nodes NODES_FILE [--events] < PODS

At the end of its input it prints one JSON line:
{"bound": N, "conflicts": N, "failed": N, "events": N, "events_failed": N}.
"""

from __future__ import annotations

import argparse
import itertools
import json
import socket
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.kube import Api, ApiError

CONCURRENCY = 64
"""By default as many binds in flight as policy-scheduler's (bench_scheduling.py passes it)."""
EVENT_CONCURRENCY = 64
"""By default as many event posts in flight as policy-scheduler's (bench_scheduling.py passes
it)."""
COMPONENT = "raw-binder"


def event_body(namespace: str, pod: str, uid: str, node: str, instance: str) -> dict[str, Any]:
    """The ``Scheduled`` event of ``pod``, field for field as policy-scheduler's Recorder posts
    it, so that the API server stores and indexes the same amount."""
    now = datetime.now(UTC)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{pod}.{time.time_ns():x}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod,
            "namespace": namespace,
            "uid": uid,
        },
        "type": "Normal",
        "reason": "Scheduled",
        "message": f"Successfully assigned {namespace}/{pod} to {node}",
        "action": "Binding",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "count": 1,
    }


class Binder:
    def __init__(
        self, api: Api, namespace: str, nodes: list[str], events: ThreadPoolExecutor | None
    ) -> None:
        self.api = api
        self.namespace = namespace
        self._nodes = itertools.cycle(nodes)
        self._lock = threading.Lock()
        self._events = events
        self._instance = socket.gethostname()
        self.counts = {"bound": 0, "conflicts": 0, "failed": 0, "events": 0, "events_failed": 0}

    def _count(self, outcome: str) -> None:
        with self._lock:
            self.counts[outcome] += 1

    def bind(self, pod: str, uid: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            status = self.api.post(
                f"/api/v1/namespaces/{self.namespace}/pods/{pod}/binding", body, exists_ok=True
            )
            outcome = "conflicts" if status == 409 else "bound"
        except (ApiError, OSError) as error:
            print(f"raw_binder: {pod}: {error}", file=sys.stderr)
            outcome = "failed"
        self._count(outcome)
        if outcome == "bound" and self._events is not None:
            self._events.submit(self.post_event, pod, uid, node)

    def post_event(self, pod: str, uid: str, node: str) -> None:
        try:
            # 409: a try whose answer was lost had posted it after all (same name every try).
            self.api.post(
                f"/api/v1/namespaces/{self.namespace}/events",
                event_body(self.namespace, pod, uid, node, self._instance),
                exists_ok=True,
            )
            outcome = "events"
        except (ApiError, OSError) as error:
            print(f"raw_binder: event of {pod}: {error}", file=sys.stderr)
            outcome = "events_failed"
        self._count(outcome)

    def run(self, lines: Iterable[str], concurrency: int) -> None:
        with ThreadPoolExecutor(concurrency) as pool:
            for line in lines:
                pod, _, uid = line.strip().partition(" ")
                if pod:
                    # The node is chosen here, in arrival order, so the placement is round-robin
                    # whatever order the threads finish in.
                    pool.submit(self.bind, pod, uid, next(self._nodes))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument(
        "--nodes", type=Path, required=True, help="a file with the node names, one a line"
    )
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    parser.add_argument(
        "--events", action="store_true", help="post a Scheduled event for every pod bound"
    )
    parser.add_argument("--event-concurrency", type=int, default=EVENT_CONCURRENCY)
    args = parser.parse_args()
    events = ThreadPoolExecutor(args.event_concurrency) if args.events else None
    # One pool of sockets for both, as policy-scheduler has one client for its binds and events.
    api = Api(args.kubeconfig, pool=args.concurrency + (args.event_concurrency if events else 0))
    binder = Binder(api, args.namespace, args.nodes.read_text().split(), events)
    binder.run(sys.stdin, args.concurrency)
    if events is not None:
        # The binds are all done (run waited for them), so every event has been submitted.
        events.shutdown(wait=True)
    print(json.dumps(binder.counts), flush=True)
    return 0 if binder.counts["failed"] == binder.counts["events_failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
