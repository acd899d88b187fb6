"""SchedulingPolicy objects out of YAML files, for ``policy-scheduler validate`` and ``simulate``.

A file holds one or more YAML documents, each a SchedulingPolicy or a list of them (``kind: List``
as ``kubectl get schedulingpolicies -o yaml`` writes it, or ``SchedulingPolicyList``), as
:mod:`policy_scheduler.manifests` reads them. Anything else is an error that names the file and the
document, so a wrong file is caught before any policy in it is checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from policy_scheduler.manifests import ManifestError, read_objects, type_name
from policy_scheduler.policy.schema import API_VERSION, KIND


class PolicyFileError(ManifestError):
    """A file that is not a set of SchedulingPolicies; ``problems`` are also ``str``, one a line."""


def read_policy_file(path: Path) -> list[dict[str, Any]]:
    """The SchedulingPolicy objects of the YAML file ``path``, in file order, not yet validated.

    Raises :class:`PolicyFileError` naming every document that is not a SchedulingPolicy, or the
    place where the file stops being YAML, or that the file holds no policy at all.
    """
    try:
        return read_objects(path, KIND, _policy)
    except ManifestError as error:
        raise PolicyFileError(error.problems) from None


def _policy(obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ValueError(
            f"expected a {KIND} (a mapping with apiVersion and kind), got {type_name(obj)}"
        )
    kind = obj.get("kind")
    if kind != KIND:
        raise ValueError(
            f"kind is {kind!r}, expected {KIND}" if kind else f"kind is missing, expected {KIND}"
        )
    api_version = obj.get("apiVersion")
    if api_version != API_VERSION:
        raise ValueError(
            f"apiVersion is {api_version!r}, expected {API_VERSION}"
            if api_version
            else f"apiVersion is missing, expected {API_VERSION}"
        )
    return obj
