"""How the console script ends: complete output, the exit code, DuckDB's spill folder removed, and a reader that
leaves early (``finops … | head``) is no error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
FINOPS = [sys.executable, "-c", "from finops_cli.cli.app import main; main()"]


def _finops(args: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp), "NO_COLOR": "1"}
    return subprocess.run([*FINOPS, *args], capture_output=True, text=True, timeout=300, env=env, check=False)


def test_output_exit_code_and_spill_folders(tmp_path: Path) -> None:
    tmp, store = tmp_path / "tmp", tmp_path / "store"
    tmp.mkdir()
    ingest = _finops(["ingest", "billing", str(SAMPLES / "billing" / "focus-2026-10.csv"), "--store", str(store)], tmp)
    assert ingest.returncode == 0, ingest.stderr
    costs = _finops(["costs", "--store", str(store), "--by", "provider", "--format", "json"], tmp)
    assert costs.returncode == 0, costs.stderr
    rows = json.loads(costs.stdout)  # all of it was flushed
    assert rows and costs.stdout.endswith("\n")
    assert sorted(p.name for p in tmp.iterdir()) == []  # DuckDB's spill folders went with the atexit handlers
    missing = _finops(["costs", "--store", str(tmp_path / "nowhere"), "--by", "provider"], tmp)
    assert (
        missing.returncode == 2
        and missing.stderr == "error: no billing in the store; run 'finops ingest billing' first\n"
    )


def test_a_reader_that_leaves_early_is_not_an_error(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "NO_COLOR": "1"}
    cmd = " ".join(f"'{a}'" for a in [*FINOPS, "validate", "--help"])
    done = subprocess.run(
        ["bash", "-c", f"{cmd} | head -c 10 >/dev/null; echo ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout.strip() in ("0", "1")  # 1: EXIT_BROKEN_PIPE when the pipe closed before the help was out
