"""The schedulers as child processes (``policy-scheduler run``, kube-scheduler): started with
their output in a log file, watched, frozen, stopped; and what they cost (CPU, memory) and serve
(their /metrics)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.controlplane import ControlPlane, free_port
from harness.metrics import Samples, read

POLICY_SCHEDULER = Path(sys.executable).with_name("policy-scheduler")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
KUBE_QPS = 5000
"""kube-scheduler's client QPS and burst: high enough that its client-side rate limit (50/100 by
default) does not hold it back, as ours has none."""


class Process:
    """A child process whose output goes to ``log_path`` (appended to with ``append``), with its
    metrics at ``metrics_url`` if it serves them, and lines fed to its standard input if it
    reads them (``stdin``)."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        log_path: Path,
        *,
        metrics_url: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bool = False,
        append: bool = False,
    ) -> None:
        self.name = name
        self.log_path = log_path
        self.metrics_url = metrics_url
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab" if append else "wb") as log_file:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE if stdin else None,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=env,
            )
        self._stdin_lock = threading.Lock()

    def feed(self, line: str) -> None:
        """``line`` written to its standard input, if it reads it."""
        if self.process.stdin is not None:
            with self._stdin_lock:
                self.process.stdin.write(f"{line}\n".encode())
                self.process.stdin.flush()

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise RuntimeError(
                f"{self.name} exited with {self.process.returncode}; see {self.log_path}"
            )

    def cpu_seconds(self) -> float:
        stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        # Fields after the command name, which is in parentheses and may hold spaces.
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime

    def status_mib(self, field: str) -> float:
        """A memory field of /proc/PID/status (VmRSS, VmHWM, ...) in MiB."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError(f"no {field} in /proc/PID/status")

    def peak_rss_mib(self) -> float:
        return self.status_mib("VmHWM")

    def scrape(self) -> Samples:
        """Its /metrics; raises (an OSError) while it does not answer."""
        if self.metrics_url is None:
            raise RuntimeError(f"{self.name} serves no metrics")
        return read(self.metrics_url)

    def metrics(self) -> Samples | None:
        """Its /metrics if it serves them, else None."""
        return None if self.metrics_url is None else self.scrape()

    def freeze(self) -> None:
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def stop(self, kill: bool = False) -> None:
        """Ended: at the end of its input if it reads one, else SIGTERM (SIGKILL with ``kill``);
        killed if it has not exited after 30 s."""
        self.resume()  # a frozen process would keep SIGTERM pending
        if kill:
            self.process.kill()
        elif self.process.stdin is not None:
            self.process.stdin.close()
        else:
            self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def imported_from(env: Mapping[str, str] | None = None) -> str:
    """Where an operator started with ``env`` (this interpreter's, and PYTHONPATH) imports
    ``policy_scheduler`` from."""
    return subprocess.run(
        [sys.executable, "-c", "import policy_scheduler; print(policy_scheduler.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def operator_command(kubeconfig: Path, *flags: str) -> list[str]:
    """``policy-scheduler run`` on ``kubeconfig``'s identity, as users run it."""
    return [str(POLICY_SCHEDULER), "run", "--kubeconfig", str(kubeconfig), *flags]


def start_operator(
    kubeconfig: Path, log_path: Path, *flags: str, env: Mapping[str, str] | None = None
) -> Process:
    """``policy-scheduler run`` with its metrics served on a free port, and ``flags``."""
    url = f"http://127.0.0.1:{free_port()}/metrics"
    command = operator_command(kubeconfig, "--metrics", url, *flags)
    return Process("policy-scheduler", command, log_path, metrics_url=url, env=env)


def start_kube_scheduler(
    plane: ControlPlane, log_path: Path, scheduler_name: str, qps: int = KUBE_QPS, *flags: str
) -> Process:
    """The kube-scheduler ``plane`` was built with: the default profile as ``scheduler_name``,
    leader election off, client QPS and burst ``qps``, and its /metrics on a free port, readable
    without credentials (as /healthz is); ``flags`` added to its command line (the
    ``--feature-gates`` ``plane`` was started with)."""
    port = free_port()
    config_file = plane.dir / "kube-scheduler-config.yaml"
    kubeconfig = str(plane.scheduler)
    # JSON is YAML: the configuration written without a YAML writer's quoting rules.
    config_file.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "clientConnection": {"kubeconfig": kubeconfig, "qps": qps, "burst": qps},
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": scheduler_name}],
            },
            indent=2,
        )
    )
    command = [
        str(plane.bin / "kube-scheduler"),
        "--config",
        str(config_file),
        "--authentication-kubeconfig",
        kubeconfig,
        "--authorization-kubeconfig",
        kubeconfig,
        "--bind-address",
        "127.0.0.1",
        "--secure-port",
        str(port),
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
        *flags,
    ]
    url = f"https://127.0.0.1:{port}/metrics"
    return Process("kube-scheduler", command, log_path, metrics_url=url)
