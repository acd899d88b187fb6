"""The benchmarks' cluster and workload: their namespace and the objects a scheduler needs
before it starts, nodes and pods of a mix of requests created in bulk; progress on stderr."""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.controlplane import CRDS, REPO, ControlPlane
from harness.kube import Api, ApiError, create_objects, wait_established
from harness.objects import node, pod

NAMESPACE = "bench"
SCHEDULER_NAMES = {
    "policy-scheduler": "default-profile",
    "kube-scheduler": "default-scheduler",
    "raw": "bench-unserved",
    "raw+events": "bench-unserved",
}
# API Priority and Fairness classifies requests by identity: the flow schema of each one's.
FLOW_SCHEMAS = {
    "policy-scheduler": "service-accounts",
    "kube-scheduler": "kube-scheduler",
    "raw": "service-accounts",
    "raw+events": "service-accounts",
}
# The mix of pod requests (millicores, MiB), cycled through: small and large, cpu- and
# memory-heavy, so that the resource scorers have something to tell apart.
REQUESTS = ((100, 128), (250, 256), (500, 512), (1000, 1024), (50, 64), (200, 2048))
ZONE = "topology.kubernetes.io/zone"
ZONES = ("zone-a", "zone-b", "zone-c")
# Every pod carries its phase under this label: what the shaped phases' terms select.
PHASE_LABEL = "bench.policy-scheduler.dev/phase"

_start = time.monotonic()


def log(message: str) -> None:
    print(f"[{time.monotonic() - _start:7.1f}s] {message}", file=sys.stderr, flush=True)


def add_dirs(parser: argparse.ArgumentParser, state: str, state_help: str) -> None:
    """A benchmark's options ``--dir`` (its control planes' state, by default .local/``state``)
    and ``--out`` (its results)."""
    parser.add_argument("--dir", type=Path, default=REPO / ".local" / state, help=state_help)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")


def prepare(plane: ControlPlane, scheduler: str, plugins: Mapping[str, Any] | None = None) -> None:
    """The objects a scheduler needs before it starts: the operator's RBAC (which the raw binders
    use too: they bind and post events as the operator's service account) and, for ours, the CRD
    and the policy, examples/policies/default-profile.yaml, with ``plugins`` (extension point ->
    its list) as its ``spec.plugins``."""
    api = Api(plane.admin, pool=1)
    try:
        api.post("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}}, exists_ok=True)
        if scheduler == "kube-scheduler":
            return  # the API server's bootstrap RBAC grants system:kube-scheduler all it needs
        ours = scheduler == "policy-scheduler"
        if ours:
            # First: the API server takes a second or two to establish it.
            create_objects(api, *sorted(CRDS.glob("*.yaml")))
        create_objects(api, REPO / "deploy" / "namespace.yaml", REPO / "deploy" / "rbac.yaml")
        if ours:
            wait_established(api)
            policy = yaml.safe_load(
                (REPO / "examples" / "policies" / "default-profile.yaml").read_text()
            )
            if plugins:
                policy["spec"]["plugins"] = dict(plugins)
            api.post(f"/apis/{policy['apiVersion']}/schedulingpolicies", policy)
    finally:
        api.session.close()


# --- nodes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeSize:
    cpu: int  # cores
    memory: int  # GiB
    pods: int


def node_size(nodes: int, pods: int) -> NodeSize:
    """Room for ``pods`` spread round-robin even if every pod were the largest of the mix: the
    raw binder places blindly, and its runs must pass the overcommit check like the others."""
    per_node = math.ceil(pods / nodes)
    cpu = max(4, math.ceil(per_node * max(c for c, _ in REQUESTS) / 1000))
    memory = max(16, math.ceil(per_node * max(m for _, m in REQUESTS) / 1024))
    return NodeSize(cpu, memory, max(110, per_node))


def node_names(count: int) -> list[str]:
    # Zero-padded, so the API server lists them (in key order) in creation order.
    width = len(str(count - 1))
    return [f"node-{i:0{width}d}" for i in range(count)]


def node_body(
    index: int,
    name: str,
    size: NodeSize,
    labels: Mapping[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> bytes:
    """A node of ``size`` in the zone ``index`` takes its turn in."""
    zone = {ZONE: ZONES[index % len(ZONES)], **(labels or {})}
    body = node(
        name,
        cpu=str(size.cpu),
        memory=f"{size.memory}Gi",
        pods=str(size.pods),
        labels=zone,
        taints=taints,
    )
    return json.dumps(body).encode()


def create_nodes(
    api: Api,
    names: Sequence[str],
    size: NodeSize,
    threads: int,
    labels: Mapping[str, str] | None = None,
    *,
    taints: list[dict[str, str]] | None = None,
) -> None:
    started = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        list(
            pool.map(
                lambda item: api.post(
                    "/api/v1/nodes",
                    node_body(item[0], item[1], size, labels, taints),
                    exists_ok=True,
                ),
                enumerate(names),
            )
        )
    seconds = time.monotonic() - started
    log(f"  nodes: {len(names)} created in {seconds:.1f} s ({size.cpu} cpu, {size.memory}Gi)")


# --- pods -------------------------------------------------------------------------------------


def pod_body(
    name: str,
    scheduler_name: str,
    index: int,
    node_selector: Mapping[str, str] | None = None,
    *,
    claim: str | None = None,
    phase: str = "",
    extra: Mapping[str, Any] | None = None,
) -> bytes:
    """A pod of the mix of requests (by ``index``), labelled with its ``phase``; ``extra`` added
    to its spec."""
    cpu, memory = REQUESTS[index % len(REQUESTS)]
    spec: dict[str, Any] = dict(extra or {})
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if claim:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    labels = {"app": f"bench-{index % 10}", **({PHASE_LABEL: phase} if phase else {})}
    body = pod(name, scheduler_name, cpu=f"{cpu}m", memory=f"{memory}Mi", labels=labels, extra=spec)
    if claim:
        body["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    return json.dumps(body).encode()


@dataclass
class Creator:
    """Creates pods from a thread pool, recording when each POST was sent."""

    api: Api
    threads: int
    # Pod name -> the body of its claim, POSTed just before the pod.
    claims: Mapping[str, bytes] = field(default_factory=dict)
    created: dict[str, float] = field(default_factory=dict)
    # Pod name -> when the API server answered its POST: the pod is stored, and on its way to
    # every watch.
    answered: dict[str, float] = field(default_factory=dict)
    done: float = 0.0
    # Told each pod created with its uid (the raw binders: their events name the uid, as every
    # scheduler's do).
    on_uid: Callable[[str, str], None] | None = None

    def create(self, name: str, body: bytes) -> None:
        sent = time.monotonic()
        try:
            if name in self.claims:
                self.api.post(
                    f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims",
                    self.claims[name],
                    exists_ok=True,
                )
            pods = f"/api/v1/namespaces/{NAMESPACE}/pods"
            response = self.api.request("POST", pods, body, ok=frozenset({409}))
            answered = time.monotonic()
            uid = ""
            if self.on_uid is not None:
                # A create retried after a lost answer finds its own pod (409): its uid read back.
                found = (
                    response.json()
                    if response.status_code != 409
                    else self.api.get(f"{pods}/{name}")
                )
                uid = found["metadata"]["uid"]
        except (ApiError, OSError, ValueError) as error:
            # The pod stays missing: the wait for it times out and the run is reported failed.
            log(f"  creating {name} failed: {error}")
            return
        self.created[name] = sent
        self.answered[name] = answered
        if self.on_uid is not None:
            self.on_uid(name, uid)

    @contextmanager
    def running(self, pods: Sequence[tuple[str, bytes]], rate: float | None) -> Iterator[None]:
        """Creating ``pods`` in the background (all at once, or ``rate`` a second) while the
        body runs; the body's end waits for the creation to finish."""

        def create_all() -> None:
            started = time.monotonic()
            with ThreadPoolExecutor(self.threads) as pool:
                for index, (name, body) in enumerate(pods):
                    if rate is not None:
                        time.sleep(max(0.0, started + index / rate - time.monotonic()))
                    pool.submit(self.create, name, body)
            self.done = time.monotonic()

        thread = threading.Thread(target=create_all, name="creator")
        thread.start()
        try:
            yield
        finally:
            thread.join()

    def create_all(self, pods: Sequence[tuple[str, bytes]]) -> None:
        """``pods`` created at once (concurrently); returns when every POST is answered."""
        with self.running(pods, None):
            pass
