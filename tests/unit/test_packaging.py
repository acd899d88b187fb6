"""The package installs under its own name without shadowing the standard library, and declares
every package it imports."""

from __future__ import annotations

import ast
import importlib.metadata
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

import policy_scheduler

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "operator" / "policy_scheduler"


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


def imported_packages() -> dict[str, list[str]]:
    """The top-level names of the third-party packages the package's modules import, anywhere in
    a module (the CLI imports some inside its commands), each with the modules importing
    it."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top not in sys.stdlib_module_names and top != PACKAGE.name:
                    found.setdefault(top, []).append(str(path.relative_to(REPO)))
    return found


def declared_dependencies() -> set[NormalizedName]:
    """The names of pyproject.toml's ``[project] dependencies``, without versions or extras."""
    with (REPO / "pyproject.toml").open("rb") as file:
        requirements = tomllib.load(file)["project"]["dependencies"]
    return {canonicalize_name(Requirement(r).name) for r in requirements}


IMPORTED = imported_packages()


def test_imports_inside_functions_are_found() -> None:
    # uvloop is imported only inside ``cli.run_operator``.
    assert IMPORTED["uvloop"] == ["operator/policy_scheduler/cli.py"]


@pytest.mark.parametrize("package", sorted(IMPORTED))
def test_every_imported_package_is_declared(package: str) -> None:
    distributions = importlib.metadata.packages_distributions().get(package)
    importers = ", ".join(sorted(set(IMPORTED[package])))
    assert distributions, f"{package} (imported by {importers}) is no installed distribution's"
    assert {canonicalize_name(d) for d in distributions} & declared_dependencies(), (
        f"{package} (imported by {importers}) comes from {' or '.join(distributions)}, "
        "which pyproject.toml's [project] dependencies do not declare"
    )
