"""Shared fixtures: a throwaway store and the repository's paths."""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import settings

from finops_cli.store import Store

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"

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
    from finops_cli.estate.pricebook import PRICEBOOK_ENV, use_pricebook

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
