"""Which SchedulingPolicy serves which ``schedulerName``, and what the others are told.

Every policy claims one scheduler name (``spec.schedulerName``, else its own name). When several
claim the same name the oldest serves it and the others are in conflict, so adding a policy never
silently takes pods away from one that already schedules them. A claimant that does not compile
still holds its name: its pods wait, told why, rather than being scheduled by a policy nobody
meant for them. Names whose policies were deleted are remembered, so their pods are told that
nobody serves them any more, while pods of other schedulers are left alone.

The table also says what each policy's conditions are (``Ready``, ``Valid``, ``Conflict``, and
``Overcommit`` for a policy that places pods without counting their requests).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from policy_scheduler.policy.compiler import CompiledPolicy, PolicyError, compile_policy


@dataclass(frozen=True, slots=True)
class Condition:
    """One of a policy's status conditions, before the status writer stamps it."""

    type: str
    status: bool
    reason: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class PolicyEntry:
    """A SchedulingPolicy as last seen: compiled, or the errors that kept it from compiling."""

    name: str
    uid: str
    created: str
    generation: int
    scheduler_name: str
    compiled: CompiledPolicy | None
    errors: tuple[str, ...] = ()

    @property
    def age_key(self) -> tuple[str, str]:
        return (self.created, self.name)


@dataclass(frozen=True, slots=True)
class Route:
    """Where a pending pod with some scheduler name stands."""

    policy: CompiledPolicy | None = None
    waiting: str | None = None  # why the pod waits, when it is ours but nothing serves it

    @property
    def ours(self) -> bool:
        return self.policy is not None or self.waiting is not None


IGNORE = Route()


def claimed_scheduler_name(obj: Mapping[str, Any]) -> str:
    spec = obj.get("spec") or {}
    name = spec.get("schedulerName") if isinstance(spec, Mapping) else None
    return str(name or (obj.get("metadata") or {}).get("name", ""))


class PolicyTable:
    """Every SchedulingPolicy, by name, and which of them serves each scheduler name.

    An object is known by its uid too: one deleted and created again under its name is a new
    policy (its generation starts again at 1), and a deletion names the object it deletes."""

    def __init__(self) -> None:
        self._entries: dict[str, PolicyEntry] = {}
        self._retired: set[str] = set()

    def __iter__(self) -> Iterator[PolicyEntry]:
        return iter(self._entries.values())

    def get(self, name: str) -> PolicyEntry | None:
        return self._entries.get(name)

    def apply(self, obj: Mapping[str, Any]) -> tuple[PolicyEntry, bool]:
        """Compile a policy unless this generation of this object is compiled already; True when
        it changed."""
        metadata = obj.get("metadata") or {}
        name = str(metadata.get("name", ""))
        uid = str(metadata.get("uid") or "")
        generation = int(metadata.get("generation") or 0)
        old = self._entries.get(name)
        if old is not None and (old.uid, old.generation) == (uid, generation):
            return old, False
        try:
            compiled: CompiledPolicy | None = compile_policy(obj)
            errors: tuple[str, ...] = ()
        except PolicyError as error:
            compiled, errors = None, tuple(map(str, error.errors))
        entry = PolicyEntry(
            name=name,
            uid=uid,
            created=str(metadata.get("creationTimestamp") or ""),
            generation=generation,
            scheduler_name=compiled.scheduler_name if compiled else claimed_scheduler_name(obj),
            compiled=compiled,
            errors=errors,
        )
        self._entries[name] = entry
        if old is not None and old.scheduler_name != entry.scheduler_name:
            self._retired.add(old.scheduler_name)
        return entry, True

    def remove(self, name: str, uid: str) -> bool:
        """Forget the policy ``name`` if it is still the object ``uid``; True when it was."""
        entry = self._entries.get(name)
        if entry is None or entry.uid != uid:
            return False
        del self._entries[name]
        self._retired.add(entry.scheduler_name)
        return True

    def owner(self, scheduler_name: str) -> PolicyEntry | None:
        """The oldest policy claiming ``scheduler_name``."""
        claimants = [e for e in self._entries.values() if e.scheduler_name == scheduler_name]
        return min(claimants, key=lambda e: e.age_key, default=None)

    def served(self) -> list[CompiledPolicy]:
        """The valid policies that serve their scheduler name (the oldest claimant of each)."""
        owners = {entry.scheduler_name: self.owner(entry.scheduler_name) for entry in self}
        return [owner.compiled for owner in owners.values() if owner and owner.compiled]

    def route(self, scheduler_name: str) -> Route:
        owner = self.owner(scheduler_name)
        if owner is None:
            if scheduler_name in self._retired:
                return Route(waiting=f"no SchedulingPolicy serves schedulerName {scheduler_name}")
            return IGNORE
        if owner.compiled is None:
            return Route(
                waiting=f"SchedulingPolicy {owner.name} is invalid: {'; '.join(owner.errors)}"
            )
        return Route(policy=owner.compiled)

    def conditions(self, entry: PolicyEntry) -> list[Condition]:
        """``Ready``, ``Valid`` and ``Conflict`` for one of the table's policies; ``Overcommit``
        too when its compiler warns that it may overcommit nodes."""
        owner = self.owner(entry.scheduler_name)
        valid = Condition("Valid", True, "Compiled")
        if entry.compiled is None:
            valid = Condition("Valid", False, "InvalidPolicy", "; ".join(entry.errors))
        conflict = Condition("Conflict", False, "NoConflict")
        if owner is not None and owner.name != entry.name:
            conflict = Condition(
                "Conflict",
                True,
                "SchedulerNameTaken",
                f"schedulerName {entry.scheduler_name} is served by SchedulingPolicy "
                f"{owner.name}, which is older",
            )
        if not valid.status:
            ready = Condition("Ready", False, "InvalidPolicy", "the policy does not compile")
        elif conflict.status:
            ready = Condition("Ready", False, "Conflict", conflict.message)
        else:
            ready = Condition(
                "Ready",
                True,
                "Serving",
                f"scheduling pods with schedulerName {entry.scheduler_name}",
            )
        conditions = [ready, valid, conflict]
        if entry.compiled is not None and entry.compiled.warnings:
            conditions.append(
                Condition(
                    "Overcommit",
                    True,
                    "NoNodeResourcesFit",
                    "; ".join(str(w) for w in entry.compiled.warnings),
                )
            )
        return conditions
