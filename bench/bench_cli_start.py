"""How long the commands that need no cluster take from launch to exit.

Runs ``policy-scheduler --help``, ``validate``, ``simulate`` and ``convert`` on the examples, each
``--runs`` times as a separate process of the venv's own ``policy-scheduler`` (so interpreter
start-up and every import count, as they do for a user), and prints the median and the fastest
wall time of each, whether the median is under the 0.4 s goal, and the median CPU time (user and
system) of the process. These commands read a few small files, so nearly all of their time is
start-up: the imports they pay for. On a busy machine the wall time grows with the wait for a
core; the CPU time much less, which makes it the figure to compare between runs there.

    python bench/bench_cli_start.py [--runs N]

Exit status 0 when every command ran (whatever its time), 1 when a command failed: a figure for a
command that failed would measure the failure.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
GOAL = 0.4  # seconds, issue 10

COMMANDS: dict[str, list[str]] = {
    "--help": ["--help"],
    "validate": ["validate", str(EXAMPLES / "policies" / "default-profile.yaml")],
    "simulate": [
        "simulate",
        "--policy",
        str(EXAMPLES / "policies" / "default-profile.yaml"),
        "--cluster",
        str(EXAMPLES / "clusters" / "three-zones.yaml"),
        "--seed",
        "1",
    ],
    "convert": ["convert", str(EXAMPLES / "legacy-policy.json")],
}


def timed_run(argv: Sequence[str]) -> tuple[float, float]:
    """Wall seconds from launch to exit, and the process's CPU seconds; raises when the command
    fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    # Children are waited for one at a time, so the growth of the total is this one's.
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time the policy-scheduler commands that need no cluster, from launch to exit."
    )
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (default 5)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    # The entry point beside this interpreter: the venv's, not whatever is first on $PATH.
    executable = Path(sys.executable).with_name("policy-scheduler")
    print(f"{'command':<10}  {'median':>8}  {'min':>8}  {'under ' + f'{GOAL:g} s':<10}  cpu")
    for name, command in COMMANDS.items():
        try:
            runs = [timed_run([str(executable), *command]) for _ in range(args.runs)]
        except subprocess.CalledProcessError as error:
            print(f"{name}: failed with exit status {error.returncode}: {error.cmd}")
            return 1
        walls = [wall for wall, _ in runs]
        median = statistics.median(walls)
        verdict = "yes" if median < GOAL else "no"
        cpu = statistics.median(cpu for _, cpu in runs)
        print(f"{name:<10}  {median:>7.3f}s  {min(walls):>7.3f}s  {verdict:<10}  {cpu:.3f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
