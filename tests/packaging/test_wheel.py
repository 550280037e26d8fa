"""The package as a user gets it: build the wheel, install it into a fresh venv, run it from elsewhere.

A source checkout hides packaging mistakes (data read from the checkout, a module missing from the wheel), so
this test builds the real wheel with pip, installs it with ``--no-deps`` into a new virtual environment that
sees this interpreter's dependencies, and runs ``finops --version`` and ``finops demo`` from a directory outside
the source tree. The install is docs/ci.md's own pinned line (``pip install NAME==VERSION``), resolved against the
built wheel only (``--no-index --find-links``): the line users copy is the one that installed what was tested.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from finops_cli import __version__

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once per run: pip builds in the source tree, so two xdist workers building at once
    collide in ``build/``; the first takes a lock in the run's shared temp dir, the other reuses its wheel."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # common to this run's workers only
    out = shared / "finops-wheel"
    with open(shared / "finops-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not list(out.glob("*.whl")):
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(REPO)],
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
    (built,) = out.glob("*.whl")
    return built


def _docs_install_line() -> list[str]:
    """The arguments of docs/ci.md's pinned install line: ``pip install gpu-fleet-finops==0.1.0`` → that spec."""
    (line,) = re.findall(r"^\s*pip install ([A-Za-z0-9_.\-]+==[A-Za-z0-9_.\-]+)\s*$", _ci_md(), flags=re.M)
    return line.split()


def _ci_md() -> str:
    return (REPO / "docs/ci.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel, installed by docs/ci.md's line; dependencies come from this interpreter."""
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    venv.create(env_dir, system_site_packages=True, with_pip=False)
    python = env_dir / "bin" / "python"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--ignore-installed",
         "--quiet", "--no-index", "--find-links", str(wheel.parent), *_docs_install_line()],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return env_dir


def _distribution_name() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]


def test_wheel_carries_package_data_and_metadata(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "finops_cli/pricebooks/instance_types.csv" in names
    assert "finops_cli/pricebooks/reference_prices.csv" in names
    assert "finops_cli/_samples/fleet.yaml" in names
    assert any(n.startswith("finops_cli/_samples/billing/") for n in names)
    assert not any(n.startswith("pricebooks/") for n in names), "pricebooks must live inside the package"
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)
    meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = zipfile.ZipFile(wheel).read(meta_name).decode()
    assert f"Name: {_distribution_name()}\n" in meta
    assert f"Version: {__version__}\n" in meta
    assert "License-Expression: Apache-2.0" in meta
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_installed_wheel_runs_version_and_demo(installed: Path, tmp_path: Path) -> None:
    finops = installed / "bin" / "finops"
    env = {"NO_COLOR": "1", "PATH": f"{installed / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    where = subprocess.run(
        [str(installed / "bin" / "python"), "-c", "import finops_cli; print(finops_cli.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(installed), "the test must exercise the wheel, not the checkout"

    version = subprocess.run([str(finops), "--version"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"finops {__version__}"

    demo = subprocess.run(
        [str(finops), "demo", "--out", "out"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert demo.returncode == 0, demo.stderr[-3000:]
    plan = json.loads((tmp_path / "out" / "plan.json").read_text(encoding="utf-8"))
    assert plan["totals"]["planned_cost"] > 0
    assert plan["solver"]["status"] == "optimal"
    assert (tmp_path / "out" / "report.md").is_file()


def test_docs_install_line_names_this_distribution() -> None:
    """docs/ci.md's pinned-install line must install this project, not another project's ``finops`` command."""
    name = _distribution_name()
    assert name not in {"finops", "finops-cli"}, "those names belong to other projects on PyPI"
    for doc in ("docs/ci.md", "docs/examples/finops-gate.yml"):
        text = (REPO / doc).read_text(encoding="utf-8")
        pins = re.findall(r"pip install ([A-Za-z0-9_.\-]+)==", text)
        assert pins, f"{doc} has no pinned install line"
        assert set(pins) == {name}, f"{doc} pins {pins}, expected {name}"
    assert _docs_install_line() == [f"{name}=={__version__}"]
