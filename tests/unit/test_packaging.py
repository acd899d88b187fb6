"""The package installs under its own name without shadowing the standard library."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import policy_scheduler

REPO = Path(__file__).resolve().parents[2]


def test_operator_source_folder_is_not_a_package() -> None:
    assert not (REPO / "operator" / "__init__.py").exists()


def test_stdlib_operator_module_still_imports() -> None:
    # A fresh interpreter started in the repo root, where a package named `operator` would win.
    result = subprocess.run(
        [sys.executable, "-c", "import operator, policy_scheduler; print(operator.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert Path(result.stdout.strip()).parent == Path(sysconfig.get_paths()["stdlib"])


def test_console_script_reports_the_version() -> None:
    result = subprocess.run(
        [str(Path(sys.executable).with_name("policy-scheduler")), "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == f"policy-scheduler {policy_scheduler.__version__}"
