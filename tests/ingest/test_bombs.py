"""Small inputs that expand without bound are refused with exit 2, in bounded memory (issue 12 item 9).

The limits are lowered for the tests (the readers read them at call time), so each bomb is a few MB
instead of gigabytes; the code path is the same. The spill test checks that a compressed trace whose
pass-1 bucket count was sized from its compressed size is re-split by its decompressed (spilled) bytes.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from finops_cli import api, files
from finops_cli.cli.app import app
from finops_cli.ingest.readers import jsonl, stream
from finops_cli.ingest.utilization import pipeline, sources, spill

ENV = {"NO_COLOR": "1", "COLUMNS": "200", "FINOPS_STORE": ""}
LIMIT = 1 << 20


@pytest.fixture(autouse=True)
def _small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    for reader in (stream, jsonl):  # each reads the limit at call time
        monkeypatch.setattr(reader, "MAX_LINE_BYTES", LIMIT)
    monkeypatch.setattr(files, "MAX_TEXT_BYTES", LIMIT)


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env=ENV)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stderr


def test_a_gzip_csv_header_without_newline(tmp_path: Path) -> None:
    bomb = tmp_path / "bill.csv.gz"
    bomb.write_bytes(gzip.compress(b"BilledCost," * (LIMIT // 5)))
    code, err = _run("ingest", "billing", str(bomb), "--store", str(tmp_path / "s"))
    assert code == 2 and "bill.csv.gz" in err and "header line longer than" in err
    assert not (tmp_path / "s").exists()


def test_a_jsonl_gzip_with_one_giant_line(tmp_path: Path) -> None:
    head = json.dumps(
        {
            "billing_account_id": "a",
            "cost": 1.0,
            "currency": "USD",
            "usage_start_time": "2026-10-01T00:00:00Z",
            "sku": {"description": "x"},
        }
    )
    bomb = tmp_path / "gcp.jsonl.gz"
    # DuckDB's JSON reader holds lines up to max(its 16 MiB buffer, the limit) and hands a longer one to the
    # Python decoder, which names it: past both, whatever the limit (40 MiB of "a" is 40 kB of gzip)
    giant = max(2 * LIMIT, 40 << 20)
    bomb.write_bytes(gzip.compress((head + "\n" + '{"x": "' + "a" * giant + '"}\n').encode()))
    code, err = _run("ingest", "billing", str(bomb), "--store", str(tmp_path / "s"))
    assert code == 2 and "gcp.jsonl.gz" in err and "longer than" in err


@pytest.mark.parametrize(
    "name, args",
    [
        ("prom.json.gz", ("ingest", "utilization")),
        ("spot.json.gz", ("ingest", "spot-prices", "--file")),
    ],
)
def test_whole_file_json_readers_are_bounded(tmp_path: Path, name: str, args: tuple[str, ...]) -> None:
    bomb = tmp_path / name
    bomb.write_bytes(gzip.compress(b'{"data": {"resultType": "matrix", "result": [' + b" " * (2 * LIMIT) + b"]}}"))
    code, err = _run(*args, str(bomb), "--store", str(tmp_path / "s"))
    assert code == 2 and name in err and "larger than 1 MiB (decompressed)" in err, err


def test_a_demand_profile_that_never_ends(tmp_path: Path) -> None:
    """``demand: {profile: /dev/zero}`` read 6 GB before; now the read stops at the limit."""
    repo = Path(__file__).resolve().parents[2]
    workloads = (repo / "samples" / "workloads.yaml").read_text(encoding="utf-8")
    workloads = workloads.replace("demand/chat_serving.csv", "/dev/zero")
    (tmp_path / "workloads.yaml").write_text(workloads, encoding="utf-8")
    (tmp_path / "demand").symlink_to(repo / "samples" / "demand")
    code, err = _run(
        "validate", "--fleet", str(repo / "samples" / "fleet.yaml"), "--workloads", str(tmp_path / "workloads.yaml")
    )
    assert code == 2 and "/dev/zero" in err and "larger than" in err, err


@pytest.mark.parametrize(
    "text, says",
    [
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested"),
        ("a: " + "{x: " * 200 + "1" + "}" * 200 + "\n", "nested more than 64"),
        (
            "a: &a [1, 2]\n"
            + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)),
            "expands to more than",
        ),
        ("a: &a [*a]\n", "contains itself"),
        ("version: " + "9" * 5000 + "\n", "digits"),
    ],
)
def test_yaml_attacks_on_estate_files(tmp_path: Path, text: str, says: str) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(text, encoding="utf-8")
    code, err = _run("validate", "--fleet", str(fleet))
    assert code == 2 and str(fleet) in err and says in err, err


@pytest.mark.parametrize("depth", [100, 5000])
def test_deep_json_in_a_plan_and_a_jsonl_record(tmp_path: Path, depth: int) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"a": ' + "[" * depth + "]" * depth + "}", encoding="utf-8")
    code, err = _run("gate", "--plan", str(plan))
    assert code == 2 and "nested" in err, err
    jl = tmp_path / "gcp.jsonl"
    line = {"billing_account_id": "a", "cost": 1.0, "currency": "USD", "usage_start_time": "2026-10-01T00:00:00Z"}
    line["sku"] = {"description": "x"}
    text = json.dumps(line)
    jl.write_text(text + "\n" + text[:-1] + ', "labels": ' + "[" * depth + "]" * depth + "}\n", encoding="utf-8")
    code, err = _run("ingest", "billing", str(jl), "--store", str(tmp_path / "s"))
    assert code == 2 and "row 2" in err and "nested" in err, err


def test_a_compressed_trace_is_spilled_by_its_decompressed_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pass 1 sizes buckets from the gzip's size (here: one bucket); pass 2 must not load it whole."""
    rows = ["timestamp,device_id,host,team,utilization"]
    for minute in range(240):
        for d in range(40):
            rows.append(
                f"2026-10-01T{minute // 60:02d}:{minute % 60:02d}:00Z,GPU-{d},h{d // 8},t{d % 3},{(minute * d) % 100}"
            )
    trace = tmp_path / "trace.csv.gz"
    trace.write_bytes(gzip.compress("\n".join(rows).encode()))
    whole = api.ingest_utilization([trace], store=tmp_path / "whole").to_dict()

    for module in (pipeline, spill):  # pass 1 sizes the buckets, pass 2 re-splits them
        monkeypatch.setattr(module, "BUCKET_BYTES", 16 << 10)
    assert sources.source_size(trace) < 2 * pipeline.BUCKET_BYTES * 8  # compressed: few buckets in pass 1
    loaded: list[int] = []
    read = pipeline.read_bucket

    def spy(path: Path) -> pa.Table:
        loaded.append(path.stat().st_size)
        return read(path)

    monkeypatch.setattr(pipeline, "read_bucket", spy)
    split = api.ingest_utilization([trace], store=tmp_path / "split").to_dict()
    assert len(loaded) > 4 and max(loaded) <= 4 * pipeline.BUCKET_BYTES
    for key in ("samples", "devices", "observed_seconds", "span_seconds", "months"):
        assert split["sources"][0][key] == whole["sources"][0][key], key
    frames = [
        api.open_store(tmp_path / name).read("utilization").to_pandas().astype({"device_id": str})
        for name in ("whole", "split")
    ]
    a, b = (f.sort_values(["device_id", "timestamp"]).reset_index(drop=True) for f in frames)
    assert len(a) == len(b) == 240 * 40
    assert np.allclose(a["interval_s"], b["interval_s"]) and (a["device_id"] == b["device_id"]).all()


def _nested(depth: int, width: int) -> object:
    doc: object = [1, "x", None]
    for level in range(depth - 1):
        doc = {f"k{i}": doc if i == 0 else [level, i] for i in range(width)} if level % 2 else [doc, *[[]] * width]
    return doc


@pytest.mark.parametrize("depth", [1, 2, 63, 64, 65, 200])
@pytest.mark.parametrize("width", [1, 3])
def test_the_tree_check_of_json_agrees_with_the_graph_check(tmp_path: Path, depth: int, width: int) -> None:
    """parse_json checks depth and size level by level (a decoded JSON document is a tree): it must accept and
    refuse exactly what the alias-aware check_depth does, with the same limits."""
    from finops_cli.errors import InputError
    from finops_cli.files import check_depth, check_tree_depth

    doc = json.loads(json.dumps(_nested(depth, width)))
    for limits in ({}, {"max_values": 40}) if depth <= 64 else ({},):  # too deep and too big: either may be named
        outcomes = []
        for check in (check_depth, check_tree_depth):
            try:
                outcomes.append(check(doc, tmp_path / "x.json", **limits) is doc)
            except InputError as exc:
                outcomes.append(str(exc).split(" values")[0])
        assert outcomes[0] == outcomes[1], (depth, width, limits, outcomes)
