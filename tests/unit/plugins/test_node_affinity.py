"""NodeAffinity: spec.nodeSelector and required node affinity filter, preferred terms score, the
args' addedAffinity applies to every pod, and selectors parse as component-helpers parses them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from plugin_harness import (
    Change,
    filter_node,
    filter_nodes,
    make_node,
    raw_and_normalized,
    wakes,
)

from policy_scheduler.framework.args import ArgsError
from policy_scheduler.framework.events import EventKind
from policy_scheduler.framework.interface import ANY_NODE, FITS, SKIP, PreFilterResult, Skip
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo, Snapshot
from policy_scheduler.model.objects import PodView
from policy_scheduler.plugins import node_affinity

Raw = dict[str, Any]
PATH = "spec.predicates[4].args"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
POD_REQUIRED = f"spec.affinity.nodeAffinity.{REQUIRED}"

MISMATCH = ("node(s) didn't match Pod's node affinity/selector",)
ENFORCED = ("node(s) didn't match scheduler-enforced node affinity",)
INVALID = "node(s) didn't match Pod's invalid node affinity: "


def expr(key: str, operator: str, *values: str) -> Raw:
    raw: Raw = {"key": key, "operator": operator}
    if values:
        raw["values"] = list(values)
    return raw


def name_field(operator: str, *values: str) -> Raw:
    return expr("metadata.name", operator, *values)


def term(*expressions: Raw, fields: Sequence[Raw] = ()) -> Raw:
    raw: Raw = {"matchExpressions": list(expressions)}
    if fields:
        raw["matchFields"] = list(fields)
    return raw


def pod(
    node_selector: dict[str, str] | None = None, required: Any = None, preferred: Any = None
) -> PodView:
    node_affinity_raw: Raw = {}
    if required is not None:
        node_affinity_raw[REQUIRED] = required
    if preferred is not None:
        node_affinity_raw[PREFERRED] = preferred
    spec: Raw = {"affinity": {"nodeAffinity": node_affinity_raw}}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    return PodView({"metadata": {"name": "p"}, "spec": spec})


def required(*terms: Raw) -> Raw:
    return {"nodeSelectorTerms": list(terms)}


def node(name: str = "n1", **labels: str) -> NodeInfo:
    return make_node(name, labels)


def run_filter(p: PodView, info: NodeInfo, args: Raw | None = None) -> tuple[str, ...]:
    return filter_node(node_affinity.new_filter(args or {}, PATH), p, info)


@pytest.mark.parametrize(
    ("p", "info", "reasons"),
    [
        pytest.param(pod(), node(), FITS, id="no selector and no affinity"),
        pytest.param(pod({"disk": "ssd"}), node(disk="ssd"), FITS, id="nodeSelector matches"),
        pytest.param(pod({"disk": "ssd"}), node(disk="hdd"), MISMATCH, id="nodeSelector value"),
        pytest.param(
            pod({"disk": ""}), node(), MISMATCH, id="nodeSelector with empty value needs the label"
        ),
        pytest.param(pod({"disk": ""}), node(disk=""), FITS, id="nodeSelector empty value"),
        pytest.param(
            pod(required=required(term(expr("zone", "In", "a", "b")))),
            node(zone="b"),
            FITS,
            id="In",
        ),
        pytest.param(
            pod(required=required(term(expr("zone", "In", "a")))),
            node(),
            MISMATCH,
            id="In without the label",
        ),
        pytest.param(
            pod(required=required(term(expr("zone", "NotIn", "a")))),
            node(),
            FITS,
            id="NotIn without the label",
        ),
        pytest.param(
            pod(required=required(term(expr("zone", "NotIn", "a")))),
            node(zone="a"),
            MISMATCH,
            id="NotIn with the value",
        ),
        pytest.param(
            pod(required=required(term(expr("gpu", "Exists")))), node(gpu=""), FITS, id="Exists"
        ),
        pytest.param(
            pod(required=required(term(expr("gpu", "DoesNotExist")))),
            node(gpu="1"),
            MISMATCH,
            id="DoesNotExist",
        ),
        pytest.param(
            pod(required=required(term(expr("cores", "Gt", "8")))), node(cores="16"), FITS, id="Gt"
        ),
        pytest.param(
            pod(required=required(term(expr("cores", "Gt", "8")))),
            node(cores="8"),
            MISMATCH,
            id="Gt is strict",
        ),
        pytest.param(
            pod(required=required(term(expr("cores", "Lt", "8")))), node(cores="4"), FITS, id="Lt"
        ),
        pytest.param(
            pod(required=required(term(expr("cores", "Lt", "8")))),
            node(cores="many"),
            MISMATCH,
            id="Lt with a non-integer label",
        ),
        pytest.param(
            pod(required=required(term(expr("a", "Exists"), expr("b", "Exists")))),
            node(a="1"),
            MISMATCH,
            id="expressions of a term are ANDed",
        ),
        pytest.param(
            pod(required=required(term(expr("a", "Exists")), term(expr("b", "Exists")))),
            node(b="1"),
            FITS,
            id="terms are ORed",
        ),
        pytest.param(pod(required=required()), node(), MISMATCH, id="no terms match nothing"),
        pytest.param(
            pod(required=required({})), node(), MISMATCH, id="an empty term matches nothing"
        ),
        pytest.param(
            pod({"disk": "ssd"}, required(term(expr("zone", "In", "a")))),
            node(zone="a"),
            MISMATCH,
            id="nodeSelector and affinity both apply",
        ),
        pytest.param(
            pod(required=required(term(fields=[name_field("In", "n1")]))),
            node("n1"),
            FITS,
            id="matchFields pins the node",
        ),
        pytest.param(
            pod(required=required(term(fields=[name_field("In", "n1")]))),
            node("n2"),
            MISMATCH,
            id="another node does not match (the pipeline leaves it out first)",
        ),
        pytest.param(
            pod(required=required(term(expr("zone", "In", "a"), fields=[name_field("In", "n1")]))),
            node("n1"),
            MISMATCH,
            id="the pinned node must match the rest of the term",
        ),
        pytest.param(
            pod(
                required=required(
                    term(fields=[name_field("In", "n1")]), term(expr("zone", "In", "a"))
                )
            ),
            node("n2"),
            MISMATCH,
            id="a term without names does not narrow",
        ),
        pytest.param(
            pod(
                required=required(
                    term(fields=[name_field("In", "n1")]), term(fields=[name_field("In", "n2")])
                )
            ),
            node("n2"),
            FITS,
            id="pinned names of all terms add up",
        ),
        pytest.param(
            pod(required=required(term(fields=[name_field("NotIn", "n1")]))),
            node("n1"),
            MISMATCH,
            id="matchFields NotIn",
        ),
        pytest.param(
            pod(required=required(term(fields=[name_field("NotIn", "n1")]))),
            node("n2"),
            FITS,
            id="matchFields NotIn another node",
        ),
        pytest.param(
            pod(required=required(term(fields=[name_field("In", "n1"), name_field("In", "n2")]))),
            node("n1"),
            MISMATCH,
            id="disjoint pinned names match no node",
        ),
        pytest.param(
            pod(
                required=required(term(expr("cores", "Gt", "many")), term(expr("zone", "In", "a")))
            ),
            node(zone="a"),
            FITS,
            id="an invalid term is skipped, the others count",
        ),
        pytest.param(
            pod(
                required=required(term(expr("cores", "Gt", "many")), term(expr("zone", "In", "a")))
            ),
            node(cores="9"),
            MISMATCH,
            id="an invalid term matches nothing",
        ),
        pytest.param(
            pod(required=required(term(expr("cores", "Gt", "many")))),
            node(cores="9"),
            (
                f"{INVALID}{POD_REQUIRED}.nodeSelectorTerms[0].matchExpressions[0]"
                ".values[0]: 'many' is not an integer",
            ),
            id="Gt with a non-integer value",
        ),
        pytest.param(
            pod(required=required(term(expr("cores", "Gt", "1_0")))),
            node(cores="11"),
            (
                f"{INVALID}{POD_REQUIRED}.nodeSelectorTerms[0].matchExpressions[0]"
                ".values[0]: '1_0' is not an integer",
            ),
            id="Gt value as Go's ParseInt reads it",
        ),
        pytest.param(
            pod(required=required(term(expr("zone", "NotIn", "a b")))),
            node(),
            (
                f"{INVALID}{POD_REQUIRED}.nodeSelectorTerms[0].matchExpressions[0]"
                ".values[0]: invalid label value 'a b': must be at most 63 alphanumeric "
                "characters, '-', '_' or '.', starting and ending with an alphanumeric "
                "character",
            ),
            id="a value that is not a label value",
        ),
        pytest.param(
            pod(required=required(term(fields=[name_field("Exists")]))),
            node(),
            (
                f"{INVALID}{POD_REQUIRED}.nodeSelectorTerms[0].matchFields[0].operator: "
                "'Exists' is not one of ['In', 'NotIn']",
            ),
            id="matchFields only take In and NotIn",
        ),
        pytest.param(
            pod(required=required(term(fields=[name_field("In", "n1", "n2")]))),
            node("n1"),
            (
                f"{INVALID}{POD_REQUIRED}.nodeSelectorTerms[0].matchFields[0].values: "
                "must have exactly one element",
            ),
            id="matchFields take exactly one value",
        ),
        pytest.param(
            pod(required=required(term(expr("zone", "Near", "a")))),
            node(zone="a"),
            (
                f"{INVALID}{POD_REQUIRED}.nodeSelectorTerms[0].matchExpressions[0]"
                ".operator: 'Near' is not one of ['DoesNotExist', 'Exists', 'Gt', 'In', "
                "'Lt', 'NotIn']",
            ),
            id="unknown operator",
        ),
        pytest.param(
            pod(required={"nodeSelectorTerms": "zone=a"}),
            node(),
            (f"{INVALID}{POD_REQUIRED}.nodeSelectorTerms: must be a list",),
            id="terms that are not a list",
        ),
        pytest.param(
            pod(required=["zone"]),
            node(),
            (f"{INVALID}{POD_REQUIRED}: must be an object",),
            id="a selector that is not an object",
        ),
    ],
)
def test_filter(p: PodView, info: NodeInfo, reasons: tuple[str, ...]) -> None:
    assert run_filter(p, info) == reasons


ADDED = {"addedAffinity": {REQUIRED: required(term(expr("pool", "In", "batch")))}}


MANY = [
    node("n1", zone="a", pool="batch", cores="16"),
    node("n2", zone="a", pool="batch", cores="4"),
    node("n3", zone="a", pool="web", cores="16"),
    node("n4", zone="b", pool="batch", cores="16"),
    node("n5", pool="batch"),
    node("n6"),
]


@pytest.mark.parametrize(
    ("p", "args", "fitting"),
    [
        pytest.param(
            pod({"pool": "batch"}, required(term(expr("cores", "Gt", "8")))),
            None,
            ["n1", "n4"],
            id="nodeSelector and a term on other labels",
        ),
        pytest.param(
            pod(
                required=required(term(expr("zone", "In", "a")), term(expr("zone", "DoesNotExist")))
            ),
            None,
            ["n1", "n2", "n3", "n5", "n6"],
            id="terms ORed, a missing label too",
        ),
        pytest.param(
            pod(required=required(term(expr("zone", "In", "a"), fields=[name_field("In", "n2")]))),
            None,
            ["n2"],
            id="a term that reads the name",
        ),
        pytest.param(
            pod(required=required(term(expr("zone", "In", "a")))),
            ADDED,
            ["n1", "n2"],
            id="the enforced selector's labels count too",
        ),
    ],
)
def test_filter_over_nodes_alike_and_unlike(
    p: PodView, args: Raw | None, fitting: list[str]
) -> None:
    # The harness checks the block's verdicts against filter's, node by node.
    plugin = node_affinity.new_filter(args or {}, PATH)
    verdicts = filter_nodes(plugin, p, MANY)
    assert [info.name for info, v in zip(MANY, verdicts, strict=True) if v == FITS] == fitting


@pytest.mark.parametrize(
    ("p", "info", "reasons"),
    [
        pytest.param(pod(), node(pool="batch"), FITS, id="enforced affinity matches"),
        pytest.param(pod(), node(pool="web"), ENFORCED, id="enforced affinity applies to all"),
        pytest.param(
            pod({"disk": "ssd"}),
            node(pool="web"),
            ENFORCED,
            id="enforced affinity is checked first",
        ),
        pytest.param(pod({"disk": "ssd"}), node(pool="batch"), MISMATCH, id="then the pod's own"),
        pytest.param(
            pod(required=required(term(fields=[name_field("In", "n1")]))),
            node("n2", pool="web"),
            ENFORCED,
            id="enforced affinity comes before the pinned names too",
        ),
    ],
)
def test_filter_with_added_affinity(p: PodView, info: NodeInfo, reasons: tuple[str, ...]) -> None:
    assert run_filter(p, info, ADDED) == reasons


def pinned(*names: str) -> PreFilterResult:
    return PreFilterResult(frozenset(names))


@pytest.mark.parametrize(
    ("p", "result"),
    [
        pytest.param(pod(), SKIP, id="no selector and no affinity: skipped"),
        pytest.param(pod({"disk": "ssd"}), ANY_NODE, id="a nodeSelector names no node"),
        pytest.param(
            pod(required=required(term(fields=[name_field("In", "n1")]))),
            pinned("n1"),
            id="matchFields In names the node",
        ),
        pytest.param(
            pod(required=required(term(expr("zone", "In", "a"), fields=[name_field("In", "n1")]))),
            pinned("n1"),
            id="the rest of the term is left to the filter",
        ),
        pytest.param(
            pod(
                required=required(
                    term(fields=[name_field("In", "n1")]), term(fields=[name_field("In", "n2")])
                )
            ),
            pinned("n1", "n2"),
            id="the names of all terms add up",
        ),
        pytest.param(
            pod(
                required=required(
                    term(fields=[name_field("In", "n1")]), term(expr("zone", "In", "a"))
                )
            ),
            ANY_NODE,
            id="a term without names names no node",
        ),
        pytest.param(
            pod(required=required(term(fields=[name_field("NotIn", "n1")]))),
            ANY_NODE,
            id="matchFields NotIn names no node",
        ),
        pytest.param(pod(required=required()), ANY_NODE, id="no terms name no node"),
        pytest.param(
            pod(required=required(term(fields=[name_field("In", "n1"), name_field("In", "n2")]))),
            PreFilterResult(rejection="pod affinity terms conflict"),
            id="disjoint names in a term reject the pod",
        ),
        pytest.param(
            pod(required=required(term(fields=[name_field("In", "n1", "n2")]))),
            pinned("n1", "n2"),
            id="names of a term invalid for two values still count, as in kube",
        ),
    ],
)
def test_pre_filter_result(p: PodView, result: PreFilterResult | Skip) -> None:
    """kube-scheduler's NodeAffinity PreFilter: the nodes the pod's terms pin by name."""
    plugin = node_affinity.new_filter({}, PATH)
    state = plugin.pre_filter(Cycle(p, Snapshot()))
    assert (state if state is SKIP else plugin.pre_filter_result(state)) == result


def test_added_affinity_without_terms_rejects_every_node() -> None:
    args: Raw = {"addedAffinity": {REQUIRED: {"nodeSelectorTerms": []}}}
    assert run_filter(pod(), node(), args) == ENFORCED


# kube-scheduler's NodeAffinity hint: a node added that matches the pod (and the enforced
# affinity), or a node whose labels changed so that it matches now and did not before.
ADDED_NODE, LABELS = EventKind.NODE_ADDED, EventKind.NODE_LABELS
SSD = pod({"disk": "ssd"})
HINTS: dict[str, tuple[PodView, Change, Raw, bool]] = {
    "a node added that matches helps": (SSD, Change(ADDED_NODE, node(disk="ssd")), {}, True),
    "a node added that does not match does not": (SSD, Change(ADDED_NODE, node()), {}, False),
    "a node added that matches the required terms helps": (
        pod(required=required(term(expr("zone", "In", "a")))),
        Change(ADDED_NODE, node(zone="a")),
        {},
        True,
    ),
    "a node added outside the enforced affinity does not": (
        pod(),
        Change(ADDED_NODE, node(pool="web")),
        ADDED,
        False,
    ),
    "a node added inside the enforced affinity helps": (
        pod(),
        Change(ADDED_NODE, node(pool="batch")),
        ADDED,
        True,
    ),
    "a node relabelled to match helps": (SSD, Change(LABELS, node(disk="ssd"), node()), {}, True),
    "a node that matched, relabelled, does not": (
        SSD,
        Change(LABELS, node(disk="ssd", rack="r2"), node(disk="ssd", rack="r1")),
        {},
        False,
    ),
    "a node relabelled and still not matching does not": (
        SSD,
        Change(LABELS, node(disk="hdd"), node()),
        {},
        False,
    ),
    "a node relabelled, its labels before unknown, is read as an addition": (
        SSD,
        Change(LABELS, node(disk="ssd")),
        {},
        True,
    ),
    "a taint change is not asked about": (
        SSD,
        Change(EventKind.NODE_TAINTS, node(disk="ssd"), node()),
        {},
        False,
    ),
}


@pytest.mark.parametrize(("p", "change", "args", "helps"), HINTS.values(), ids=HINTS.keys())
def test_queueing_hint(p: PodView, change: Change, args: Raw, helps: bool) -> None:
    assert wakes(node_affinity.new_filter(args, PATH), p, change) is helps


def preference(weight: int, *expressions: Raw, fields: Sequence[Raw] = ()) -> Raw:
    return {"weight": weight, "preference": term(*expressions, fields=fields)}


def run_scorer(
    p: PodView, nodes: list[NodeInfo], args: Raw | None = None
) -> tuple[list[int], list[int]]:
    """The raw and the normalized scores."""
    return raw_and_normalized(node_affinity.new_scorer(args or {}, PATH), p, nodes)


ZONES = [node("n1", zone="a", disk="ssd"), node("n2", zone="a"), node("n3", zone="b")]


@pytest.mark.parametrize(
    ("p", "nodes", "raw", "scores"),
    [
        pytest.param(pod(), ZONES, [0, 0, 0], [0, 0, 0], id="no preferences"),
        pytest.param(
            pod(
                preferred=[
                    preference(2, expr("zone", "In", "a")),
                    preference(3, expr("disk", "Exists")),
                ]
            ),
            ZONES,
            [5, 2, 0],
            [100, 40, 0],
            id="weights of matching terms add up",
        ),
        pytest.param(
            pod(
                preferred=[
                    preference(1, expr("zone", "In", "a")),
                    preference(2, expr("zone", "In", "b")),
                ]
            ),
            ZONES,
            [1, 1, 2],
            [50, 50, 100],
            id="normalized to the best node",
        ),
        pytest.param(
            pod(
                preferred=[
                    preference(1, expr("disk", "Exists")),
                    preference(2, expr("zone", "In", "b")),
                ]
            ),
            [node("n1", disk="x"), node("n2", disk="x", zone="b"), node("n3")],
            [1, 3, 0],
            [33, 100, 0],
            id="integer division rounds down",
        ),
        pytest.param(
            pod(
                preferred=[
                    preference(0, expr("zone", "In", "a")),
                    preference(5, expr("zone", "In", "c")),
                ]
            ),
            ZONES,
            [0, 0, 0],
            [0, 0, 0],
            id="weight 0 counts for nothing",
        ),
        pytest.param(
            pod(preferred=[{"weight": 4, "preference": {}}]),
            ZONES,
            [0, 0, 0],
            [0, 0, 0],
            id="an empty preference matches nothing",
        ),
        pytest.param(
            pod(preferred=[preference(7, fields=[name_field("In", "n3")])]),
            ZONES,
            [0, 0, 7],
            [0, 0, 100],
            id="matchFields in a preference",
        ),
        pytest.param(
            pod(
                preferred=[
                    preference(3, expr("zone", "NotIn", "b")),
                    preference(4, expr("cores", "Gt", "8"), expr("zone", "Exists")),
                ]
            ),
            [
                node("n1", zone="a", cores="16", disk="ssd"),
                node("n2", zone="a", cores="16"),
                node("n3", zone="a", cores="4"),
                node("n4", cores="16"),
                node("n5", zone="b", cores="16"),
                node("n6"),
            ],
            [7, 7, 3, 3, 4, 3],
            [100, 100, 42, 42, 57, 42],
            id="nodes alike in the preferred labels score alike, a missing label too",
        ),
        pytest.param(
            pod(
                preferred=[
                    preference(7, expr("cores", "Gt", "x")),
                    preference(3, expr("zone", "In", "a")),
                ]
            ),
            ZONES,
            [0, 0, 0],
            [0, 0, 0],
            id="invalid preferences are ignored as a whole",
        ),
        pytest.param(
            pod(required=required(term(expr("zone", "In", "b")))),
            ZONES,
            [0, 0, 0],
            [0, 0, 0],
            id="required terms do not score",
        ),
    ],
)
def test_score(p: PodView, nodes: list[NodeInfo], raw: list[int], scores: list[int]) -> None:
    assert run_scorer(p, nodes) == (raw, scores)


ADDED_PREFERENCE = {"addedAffinity": {PREFERRED: [preference(10, expr("zone", "In", "b"))]}}


@pytest.mark.parametrize(
    ("p", "raw", "scores"),
    [
        pytest.param(pod(), [0, 0, 10], [0, 0, 100], id="added preference alone"),
        pytest.param(
            pod(preferred=[preference(5, expr("zone", "In", "a"))]),
            [5, 5, 10],
            [50, 50, 100],
            id="added and pod preferences add up",
        ),
        pytest.param(
            pod(preferred=[preference(5, expr("zone", "In", "a b"))]),
            [0, 0, 10],
            [0, 0, 100],
            id="an invalid pod preference leaves the added one",
        ),
    ],
)
def test_score_with_added_affinity(p: PodView, raw: list[int], scores: list[int]) -> None:
    assert run_scorer(p, ZONES, ADDED_PREFERENCE) == (raw, scores)


ARGS_REQUIRED = f"{PATH}.addedAffinity.{REQUIRED}"
ARGS_PREFERRED = f"{PATH}.addedAffinity.{PREFERRED}"


@pytest.mark.parametrize(
    ("args", "errors"),
    [
        pytest.param(
            {"affinity": {}},
            [f"{PATH}.affinity: unknown field; expected one of ['addedAffinity']"],
            id="unknown field",
        ),
        pytest.param(
            {"addedAffinity": []}, [f"{PATH}.addedAffinity: must be an object"], id="not an object"
        ),
        pytest.param(
            {"addedAffinity": {"requiredDuringSchedulingRequiredDuringExecution": {}}},
            [
                f"{PATH}.addedAffinity.requiredDuringSchedulingRequiredDuringExecution: "
                f"unknown field; expected one of ['{PREFERRED}', '{REQUIRED}']"
            ],
            id="unknown affinity field",
        ),
        pytest.param(
            {
                "addedAffinity": {
                    REQUIRED: required(
                        term(expr("cores", "Gt", "x"), expr("bad key", "Exists")),
                        term(expr("zone", "In")),
                    ),
                    PREFERRED: [
                        preference(101, expr("zone", "In", "a")),
                        preference(1, fields=[name_field("Gt", "1")]),
                        "zone",
                    ],
                }
            },
            [
                f"{ARGS_REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].values[0]: "
                "'x' is not an integer",
                f"{ARGS_REQUIRED}.nodeSelectorTerms[0].matchExpressions[1].key: invalid "
                "label key 'bad key': the name must be at most 63 alphanumeric "
                "characters, '-', '_' or '.', starting and ending with an alphanumeric "
                "character",
                f"{ARGS_REQUIRED}.nodeSelectorTerms[1].matchExpressions[0]: values must "
                "be non-empty for operator In",
                f"{ARGS_PREFERRED}[0].weight: must be an integer from 0 to 100",
                f"{ARGS_PREFERRED}[1].preference.matchFields[0].operator: 'Gt' is not "
                "one of ['In', 'NotIn']",
                f"{ARGS_PREFERRED}[2]: must be an object",
            ],
            id="every problem with its full path",
        ),
    ],
)
def test_invalid_args(args: Raw, errors: list[str]) -> None:
    for factory in (node_affinity.new_filter, node_affinity.new_scorer):
        with pytest.raises(ArgsError) as caught:
            factory(args, PATH)
        assert [str(error) for error in caught.value.errors] == errors
