"""hack/controlplane/free-ports: the control plane's ports lie below the kernel's ephemeral
range, where no outgoing connection can take one between its choice and the server's bind."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

FREE_PORTS = Path(__file__).resolve().parents[2] / "hack" / "controlplane" / "free-ports"
RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


@pytest.mark.skipif(not RANGE.exists(), reason="no ip_local_port_range to compare with")
def test_the_ports_are_distinct_free_and_below_the_ephemeral_range() -> None:
    printed = subprocess.run([str(FREE_PORTS), "4"], capture_output=True, text=True, check=True)
    ports = [int(line) for line in printed.stdout.split()]
    ephemeral = int(RANGE.read_text().split()[0])
    assert len(set(ports)) == 4
    assert all(port < ephemeral for port in ports), (ports, ephemeral)
    for port in ports:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", port))
