"""The contract between the pipeline and its plugins, after kube-scheduler's framework.

A scheduling cycle runs each filter's ``pre_filter`` once per pod, then ``filter`` per node; then
each scorer's ``pre_score`` once over the feasible nodes, ``score`` per node and ``normalize`` over
all of them. Whatever ``pre_*`` returns is handed back to the per-node calls, so the per-pod work
(parsing the pod's affinity, counting pods per topology domain) happens once per cycle.

A ``pre_filter`` or ``pre_score`` may return :data:`SKIP`, as kube-scheduler's PreFilter and
PreScore return a Skip status: the plugin has nothing to say about this pod, so its ``filter``
(every node passes it) or its ``score`` and ``normalize`` are not run in this cycle. A skipped
scorer adds nothing to a node's total and shows as 0 in the per-plugin breakdown, which is what
its scores would have been: plugins return SKIP only where kube-scheduler does, and there every
node would score the same 0.

Plugins read the snapshot and never change it. A filter says why a node does not fit with one or
more reason strings, the texts kube-scheduler uses, which the pipeline counts into messages such as
"0/5 nodes are available: 3 Insufficient cpu.".
"""

from __future__ import annotations

import enum
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypeVar

from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import PodView

MAX_NODE_SCORE = 100
"""Every scorer's score, after normalization, lies in 0..MAX_NODE_SCORE."""

FITS: tuple[str, ...] = ()
"""What ``filter`` returns for a node that passes."""


class _Skip(enum.Enum):
    SKIP = "skip"


SKIP: Final = _Skip.SKIP
"""What ``pre_filter``/``pre_score`` return to skip the plugin's per-node work for this pod."""
Skip = Literal[_Skip.SKIP]

State = TypeVar("State")
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


@dataclass(slots=True)
class Cycle:
    """One pod's scheduling cycle: the pod, the snapshot it is decided on, the random source."""

    pod: PodView
    snapshot: Snapshot
    rng: random.Random = field(default_factory=random.Random)


class Filter(ABC, Generic[State]):
    """A predicate: every filter of a policy must pass for a node to be feasible."""

    name: str

    def pre_filter(self, cycle: Cycle) -> State | Skip:
        """Per-pod preparation; its result is passed to every ``filter`` call of this cycle, or
        SKIP when every node passes."""
        return None  # type: ignore[return-value]

    @abstractmethod
    def filter(self, state: State, pod: PodView, node: NodeInfo) -> Sequence[str]:
        """``FITS`` when the pod may run on ``node``, otherwise the reasons it may not."""


class Scorer(ABC, Generic[State]):
    """A priority: scores each feasible node 0..100 for the pod."""

    name: str

    def pre_score(self, cycle: Cycle, nodes: Sequence[NodeInfo]) -> State | Skip:
        """Per-pod preparation over the feasible ``nodes``; given to ``score`` and ``normalize``,
        or SKIP when the plugin does not score this pod."""
        return None  # type: ignore[return-value]

    @abstractmethod
    def score(self, state: State, pod: PodView, node: NodeInfo) -> int:
        """The node's raw score; scorers without ``normalize`` return 0..MAX_NODE_SCORE."""

    def normalize(self, state: State, scores: list[int]) -> None:
        """Rescale ``scores`` (one per feasible node, in order) to 0..MAX_NODE_SCORE in place."""


def normalize_to_max(scores: list[int], reverse: bool = False) -> None:
    """kube-scheduler's DefaultNormalizeScore: scale so the highest score becomes 100.

    With ``reverse`` the scale is flipped, so the node with the highest raw score gets 0. When every
    score is 0, all become 0 (or all 100 when reversed).
    """
    highest = max(scores, default=0)
    if highest == 0:
        if reverse:
            scores[:] = [MAX_NODE_SCORE] * len(scores)
        return
    for i, score in enumerate(scores):
        scaled = MAX_NODE_SCORE * score // highest
        scores[i] = MAX_NODE_SCORE - scaled if reverse else scaled


FilterFactory = Callable[[Args, str], Filter[Any]]
ScorerFactory = Callable[[Args, str], Scorer[Any]]
"""Factories take the plugin's ``args`` and their path in the policy (for errors); they raise
:class:`ArgsError` listing every problem with the args."""


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
