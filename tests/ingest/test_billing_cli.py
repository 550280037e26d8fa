"""``finops ingest billing`` end to end through Typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from finops_cli.cli.app import app

BILLING = Path(__file__).resolve().parents[2] / "samples" / "billing"
runner = CliRunner()


def test_table_summary_names_formats_money_and_gpu_hours(tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", "billing", str(BILLING), "--store", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    out = result.output
    for text in ("aws-cur2", "azure (amortized)", "sniffed header", "coreweave", "$515,223.13", "H100", "Committed"):
        assert text in out, text
    assert "conserved USD" in out


def test_json_summary_to_file_and_input_format_flag(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    args = ["ingest", "billing", str(BILLING / "focus-2026-10.csv"), "--input-format", "focus", "--format", "json"]
    result = runner.invoke(app, [*args, "--store", str(tmp_path / "s"), "--out", str(target)])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output
    doc = json.loads(target.read_text())
    assert doc["files"][0]["format"] == "focus" and doc["files"][0]["sniffed"] is False
    assert {c["provider"] for c in doc["cost"]} == {"coreweave", "onprem"}
    assert doc["conservation"][0]["difference"] == 0


def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    store = tmp_path / "s"
    result = runner.invoke(
        app, ["ingest", "billing", str(BILLING / "focus-2026-10.csv"), str(empty), "--store", str(store)]
    )
    assert result.exit_code == 2
    assert "empty.csv: file is empty" in result.output and "Traceback" not in result.output
    assert not list(store.rglob("*.parquet"))


def test_unknown_format_lists_the_valid_ones(tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", "billing", str(BILLING), "--format", "oracle", "--store", str(tmp_path)])
    assert result.exit_code == 2 and "aws-cur2" in result.output and "focus" in result.output


def test_unknown_header_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text("foo,bar\n1,2\n")
    result = runner.invoke(app, ["ingest", "billing", str(path), "--store", str(tmp_path / "s")])
    assert (
        result.exit_code == 2 and "export.csv" in result.output and "matches no known billing format" in result.output
    )


def test_format_is_the_output_format_and_the_old_spellings_still_work(tmp_path: Path) -> None:
    """--format names the output on every command; the pre-0.2 ingest spellings warn and keep working."""
    focus = str(BILLING / "focus-2026-10.csv")
    inferred = tmp_path / "inferred.json"
    result = runner.invoke(
        app,
        ["ingest", "billing", focus, "--input-format", "focus", "--store", str(tmp_path / "a"), "--out", str(inferred)],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(inferred.read_text())["files"][0]["format"] == "focus"  # --out x.json implies --format json

    legacy = tmp_path / "legacy.json"
    args = ["ingest", "billing", focus, "--format", "focus", "-o", "json", "--store", str(tmp_path / "b")]
    result = runner.invoke(app, [*args, "--out", str(legacy)])
    assert result.exit_code == 0, result.output
    assert "use --input-format focus" in result.output
    assert json.loads(legacy.read_text())["files"][0]["sniffed"] is False

    both = runner.invoke(app, ["ingest", "billing", focus, "--input-format", "focus", "--format", "xml"])
    assert both.exit_code == 2 and "output format is table or json" in both.output
    unknown = runner.invoke(app, ["ingest", "billing", focus, "--format", "xls", "--store", str(tmp_path / "c")])
    assert unknown.exit_code == 2 and "'xls'" in unknown.output and "focus" in unknown.output
