"""The commands that need no cluster import no cluster client: Kopf, aiohttp, pykube, the
kubernetes client and prometheus_client cost a second of start-up, which ``validate``,
``simulate``, ``convert`` and ``--help`` must not pay (bench/bench_cli_start.py times them).

Each check runs in a fresh interpreter, because this test process has long imported them all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CLUSTER_CLIENTS = {"kopf", "aiohttp", "pykube", "kubernetes", "prometheus_client"}

# Runs the command line with the arguments given, then prints every module loaded, one a line,
# however the command ends (argparse's --help exits; a failing command raises).
RUN_AND_LIST = """\
import sys
from policy_scheduler.cli import main
try:
    sys.exit(main(sys.argv[1:]))
finally:
    print("\\n".join(sorted(sys.modules)))
"""


def run_listing(*argv: str) -> tuple[int, set[str]]:
    """The exit status of ``policy-scheduler ARGV``, and the cluster clients it loaded."""
    result = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST, *argv],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    loaded = {module.split(".")[0] for module in result.stdout.splitlines()}
    return result.returncode, loaded & CLUSTER_CLIENTS


def test_importing_the_cli_loads_no_cluster_client() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import sys, policy_scheduler.cli; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    loaded = {module.split(".")[0] for module in result.stdout.splitlines()}
    assert loaded & CLUSTER_CLIENTS == set()


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["run", "--help"],
        ["validate", str(EXAMPLES / "policies" / "default-profile.yaml")],
        [
            "simulate",
            "--policy",
            str(EXAMPLES / "policies" / "default-profile.yaml"),
            "--cluster",
            str(EXAMPLES / "clusters" / "three-zones.yaml"),
        ],
        ["convert", str(EXAMPLES / "legacy-policy.json")],
    ],
    ids=["help", "run-help", "validate", "simulate", "convert"],
)
def test_offline_commands_load_no_cluster_client(argv: list[str]) -> None:
    assert run_listing(*argv) == (0, set())


def test_the_listing_sees_a_client_that_is_loaded() -> None:
    """``run`` loads Kopf: were the listing broken, the checks above would pass vacuously."""
    _, loaded = run_listing("run", "--kubeconfig", "/nonexistent/kubeconfig")
    assert "kopf" in loaded
