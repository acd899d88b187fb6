"""Plugin names to factories (filters, scorers, post-filters, and the plugins a policy enables at
the other extension points), and the legacy Policy API names accepted as aliases.

A name may be both a predicate and a priority (NodeAffinity, TaintToleration, ...), as in
kube-scheduler, where one plugin implements Filter and Score; the two take separate ``args``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from policy_scheduler.framework.args import Args
from policy_scheduler.framework.interface import (
    FilterFactory,
    Permit,
    PostBind,
    PostFilter,
    PreBind,
    PreEnqueue,
    Reserve,
    ScorerFactory,
)
from policy_scheduler.plugins import (
    balanced_allocation,
    bind_rate_limit,
    default_preemption,
    dynamic_resources,
    gang_scheduling,
    image_locality,
    inter_pod_affinity,
    least_allocated,
    most_allocated,
    node_affinity,
    node_declared_features,
    node_label,
    node_label_preference,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_topology_spread,
    random_plugin,
    requested_to_capacity_ratio,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)

PostFilterFactory = Callable[[Args, str], PostFilter[Any]]
PluginFactory = Callable[
    [Args, str], PreEnqueue | Reserve[Any] | Permit[Any] | PreBind[Any] | PostBind[Any]
]

FILTERS: dict[str, FilterFactory] = {
    node_unschedulable.NAME: node_unschedulable.new_filter,
    node_name.NAME: node_name.new_filter,
    node_resources_fit.NAME: node_resources_fit.new_filter,
    node_ports.NAME: node_ports.new_filter,
    node_affinity.NAME: node_affinity.new_filter,
    taint_toleration.NAME: taint_toleration.new_filter,
    pod_topology_spread.NAME: pod_topology_spread.new_filter,
    inter_pod_affinity.NAME: inter_pod_affinity.new_filter,
    node_label.NAME: node_label.new_filter,
    random_plugin.NAME: random_plugin.new_filter,
    volume_restrictions.NAME: volume_restrictions.new_filter,
    node_volume_limits.NAME: node_volume_limits.new_filter,
    volume_binding.NAME: volume_binding.new_filter,
    volume_zone.NAME: volume_zone.new_filter,
    dynamic_resources.NAME: dynamic_resources.new_filter,
    node_declared_features.NAME: node_declared_features.new_filter,
}

SCORERS: dict[str, ScorerFactory] = {
    least_allocated.NAME: least_allocated.new_scorer,
    most_allocated.NAME: most_allocated.new_scorer,
    requested_to_capacity_ratio.NAME: requested_to_capacity_ratio.new_scorer,
    balanced_allocation.NAME: balanced_allocation.new_scorer,
    node_affinity.NAME: node_affinity.new_scorer,
    taint_toleration.NAME: taint_toleration.new_scorer,
    image_locality.NAME: image_locality.new_scorer,
    pod_topology_spread.NAME: pod_topology_spread.new_scorer,
    inter_pod_affinity.NAME: inter_pod_affinity.new_scorer,
    node_label_preference.NAME: node_label_preference.new_scorer,
    random_plugin.NAME: random_plugin.new_scorer,
    volume_binding.NAME: volume_binding.new_scorer,
    dynamic_resources.NAME: dynamic_resources.new_scorer,
}

POST_FILTERS: dict[str, PostFilterFactory] = {
    default_preemption.NAME: default_preemption.new_post_filter,
}
"""What a policy may list in ``spec.postFilters`` (the legacy Policy API had none)."""

EXTENSIONS: dict[str, dict[str, PluginFactory]] = {
    "preEnqueue": {gang_scheduling.NAME: gang_scheduling.new_plugin},
    "reserve": {},
    "permit": {bind_rate_limit.NAME: bind_rate_limit.new_plugin},
    "preBind": {},
    "postBind": {},
}
"""What a policy may list under each field of ``spec.plugins``, by field: the plugins that
implement that extension point (kube-scheduler's PreEnqueue, Reserve, Permit, PreBind, PostBind)
and that a policy enables there by name. A plugin that implements several is under each of them,
with one factory: a policy that lists it under several fields gets one plugin. (Filters, scorers
and post-filters reach the points they also implement through their own lists.)"""

FILTER_ALIASES: dict[str, str] = {
    "PodFitsResources": node_resources_fit.NAME,
    "PodFitsHostPorts": node_ports.NAME,
    "MatchNodeSelector": node_affinity.NAME,
    "PodToleratesNodeTaints": taint_toleration.NAME,
    "CheckNodeUnschedulable": node_unschedulable.NAME,
    "HostName": node_name.NAME,
    "MatchInterPodAffinity": inter_pod_affinity.NAME,
    "EvenPodsSpread": pod_topology_spread.NAME,
    "CheckNodeLabelPresence": node_label.NAME,
    "NoDiskConflict": volume_restrictions.NAME,
    "NoVolumeZoneConflict": volume_zone.NAME,
    "CheckVolumeBinding": volume_binding.NAME,
    "MaxCSIVolumeCountPred": node_volume_limits.NAME,
}

SCORER_ALIASES: dict[str, str] = {
    "LeastRequestedPriority": least_allocated.NAME,
    "MostRequestedPriority": most_allocated.NAME,
    "RequestedToCapacityRatioPriority": requested_to_capacity_ratio.NAME,
    "BalancedResourceAllocation": balanced_allocation.NAME,
    "NodeAffinityPriority": node_affinity.NAME,
    "TaintTolerationPriority": taint_toleration.NAME,
    "ImageLocalityPriority": image_locality.NAME,
    "EvenPodsSpreadPriority": pod_topology_spread.NAME,
    "InterPodAffinityPriority": inter_pod_affinity.NAME,
    "NodeLabelPriority": node_label_preference.NAME,
}
