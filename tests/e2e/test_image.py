"""The image's install steps, without a container engine: the Dockerfile's build stage replayed
into a fresh directory tree, then what the image runs, run from the environment it made.

Each instruction of the build stage is executed as Docker would execute it, with every absolute
path moved under a temporary root: WORKDIR and ENV as written, COPY from the checkout (leaving out
what .dockerignore leaves out), RUN with bash. So an edit to the Dockerfile's install steps is
tested as it stands, not a copy of it. It needs the package registry (pip downloads the pinned
dependencies and the build backend), which is why it is an end-to-end test and not a unit test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import policy_scheduler

REPO = Path(__file__).resolve().parents[2]
# What .dockerignore keeps out of operator/ (tests/unit/test_dockerfile.py checks the rest).
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
# Installed in every virtual environment, and never pinned.
BOOTSTRAP = {"pip", "setuptools", "wheel"}


def build_stage() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile's first stage, continuation lines joined."""
    text = re.sub(r"\\\n(\s*#.*\n)*", " ", (REPO / "Dockerfile").read_text())
    steps = [
        (keyword.upper(), arguments.strip())
        for keyword, _, arguments in (
            line.strip().partition(" ")
            for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        )
    ]
    starts = [i for i, (keyword, _) in enumerate(steps) if keyword == "FROM"]
    return steps[starts[0] + 1 : starts[1]]


def rooted(root: Path, command: str) -> str:
    """``command`` with each absolute path moved under ``root``."""
    return re.sub(r"(?:(?<=^)|(?<=[\s=]))/(?=\w)", f"{root}/", command)


def copy(sources: list[str], destination: Path) -> None:
    for source in sources:
        path = REPO / source
        if path.is_dir():
            shutil.copytree(path, destination, ignore=IGNORED, dirs_exist_ok=True)
        else:
            destination.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination / path.name)


def replay(root: Path) -> None:
    env = dict(os.environ)
    # The base image's `python`: this interpreter's own (a venv made from it is a clean one).
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("VIRTUAL_ENV", None)
    # pip may reuse its download cache here (the image build must not: it would be a layer);
    # caching changes how long the test takes, never what gets installed.
    env.pop("PIP_NO_CACHE_DIR", None)
    workdir = root
    for keyword, arguments in build_stage():
        if keyword == "ENV":
            for pair in shlex.split(arguments):
                name, _, value = pair.partition("=")
                env[name] = value
            env.pop("PIP_NO_CACHE_DIR", None)
        elif keyword == "WORKDIR":
            workdir = Path(rooted(root, arguments))
            workdir.mkdir(parents=True, exist_ok=True)
        elif keyword == "COPY":
            *sources, target = arguments.split()
            copy(sources, workdir / target)
        elif keyword == "RUN":
            command = rooted(root, arguments).replace(" --no-cache-dir", "")
            subprocess.run(
                ["bash", "-euo", "pipefail", "-c", command],
                cwd=workdir,
                env=env,
                check=True,
                timeout=600,
            )
        else:
            pytest.fail(f"the replay does not know {keyword} (Dockerfile build stage)")


def run(executable: Path, *args: str, cwd: Path) -> str:
    result = subprocess.run(
        [str(executable), *args], capture_output=True, text=True, cwd=cwd, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.timeout(900)
def test_the_build_stage_installs_a_working_pinned_operator(tmp_path: Path) -> None:
    root = tmp_path / "root"
    replay(root)
    venv = root / "opt" / "venv"
    elsewhere = tmp_path / "elsewhere"  # not the checkout: nothing may come from its crds/
    elsewhere.mkdir()

    version = run(venv / "bin" / "policy-scheduler", "--version", cwd=elsewhere)
    assert version.strip() == f"policy-scheduler {policy_scheduler.__version__}"

    # The CRD travels in the wheel as a data file; the operator validates policies with it.
    crd = run(
        venv / "bin" / "python",
        "-c",
        "from policy_scheduler.policy.schema import crd_path; print(crd_path())",
        cwd=elsewhere,
    ).strip()
    assert Path(crd).is_relative_to(venv), crd
    assert Path(crd).read_bytes() == (REPO / "crds" / "schedulingpolicy.yaml").read_bytes()
    (elsewhere / "policy.yaml").write_text(
        "apiVersion: policy-scheduler.dev/v1alpha1\nkind: SchedulingPolicy\n"
        "metadata: {name: spread}\n"
        "spec: {priorities: [{name: LeastAllocated, weight: 1}]}\n"
    )
    assert "spread: valid" in run(
        venv / "bin" / "policy-scheduler", "validate", "policy.yaml", cwd=elsewhere
    )

    # Exactly the pinned versions, and nothing unpinned: the constraints file is complete.
    installed = {
        package["name"].lower().replace("_", "-"): package["version"]
        for package in json.loads(run(venv / "bin" / "pip", "list", "--format=json", cwd=root))
        if package["name"].lower() not in BOOTSTRAP
    }
    pins = {
        name.lower().replace("_", "-"): version
        for name, version in (
            line.split("==")
            for line in (REPO / "constraints.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")
        )
    }
    assert installed == {**pins, "policy-scheduler": policy_scheduler.__version__}
    run(venv / "bin" / "pip", "check", cwd=root)
