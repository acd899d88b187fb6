"""What plugins prepare for one pod's scheduling cycle and read back at its later extension points:
kube-scheduler's CycleState (pkg/scheduler/framework/cycle_state.go).
"""

from __future__ import annotations

from typing import Any


class CycleState:
    """What each plugin prepared for one pod's cycle (its ``pre_filter`` result), handed back to
    the plugin's later extension points in the same cycle, as kube-scheduler's CycleState."""

    __slots__ = ("_states",)

    def __init__(self) -> None:
        self._states: dict[int, Any] = {}

    def write(self, plugin: object, state: Any) -> None:
        self._states[id(plugin)] = state

    def read(self, plugin: object) -> Any:
        """The state ``plugin`` prepared in this cycle; None when it prepared none."""
        return self._states.get(id(plugin))
