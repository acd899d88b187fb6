"""The ``policy-scheduler`` command line."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from policy_scheduler import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="policy-scheduler",
        description="A Kubernetes scheduler whose policy is a SchedulingPolicy custom resource.",
    )
    parser.add_argument("--version", action="version", version=f"policy-scheduler {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    build_parser().parse_args(argv)
    return 0
