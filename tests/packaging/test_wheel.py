"""The package as a user gets it: build the wheel, install it into a fresh venv, run it from elsewhere.

A source checkout hides packaging mistakes (data read from the checkout, a module missing from the wheel), so
this test builds the real wheel with pip, installs it with ``--no-deps`` into a new virtual environment that
sees this interpreter's dependencies, and runs ``finops --version`` and ``finops demo`` from a directory outside
the source tree. The install is docs/ci.md's own pinned line (``pip install NAME==VERSION``), resolved against the
built wheel only (``--no-index --find-links``): the line users copy is the one that installed what was tested.
The wheel, the venv and the demo run are session fixtures in tests/conftest.py, shared with tests/cli/test_demo.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
import zipfile
from pathlib import Path

import pytest

from finops_cli import __version__
from tests.conftest import docs_install_line, installed_env

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xdist_group("wheel")  # with tests/cli/test_demo.py: one worker builds the wheel and demo


def _distribution_name() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]


def test_wheel_carries_package_data_and_metadata(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "finops_cli/pricebooks/instance_types.csv" in names
    assert "finops_cli/pricebooks/reference_prices.csv" in names
    assert "finops_cli/pricebooks/gpu_families.csv" in names
    assert "finops_cli/pricebooks/cpu_only_families.csv" in names
    assert "finops_cli/_samples/fleet.yaml" in names
    assert any(n.startswith("finops_cli/_samples/billing/") for n in names)
    assert not any(n.startswith("pricebooks/") for n in names), "the top-level pricebooks/ ships inside the package"
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)
    meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = zipfile.ZipFile(wheel).read(meta_name).decode()
    assert f"Name: {_distribution_name()}\n" in meta
    assert f"Version: {__version__}\n" in meta
    assert "License-Expression: Apache-2.0" in meta
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_installed_wheel_runs_version_and_demo(
    installed_wheel: Path, demo_out: tuple[Path, str], tmp_path: Path
) -> None:
    """``finops --version`` here, and ``finops demo`` in the shared :func:`demo_out` (tests/conftest.py): both the
    installed wheel's command, run outside the source tree; tests/cli/test_demo.py checks the demo's files."""
    finops = installed_wheel / "bin" / "finops"
    env = installed_env(installed_wheel, tmp_path)
    where = subprocess.run(
        [str(installed_wheel / "bin" / "python"), "-c", "import finops_cli; print(finops_cli.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(installed_wheel), "must exercise the wheel, not the checkout"

    version = subprocess.run([str(finops), "--version"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"finops {__version__}"

    out, _ = demo_out  # exit 0 and no traceback are checked where it runs
    assert not out.is_relative_to(REPO)
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    assert plan["totals"]["planned_cost"] > 0
    assert plan["solver"]["status"] == "optimal"
    assert (out / "report.md").is_file()


def test_docs_install_line_names_this_distribution() -> None:
    """docs/ci.md's pinned-install line must install this project, not another project's ``finops`` command."""
    name = _distribution_name()
    assert name not in {"finops", "finops-cli"}, "those names belong to other projects on PyPI"
    for doc in ("docs/ci.md", "docs/examples/finops-gate.yml"):
        text = (REPO / doc).read_text(encoding="utf-8")
        pins = re.findall(r"pip install ([A-Za-z0-9_.\-]+)==", text)
        assert pins, f"{doc} has no pinned install line"
        assert set(pins) == {name}, f"{doc} pins {pins}, expected {name}"
    assert docs_install_line() == [f"{name}=={__version__}"]
