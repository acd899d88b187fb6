"""What the end-to-end tests add to the harness: the cluster as the tests see it (kubectl on the
admin's or the operator's identity), the operator they start and stop, polling that fails the
test, and the checks as assertions."""

from __future__ import annotations

import contextlib
import functools
import json
import re
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from harness.checks import overcommitted, told
from harness.controlplane import CRD, CRDS, ControlPlane
from harness.kube import Api
from harness.processes import Process, operator_command
from harness.wait import WaitTimeoutError, poll

T = TypeVar("T")


@dataclass(frozen=True)
class Cluster:
    """A running control plane: kubeconfigs for the admin and the operator, and its binaries."""

    kubeconfig: Path
    operator_kubeconfig: Path
    bin: Path

    @classmethod
    def of(cls, plane: ControlPlane) -> Cluster:
        return cls(plane.admin, plane.operator, plane.bin)

    def api(self, operator: bool = False) -> Api:
        return Api(self.operator_kubeconfig if operator else self.kubeconfig)

    def kubectl(
        self, *args: str, operator: bool = False, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        config = self.operator_kubeconfig if operator else self.kubeconfig
        return subprocess.run(
            [str(self.bin / "kubectl"), "--kubeconfig", str(config), *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=check,
            timeout=60,
        )

    def install_crd(self) -> None:
        """Apply crds/ and wait for the SchedulingPolicy CRD to be Established."""
        self.install_crds(CRDS, CRD)

    def install_crds(self, path: Path, *names: str) -> None:
        """Apply the CRDs of ``path`` (a file or a directory) and wait for those ``names`` to be
        Established. kubectl wait may fail at once on a just-started API server of a loaded
        machine, so it is asked again until it waits."""
        self.kubectl("apply", "-f", str(path))
        for name in names:
            wait_for(f"the CRD {name} established", functools.partial(self.established, name))

    def established(self, crd: str) -> bool:
        """Whether the CRD named ``crd`` is Established."""
        wait = self.kubectl("wait", "--for=condition=Established", f"crd/{crd}", check=False)
        return wait.returncode == 0

    def apply(self, *objects: dict[str, Any], namespace: str | None = None) -> None:
        self.kubectl(
            "apply",
            *(("-n", namespace) if namespace else ()),
            "-f",
            "-",
            stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
        )


@contextlib.contextmanager
def control_plane(state: Path, *flags: str, controllers: bool = False) -> Iterator[Cluster]:
    """A control plane of ``up``'s ``flags`` in ``state`` while the body runs; stopped after.
    Bare unless ``controllers`` (see :meth:`ControlPlane.up`)."""
    plane = ControlPlane.up(state, *flags, controllers=controllers)
    try:
        yield Cluster.of(plane)
    finally:
        plane.down()


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 30.0) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    try:
        return poll(what, probe, timeout)
    except WaitTimeoutError as timed_out:
        pytest.fail(str(timed_out))


class Operator:
    """``policy-scheduler run`` as a separate process, as users run it; its log appended to
    ``log`` from every start."""

    def __init__(self, kubeconfig: Path, log: Path) -> None:
        self.kubeconfig = kubeconfig
        self.log = log
        self.running: Process | None = None

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        return None if self.running is None else self.running.process

    def start(self, *, extra_args: Sequence[str] = ()) -> None:
        """Start it; ``extra_args`` are more ``run`` flags (``--metrics URL``, ...)."""
        command = operator_command(self.kubeconfig, "--log-format", "full", *extra_args)
        self.running = Process("policy-scheduler", command, self.log, append=True)

    def stop(self, kill: bool = False) -> None:
        if self.running is not None:
            self.running.stop(kill)
            self.running = None

    def logs(self) -> str:
        return self.log.read_text(errors="replace")


def logs_status(logs: str, code: int) -> bool:
    """Whether the operator's ``logs`` tell of an HTTP status ``code`` (``403``): the number as a
    word, but not as the milliseconds of a log line's time (``12:24:06,403``)."""
    return re.search(rf"(?<![,.:])\b{code}\b", logs) is not None


def items(cluster: Cluster, *args: str) -> list[dict[str, Any]]:
    """``kubectl get ... -o json`` items."""
    result: list[dict[str, Any]] = json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)[
        "items"
    ]
    return result


def bound(cluster: Cluster, namespace: str) -> dict[str, str]:
    """Pod name -> node, for the bound pods of ``namespace``."""
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in items(cluster, "pods", "-n", namespace)
        if p["spec"].get("nodeName")
    }


NOT_READY = "node.kubernetes.io/not-ready"


def add_nodes(cluster: Cluster, *nodes: dict[str, Any], timeout: float = 60.0) -> None:
    """Create ``nodes`` on a cluster with controllers and kwok, and wait until kwok reports them
    Ready and the node lifecycle controller has lifted the not-ready taint that a new node gets
    at its creation (TaintNodesByCondition), which the pods here do not tolerate."""
    cluster.apply(*nodes)
    names = {n["metadata"]["name"] for n in nodes}

    def usable(found: dict[str, Any]) -> bool:
        ready = any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in found["status"].get("conditions", ())
        )
        return ready and all(t["key"] != NOT_READY for t in found["spec"].get("taints") or ())

    wait_for(
        f"nodes {sorted(names)} Ready, without the not-ready taint",
        lambda: (
            sum(usable(n) for n in items(cluster, "nodes") if n["metadata"]["name"] in names)
            == len(names)
        ),
        timeout,
    )


def events(cluster: Cluster, namespace: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in items(cluster, "events", "-n", namespace) if e["reason"] == reason]


def assert_not_overcommitted(cluster: Cluster, pool: str) -> None:
    """No node of the pool has pods requesting more cpu than it can allocate."""
    nodes = items(cluster, "nodes", "-l", f"pool={pool}")
    for name, _, cpu, _ in overcommitted(nodes, items(cluster, "pods", "-A"), ("cpu",)):
        raise AssertionError(f"{name} overcommitted: {cpu}m")


def status(cluster: Cluster, name: str) -> dict[str, Any]:
    """The status of SchedulingPolicy ``name``; empty until an operator writes one."""
    found = items(cluster, "schedulingpolicies", "--field-selector", f"metadata.name={name}")
    result: dict[str, Any] = found[0].get("status") or {}
    return result


def posted_since(
    cluster: Cluster, namespace: str, reason: str, since: datetime
) -> list[dict[str, Any]]:
    """The ``reason`` events posted at or after ``since``, by their ``eventTime``: the poster's
    clock, which is this machine's, as everything runs here. What a restarted or a new operator
    said, apart from what the one before it said."""
    return [
        e
        for e in events(cluster, namespace, reason)
        if datetime.fromisoformat(e["eventTime"]) >= since
    ]


def assert_scheduled_at_most_once(
    cluster: Cluster, namespace: str, placed: Mapping[str, str]
) -> None:
    """At most one ``Scheduled`` event per pod, naming the node ``placed`` says it is bound to:
    no pod was bound twice, nor told bound where it is not. (A pod may have none: its operator
    can be killed between the bind and the event.)"""
    nodes = told(events(cluster, namespace, "Scheduled"))
    for name, told_nodes in nodes.items():
        for told_node in told_nodes:
            assert placed.get(name) == told_node, (
                f"{name} is on {placed.get(name)}, told {told_node}"
            )
    twice = sorted(name for name, told_nodes in nodes.items() if len(told_nodes) > 1)
    assert not twice, f"Scheduled more than once: {twice}"
