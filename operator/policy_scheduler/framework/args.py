"""Plugin arguments and their validation errors, each naming the field of the policy that is wrong
(kube-scheduler's pkg/scheduler/apis/config/validation for plugin args).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Args = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class FieldError:
    """A problem with one field of a policy, e.g. ``spec.priorities[1].weight: must be >= 1``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ArgsError(ValueError):
    """A plugin's ``args`` are invalid; carries every problem found, not just the first."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        super().__init__("; ".join(map(str, errors)))
        self.errors = tuple(errors)


def no_args(name: str, args: Args, path: str) -> None:
    """Reject args given to a plugin that takes none."""
    if args:
        raise ArgsError([FieldError(path, f"{name} takes no args, got {sorted(args)}")])


def unknown_fields(args: Args, known: Collection[str], path: str) -> list[FieldError]:
    """One error per key of ``args`` that the plugin does not take."""
    return [
        FieldError(f"{path}.{key}", f"unknown field; expected one of {sorted(known)}")
        for key in sorted(set(args) - set(known), key=str)
    ]
