"""The ``policy-scheduler`` command line: ``run`` the operator, ``validate`` policies,
``simulate`` a policy on a cluster dump."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

import kopf

from policy_scheduler import __version__
from policy_scheduler.handlers import register
from policy_scheduler.kube.client import Kube
from policy_scheduler.kube.scheduler import Scheduler

LOG_FORMATS = ("plain", "full", "json")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="policy-scheduler",
        description="A Kubernetes scheduler whose policy is a SchedulingPolicy custom resource.",
    )
    parser.add_argument("--version", action="version", version=f"policy-scheduler {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run the scheduler against a cluster",
        description="Watch SchedulingPolicies, nodes and pods; schedule the pods that opt in.",
    )
    run.add_argument(
        "--kubeconfig",
        help="kubeconfig to use (default: $KUBECONFIG, else the in-cluster service account)",
    )
    run.add_argument(
        "--liveness",
        metavar="URL",
        help="serve Kopf's liveness probe here, e.g. http://0.0.0.0:8080/healthz",
    )
    run.add_argument("--log-format", choices=LOG_FORMATS, default="plain")
    run.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    run.add_argument("--seed", type=int, help="seed tie-breaking and Random plugins")
    return parser


def run_operator(args: argparse.Namespace) -> int:
    kubeconfig = args.kubeconfig or os.environ.get("KUBECONFIG") or None
    if kubeconfig:
        # Kopf's login reads $KUBECONFIG; both clients must be the same identity.
        os.environ["KUBECONFIG"] = os.path.abspath(kubeconfig)
    kopf.configure(verbose=args.verbose, log_format=kopf.LogFormat[args.log_format.upper()])
    if not args.verbose:
        # Kopf reports every handled watch event at INFO: one line per pod change is noise.
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    scheduler = Scheduler(Kube(kubeconfig), seed=args.seed)
    registry = kopf.OperatorRegistry()
    register(registry, scheduler, in_cluster=kubeconfig is None)
    kopf.run(
        registry=registry,
        clusterwide=True,
        standalone=True,
        liveness_endpoint=args.liveness,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    commands = {"run": run_operator}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
