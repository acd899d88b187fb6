"""Kubernetes objects out of YAML files, each with the place it came from, for error messages.

A file holds one or more YAML documents (``---``); a document is one object, or a list of them
as ``kubectl get ... -o yaml`` prints it (``kind: List``, or ``<Kind>List``), whose items are
taken in order. What each object must be is the caller's to say (:mod:`policy.load` wants
SchedulingPolicies, :mod:`simulate` Nodes and Pods); this module finds the objects and reports
every problem of a file at once, one line each, naming the file and the object's place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

_YAML_TYPES = {
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    list: "a list",
    dict: "a mapping",
}

T = TypeVar("T")


class ManifestError(ValueError):
    """A file that does not hold what it should; ``problems`` are also ``str``, one a line, each
    starting with the file's name."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


def type_name(value: object) -> str:
    """What a YAML value is, for messages: "a string", "a list", ..."""
    return _YAML_TYPES.get(type(value), type(value).__name__)


SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML was built with it (4-6x faster on cluster dumps and the
CRD, which the offline commands read at every start), else the pure-Python one."""


def yaml_documents(path: Path) -> list[Any]:
    """The YAML documents of ``path``; :class:`ManifestError` with one line naming the file, and
    the line and column where it stops being YAML, when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ManifestError([f"{path}: {error.strerror}"]) from None
    try:
        try:
            return list(yaml.load_all(data, Loader=SAFE_LOADER))
        except yaml.YAMLError:
            # Said in the pure-Python parser's words, which are clearer than libyaml's.
            return list(yaml.safe_load_all(data))
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ManifestError([f"{where}: not valid YAML: {error.problem}"]) from None
    except yaml.YAMLError as error:  # not text at all: the reader's errors carry no mark
        raise ManifestError([f"{path}: not valid YAML: {error}"]) from None


def read_objects(path: Path, expected: str, parse: Callable[[Any], T]) -> list[T]:
    """``parse`` of every object of the YAML file ``path``, in file order.

    ``parse`` gets each object as YAML gives it (anything, not only mappings) and raises
    ``ValueError`` when it is not what the file should hold. :class:`ManifestError` then names
    every such object by its place (``FILE: document 2`` or ``FILE: document 1, items[3]``) with
    the message, every list without items, and a file that holds no ``expected`` object at all;
    or, alone, the place where the file stops being YAML.
    """
    documents = yaml_documents(path)
    parsed: list[T] = []
    problems: list[str] = []
    for number, document in enumerate(documents, start=1):
        where = f"{path}: document {number}"
        if document is None:  # an empty document, e.g. after a final "---"
            continue
        kind = document.get("kind") if isinstance(document, dict) else None
        if isinstance(kind, str) and kind.endswith("List"):
            items = document.get("items")
            if not isinstance(items, list):
                problems.append(f"{where}: items must be a list of {expected} objects")
                continue
            found = [(f"{where}, items[{i}]", item) for i, item in enumerate(items)]
        else:
            found = [(where, document)]
        for here, obj in found:
            try:
                parsed.append(parse(obj))
            except ValueError as error:
                problems.append(f"{here}: {error}")
    if not problems and not parsed:
        problems.append(f"{path}: holds no {expected}")
    if problems:
        raise ManifestError(problems)
    return parsed
