"""The stand-in provisioner of bench_scheduling.py's storage phase: an external provisioner and
the PV controller's binding, in threads of the harness.

The bench's control plane runs no kube-controller-manager and no CSI driver, so for claims of a
``volumeBindingMode: WaitForFirstConsumer`` StorageClass nothing would ever provision a volume
once the scheduler has picked a node. This does, for the claims of the StorageClass it is given:
it watches the namespace's PVCs, and for each unbound claim that carries the scheduler's
``volume.kubernetes.io/selected-node`` annotation it

1. creates a PV (``pvc-<claim uid>``, as external-provisioner names them): capacity the claim's
   request, its access modes and StorageClass, a ``csi`` source of the provisioner's driver,
   ``nodeAffinity`` to that node by ``kubernetes.io/hostname`` and ``claimRef`` to the claim (uid
   included);
2. binds the two as the PV controller would (pkg/controller/volume/persistentvolume, ``bind``):
   the PV's status ``Bound``, then the claim's ``spec.volumeName`` with the annotations
   ``pv.kubernetes.io/bind-completed`` and ``pv.kubernetes.io/bound-by-controller``, then the
   claim's status ``Bound`` (phase, capacity, access modes), each status through its
   subresource.

kube-scheduler's VolumeBinding PreBind waits for step 2's claim update: a claim is bound for it
when ``spec.volumeName`` is set and ``pv.kubernetes.io/bind-completed`` present
(``isPVCFullyBound``), the selected node is still the pod's and the PV's node affinity matches
the node (``checkBindings``). Both schedulers get the same provisioner, with the admin's identity:
its requests fall in the ``exempt`` flow schema and none of them count as the scheduler's.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.kube import Api, ApiError, follow

PROVISIONER = "fake.bench.policy-scheduler.dev"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
HOSTNAME = "kubernetes.io/hostname"


def storage_class_body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": PROVISIONER,
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Delete",
    }


def claim_body(name: str, storage_class: str, storage: str = "1Gi") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": storage}},
        },
    }


def pv_node(pv: dict[str, Any]) -> str | None:
    """The one hostname a PV's required node affinity allows (as this provisioner writes it)."""
    terms = ((pv["spec"].get("nodeAffinity") or {}).get("required") or {}).get(
        "nodeSelectorTerms"
    ) or []
    for term in terms:
        for expression in term.get("matchExpressions") or []:
            if expression["key"] == HOSTNAME and expression["operator"] == "In":
                values = expression.get("values") or []
                return str(values[0]) if len(values) == 1 else None
    return None


class Provisioner:
    """Provisions and binds the claims of ``storage_class`` in ``namespace`` as soon as a scheduler
    selects their node, with ``workers`` claims in flight at once."""

    def __init__(
        self, kubeconfig: Path, namespace: str, storage_class: str, workers: int = 16
    ) -> None:
        self.api = Api(kubeconfig, pool=workers)
        self.watch_api = Api(kubeconfig, pool=1)
        self.namespace = namespace
        self.storage_class = storage_class
        self.claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
        # Claim uid -> seconds from the selected node seen to the claim bound.
        self.provisioned: dict[str, float] = {}
        self.errors: list[str] = []
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="provisioner")
        self._resource_version = self._list()
        self._thread = threading.Thread(target=self._run, name="provisioner-watch")
        self._thread.start()

    def _offer(self, claim: dict[str, Any]) -> None:
        meta, spec = claim["metadata"], claim["spec"]
        node = (meta.get("annotations") or {}).get(SELECTED_NODE)
        if not node or spec.get("volumeName") or spec.get("storageClassName") != self.storage_class:
            return
        with self._lock:
            if meta["uid"] in self._seen:
                return
            self._seen.add(meta["uid"])
        self._pool.submit(self._provision, claim, node, time.monotonic())

    def _list(self) -> str:
        """Offer every claim listed; the list's resourceVersion."""
        page = self.watch_api.get(self.claims_path)
        for claim in page["items"]:
            self._offer(claim)
        version: str = page["metadata"]["resourceVersion"]
        return version

    def _run(self) -> None:
        def seen(kind: str, claim: dict[str, Any]) -> None:
            if kind in ("ADDED", "MODIFIED"):
                self._offer(claim)

        follow(
            self.watch_api,
            self.claims_path,
            self._resource_version,
            self._stop,
            on_event=seen,
            on_broken=lambda error: self._list(),
        )

    def _provision(self, claim: dict[str, Any], node: str, seen: float) -> None:
        meta, spec = claim["metadata"], claim["spec"]
        name = f"pvc-{meta['uid']}"
        storage = spec["resources"]["requests"]["storage"]
        access_modes = spec.get("accessModes") or ["ReadWriteOnce"]
        pv = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": name,
                "annotations": {PROVISIONED_BY: PROVISIONER, BOUND_BY_CONTROLLER: "yes"},
            },
            "spec": {
                "capacity": {"storage": storage},
                "accessModes": access_modes,
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": self.storage_class,
                "volumeMode": spec.get("volumeMode") or "Filesystem",
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": self.namespace,
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "csi": {"driver": PROVISIONER, "volumeHandle": name},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": HOSTNAME, "operator": "In", "values": [node]}
                                ]
                            }
                        ]
                    }
                },
            },
        }
        claim_path = f"{self.claims_path}/{meta['name']}"
        try:
            self.api.post("/api/v1/persistentvolumes", pv, exists_ok=True)
            self.api.merge_patch(
                f"/api/v1/persistentvolumes/{name}/status", {"status": {"phase": "Bound"}}
            )
            self.api.merge_patch(
                claim_path,
                {
                    "metadata": {
                        "annotations": {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}
                    },
                    "spec": {"volumeName": name},
                },
            )
            self.api.merge_patch(
                f"{claim_path}/status",
                {
                    "status": {
                        "phase": "Bound",
                        "accessModes": access_modes,
                        "capacity": {"storage": storage},
                    }
                },
            )
        except (ApiError, OSError) as error:
            with self._lock:
                self.errors.append(f"{meta['name']}: {error}")
            return
        with self._lock:
            self.provisioned[meta["uid"]] = time.monotonic() - seen

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._pool.shutdown(wait=True)
        self.api.session.close()
        self.watch_api.session.close()
