"""A legacy kube-scheduler Policy (``kind: Policy``, ``apiVersion: v1``: the
``--policy-config-file`` format that kube-scheduler dropped in v1.23) turned into an equivalent
SchedulingPolicy, with a note for everything that could not be carried over.

The translation follows what kube-scheduler itself did with a Policy from v1.19 on, when it mapped
predicates and priorities onto framework plugins:

- predicates run in kube-scheduler's fixed predicate order, not the file's, and
  ``CheckNodeUnschedulable`` and ``PodToleratesNodeTaints`` always run;
- ``GeneralPredicates`` is NodeResourcesFit, NodeName, NodePorts and NodeAffinity;
- a predicate with ``argument.labelsPresence`` (any name) is a NodeLabel filter; several merge into
  one, as they all had to pass;
- a priority with ``argument.labelPreference`` is NodeLabelPreference, one with
  ``argument.requestedToCapacityRatioArguments`` is RequestedToCapacityRatio with the same shape
  (scores 0..10 in both) and resources;
- ``hardPodAffinitySymmetricWeight`` becomes the InterPodAffinity priority's
  ``hardPodAffinityWeight``;
- a list left out means kube-scheduler's default predicates (priorities); an empty list means none
  beyond the mandatory ones.

Weights must be 1..100 in a SchedulingPolicy; others are clamped, with a note. Volume predicates,
ServiceAffinity, SelectorSpread, extenders and the like have no equivalent here and are reported.
Pure: the caller reads the file and prints the result.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policy_scheduler.plugins import (
    inter_pod_affinity,
    node_affinity,
    node_label,
    node_label_preference,
    node_name,
    node_ports,
    node_resources_fit,
    node_volume_limits,
    requested_to_capacity_ratio,
)
from policy_scheduler.plugins.registry import FILTER_ALIASES, SCORER_ALIASES
from policy_scheduler.policy.schema import API_VERSION, KIND

LEGACY_KIND = "Policy"
LEGACY_API_VERSION = "v1"
MIN_WEIGHT, MAX_WEIGHT = 1, 100

# The order kube-scheduler ran legacy predicates in, whatever the file's order (predicateOrdering
# in pkg/scheduler/framework/plugins/legacy_registry.go); the first failing one gives the reason.
PREDICATE_ORDER = (
    "CheckNodeUnschedulable",
    "GeneralPredicates",
    "HostName",
    "PodFitsHostPorts",
    "MatchNodeSelector",
    "PodFitsResources",
    "NoDiskConflict",
    "PodToleratesNodeTaints",
    "CheckNodeLabelPresence",
    "CheckServiceAffinity",
    "MaxEBSVolumeCount",
    "MaxGCEPDVolumeCount",
    "MaxCSIVolumeCountPred",
    "MaxAzureDiskVolumeCount",
    "MaxCinderVolumeCount",
    "CheckVolumeBinding",
    "NoVolumeZoneConflict",
    "EvenPodsSpread",
    "MatchInterPodAffinity",
)
MANDATORY_PREDICATES = ("CheckNodeUnschedulable", "PodToleratesNodeTaints")

# kube-scheduler's defaults for a Policy that leaves out its predicates or priorities.
DEFAULT_PREDICATES = (
    "NoVolumeZoneConflict",
    "MaxEBSVolumeCount",
    "MaxGCEPDVolumeCount",
    "MaxAzureDiskVolumeCount",
    "MaxCSIVolumeCountPred",
    "MatchInterPodAffinity",
    "NoDiskConflict",
    "GeneralPredicates",
    "PodToleratesNodeTaints",
    "CheckVolumeBinding",
    "CheckNodeUnschedulable",
    "EvenPodsSpread",
)
DEFAULT_PRIORITIES = {
    "SelectorSpreadPriority": 1,
    "InterPodAffinityPriority": 1,
    "LeastRequestedPriority": 1,
    "BalancedResourceAllocation": 1,
    "NodePreferAvoidPodsPriority": 10000,
    "NodeAffinityPriority": 1,
    "TaintTolerationPriority": 1,
    "ImageLocalityPriority": 1,
    "EvenPodsSpreadPriority": 2,
}

# Legacy names beyond the registry's one-to-one aliases.
PREDICATES: dict[str, tuple[str, ...]] = {
    **{legacy: (current,) for legacy, current in FILTER_ALIASES.items()},
    "GeneralPredicates": (
        node_resources_fit.NAME,
        node_name.NAME,
        node_ports.NAME,
        node_affinity.NAME,
    ),
    # The in-tree volume limits went with CSI migration: NodeVolumeLimits counts the volumes of
    # every driver, those of migrated in-tree ones included. (Not aliases: a policy names each
    # plugin once, by one name.)
    **dict.fromkeys(
        (
            "MaxEBSVolumeCount",
            "MaxGCEPDVolumeCount",
            "MaxAzureDiskVolumeCount",
            "MaxCinderVolumeCount",
        ),
        (node_volume_limits.NAME,),
    ),
}
RENAMED_PREDICATES = {"PodFitsPorts": "PodFitsHostPorts"}  # kube-scheduler still accepted these
PRIORITIES: dict[str, str] = {
    **SCORER_ALIASES,
    # kube-scheduler registered the priority under the plugin's name from v1.18 on.
    requested_to_capacity_ratio.NAME: requested_to_capacity_ratio.NAME,
}
RENAMED_PRIORITIES = {"ServiceSpreadingPriority": "SelectorSpreadPriority"}

_CONDITIONS = "node conditions are taints since v1.17 (TaintNodesByCondition): TaintToleration"
NOT_CARRIED_PREDICATES = {
    "CheckServiceAffinity": "ServiceAffinity was removed from kube-scheduler and has no equivalent",
    "CheckNodeCondition": f"{_CONDITIONS} checks them",
    "CheckNodeMemoryPressure": f"{_CONDITIONS} checks them",
    "CheckNodeDiskPressure": f"{_CONDITIONS} checks them",
    "CheckNodePIDPressure": f"{_CONDITIONS} checks them",
}
NOT_CARRIED_PRIORITIES = {
    "SelectorSpreadPriority": "removed from kube-scheduler: PodTopologySpread "
    "(EvenPodsSpreadPriority) spreads the pods of each Service and controller by default",
    "EqualPriority": "it scores every node the same, so it changes nothing",
    "NodePreferAvoidPodsPriority": "the preferAvoidPods node annotation is gone from Kubernetes",
    "ResourceLimitsPriority": "has no equivalent",
}


class LegacyPolicyError(ValueError):
    """A document that is not a legacy Policy this module can read; the message names the field."""


@dataclass(frozen=True, slots=True)
class Conversion:
    """A legacy Policy turned into a SchedulingPolicy, and what did not carry over."""

    policy: dict[str, Any]
    """The SchedulingPolicy, as plain data."""
    notes: tuple[str, ...]
    """One line per thing not carried over, or carried with a change (a clamped weight)."""


def parse_legacy(obj: Any) -> Mapping[str, Any]:
    """``obj`` itself when it is a legacy Policy (for :func:`manifests.read_objects`)."""
    if not isinstance(obj, Mapping):
        raise LegacyPolicyError("expected a kube-scheduler Policy (kind: Policy, apiVersion: v1)")
    if obj.get("kind") != LEGACY_KIND or obj.get("apiVersion") != LEGACY_API_VERSION:
        raise LegacyPolicyError(
            f"kind {obj.get('kind')!r}, apiVersion {obj.get('apiVersion')!r}: expected a "
            f"kube-scheduler {LEGACY_KIND} ({LEGACY_API_VERSION})"
        )
    return obj


def default_name(stem: str) -> str:
    """A SchedulingPolicy name (a DNS-1123 label) made from a file name."""
    name = re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-")[:63].rstrip("-")
    return name or "converted"


def convert(legacy: Mapping[str, Any], name: str) -> Conversion:
    """The SchedulingPolicy ``name`` equivalent to ``legacy``; :class:`LegacyPolicyError` when a
    field has the wrong type."""
    notes: list[str] = []
    spec: dict[str, Any] = {
        "predicates": _predicates(legacy.get("predicates"), notes),
        "priorities": _priorities(legacy, notes),
    }
    for i, extender in enumerate(_list(legacy.get("extenders"), "extenders")):
        url = extender.get("urlPrefix", "") if isinstance(extender, Mapping) else ""
        notes.append(f"extenders[{i}] {url}: not carried: policy-scheduler calls no extenders")
    if legacy.get("alwaysCheckAllPredicates"):
        notes.append(
            "alwaysCheckAllPredicates: not carried: a node's first failing predicate decides"
        )
    return Conversion(
        {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": spec},
        tuple(notes),
    )


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise LegacyPolicyError(f"{where}: must be a list")
    return value


def _entry(item: Any, where: str) -> tuple[str, Mapping[str, Any]]:
    """An entry's name and argument."""
    if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
        raise LegacyPolicyError(f"{where}: must be an object with a name")
    argument = item.get("argument")
    if argument is None:
        argument = {}
    if not isinstance(argument, Mapping):
        raise LegacyPolicyError(f"{where}.argument: must be an object")
    return item["name"], argument


def _predicates(raw: Any, notes: list[str]) -> list[dict[str, Any]]:
    if raw is None:
        notes.append("predicates: not given, so kube-scheduler's default predicates are used")
        entries: list[Any] = [{"name": name} for name in DEFAULT_PREDICATES]
    else:
        entries = _list(raw, "predicates")
    wanted: set[str] = set()
    present: list[str] = []
    absent: list[str] = []
    for i, item in enumerate(entries):
        where = f"predicates[{i}]"
        name, argument = _entry(item, where)
        key = RENAMED_PREDICATES.get(name, name)
        if "serviceAffinity" in argument:
            reason = NOT_CARRIED_PREDICATES["CheckServiceAffinity"]
            notes.append(f"{where} {name}: not carried: {reason}")
        elif "labelsPresence" in argument:
            labels, presence = _labels_presence(argument["labelsPresence"], where)
            (present if presence else absent).extend(labels)
            wanted.add("CheckNodeLabelPresence")
        elif key == "CheckNodeLabelPresence":
            notes.append(f"{where} {name}: not carried: it needs argument.labelsPresence")
        elif key in PREDICATES:
            wanted.add(key)
        else:
            reason = NOT_CARRIED_PREDICATES.get(key, "unknown predicate")
            notes.append(f"{where} {name}: not carried: {reason}")
    if raw is not None:
        notes += [
            f"{PREDICATES[name][0]}: added: kube-scheduler always ran {name}"
            for name in MANDATORY_PREDICATES
            if name not in wanted
        ]
    wanted.update(MANDATORY_PREDICATES)
    current = dict.fromkeys(
        plugin for name in PREDICATE_ORDER if name in wanted for plugin in PREDICATES[name]
    )
    predicates: list[dict[str, Any]] = []
    for plugin in current:
        entry: dict[str, Any] = {"name": plugin}
        if plugin == node_label.NAME:
            args = {"present": present, "absent": absent}
            entry["args"] = {key: value for key, value in args.items() if value}
        predicates.append(entry)
    return predicates


def _labels_presence(raw: Any, where: str) -> tuple[list[str], bool]:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("labels"), list):
        raise LegacyPolicyError(f"{where}.argument.labelsPresence: must have a list of labels")
    return [str(label) for label in raw["labels"]], bool(raw.get("presence"))


def _priorities(legacy: Mapping[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    raw = legacy.get("priorities")
    if raw is None:
        notes.append("priorities: not given, so kube-scheduler's default priorities are used")
        entries: list[Any] = [{"name": n, "weight": w} for n, w in DEFAULT_PRIORITIES.items()]
    else:
        entries = _list(raw, "priorities")
    chosen: dict[str, dict[str, Any]] = {}
    for i, item in enumerate(entries):
        where = f"priorities[{i}]"
        name, argument = _entry(item, where)
        key = RENAMED_PRIORITIES.get(name, name)
        plugin, args, reason = _priority(key, argument, where)
        if plugin is None:
            notes.append(f"{where} {name}: not carried: {reason}")
            continue
        if plugin in chosen and args != chosen[plugin].get("args", {}):
            notes.append(f"{where} {name}: not carried: {plugin} is already configured differently")
            continue
        weight = _weight(item.get("weight"), f"{where} {name}", notes)
        # As kube-scheduler did for a plugin configured twice: it runs once, with the larger weight.
        entry = chosen.setdefault(plugin, {"name": plugin, "weight": weight})
        entry["weight"] = max(entry["weight"], weight)
        if args:
            entry["args"] = args
    _hard_pod_affinity_weight(legacy.get("hardPodAffinitySymmetricWeight"), chosen, notes)
    return list(chosen.values())


def _priority(
    name: str, argument: Mapping[str, Any], where: str
) -> tuple[str | None, dict[str, Any], str]:
    """The plugin and args for one legacy priority, or None and why it is not carried."""
    if "serviceAntiAffinity" in argument:
        return None, {}, "ServiceAntiAffinity was removed from kube-scheduler, no equivalent"
    if "labelPreference" in argument:
        preference = argument["labelPreference"]
        if not isinstance(preference, Mapping) or not isinstance(preference.get("label"), str):
            raise LegacyPolicyError(f"{where}.argument.labelPreference: must have a label")
        if not preference.get("presence"):
            return None, {}, "NodeLabelPreference cannot prefer nodes that lack a label"
        return node_label_preference.NAME, {"label": preference["label"]}, ""
    if "requestedToCapacityRatioArguments" in argument:
        ratio = argument["requestedToCapacityRatioArguments"]
        if not isinstance(ratio, Mapping):
            raise LegacyPolicyError(f"{where}.argument.requestedToCapacityRatioArguments: object")
        args = {key: ratio[key] for key in ("shape", "resources") if ratio.get(key)}
        return requested_to_capacity_ratio.NAME, args, ""
    if name in PRIORITIES:
        if PRIORITIES[name] == requested_to_capacity_ratio.NAME:
            return None, {}, "it needs argument.requestedToCapacityRatioArguments with a shape"
        return PRIORITIES[name], {}, ""
    return None, {}, NOT_CARRIED_PRIORITIES.get(name, "unknown priority")


def _weight(raw: Any, where: str, notes: list[str]) -> int:
    if raw is None:
        raw = 0
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise LegacyPolicyError(f"{where}: weight must be an integer")
    weight = min(max(raw, MIN_WEIGHT), MAX_WEIGHT)
    if weight != raw:
        notes.append(
            f"{where}: weight {raw} clamped to {weight} (SchedulingPolicy weights are "
            f"{MIN_WEIGHT}..{MAX_WEIGHT})"
        )
    return weight


def _hard_pod_affinity_weight(
    raw: Any, chosen: Mapping[str, dict[str, Any]], notes: list[str]
) -> None:
    # kube-scheduler treated 0 (the field left out) as its default, which is ours too.
    if not raw:
        return
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise LegacyPolicyError("hardPodAffinitySymmetricWeight: must be an integer")
    scorer = chosen.get(inter_pod_affinity.NAME)
    if scorer is None:
        notes.append(
            "hardPodAffinitySymmetricWeight: not carried: there is no InterPodAffinity priority"
        )
        return
    scorer["args"] = {"hardPodAffinityWeight": raw}
