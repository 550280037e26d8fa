"""Shared fixtures: a throwaway store and the repository's paths."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
import sysconfig
import venv
from functools import cache
from pathlib import Path

import pytest
from hypothesis import settings

from finops_cli.store import Store

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"

# Bytecode. With PYTHONDONTWRITEBYTECODE set (as in some shells and CI images) every process of a run -- each xdist
# worker, each ``finops`` or ``python -c`` subprocess a test starts -- compiles finops_cli from source again, and
# pytest rewrites the asserts of every test module again in each worker (~5 CPU-s a worker). The run writes
# bytecode as Python does by default (``__pycache__/``, ignored by git), so each module is compiled once; the
# workers and subprocesses inherit the environment set here.
if sys.dont_write_bytecode:
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Hypothesis profiles. "ci" (the default) bounds the property tests that do not pin their own example count, so
# the suite stays fast on 2 cores; "thorough" (HYPOTHESIS_PROFILE=thorough, e.g. before a release) runs 2,000
# examples each, and ten times the count of tests that set their own (hypothesis_budget.examples). Failures print
# a reproduction blob either way.
settings.register_profile("ci", deadline=None, max_examples=150, print_blob=True)
settings.register_profile("thorough", deadline=None, max_examples=2000, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store")


@pytest.fixture(autouse=True)
def _no_ambient_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Never let a test touch the developer's ``.finops/`` or ``$FINOPS_STORE``."""
    monkeypatch.setenv("FINOPS_STORE", str(tmp_path / "default-store"))
    monkeypatch.setenv("NO_COLOR", "1")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the code-health checks' one-line results (tests/test_code_health.py), passed or failed, so a CI
    log shows ruff and mypy beside pytest's counts (the properties travel back from xdist workers)."""
    lines = [
        str(value)
        for kind in ("passed", "failed")
        for report in terminalreporter.stats.get(kind, [])
        if getattr(report, "when", "call") == "call"
        for key, value in getattr(report, "user_properties", [])
        if key == "code_health"
    ]
    if lines:
        terminalreporter.write_sep("=", "code health: ruff, mypy")
        for line in sorted(lines):
            terminalreporter.write_line(line)


@pytest.fixture(autouse=True)
def _no_ambient_pricebook(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Never let a test read the developer's ``~/.config/finops`` or ``$FINOPS_PRICEBOOK``: shipped tables only."""
    from finops_cli.catalog.pricebook import PRICEBOOK_ENV, use_pricebook

    monkeypatch.delenv(PRICEBOOK_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    use_pricebook(None)


# --- xdist: which tests share a worker --------------------------------------------------------------------------
# ``--dist loadgroup`` (pyproject.toml) is a no-op with pytest >= 9.2: pytest-xdist 3.8 renames a grouped test by
# assigning ``item._nodeid``, which pytest 9.2 no longer reads, so the Spark tests started a JVM in both workers
# and every module-scoped fixture (the demo run, the wheel, the experiments) was built once per worker. The
# scheduler below groups from the test files themselves, through xdist's public scheduler hook.

_GROUP_MARK = re.compile(r"""^pytestmark\s*=\s*pytest\.mark\.xdist_group\(\s*(?:name\s*=\s*)?["']([^"']+)["']""", re.M)
_SHARED_FIXTURE = re.compile(r"""@pytest\.fixture\(\s*scope\s*=\s*["'](?:module|session)["']""")


@cache
def _module_scope(path: str) -> str | None:
    """The unit a test module's tests are sent as: its ``xdist_group`` (``pytestmark = pytest.mark.xdist_group(
    "spark")``), the module itself when it defines a module- or session-scoped fixture (built once, not once per
    worker), else None (each test on its own)."""
    try:
        text = (REPO / path).read_text(encoding="utf-8")
    except OSError:
        return None
    group = _GROUP_MARK.search(text)
    if group:
        return f"group:{group.group(1)}"
    return path if _SHARED_FIXTURE.search(text) else None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``-n N`` (load or loadgroup): a module that shares a fixture runs whole in one worker, an xdist group in
    one worker, every other test on its own; the biggest units go first so the workers finish together."""
    if config.getoption("dist") not in ("load", "loadgroup"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _module_scope(nodeid.split("::", 1)[0]) or nodeid

    return SharedFixtureScheduling(config, log)  # type: ignore[arg-type]


# --- the wheel, installed, and its demo: built once per run -------------------------------------------------------
# tests/packaging/test_wheel.py checks the wheel and the installed tool; tests/cli/test_demo.py checks what the demo
# writes. Both read the ONE demo run below (from the installed wheel, outside the source tree): the demo is the
# suite's costliest end-to-end, so it runs once, not once in process and again from the wheel. Both modules are in
# the xdist group "wheel", so one worker builds all three fixtures.


@pytest.fixture(scope="session")
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


def docs_install_line() -> list[str]:
    """The arguments of docs/ci.md's pinned install line: ``pip install gpu-fleet-finops==0.1.0`` → that spec."""
    text = (REPO / "docs/ci.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"^\s*pip install ([A-Za-z0-9_.\-]+==[A-Za-z0-9_.\-]+)\s*$", text, flags=re.M)
    return line.split()


@pytest.fixture(scope="session")
def installed_wheel(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel, installed by docs/ci.md's line; dependencies come from this interpreter."""
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    venv.create(env_dir, system_site_packages=True, with_pip=False)
    python = env_dir / "bin" / "python"
    if sys.prefix != sys.base_prefix:
        # run from a venv: system_site_packages reaches the *base* interpreter's packages, not this venv's, where the
        # test extras installed the dependencies; a .pth appends this venv's (its .pth files, e.g. the editable
        # checkout's finder, are not processed: the wheel's copy is the only finops_cli the new venv sees)
        paths = sysconfig.get_paths()
        site = Path(
            subprocess.check_output(
                [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
            ).strip()
        )
        (site / "_test_dependencies.pth").write_text(
            "\n".join(dict.fromkeys([paths["purelib"], paths["platlib"]])) + "\n"
        )
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--ignore-installed",
         "--quiet", "--no-index", "--find-links", str(wheel.parent), *docs_install_line()],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return env_dir


def installed_env(env_dir: Path, home: Path) -> dict[str, str]:
    """The environment a user's shell gives the installed ``finops``: its venv on PATH, no checkout in sight."""
    return {"NO_COLOR": "1", "PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "HOME": str(home)}


#: The demo's as-of instant in the suite: the day after the sample month (October 2026) ends.
DEMO_AS_OF = "2026-11-01T00:00:00Z"


@pytest.fixture(scope="session")
def demo_out(installed_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``finops demo --out out --as-of DEMO_AS_OF`` run once by the installed wheel's ``finops`` in a directory
    outside the source tree: the output directory and what the demo printed on stdout. The as-of instant is pinned
    so the plan's price ages (and so the golden files) do not depend on the day the suite runs."""
    cwd = tmp_path_factory.mktemp("demo")
    demo = subprocess.run(
        [str(installed_wheel / "bin" / "finops"), "demo", "--out", "out", "--as-of", DEMO_AS_OF],
        cwd=cwd,
        env=installed_env(installed_wheel, cwd),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "Traceback" not in demo.stdout + demo.stderr
    return cwd / "out", demo.stdout
