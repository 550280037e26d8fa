"""Lint, format and type checks as tests, so CI (which runs exactly the README's pytest command) runs them too.

Each check runs as a subprocess on the source tree with the configuration in ``pyproject.toml``; a failure
carries the tool's own output. Each check's last line is recorded as a ``code_health`` property, which
``tests/conftest.py`` prints in the terminal summary: the CI log shows ruff and mypy next to pytest's counts.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CHECKS = {
    "ruff check": [sys.executable, "-m", "ruff", "check", "--no-cache", "."],
    "ruff format --check": [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."],
    # files, plugins (pydantic) and per-library settings come from [tool.mypy] in pyproject.toml
    "mypy": [sys.executable, "-m", "mypy"],
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_code_health(name: str, record_property: Callable[[str, object], None]) -> None:
    started = time.perf_counter()
    proc = subprocess.run(CHECKS[name], cwd=REPO, capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - started
    output = (proc.stdout + proc.stderr).strip()
    last = output.splitlines()[-1] if output else "(no output)"
    record_property("code_health", f"{name}: {last} ({seconds:.1f} s)")
    assert proc.returncode == 0, f"{name} exited {proc.returncode}:\n{output[-20000:]}"


def test_ci_runs_exactly_the_readme_test_command() -> None:
    """README: "This is exactly what CI (`.ci/run`) runs." Keep the two from drifting apart."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("This is exactly what CI (`.ci/run`) runs.", 1)[1].split("```bash\n", 1)[1]
    command = block.split("\n```", 1)[0].strip()
    ci = [ln.strip() for ln in (REPO / ".ci/run").read_text(encoding="utf-8").splitlines()]
    steps = [ln for ln in ci if ln and not ln.startswith(("#", "set ", "cd "))]
    assert steps == [command], f".ci/run runs {steps}, the README says {command!r}"
