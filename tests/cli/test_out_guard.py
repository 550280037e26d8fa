"""``--out`` never replaces an input, a file under an input directory or the store, nor a device or FIFO.

Issue 12 item 5: the earlier check compared ``--out`` with the paths on the command line only, so a
demand profile named in workloads.yaml, a file inside an ingested directory, the fleet given to
``waste`` and the store's own files could be overwritten. Item 8: ``--out /dev/null`` (as root) renamed
a regular file over the device. Every case leaves its inputs byte-identical.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
PLAN = REPO / "tests" / "report" / "golden" / "sample-plan.json"
ENV = {"NO_COLOR": "1", "COLUMNS": "200", "FINOPS_STORE": ""}


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("out-guard")
    shutil.copy(SAMPLES / "fleet.yaml", root / "fleet.yaml")
    shutil.copy(SAMPLES / "workloads.yaml", root / "workloads.yaml")
    shutil.copytree(SAMPLES / "demand", root / "demand")
    shutil.copytree(SAMPLES / "billing", root / "exports")
    shutil.copy(PLAN, root / "plan.json")
    store = root / "store"
    api.ingest_billing([SAMPLES / "billing" / "focus-2026-10.csv"], store=store)
    api.ingest_spot_prices(store=store, files=[SAMPLES / "spot_prices" / "aws-spot-history-2026-10.json"])
    trace = root / "util.csv"
    rows = [f"2026-10-01T00:{m:02d}:00Z,GPU-{d},h{d},ml,{(m * d) % 100}" for m in range(30) for d in range(4)]
    trace.write_text("timestamp,device_id,host,team,utilization\n" + "\n".join(rows) + "\n", encoding="utf-8")
    api.ingest_utilization([trace], store=store)
    return root


@pytest.mark.parametrize(
    "args, out",
    [
        ("plan --fleet {W}/fleet.yaml --workloads {W}/workloads.yaml --store {W}/store", "demand/chat_serving.csv"),
        ("stack --fleet {W}/fleet.yaml --workloads {W}/workloads.yaml --store {W}/store", "demand/image_gen.csv"),
        ("ingest billing {W}/exports --store {W}/store", "exports/summary.txt"),
        ("ingest billing {W}/exports --store {W}/store", "exports/focus-2026-10.csv"),
        ("ingest billing {W}/exports/focus-2026-10.csv --store {W}/store", "store/manifest.json"),
        ("waste --fleet {W}/fleet.yaml --store {W}/store --price-per-gpu-hour 2", "fleet.yaml"),
        ("prices --store {W}/store", "store/manifest.json"),
        ("prices --store {W}/store", "store/spot_prices/new.txt"),
        (
            "report --plan {W}/plan.json --fleet {W}/fleet.yaml --workloads {W}/workloads.yaml --store {W}/store",
            "demand/research_notebooks.csv",
        ),
    ],
)
def test_out_onto_any_input_is_refused_and_nothing_changes(world: Path, args: str, out: str) -> None:
    before = _tree(world)
    argv = [a.format(W=world) for a in args.split()] + ["--out", str(world / out)]
    result = CliRunner().invoke(app, argv, env=ENV)
    assert result.exit_code == 2, result.output + result.stderr
    assert "input of this command" in result.stderr, result.stderr
    assert _tree(world) == before


def test_out_to_a_character_device_writes_through_and_leaves_the_device(world: Path, tmp_path: Path) -> None:
    """As root the old code renamed a regular file over ``/dev/null``. The test uses a private twin of
    ``/dev/null`` (same device numbers) so a regression can only ever damage the twin, never the host's."""
    if os.geteuid() != 0:
        pytest.skip("creating a device node needs root (and only root could rename over a device)")
    twin = tmp_path / "null"
    os.mknod(twin, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    result = CliRunner().invoke(app, ["gate", "--plan", str(world / "plan.json"), "--out", str(twin)], env=ENV)
    assert result.exit_code == 0, result.stderr
    assert stat.S_ISCHR(twin.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_out_to_a_fifo_writes_through(tmp_path: Path, world: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = CliRunner().invoke(app, ["gate", "--plan", str(world / "plan.json"), "--out", str(fifo)], env=ENV)
    reader.join(timeout=10)
    assert result.exit_code == 0, result.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert got and b"pass" in got[0].lower()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temporary left beside it
