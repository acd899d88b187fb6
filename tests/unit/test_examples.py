"""The examples work and their documentation is true: every policy validates, simulates on every
cluster dump without overcommitting a node, and examples/README.md shows what the commands print
today."""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from policy_scheduler.cli import main
from policy_scheduler.model.objects import PodView, add_into
from policy_scheduler.policy.compiler import compile_policy
from policy_scheduler.policy.load import read_policy_file
from policy_scheduler.simulate import ClusterDump, load_cluster

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
POLICIES = sorted((EXAMPLES / "policies").glob("*.yaml"))
CLUSTERS = sorted((EXAMPLES / "clusters").glob("*.yaml"))
README = EXAMPLES / "README.md"

PROMPT = "$ policy-scheduler "


@functools.cache
def cluster_dump(path: Path) -> ClusterDump:
    return load_cluster(path)


def test_the_documented_examples_exist() -> None:
    names = {path.name for path in POLICIES}
    assert names >= {
        "random.yaml",
        "default-profile.yaml",
        "bin-packing.yaml",
        "zone.yaml",
        "dry-run.yaml",
        "legacy.yaml",
    }
    assert len(CLUSTERS) >= 2
    readme = README.read_text()
    for path in (*POLICIES, *CLUSTERS):
        assert f"({path.parent.name}/{path.name})" in readme, f"{path.name} is not in the README"


def test_every_policy_is_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", *map(str, POLICIES)]) == 0
    out = capsys.readouterr().out
    for path in POLICIES:
        assert f"{path}: {path.stem}: valid\n" in out


def pending_pods(cluster: Path, scheduler_name: str) -> list[str]:
    return [
        pod.key
        for pod in cluster_dump(cluster).pods
        if not pod.node_name and not pod.terminated and pod.scheduler_name == scheduler_name
    ]


def requests_by_node(cluster: Path, decisions: list[dict[str, Any]]) -> Iterator[str]:
    """Each node's problem: the requests of its pods, placed before or now, beyond its room."""
    dump = cluster_dump(cluster)
    pods = {pod.key: pod for pod in dump.pods}
    on_node: dict[str, list[PodView]] = {node.name: [] for node in dump.nodes}
    for pod in dump.pods:
        if pod.node_name and not pod.terminated:
            on_node[pod.node_name].append(pod)
    for decision in decisions:
        if decision["node"] is not None:
            on_node[decision["node"]].append(pods[decision["pod"]])
    for node in dump.nodes:
        requested: dict[str, int] = {"pods": len(on_node[node.name])}
        for pod in on_node[node.name]:
            add_into(requested, pod.requests)
        for resource, amount in requested.items():
            if amount > node.allocatable.get(resource, 0):
                yield f"{node.name}: {resource} {amount} > {node.allocatable.get(resource, 0)}"


@pytest.mark.parametrize("cluster", CLUSTERS, ids=lambda p: p.stem)
@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.stem)
def test_every_policy_simulates_on_every_cluster(
    capsys: pytest.CaptureFixture[str], policy: Path, cluster: Path
) -> None:
    argv = ["simulate", "--policy", str(policy), "--cluster", str(cluster), "--seed", "7"]
    assert main([*argv, "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    decisions: list[dict[str, Any]] = json.loads(out)
    (obj,) = read_policy_file(policy)
    expected = pending_pods(cluster, compile_policy(obj).scheduler_name)
    assert expected, f"{cluster.name} has no pending pod for {policy.name}"
    assert sorted(d["pod"] for d in decisions) == sorted(expected)
    assert list(requests_by_node(cluster, decisions)) == []
    for decision in decisions:
        if decision["node"] is None:
            continue
        if decision["score"] is None:  # the only node that fits, taken unscored
            assert decision["candidates"] == []
        else:
            assert decision["candidates"][0]["node"] == decision["node"]
    assert main(argv) == 0  # and the table, for people
    assert capsys.readouterr().err == ""


def readme_runs() -> list[Any]:
    """(command line, expected output) of each fenced block of the README that shows a run."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```$", README.read_text(), re.M | re.S)
    runs = []
    for block in blocks:
        command, _, output = block.partition("\n")
        if command.startswith(PROMPT):
            runs.append(pytest.param(command, output, id=command.removeprefix(PROMPT)))
    return runs


README_RUNS = readme_runs()


def test_the_readme_shows_simulate_runs() -> None:
    assert sum(" simulate " in p.values[0] for p in README_RUNS) >= 2


@pytest.mark.parametrize(("command", "output"), README_RUNS)
def test_the_readme_shows_what_the_commands_print(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str, output: str
) -> None:
    monkeypatch.chdir(REPO)
    assert main(shlex.split(command.removeprefix(PROMPT))) == 0
    assert capsys.readouterr().out == output
