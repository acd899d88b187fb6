"""A local control plane of hack/controlplane (etcd, kube-apiserver and, if asked, the controllers
with kwok's simulated kubelets and kube-scheduler) in a state directory of its own: started,
restarted, stopped; its kubeconfigs and binaries; and free ports for the servers the tests and
benchmarks start beside it."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
CONTROLPLANE = REPO / "hack" / "controlplane"
CRDS = REPO / "crds"
CRD = "schedulingpolicies.policy-scheduler.dev"


def _free_ports_script() -> ModuleType:
    """hack/controlplane/free-ports, which ``up`` runs as a script, loaded as a module."""
    path = str(CONTROLPLANE / "free-ports")
    loader = importlib.machinery.SourceFileLoader("free_ports", path)
    spec = importlib.util.spec_from_loader("free_ports", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


_FREE_PORTS = _free_ports_script()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now, for a server about to start (an
    operator's ``--metrics``, a kube-scheduler): below the kernel's ephemeral range, as ``up``'s
    own, so that no outgoing connection takes it before the server binds it."""
    port: int = _FREE_PORTS.free_ports(1)[0]
    return port


@dataclass(frozen=True)
class ControlPlane:
    """A control plane started by hack/controlplane/up in ``dir``."""

    dir: Path

    @classmethod
    def up(cls, state_dir: Path, *flags: str, controllers: bool = False) -> ControlPlane:
        """Started in ``state_dir`` with ``up``'s ``flags`` (``--with-scheduler``, ...). Bare
        (``up --bare``: no controller, no kubelet) unless ``controllers``: the tests and
        benchmarks that stand in for a controller control its timing, and no kwok or
        kube-controller-manager shares the machine's two cores with what a benchmark measures."""
        bare = () if controllers else ("--bare",)
        subprocess.run(
            [str(CONTROLPLANE / "up"), "--dir", str(state_dir), *bare, *flags],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return cls(state_dir.resolve())

    @classmethod
    def fresh(cls, state_dir: Path, *flags: str, controllers: bool = False) -> ControlPlane:
        """Whatever ran in ``state_dir`` stopped and removed, then a new one started."""
        cls(state_dir).down()
        return cls.up(state_dir, *flags, controllers=controllers)

    @property
    def admin(self) -> Path:
        """The admin's kubeconfig (group system:masters)."""
        return self.dir / "kubeconfig"

    @property
    def operator(self) -> Path:
        """The kubeconfig of the operator's service account."""
        return self.dir / "operator.kubeconfig"

    @property
    def scheduler(self) -> Path:
        """kube-scheduler's kubeconfig (user system:kube-scheduler)."""
        return self.dir / "scheduler.kubeconfig"

    @property
    def bin(self) -> Path:
        """Where the binaries it runs are (kubectl and kube-scheduler among them)."""
        return Path((self.dir / "bin").read_text().strip())

    def restart(self, component: str) -> None:
        """SIGKILL ``component`` and start it again; returns once kube-apiserver is ready."""
        subprocess.run(
            [str(CONTROLPLANE / "restart"), "--dir", str(self.dir), component],
            check=True,
            stdout=subprocess.DEVNULL,
            timeout=300,
        )

    def down(self) -> None:
        subprocess.run(
            [str(CONTROLPLANE / "down"), "--dir", str(self.dir)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
