"""``policy-scheduler validate`` and ``simulate``: exit codes, every error line, output shapes."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.cli import EXIT_BAD_INPUT, main
from policy_scheduler.explain import Report
from policy_scheduler.framework.interface import SKIP, Filter, Scorer, Skip
from policy_scheduler.framework.types import Cycle
from policy_scheduler.model.nodeinfo import NodeInfo
from policy_scheduler.model.objects import PodView
from policy_scheduler.policy.compiler import compile_policy
from policy_scheduler.runtime.decision import Candidate
from policy_scheduler.runtime.explanation import explain
from policy_scheduler.runtime.framework import WeightedScorer
from policy_scheduler.runtime.schedule_one import Pipeline
from policy_scheduler.simulate import load_cluster, snapshot_of

POLICY = """\
apiVersion: policy-scheduler.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: %s}
spec:
  predicates: [{name: NodeResourcesFit}, {name: TaintToleration}]
  priorities:
    - {name: LeastAllocated, weight: 2}
    - {name: NodeLabelPreference, weight: 1, args: {label: zone, values: [a]}}
"""

LEGACY = """\
apiVersion: policy-scheduler.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: old}
spec:
  predicates: [{name: PodFitsResources}]
  priorities: [{name: LeastRequestedPriority}]
"""

INVALID = """\
apiVersion: policy-scheduler.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: bad}
spec:
  priorities: [{name: LeastAllocated, weight: 0}, {name: NodeLabelPreference}]
"""

RANDOM = """\
apiVersion: policy-scheduler.dev/v1alpha1
kind: SchedulingPolicy
metadata: {name: spread}
spec:
  predicates: [{name: NodeResourcesFit}]
  priorities: [{name: Random}]
"""


def node(name: str, cpu: str, zone: str = "a") -> str:
    return f"""\
- apiVersion: v1
  kind: Node
  metadata: {{name: {name}, labels: {{zone: {zone}}}}}
  status: {{allocatable: {{cpu: "{cpu}", memory: 8Gi, pods: "110"}}}}
"""


def pod(name: str, cpu: str, scheduler: str = "spread", node_name: str = "") -> str:
    return f"""\
- apiVersion: v1
  kind: Pod
  metadata: {{name: {name}, namespace: ns, creationTimestamp: "2026-01-01T00:00:0{len(name)}Z"}}
  spec:
    schedulerName: {scheduler}
    nodeName: "{node_name}"
    containers: [{{name: c, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}]
"""


# Two nodes; "busy" already runs 1 of its 2 CPUs. "web" fits both, "huge" neither; "other" is
# another scheduler's and "placed" is bound already: neither is simulated.
CLUSTER = (
    "apiVersion: v1\nkind: List\nitems:\n"
    + node("busy", "2")
    + node("idle", "2", zone="b")
    + pod("placed", "1", node_name="busy")
    + pod("web", "500m")
    + pod("huge", "3")
    + pod("other", "1", scheduler="default-scheduler")
)

TABLE = """\
ns/web -> busy (66.67)
  PRIORITY             WEIGHT  busy   idle
  LeastAllocated       2       50     81
  NodeLabelPreference  1       100    0
  total                        66.67  54

ns/huge: unschedulable: 0/2 nodes are available: 2 Insufficient cpu.
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- validate ----------------------------------------------------------------------------------

VALIDATE_CASES = [
    pytest.param({"p": POLICY % "a"}, 0, ["{p}: a: valid"], id="valid"),
    pytest.param(
        {"p": POLICY % "a" + "---\n" + POLICY % "b"},
        0,
        ["{p}: a: valid", "{p}: b: valid"],
        id="two-in-one-file",
    ),
    pytest.param(
        {"p": LEGACY},
        0,
        [
            "{p}: old: valid",
            "{p}: old: PodFitsResources is the legacy name of NodeResourcesFit",
            "{p}: old: LeastRequestedPriority is the legacy name of LeastAllocated",
        ],
        id="legacy-names",
    ),
    pytest.param(
        {"p": INVALID},
        1,
        [
            "{p}: bad: spec.priorities[0].weight: must be between 1 and 100",
            "{p}: bad: spec.priorities[1].args.label: required: the label key to prefer nodes by",
        ],
        id="invalid",
    ),
    pytest.param(
        {"p": (POLICY % "a").replace("metadata: {name: a}\n", "")},
        1,
        ["{p}: (unnamed policy 1): metadata.name: required"],
        id="unnamed",
    ),
    pytest.param(
        {"p": "kind: SchedulingPolicy\n  spec: {}\n"},
        EXIT_BAD_INPUT,
        ["{p}:2:7: not valid YAML: mapping values are not allowed here"],
        id="not-yaml",
    ),
    pytest.param(
        {"p": "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"},
        EXIT_BAD_INPUT,
        ["{p}: document 1: kind is 'Pod', expected SchedulingPolicy"],
        id="wrong-kind",
    ),
    pytest.param(
        {"a": INVALID, "b": "- x\n", "c": POLICY % "c"},
        EXIT_BAD_INPUT,
        [
            "{a}: bad: spec.priorities[0].weight: must be between 1 and 100",
            "{a}: bad: spec.priorities[1].args.label: required: the label key to prefer nodes by",
            "{b}: document 1: expected a SchedulingPolicy (a mapping with apiVersion and "
            "kind), got a list",
            "{c}: c: valid",
        ],
        id="every-file-reported",
    ),
]


@pytest.mark.parametrize(("files", "code", "lines"), VALIDATE_CASES)
def test_validate(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str],
    code: int,
    lines: list[str],
) -> None:
    paths = {name: str(write(tmp_path, f"{name}.yaml", text)) for name, text in files.items()}
    assert run(capsys, "validate", *paths.values()) == (
        code,
        "".join(line.format_map(paths) + "\n" for line in lines),
        "",
    )


# A reader that goes away (`policy-scheduler simulate ... | head`) ends the command quietly, as
# kubectl does: no BrokenPipeError traceback.
def test_a_reader_gone_ends_the_command_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "p.yaml", POLICY % "a")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    with os.fdopen(write_end, "w") as stream:
        monkeypatch.setattr(sys, "stdout", stream)
        assert main(["validate", str(path)]) == 141
        # What is left to flush at exit goes nowhere, not to a closed pipe.
        stream.write("more\n")
        stream.flush()


def test_validate_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nope.yaml"
    assert run(capsys, "validate", str(path)) == (
        EXIT_BAD_INPUT,
        f"{path}: No such file or directory\n",
        "",
    )


# --- simulate: files that cannot be used, invalid policies ------------------------------------

# The last kinds a cluster file may hold, as its errors list them: StatefulSet, then the storage
# and device kinds, then what preemption and priorities read.
LAST_KINDS = (
    "StatefulSet, PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode, CSIDriver, "
    "CSIStorageCapacity, VolumeAttachment, ResourceClaim, ResourceSlice, DeviceClass, "
    "DeviceTaintRule, PodDisruptionBudget, "
    "PodGroup.scheduling.k8s.io, PodGroup.scheduling.x-k8s.io, PodGroup.scheduling.volcano.sh "
    "or PriorityClass"
)
SIMULATE_ERROR_CASES = [
    pytest.param(
        {"policy": "kind: [\n", "cluster": CLUSTER},
        EXIT_BAD_INPUT,
        ["{policy}:2:1: not valid YAML: expected the node content, but found '<stream end>'"],
        id="policy-not-yaml",
    ),
    pytest.param(
        {"policy": POLICY % "a" + "---\n" + POLICY % "b", "cluster": CLUSTER},
        EXIT_BAD_INPUT,
        ["{policy}: holds 2 SchedulingPolicies; simulate takes a file with exactly one"],
        id="two-policies",
    ),
    pytest.param(
        {"policy": POLICY % "spread", "cluster": "nodes: [a, b\n"},
        EXIT_BAD_INPUT,
        ["{cluster}:2:1: not valid YAML: expected ',' or ']', but got '<stream end>'"],
        id="cluster-not-yaml",
    ),
    pytest.param(
        {
            "policy": POLICY % "spread",
            "cluster": "kind: List\nitems:\n- {kind: ConfigMap, metadata: {name: a}}\n"
            "- {kind: Event, metadata: {name: b}}\n- {kind: ConfigMap, metadata: {name: c}}\n",
        },
        EXIT_BAD_INPUT,
        [
            "{cluster}: holds no Node, Pod, Namespace, Service, ReplicationController, "
            f"ReplicaSet, {LAST_KINDS}, only ConfigMap (2), Event (1)"
        ],
        id="cluster-of-unused-kinds-only",
    ),
    pytest.param(
        {"policy": POLICY % "spread", "cluster": CLUSTER + "- {kind: 7, metadata: {name: s}}\n"},
        EXIT_BAD_INPUT,
        [
            "{cluster}: document 1, items[6]: kind is 7, expected Node, Pod, Namespace, "
            f"Service, ReplicationController, ReplicaSet, {LAST_KINDS}"
        ],
        id="cluster-kind-not-a-name",
    ),
    pytest.param(
        {"policy": POLICY % "spread", "cluster": "just text\n---\n{metadata: {}}\n"},
        EXIT_BAD_INPUT,
        [
            "{cluster}: document 1: expected a Kubernetes object (Node, Pod, Namespace, "
            f"Service, ReplicationController, ReplicaSet, {LAST_KINDS}), got a string",
            "{cluster}: document 2: kind is missing, expected Node, Pod, Namespace, Service, "
            f"ReplicationController, ReplicaSet, {LAST_KINDS}",
        ],
        id="cluster-not-objects",
    ),
    pytest.param(
        {
            "policy": POLICY % "spread",
            "cluster": CLUSTER.replace('cpu: "3"', "cpu: lots").replace(
                'cpu: "2", memory: 8Gi', 'cpu: "2", memory: 8Qi'
            ),
        },
        EXIT_BAD_INPUT,
        [
            "{cluster}: document 1, items[0]: node busy: status.allocatable.memory: '8Qi' "
            "is not a quantity (expected e.g. 500m, 2, 1.5Gi, 1e3)",
            "{cluster}: document 1, items[1]: node idle: status.allocatable.memory: '8Qi' "
            "is not a quantity (expected e.g. 500m, 2, 1.5Gi, 1e3)",
            "{cluster}: document 1, items[4]: pod ns/huge: "
            "spec.containers[0].resources.requests.cpu: 'lots' is not a quantity "
            "(expected e.g. 500m, 2, 1.5Gi, 1e3)",
        ],
        id="broken-quantities",
    ),
    pytest.param(
        {"policy": "kind: Pod\n", "cluster": "kind: List\nitems: {}\n"},
        EXIT_BAD_INPUT,
        [
            "{policy}: document 1: kind is 'Pod', expected SchedulingPolicy",
            "{cluster}: document 1: items must be a list of Node, Pod, Namespace, Service, "
            f"ReplicationController, ReplicaSet, {LAST_KINDS} objects",
        ],
        id="both-files-bad",
    ),
    pytest.param(
        {"policy": INVALID, "cluster": CLUSTER},
        1,
        [
            "{policy}: bad: spec.priorities[0].weight: must be between 1 and 100",
            "{policy}: bad: spec.priorities[1].args.label: required: the label key to "
            "prefer nodes by",
        ],
        id="invalid-policy",
    ),
]


@pytest.mark.parametrize(("files", "code", "lines"), SIMULATE_ERROR_CASES)
def test_simulate_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str],
    code: int,
    lines: list[str],
) -> None:
    paths = {name: str(write(tmp_path, f"{name}.yaml", text)) for name, text in files.items()}
    argv = ["simulate", "--policy", paths["policy"], "--cluster", paths["cluster"]]
    assert run(capsys, *argv, "-o", "json") == (
        code,
        "",
        "".join(line.format_map(paths) + "\n" for line in lines),
    )


@pytest.mark.parametrize("missing", ["policy", "cluster"])
def test_simulate_missing_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], missing: str
) -> None:
    paths = {
        "policy": write(tmp_path, "policy.yaml", POLICY % "spread"),
        "cluster": write(tmp_path, "cluster.yaml", CLUSTER),
    }
    paths[missing] = tmp_path / "nope.yaml"
    argv = ["simulate", "--policy", str(paths["policy"]), "--cluster", str(paths["cluster"])]
    assert run(capsys, *argv) == (
        EXIT_BAD_INPUT,
        "",
        f"{tmp_path / 'nope.yaml'}: No such file or directory\n",
    )


# --- simulate: output --------------------------------------------------------------------------


def simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str, *options: str) -> str:
    argv = [
        "simulate",
        "--policy",
        str(write(tmp_path, "policy.yaml", policy)),
        "--cluster",
        str(write(tmp_path, "cluster.yaml", CLUSTER)),
        *options,
    ]
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    return out


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    decisions: list[dict[str, Any]] = json.loads(
        simulate(tmp_path, capsys, POLICY % "spread", "-o", "json")
    )
    assert decisions == [
        {
            "pod": "ns/web",
            "node": "busy",
            "score": 66.67,
            "candidates": [
                {
                    "node": "busy",
                    "score": 66.67,
                    "scores": {"LeastAllocated": 50, "NodeLabelPreference": 100},
                },
                {
                    "node": "idle",
                    "score": 54.0,
                    "scores": {"LeastAllocated": 81, "NodeLabelPreference": 0},
                },
            ],
            "reasons": {},
        },
        {
            "pod": "ns/huge",
            "node": None,
            "score": None,
            "message": "0/2 nodes are available: 2 Insufficient cpu.",
            "candidates": [],
            "reasons": {"Insufficient cpu": 2},
        },
    ]


def test_table_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert simulate(tmp_path, capsys, POLICY % "spread") == TABLE


def test_table_names_the_nodes_that_did_not_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = (POLICY % "spread").replace(
        "[{name: NodeResourcesFit}",
        "[{name: NodeLabel, args: {present: [zone=b]}}, {name: NodeResourcesFit}",
    )
    out = simulate(tmp_path, capsys, policy)
    # The only node that fits is taken unscored, as kube-scheduler takes it: no table of scores.
    assert out.splitlines()[:2] == [
        "ns/web -> idle (the only node that fits: not scored)",
        "  did not fit: 1 node(s) didn't have label zone=b",
    ]


def test_no_pending_pods(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        simulate(tmp_path, capsys, POLICY % "nobody") == "no pending pod has schedulerName nobody\n"
    )
    assert json.loads(simulate(tmp_path, capsys, POLICY % "nobody", "-o", "json")) == []


@pytest.mark.parametrize("output", ["table", "json"])
def test_a_seed_makes_the_output_reproducible(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    outputs = [
        simulate(tmp_path, capsys, RANDOM, "--seed", str(seed), "-o", output)
        for seed in (1, 1, 2, 3, 4)
    ]
    assert outputs[0] == outputs[1]
    assert len(set(outputs)) > 1  # and the seed matters: the Random scores differ


# Five feasible nodes for one pending pod, LeastAllocated ranking them by size.
WIDE = (
    "apiVersion: v1\nkind: List\nitems:\n"
    + "".join(node(f"n{cpu}", str(cpu)) for cpu in (2, 4, 16, 8, 32))
    + pod("web", "1")
)


@pytest.mark.parametrize(
    ("options", "nodes"),
    [
        pytest.param([], ["n32", "n16", "n8"], id="the best three by default"),
        pytest.param(["--candidates", "1"], ["n32"], id="one"),
        pytest.param(["--candidates", "all"], ["n32", "n16", "n8", "n4", "n2"], id="all"),
        pytest.param(
            ["--candidates", "10"], ["n32", "n16", "n8", "n4", "n2"], id="more than feasible"
        ),
    ],
)
def test_candidates_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], nodes: list[str]
) -> None:
    """``--candidates`` sets how many feasible nodes each decision shows, in the table (one
    column each) and in JSON, with every priority's score."""
    argv = [
        "simulate",
        "--policy",
        str(write(tmp_path, "policy.yaml", POLICY % "spread")),
        "--cluster",
        str(write(tmp_path, "cluster.yaml", WIDE)),
        *options,
    ]
    code, out, err = run(capsys, *argv, "-o", "json")
    (decision,) = json.loads(out)
    assert (code, err) == (0, "")
    assert [c["node"] for c in decision["candidates"]] == nodes
    assert all(
        set(c["scores"]) == {"LeastAllocated", "NodeLabelPreference"}
        for c in decision["candidates"]
    )
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    assert out.splitlines()[1].split() == ["PRIORITY", "WEIGHT", *nodes]


@pytest.mark.parametrize("value", ["0", "-1", "three", ""])
def test_candidates_must_be_a_positive_number_or_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "--policy", "p.yaml", "--cluster", "c.yaml", "--candidates", value])
    assert exit_.value.code == 2
    assert f"{value!r} is neither a positive number nor all" in capsys.readouterr().err


# --- explain (the live cluster is in tests/e2e/test_explain.py) -------------------------------


def explained(tmp_path: Path, policy_text: str, pod_name: str) -> Report:
    """What ``explain`` reports for a pending pod of CLUSTER, read as simulate reads it."""
    policy = compile_policy(yaml.safe_load(policy_text))
    cluster = load_cluster(write(tmp_path, "cluster.yaml", CLUSTER))
    (pod,) = [p for p in cluster.pods if p.name == pod_name]
    return Report(pod, policy, explain(policy.pipeline, pod, snapshot_of(cluster)), None, None)


def test_explain_agrees_with_the_decision(tmp_path: Path) -> None:
    report = explained(tmp_path, POLICY % "spread", "web")
    verdicts = {v.node: v for v in report.explanation.verdicts}
    # The same totals and per-plugin scores as simulate's candidates (test_json_output).
    assert verdicts["busy"].candidate == Candidate(
        "busy", 66.67, {"LeastAllocated": 50, "NodeLabelPreference": 100}
    )
    assert verdicts["idle"].candidate == Candidate(
        "idle", 54.0, {"LeastAllocated": 81, "NodeLabelPreference": 0}
    )
    assert report.best == ("busy",)
    assert report.to_dict()["verdict"] == {"nodes": ["busy"], "score": 66.67}
    assert report.lines() == [
        "pod ns/web: pending; schedulerName spread is served by SchedulingPolicy spread (Enforce)",
        "feasible nodes: 2 of 2",
        "  NODE  TOTAL  LeastAllocated (x2)  NodeLabelPreference (x1)",
        "  busy  66.67  50                   100",
        "  idle  54     81                   0",
        "verdict: it would go to busy (score 66.67)",
        "it is pending although a node fits: the scheduler has not placed it yet "
        "(is policy-scheduler running?)",
    ]


def test_explain_names_the_filter_that_rejected_each_node(tmp_path: Path) -> None:
    policy = (POLICY % "spread").replace(
        "[{name: NodeResourcesFit}",
        "[{name: NodeLabel, args: {present: [zone=b]}}, {name: NodeResourcesFit}",
    )
    report = explained(tmp_path, policy, "huge")
    assert [(v.node, v.rejected_by, v.reasons) for v in report.explanation.verdicts] == [
        ("busy", "NodeLabel", ("node(s) didn't have label zone=b",)),
        ("idle", "NodeResourcesFit", ("Insufficient cpu",)),
    ]
    message = "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't have label zone=b."
    assert report.explanation.message == message
    assert report.to_dict()["nodes"] == [
        {
            "node": "busy",
            "feasible": False,
            "filter": "NodeLabel",
            "reasons": ["node(s) didn't have label zone=b"],
        },
        {
            "node": "idle",
            "feasible": False,
            "filter": "NodeResourcesFit",
            "reasons": ["Insufficient cpu"],
        },
    ]
    assert report.lines()[1:] == [
        "feasible nodes: 0 of 2",
        "rejected nodes:",
        "  busy  NodeLabel: node(s) didn't have label zone=b",
        "  idle  NodeResourcesFit: Insufficient cpu",
        f"verdict: it fits nowhere: {message}",
    ]


class _Skipping(Filter[None], Scorer[None]):
    """A plugin with nothing to say about any pod."""

    name = "Skipping"

    def pre_filter(self, cycle: Cycle) -> Skip:
        return SKIP

    def filter(self, state: None, pod: PodView, node: NodeInfo) -> Sequence[str]:
        raise AssertionError("a skipped filter is not run")

    def pre_score(self, cycle: Cycle, nodes: Sequence[NodeInfo]) -> Skip:
        return SKIP

    def score(self, state: None, pod: PodView, node: NodeInfo) -> int:
        raise AssertionError("a skipped scorer is not run")


def test_explain_honours_skip(tmp_path: Path) -> None:
    compiled = compile_policy(yaml.safe_load(POLICY % "spread"))
    skipping = _Skipping()
    pipeline = Pipeline(
        [skipping, *compiled.pipeline.filters],
        [WeightedScorer(skipping, 1), *compiled.pipeline.scorers],
    )
    policy = dataclasses.replace(compiled, pipeline=pipeline)
    cluster = load_cluster(write(tmp_path, "cluster.yaml", CLUSTER))
    (pod,) = [p for p in cluster.pods if p.name == "web"]
    explanation = explain(pipeline, pod, snapshot_of(cluster))
    assert explanation.skipped == ("Filter Skipping", "Score Skipping")
    busy = next(v.candidate for v in explanation.verdicts if v.node == "busy")
    # Skipped, the scorer counts 0 but its weight still divides: as decide() reports it.
    decision = pipeline.decide(pod, snapshot_of(cluster), random.Random(1))
    assert busy == decision.candidates[0]
    assert busy is not None and busy.scores["Skipping"] == 0
    assert (
        "skipped for this pod: Filter Skipping, Score Skipping"
        in Report(pod, policy, explanation, None, None).lines()
    )


def test_explain_without_a_usable_kubeconfig(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none"
    code, out, err = run(capsys, "explain", "web", "--kubeconfig", str(missing))
    assert (code, out) == (EXIT_BAD_INPUT, "")
    assert err == (
        f"policy-scheduler explain: cannot use the kubeconfig: --kubeconfig {missing}: "
        "no such file\n"
    )
    broken = write(tmp_path, "broken", "clusters: 3\n")
    code, out, err = run(capsys, "explain", "web", "--kubeconfig", str(broken))
    assert (code, out) == (EXIT_BAD_INPUT, "")
    assert err.startswith("policy-scheduler explain: cannot use the kubeconfig: ")
    assert len(err.splitlines()) == 1
