"""SchedulingPolicy objects out of YAML files, for ``policy-scheduler validate`` and ``simulate``.

A file holds one or more YAML documents, each a SchedulingPolicy or a list of them (``kind: List``
as ``kubectl get schedulingpolicies -o yaml`` writes it, or ``SchedulingPolicyList``). Anything
else is an error that names the file and the document, so a wrong file is caught before any policy
in it is checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from policy_scheduler.policy.schema import API_VERSION, KIND

_LIST_KINDS = ("List", f"{KIND}List")

_YAML_TYPES = {
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    list: "a list",
}


class PolicyFileError(ValueError):
    """A file that is not a set of SchedulingPolicies; ``problems`` are also ``str``, one a line."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


def read_policy_file(path: Path) -> list[dict[str, Any]]:
    """The SchedulingPolicy objects of the YAML file ``path``, in file order, not yet validated.

    Raises :class:`PolicyFileError` naming every document that is not a SchedulingPolicy, or the
    place where the file stops being YAML, or that the file holds no policy at all.
    """
    try:
        documents = list(yaml.safe_load_all(path.read_bytes()))
    except OSError as error:
        raise PolicyFileError([f"{path}: {error.strerror}"]) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise PolicyFileError([f"{where}: not valid YAML: {error.problem}"]) from None
    except yaml.YAMLError as error:  # not text at all: the reader's errors carry no mark
        raise PolicyFileError([f"{path}: not valid YAML: {error}"]) from None
    policies: list[dict[str, Any]] = []
    problems: list[str] = []
    for number, document in enumerate(documents, start=1):
        where = f"{path}: document {number}"
        if document is None:  # an empty document, e.g. after a final "---"
            continue
        if isinstance(document, dict) and document.get("kind") in _LIST_KINDS:
            items = document.get("items")
            if not isinstance(items, list):
                problems.append(f"{where}: items must be a list of {KIND} objects")
                continue
            found = [(f"{where}, items[{i}]", item) for i, item in enumerate(items)]
        else:
            found = [(where, document)]
        for here, obj in found:
            problem = _not_a_policy(obj)
            if problem:
                problems.append(f"{here}: {problem}")
            else:
                policies.append(obj)
    if not problems and not policies:
        problems.append(f"{path}: holds no {KIND}")
    if problems:
        raise PolicyFileError(problems)
    return policies


def _not_a_policy(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        what = _YAML_TYPES.get(type(obj), type(obj).__name__)
        return f"expected a {KIND} (a mapping with apiVersion and kind), got {what}"
    kind = obj.get("kind")
    if kind != KIND:
        return f"kind is {kind!r}, expected {KIND}" if kind else f"kind is missing, expected {KIND}"
    api_version = obj.get("apiVersion")
    if api_version != API_VERSION:
        return (
            f"apiVersion is {api_version!r}, expected {API_VERSION}"
            if api_version
            else f"apiVersion is missing, expected {API_VERSION}"
        )
    return None
