"""The ``policy-scheduler`` command line: ``run`` the operator, ``validate`` policies,
``simulate`` a policy on a cluster dump, ``explain`` a pod's placement on a live cluster,
``convert`` a legacy kube-scheduler Policy file.

``validate`` and ``simulate`` need no cluster. Problems are said in one line each, naming the
file and the object (kubectl-style for policies: ``FILE: POLICY: FIELD: message``), never a
traceback. Every command exits with one code per kind of outcome, so that a script can tell them
apart:

====  =========================================================================================
0     done (``run``: stopped)
1     a policy is invalid (``validate``, ``simulate``, ``convert``: the converted policy does not
      compile)
2     the command line is wrong (an unknown flag, a bad value: argparse's usage error)
3     an input cannot be used: a file (unreadable, not YAML, the wrong kinds, a broken
      quantity), the kubeconfig or its credentials, or the cluster (no such pod, no access)
4     ``explain``: no valid SchedulingPolicy serves the pod
5     ``run``: this replica lost its Lease (exits at once, as kube-scheduler does)
6     ``run``: its scheduling loop or its watches died (exits for its supervisor to restart it)
141   the reader of the output has gone (``| head``): the status a shell gives kubectl killed
      by SIGPIPE
====  =========================================================================================
"""

# Kopf, aiohttp, pykube, the kubernetes client and prometheus_client take a second to import, which
# validate, simulate and convert (and --help) must not pay: the modules that pull them in are
# imported inside the commands that talk to a cluster, run and explain; and what only one command
# needs, inside that command.
# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import functools
import ipaddress
import json
import logging
import os
import sys
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import yaml

from policy_scheduler.framework.types import reason_counts
from policy_scheduler.kube.timings import LeaseTimings, parse_duration
from policy_scheduler.manifests import ManifestError, read_objects
from policy_scheduler.policy.compiler import CompiledPolicy, check
from policy_scheduler.policy.convert import LegacyPolicyError, convert, default_name, parse_legacy
from policy_scheduler.policy.load import read_policy_file
from policy_scheduler.runtime.decision import Decision

if TYPE_CHECKING:
    from policy_scheduler.handlers import Admission
    from policy_scheduler.kube.client import Kube
    from policy_scheduler.kube.leader import LeaderElection
    from policy_scheduler.serving import Endpoint

LOG_FORMATS = ("plain", "full", "json")
LIVENESS_PORT = 8080
SERVING_PORT = 8081
ADMISSION_PORT = 9443
WEBHOOK_SERVICE = "policy-scheduler-webhook"
WEBHOOK_CONFIGURATION = "policy-scheduler"
WEBHOOK_SECRET = "policy-scheduler-webhook-tls"
"""The default ports of Kopf's liveness server and of the operator's own (metrics, readiness):
ports a non-root process may bind, as deploy/ uses them."""
LEASE_NAMESPACE = "policy-scheduler"
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
OUTPUT_FORMATS = ("table", "json")
DEFAULT_CANDIDATES = 3

EXIT_OK = 0
EXIT_INVALID_POLICY = 1
EXIT_USAGE = 2
"""argparse's own code for a command line it refuses."""
EXIT_BAD_INPUT = 3
EXIT_NOT_SERVED = 4
EXIT_LOST_LEASE = 5
EXIT_DIED = 6
EXIT_READER_GONE = 141
"""Stdout's reader has gone: 128 + SIGPIPE, as a shell reports a process that signal ended."""


class _Version(argparse.Action):
    """``--version``, which reads the installed version only when asked (see the package)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        import policy_scheduler

        print(f"policy-scheduler {policy_scheduler.__version__}")  # stdout, as argparse's own
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="policy-scheduler",
        description="A Kubernetes scheduler whose policy is a SchedulingPolicy custom resource.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run the scheduler against a cluster",
        description="Watch SchedulingPolicies, nodes and pods; schedule the pods that opt in.",
    )
    _cluster_flags(run)
    run.add_argument(
        "--liveness",
        metavar="URL",
        type=functools.partial(_endpoint, port=LIVENESS_PORT, path="/healthz"),
        help="serve Kopf's liveness probe here, e.g. http://0.0.0.0:8080/healthz "
        f"(port {LIVENESS_PORT} and /healthz unless given)",
    )
    run.add_argument(
        "--readiness",
        metavar="URL",
        type=functools.partial(_endpoint, port=SERVING_PORT, path="/readyz"),
        help="serve the readiness probe here, e.g. http://0.0.0.0:8081/readyz "
        f"(port {SERVING_PORT} and /readyz unless given; it may share --metrics' port)",
    )
    run.add_argument(
        "--metrics",
        metavar="URL",
        type=functools.partial(_endpoint, port=SERVING_PORT, path="/metrics"),
        help="serve Prometheus metrics here, e.g. http://0.0.0.0:8081/metrics "
        f"(port {SERVING_PORT} and /metrics unless given; not Kopf's liveness port)",
    )
    run.add_argument(
        "--admission",
        metavar="URL",
        type=_admission_address,
        help="serve the validating admission webhook here, e.g. https://0.0.0.0:9443 (port "
        f"{ADMISSION_PORT} unless given): SchedulingPolicies that `validate` refuses are refused "
        f"at kubectl apply (the ValidatingWebhookConfiguration {WEBHOOK_CONFIGURATION} of "
        "deploy/ calls it; its certificate is kept in the Secret "
        f"{WEBHOOK_SECRET} of the Lease's namespace)",
    )
    run.add_argument("--log-format", choices=LOG_FORMATS, default="plain")
    run.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    run.add_argument(
        "--seed", type=int, help="seed the Random plugins and preemption's candidate offset"
    )
    election = run.add_argument_group(
        "leader election", "only the holder of a Lease schedules; the others keep warm caches"
    )
    election.add_argument(
        "--leader-elect", type=_boolean, default=True, metavar="true|false", help="default true"
    )
    defaults = LeaseTimings()
    for flag, default in (
        ("lease-duration", defaults.lease_duration),
        ("renew-deadline", defaults.renew_deadline),
        ("retry-period", defaults.retry_period),
    ):
        election.add_argument(
            f"--leader-elect-{flag}",
            type=_duration,
            default=default,
            metavar="DURATION",
            help=f"e.g. 15s, 500ms, 1m30s (default {default:g}s)",
        )
    election.add_argument(
        "--leader-elect-resource-namespace",
        help="the Lease's namespace (default: the pod's namespace in a cluster, "
        f"else {LEASE_NAMESPACE})",
    )
    election.add_argument("--leader-elect-resource-name", default="policy-scheduler")

    validate = commands.add_parser(
        "validate",
        help="check SchedulingPolicy files offline",
        description="Check every SchedulingPolicy in the files against the schema the API server "
        "enforces and each plugin's args; print every error, and the legacy plugin names used. "
        "Exit 0 when all are valid, 1 when a policy is invalid, 3 when a file cannot be read.",
    )
    validate.add_argument("files", nargs="+", type=Path, metavar="FILE")

    sim = commands.add_parser(
        "simulate",
        help="place a cluster dump's pending pods with a policy, offline",
        description="Decide, as the operator would, where each pending pod of the policy's "
        "scheduler name goes, and print each decision with its per-node, per-plugin scores. "
        "Binds nothing; needs no cluster.",
    )
    sim.add_argument(
        "--policy",
        type=Path,
        required=True,
        metavar="FILE",
        help="a file with one SchedulingPolicy",
    )
    sim.add_argument(
        "--cluster",
        type=Path,
        required=True,
        metavar="FILE",
        help="Nodes and Pods (and the other kinds examples/README.md lists), as `kubectl get "
        "nodes,pods,... -A -o yaml` prints them; objects of other kinds are skipped, and counted "
        "on stderr",
    )
    sim.add_argument(
        "--seed",
        type=int,
        help="seed the Random plugins and preemption's candidate offset, for reproducible output",
    )
    sim.add_argument(
        "--candidates",
        type=_candidates,
        default=DEFAULT_CANDIDATES,
        metavar="N|all",
        help="how many feasible nodes each decision shows, best first, with every priority's "
        f"score (default {DEFAULT_CANDIDATES}; all: every feasible node)",
    )
    sim.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default="table")

    why = commands.add_parser(
        "explain",
        help="why a pod is on its node, or still pending, on a live cluster",
        description="Run the policy serving the pod's schedulerName against the cluster as it is "
        "now (read-only) and print every node's verdict: the filter that rejects it and why, or "
        "each priority's score and the weighted total; then where the pod would go, or why it "
        "fits nowhere. A bound pod is shown with the decision its policy recorded, if kept, and "
        "decided again as if it were pending (its nodeName and its own usage ignored). Exit 0 "
        "when explained, "
        "3 when the cluster cannot be read, 4 when no valid SchedulingPolicy serves the pod.",
    )
    why.add_argument("pod", metavar="POD")
    why.add_argument("-n", "--namespace", help="default: the kubeconfig context's namespace")
    _cluster_flags(why)
    why.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default="table")

    conv = commands.add_parser(
        "convert",
        help="turn a legacy kube-scheduler Policy file into a SchedulingPolicy",
        description="Convert a kube-scheduler Policy file (kind: Policy, apiVersion: v1; JSON or "
        "YAML) into the equivalent SchedulingPolicy, printed on stdout; what could not be carried "
        "over is said on stderr, one line each. Exit 0 when converted, 1 when the result does not "
        "compile, 3 when the file cannot be read.",
    )
    conv.add_argument("file", type=Path, metavar="FILE")
    conv.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    conv.add_argument("--name", help="the SchedulingPolicy's name (default: from the file name)")
    return parser


def _cluster_flags(parser: argparse.ArgumentParser) -> None:
    """Where the cluster and the identity come from, as kubectl takes them."""
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config, else the in-cluster "
        "service account)",
    )
    parser.add_argument("--context", help="the kubeconfig context (default: its current one)")


def _endpoint(text: str, port: int, path: str) -> Endpoint:
    from policy_scheduler.serving import Endpoint

    try:
        return Endpoint.parse(text, port, path)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _admission_address(text: str) -> tuple[str, int]:
    """``--admission``: where the webhook listens, an ``https://HOST[:PORT]`` URL."""
    parts = urllib.parse.urlsplit(text)
    try:
        port = parts.port or ADMISSION_PORT
    except ValueError:
        port = 0
    if parts.scheme != "https" or not parts.hostname or not port or parts.path.strip("/"):
        raise argparse.ArgumentTypeError(f"{text!r} is not an https://HOST:PORT URL")
    return parts.hostname, port


def _candidates(text: str) -> int | None:
    """``--candidates``: a positive number, or None for ``all``."""
    if text == "all":
        return None
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise argparse.ArgumentTypeError(f"{text!r} is neither a positive number nor all")


def _boolean(text: str) -> bool:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


def _duration(text: str) -> float:
    """A positive duration in Go's syntax, as kube-scheduler's flags take it ("15s", "1m30s")."""
    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return seconds


def _lease_namespace(args: argparse.Namespace) -> str:
    if args.leader_elect_resource_namespace:
        return str(args.leader_elect_resource_namespace)
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or LEASE_NAMESPACE
    except OSError:
        return LEASE_NAMESPACE


def _admission(args: argparse.Namespace) -> Admission | None:
    """The webhook's place and names: the Service's, and the address it listens on unless that
    is every interface (0.0.0.0, ::), which no client calls."""
    from policy_scheduler.handlers import Admission

    if args.admission is None:
        return None
    host, port = args.admission
    namespace = _lease_namespace(args)
    names = [
        f"{WEBHOOK_SERVICE}.{namespace}.svc",
        f"{WEBHOOK_SERVICE}.{namespace}.svc.cluster.local",
    ]
    try:
        everywhere = ipaddress.ip_address(host).is_unspecified
    except ValueError:
        everywhere = False
    if not everywhere:
        names.insert(0, host)
    return Admission(host, port, tuple(names), namespace, WEBHOOK_SECRET, WEBHOOK_CONFIGURATION)


def _election(args: argparse.Namespace, kube: Kube) -> LeaderElection | None:
    from policy_scheduler.kube.leader import LeaderElection

    if not args.leader_elect:
        return None
    timings = LeaseTimings(
        args.leader_elect_lease_duration,
        args.leader_elect_renew_deadline,
        args.leader_elect_retry_period,
    )
    # kube-scheduler's own checks: a Lease must outlive its renewals, renewals their retries.
    if not timings.lease_duration > timings.renew_deadline > timings.retry_period:
        print(
            "policy-scheduler run: --leader-elect-lease-duration must exceed "
            "--leader-elect-renew-deadline, which must exceed --leader-elect-retry-period",
            file=sys.stderr,
        )
        raise SystemExit(EXIT_USAGE)
    election = LeaderElection(
        kube, _lease_namespace(args), name=args.leader_elect_resource_name, timings=timings
    )
    # Every write the scheduler makes goes through this client: none once the Lease is lost.
    kube.fence(lambda: election.leading, election.lease)
    return election


def _exit_lost_lease() -> NoReturn:
    """Exit at once, as kube-scheduler does once it has lost its Lease (``klog.FlushAndExit``):
    only the log is flushed; no cleanup handler runs, so no bind is drained and nothing is
    written or released (the Lease is no longer ours). Its supervisor restarts it, a standby."""
    logging.shutdown()
    os._exit(EXIT_LOST_LEASE)


def _exit_dead(task: str, error: BaseException | None) -> NoReturn:
    """A root task (the scheduling loop, the watches) ended: say so with its traceback and exit
    at once, as kube-scheduler exits when a goroutine panics; a replica that looks alive and
    schedules nothing would be worse. Nothing is drained: the state that killed the task may
    be what a drain would touch."""
    logging.getLogger("policy_scheduler").critical(
        "the %s task died; exiting with code %d for the supervisor to restart the operator",
        task,
        EXIT_DIED,
        exc_info=error,
    )
    logging.shutdown()
    os._exit(EXIT_DIED)


def run_operator(args: argparse.Namespace) -> int:
    import asyncio

    import kopf
    import uvloop

    from policy_scheduler import collector
    from policy_scheduler.handlers import register
    from policy_scheduler.kube.client import Kube
    from policy_scheduler.kube.credentials import CredentialsError, load
    from policy_scheduler.kube.events import POST_CONCURRENCY
    from policy_scheduler.kube.scheduler import WATCHES, KubeScheduler
    from policy_scheduler.scheduling.core import BIND_CONCURRENCY

    kopf.configure(verbose=args.verbose, log_format=kopf.LogFormat[args.log_format.upper()])
    if not args.verbose:
        # Kopf reports every handled policy event at INFO: noise beside the scheduler's own log.
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    # uvloop, as Kopf's own CLI uses when it is installed: its event loop and TLS are in C.
    # asyncio's TLS keeps a 256 KiB buffer per connection, and the operator keeps a hundred
    # connections (peak RSS 157 MiB against 127 with uvloop at 100 nodes and 3,000 pods).
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        try:
            credentials = load(args.kubeconfig, args.context)
            # The first credential now: a plugin that cannot run is said before anything starts.
            runner.run(credentials.authorization())
        except CredentialsError as error:
            print(f"policy-scheduler run: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        # Room for every concurrent bind, every event post, the status writer, the Lease and
        # every watch, so that a bind never waits for a connection.
        kube = Kube(credentials, concurrency=BIND_CONCURRENCY + POST_CONCURRENCY + 2 + WATCHES)
        election = _election(args, kube)
        replica = KubeScheduler(kube, seed=args.seed)
        if election is not None:
            replica.metrics.read_lease(election.name, lambda: election.leading)
        registry = kopf.OperatorRegistry()
        register(
            registry,
            replica,
            credentials,
            election=election,
            on_lost=_exit_lost_lease,
            on_dead=_exit_dead,
            metrics=args.metrics,
            readiness=args.readiness,
            admission=_admission(args),
        )
        collector.install()
        kopf.run(
            registry=registry,
            clusterwide=True,
            standalone=True,
            liveness_endpoint=str(args.liveness) if args.liveness else None,
            loop=runner.get_loop(),
        )
    return EXIT_OK


def _print_lines(lines: Sequence[str], stream: TextIO) -> None:
    for line in lines:
        print(line, file=stream)


def _compile(
    path: Path, number: int, obj: dict[str, Any], errors_to: TextIO
) -> tuple[str, CompiledPolicy | None]:
    """The policy's name for messages, and the policy compiled, or None with its errors printed
    (the ``number``-th policy of the file is named so when it has no name)."""
    verdict = check(obj, number)
    _print_lines([f"{path}: {line}" for line in verdict.errors], errors_to)
    return verdict.name, verdict.compiled


def validate_files(args: argparse.Namespace) -> int:
    """Every problem of every file goes to stdout, so one run shows all there is to fix."""
    code = EXIT_OK
    for path in args.files:
        try:
            policies = read_policy_file(path)
        except ManifestError as error:
            _print_lines(error.problems, sys.stdout)
            code = EXIT_BAD_INPUT
            continue
        for number, obj in enumerate(policies, start=1):
            name, compiled = _compile(path, number, obj, sys.stdout)
            if compiled is None:
                code = max(code, EXIT_INVALID_POLICY)
                continue
            print(f"{path}: {name}: valid")
            for legacy, current in compiled.aliases:
                print(f"{path}: {name}: {legacy} is the legacy name of {current}")
            for warning in compiled.warnings:
                print(f"{path}: {name}: warning: {warning}")
    return code


def simulate_cluster(args: argparse.Namespace) -> int:
    """Decisions go to stdout, problems to stderr, so ``-o json`` output is JSON or nothing."""
    # Simulating drives the scheduling loop, which imports asyncio (and with it ssl): validate
    # and convert need neither.
    from policy_scheduler.simulate import load_cluster, simulate

    problems: list[str] = []
    policies: list[dict[str, Any]] = []
    try:
        policies = read_policy_file(args.policy)
    except ManifestError as error:
        problems += error.problems
    if len(policies) > 1:
        problems.append(
            f"{args.policy}: holds {len(policies)} SchedulingPolicies; "
            "simulate takes a file with exactly one"
        )
    try:
        cluster = load_cluster(args.cluster)
    except ManifestError as error:
        problems += error.problems
    if problems:
        _print_lines(problems, sys.stderr)
        return EXIT_BAD_INPUT
    _, policy = _compile(args.policy, 1, policies[0], sys.stderr)
    if policy is None:
        return EXIT_INVALID_POLICY
    if cluster.skipped_objects:
        objects = (
            "1 object of a kind"
            if cluster.skipped_objects == 1
            else f"{cluster.skipped_objects} objects of kinds"
        )
        print(
            f"{args.cluster}: skipped {objects} simulate does not use: {cluster.skipped_kinds()}",
            file=sys.stderr,
        )
    decisions = simulate(policies[0], cluster, args.seed, candidates=args.candidates)
    if args.output == "json":
        print(json.dumps([d.to_dict() for d in decisions], indent=2))
    elif not decisions:
        print(f"no pending pod has schedulerName {policy.scheduler_name}")
    else:
        weights = {ws.scorer.name: ws.weight for ws in policy.pipeline.scorers}
        print("\n\n".join("\n".join(table(d, weights)) for d in decisions))
    return EXIT_OK


def table(decision: Decision, weights: dict[str, int]) -> list[str]:
    """One decision for people: the placement, then one row per priority (with its weight) and
    one column per candidate reported, the chosen node first, then the devices allocated on it
    and why the other nodes did not fit (in detail, where a filter says more)."""
    if decision.node is None:
        return [f"{decision.pod}: unschedulable: {decision.message}", *_details(decision)]
    if decision.score is None:
        lines = [f"{decision.pod} -> {decision.node} ({decision.chosen_by}: not scored)"]
        return lines + _placed_details(decision)
    rows = [["PRIORITY", "WEIGHT", *(c.node for c in decision.candidates)]]
    rows += [
        [name, str(weight), *(str(c.scores.get(name, "")) for c in decision.candidates)]
        for name, weight in weights.items()
    ]
    rows.append(["total", "", *(f"{c.score:g}" for c in decision.candidates)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [f"{decision.pod} -> {decision.node} ({decision.score:g})"]
    lines += [
        "  "
        + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    return lines + _placed_details(decision)


def _placed_details(decision: Decision) -> list[str]:
    """Below a placed decision: the devices allocated on its node, and why the other nodes did
    not fit (in detail, where a filter says more)."""
    lines = [f"  claim {claim}: {', '.join(devices)}" for claim, devices in decision.chosen.items()]
    if decision.reasons:
        lines.append(f"  did not fit: {reason_counts(decision.reasons)}")
    return lines + _details(decision)


def _details(decision: Decision) -> list[str]:
    """Why in detail nodes did not fit, counted (the allocator's reasons)."""
    return [f"  on {count} node(s): {detail}" for detail, count in sorted(decision.details.items())]


def explain_command(args: argparse.Namespace) -> int:
    """The report goes to stdout; a pod that cannot be explained is one line on stderr."""
    from policy_scheduler.explain import (
        ExplainError,
        NotServedError,
        connect,
        default_namespace,
        explain_pod,
    )

    try:
        kube = connect(args.kubeconfig, args.context)
        report = explain_pod(kube, args.pod, args.namespace or default_namespace(kube))
    except ExplainError as error:
        print(f"policy-scheduler explain: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except NotServedError as error:
        print(f"policy-scheduler explain: {error}", file=sys.stderr)
        return EXIT_NOT_SERVED
    if args.output == "json":
        print(json.dumps(report.to_dict(), indent=2))
    else:
        _print_lines(report.lines(), sys.stdout)
    return EXIT_OK


def convert_file(args: argparse.Namespace) -> int:
    """The SchedulingPolicy goes to stdout, and only when it compiles; notes go to stderr."""
    path: Path = args.file
    try:
        legacy, *more = read_objects(path, "kube-scheduler Policy", parse_legacy)
        if more:
            raise ManifestError([f"{path}: holds {len(more) + 1} Policies; convert takes one"])
        conversion = convert(legacy, args.name or default_name(path.stem))
    except ManifestError as error:
        _print_lines(error.problems, sys.stderr)
        return EXIT_BAD_INPUT
    except LegacyPolicyError as error:
        print(f"{path}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _print_lines([f"{path}: {note}" for note in conversion.notes], sys.stderr)
    _, compiled = _compile(path, 1, conversion.policy, sys.stderr)
    if compiled is None:
        return EXIT_INVALID_POLICY
    if args.output == "json":
        print(json.dumps(conversion.policy, indent=2))
    else:
        print(yaml.safe_dump(conversion.policy, sort_keys=False), end="")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    commands = {
        "run": run_operator,
        "validate": validate_files,
        "simulate": simulate_cluster,
        "explain": explain_command,
        "convert": convert_file,
    }
    try:
        status = commands[args.command](args)
        sys.stdout.flush()  # so that a reader gone shows here, not at the interpreter's exit
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as kubectl does, with what is left
        # to flush at exit sent nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_READER_GONE
    return status


if __name__ == "__main__":
    sys.exit(main())
