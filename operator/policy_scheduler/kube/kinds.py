"""Where each kind the scheduler reads is listed on the API server: the operator's watches
(:mod:`~policy_scheduler.kube.scheduler`) and ``explain``'s one-off reads use the same paths, so
the two read the same kinds."""

from __future__ import annotations

from policy_scheduler.kube.client import GROUP, PLURAL, VERSION, path
from policy_scheduler.model import volumes, workloads

POLICIES = path("apis", GROUP, VERSION, PLURAL)
NODES = "/api/v1/nodes"
PODS = "/api/v1/pods"
NAMESPACES = "/api/v1/namespaces"

# kube-scheduler's informer drops finished pods too. Assigned pods of every scheduler must be
# seen (they use node resources), so the selector cannot narrow the watch to pending pods of our
# scheduler names: a field selector cannot OR several values.
UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"

# What default topology spreading reads a pod's selector from, and where each is listed.
WORKLOADS = {
    workloads.SERVICE: "/api/v1/services",
    workloads.REPLICATION_CONTROLLER: "/api/v1/replicationcontrollers",
    workloads.REPLICA_SET: "/apis/apps/v1/replicasets",
    workloads.STATEFUL_SET: "/apis/apps/v1/statefulsets",
}

# What the volume plugins and DynamicResources read, and where each is listed. The core ones are
# always served; an API group may not be, and is then taken as empty.
STORAGE = {
    volumes.PVC: "/api/v1/persistentvolumeclaims",
    volumes.PV: "/api/v1/persistentvolumes",
    volumes.STORAGE_CLASS: "/apis/storage.k8s.io/v1/storageclasses",
    volumes.CSI_NODE: "/apis/storage.k8s.io/v1/csinodes",
    volumes.CSI_DRIVER: "/apis/storage.k8s.io/v1/csidrivers",
    volumes.CSI_STORAGE_CAPACITY: "/apis/storage.k8s.io/v1/csistoragecapacities",
    volumes.RESOURCE_CLAIM: "/apis/resource.k8s.io/v1/resourceclaims",
}

# Which pods a PodDisruptionBudget protects, for preemption to spare them where it can. policy/v1
# is served by every Kubernetes this operator supports (since 1.21), so the watch is not optional.
DISRUPTION_BUDGETS = "/apis/policy/v1/poddisruptionbudgets"
