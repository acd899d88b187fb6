"""A SchedulingPolicy object compiled into the pipeline that schedules its pods, or every reason
why it cannot be.

Compiling checks what the API server checks (:mod:`~policy_scheduler.policy.schema`), then what
only the plugins and the selector parser know: each plugin's ``args`` (its factory reports every
problem with them: predicates', priorities', post-filters' and ``spec.plugins``' alike) and the
label syntax of the node pool. All problems of a policy come back together, so one round of edits
can fix them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from policy_scheduler.framework.args import Args, ArgsError, FieldError
from policy_scheduler.framework.interface import Filter, PostFilter, Scorer
from policy_scheduler.model.selectors import LabelSelector, SelectorError
from policy_scheduler.plugins.node_resources_fit import NAME as NODE_RESOURCES_FIT
from policy_scheduler.plugins.registry import (
    EXTENSIONS,
    FILTER_ALIASES,
    FILTERS,
    POST_FILTERS,
    SCORER_ALIASES,
    SCORERS,
)
from policy_scheduler.policy import schema
from policy_scheduler.runtime.framework import ExtensionPoints, WeightedScorer
from policy_scheduler.runtime.schedule_one import Pipeline

NODE_SELECTOR = "spec.nodeSelector"


class Mode(StrEnum):
    """A policy's ``spec.mode``."""

    ENFORCE = "Enforce"
    """Bind each pod to the chosen node."""
    DRY_RUN = "DryRun"
    """Decide and record, bind nothing (shadow mode)."""


class PolicyError(ValueError):
    """A policy that does not compile; ``errors`` holds every problem, ``str`` one per line."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        super().__init__("\n".join(map(str, errors)))
        self.errors = tuple(errors)


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    """A valid policy, ready to decide."""

    name: str
    scheduler_name: str
    """Pods with this ``spec.schedulerName`` are this policy's; ``metadata.name`` by default."""
    mode: Mode
    history: int
    generation: int
    """``metadata.generation`` of the compiled spec (0 for a policy read from a file)."""
    pipeline: Pipeline
    extensions: ExtensionPoints
    """The policy's plugins at the loop's extension points beyond filter and score, its
    ``spec.postFilters`` among them (in their order), and those of ``spec.plugins``
    (:func:`extension_points`)."""
    aliases: tuple[tuple[str, str], ...]
    """(legacy name, current name) of each legacy plugin name the policy uses, in order of use."""
    warnings: tuple[FieldError, ...] = ()
    """What is valid but likely not meant (:data:`OVERCOMMITS`): said at ``kubectl apply``, by
    ``validate`` and in the policy's ``Overcommit`` condition."""


OVERCOMMITS = (
    "no NodeResourcesFit predicate: pods are placed without counting their requests against the "
    "nodes' allocatable cpu, memory and pod count, so nodes may be overcommitted"
)
"""The warning for a policy without NodeResourcesFit (kube-scheduler's profiles always have it)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What ``validate`` and the admission webhook say of one policy, in the same words: each
    error as ``NAME: FIELD: message``, each warning as ``NAME: warning: FIELD: message``."""

    name: str
    compiled: CompiledPolicy | None
    errors: tuple[str, ...]
    warnings: tuple[str, ...]


def check(obj: Mapping[str, Any], number: int = 1) -> Verdict:
    """Compile ``obj`` and say what is wrong with it; a policy without a name is called the
    ``number``-th unnamed one."""
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    name = name if isinstance(name, str) and name else f"(unnamed policy {number})"
    try:
        compiled = compile_policy(obj)
    except PolicyError as error:
        return Verdict(name, None, tuple(f"{name}: {e}" for e in error.errors), ())
    return Verdict(name, compiled, (), tuple(f"{name}: warning: {w}" for w in compiled.warnings))


Plugin = TypeVar("Plugin", Filter[Any], Scorer[Any], PostFilter[Any])


def compile_policy(obj: Mapping[str, Any]) -> CompiledPolicy:
    """Validate and compile a SchedulingPolicy; :class:`PolicyError` carries all its problems."""
    policy = schema.apply_defaults(obj)
    metadata = _mapping(policy.get("metadata"))
    spec = _mapping(policy.get("spec"))
    errors: list[FieldError] = []
    # The API server names every object; a policy read from a file may lack the name.
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        errors.append(FieldError("metadata.name", "required"))
        name = ""
    errors += schema.validate(policy)
    node_pool = _node_pool(spec.get("nodeSelector"), errors)
    aliases: list[tuple[str, str]] = []
    predicates = _plugins(
        FILTERS, FILTER_ALIASES, spec, "predicates", errors=errors, used_aliases=aliases
    )
    priorities = _plugins(
        SCORERS, SCORER_ALIASES, spec, "priorities", errors=errors, used_aliases=aliases
    )
    post_filters = _plugins(
        POST_FILTERS, {}, spec, "postFilters", errors=errors, used_aliases=aliases
    )
    enabled = enabled_plugins(_mapping(spec.get("plugins")), errors)
    if errors:
        raise PolicyError(errors)
    generation = metadata.get("generation")
    filters = [plugin for _, plugin in predicates]
    scorers = [plugin for _, plugin in priorities]
    return CompiledPolicy(
        name=name,
        scheduler_name=spec.get("schedulerName", name),
        mode=Mode(spec["mode"]),
        history=spec["history"],
        generation=generation if isinstance(generation, int) else 0,
        pipeline=Pipeline(
            filters,
            [WeightedScorer(plugin, item["weight"]) for item, plugin in priorities],
            spec["percentageOfNodesToScore"],
            node_pool,
        ),
        extensions=extension_points([*filters, *scorers, *(p for _, p in post_filters)], enabled),
        aliases=tuple(dict.fromkeys(aliases)),
        warnings=()
        if any(f.name == NODE_RESOURCES_FIT for f in filters)
        else (FieldError("spec.predicates", OVERCOMMITS),),
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _plugins(
    factories: Mapping[str, Callable[[Args, str], Plugin]],
    aliases: Mapping[str, str],
    spec: Mapping[str, Any],
    field: str,
    *,
    errors: list[FieldError],
    used_aliases: list[tuple[str, str]],
) -> list[tuple[Mapping[str, Any], Plugin]]:
    """Each entry of ``spec[field]`` with its plugin, built from its args. An entry whose plugin
    cannot be built is left out, the reason being in ``errors``: from the schema for an unknown
    name or args that are no object, from the plugin's factory for bad args."""
    built = []
    for i, item in enumerate(_list(spec.get(field))):
        name = _mapping(item).get("name")
        args = _mapping(item).get("args", {})
        if not isinstance(name, str) or not isinstance(args, Mapping):
            continue
        current = aliases.get(name, name)
        factory = factories.get(current)
        if factory is None:
            continue
        if current != name:
            used_aliases.append((name, current))
        try:
            built.append((item, factory(args, f"spec.{field}[{i}].args")))
        except ArgsError as error:
            errors.extend(error.errors)
    return built


def enabled_plugins(fields: Mapping[str, Any], errors: list[FieldError]) -> dict[str, list[object]]:
    """The plugins ``spec.plugins`` lists under each of its fields, in order. A plugin listed under
    several fields is built once, from the args of the entries that give them, which must agree;
    an entry the schema rejects is left out, the reason being in ``errors``."""
    listed: dict[str, list[str]] = {field: [] for field in EXTENSIONS}
    given: dict[str, tuple[str, Mapping[str, Any]]] = {}
    first: dict[str, tuple[str, str]] = {}
    for field, factories in EXTENSIONS.items():
        for i, item in enumerate(_list(fields.get(field))):
            name = _mapping(item).get("name")
            args = _mapping(item).get("args", {})
            if not isinstance(name, str) or name not in factories or not isinstance(args, Mapping):
                continue
            path = f"spec.plugins.{field}[{i}].args"
            listed[field].append(name)
            first.setdefault(name, (field, path))
            if "args" not in item:
                continue
            if name not in given:
                given[name] = (path, args)
            elif args != given[name][1]:
                errors.append(
                    FieldError(
                        path,
                        f"differ from {given[name][0]}: a plugin listed more than once is one "
                        "plugin, with one set of args",
                    )
                )
    built: dict[str, object] = {}
    for name, (field, first_path) in first.items():
        path, args = given.get(name, (first_path, {}))
        try:
            built[name] = EXTENSIONS[field][name](args, path)
        except ArgsError as error:
            errors.extend(error.errors)
    return {
        field: [built[name] for name in names if name in built] for field, names in listed.items()
    }


def extension_points(
    multi_point: Iterable[object], enabled: Mapping[str, Sequence[object]]
) -> ExtensionPoints:
    """The policy's plugins by extension point. Its predicates, priorities and post-filters come
    first, at every point they implement, as kube-scheduler's multiPoint plugins; then each point's
    plugins of ``spec.plugins``, there only, as kube's plugins enabled at one point only."""
    implied = ExtensionPoints.of(multi_point)
    at = {field: ExtensionPoints.of(plugins) for field, plugins in enabled.items()}
    return ExtensionPoints(
        pre_enqueue=implied.pre_enqueue + at["preEnqueue"].pre_enqueue,
        post_filter=implied.post_filter,
        reserve=implied.reserve + at["reserve"].reserve,
        permit=implied.permit + at["permit"].permit,
        pre_bind=implied.pre_bind + at["preBind"].pre_bind,
        post_bind=implied.post_bind + at["postBind"].post_bind,
    )


def _node_pool(raw: Any, errors: list[FieldError]) -> LabelSelector | None:
    """The compiled ``spec.nodeSelector``; None, meaning every node, when there is none.

    The parser checks what the schema cannot: label key and value syntax, which the API server
    checks in Deployments' selectors but not in a custom resource's.
    """
    if raw is None or any(e.path.startswith(NODE_SELECTOR) for e in errors):
        return None  # the schema has said what is wrong with it
    try:
        return LabelSelector.parse(raw, NODE_SELECTOR)
    except SelectorError as error:
        errors.extend(FieldError(e.path, e.message) for e in error.errors)
        return None
