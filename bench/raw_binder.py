"""The raw bind limit: binds pods round-robin onto nodes, deciding nothing.

It reads pod names from standard input, one a line (the harness writes each one as soon as the
pod's POST has returned), and binds each through the ``pods/binding`` subresource onto the next
node of a fixed list, with the same number of concurrent requests as policy-scheduler's binder.
No watch, no cache, no scoring: what is left is the cost of the binds themselves, so its
throughput is the most any scheduler could reach on this API server with this workload. It runs
as a process of its own so that its CPU and memory are measured as the schedulers' are.

    python bench/raw_binder.py --kubeconfig F --namespace NS --nodes NODES_FILE < POD_NAMES

At the end of its input it prints one JSON line: {"bound": N, "conflicts": N, "failed": N}.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kube_http import Api, ApiError

CONCURRENCY = 64
"""By default as many binds in flight as policy-scheduler's (bench_scheduling.py passes it)."""


class Binder:
    def __init__(self, api: Api, namespace: str, nodes: list[str]) -> None:
        self.api = api
        self.namespace = namespace
        self._nodes = itertools.cycle(nodes)
        self._lock = threading.Lock()
        self.counts = {"bound": 0, "conflicts": 0, "failed": 0}

    def bind(self, pod: str, node: str) -> None:
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
        with self._lock:
            self.counts[outcome] += 1

    def run(self, lines: Iterable[str], concurrency: int) -> None:
        with ThreadPoolExecutor(concurrency) as pool:
            for line in lines:
                pod = line.strip()
                if pod:
                    # The node is chosen here, in arrival order, so the placement is round-robin
                    # whatever order the threads finish in.
                    pool.submit(self.bind, pod, next(self._nodes))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument(
        "--nodes", type=Path, required=True, help="a file with the node names, one a line"
    )
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    args = parser.parse_args()
    binder = Binder(
        Api(args.kubeconfig, pool=args.concurrency), args.namespace, args.nodes.read_text().split()
    )
    binder.run(sys.stdin, args.concurrency)
    print(json.dumps(binder.counts), flush=True)
    return 0 if binder.counts["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
