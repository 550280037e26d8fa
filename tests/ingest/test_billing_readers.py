"""Shared streaming readers and the format registry: typed columns, clean errors, discovery, sniffing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops_cli.errors import InputError
from finops_cli.ingest.billing import BILLING_FORMATS
from finops_cli.ingest.readers.common import discover
from finops_cli.ingest.readers.stream import iter_batches, read_header
from finops_cli.ingest.readers.values import to_utc
from finops_cli.ingest.registry import Registry

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _rows(path: Path, **kw: object) -> list[dict[str, object]]:
    return [r for rb in iter_batches(path, **kw) for r in rb.batch.to_pylist()]  # type: ignore[arg-type]


def test_csv_ids_stay_text_and_bom_is_dropped(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes("\ufeffaccount,cost\n000123456789,1.5\n111122223333,\n".encode())
    assert read_header(p) == ["account", "cost"]
    rows = _rows(p, types={"cost": pa.float64()})
    assert rows == [{"account": "000123456789", "cost": 1.5}, {"account": "111122223333", "cost": None}]


def test_batches_number_rows_from_one(tmp_path: Path) -> None:
    p = tmp_path / "big.csv"
    p.write_text("a\n" + "".join(f"{i}\n" for i in range(50_000)))
    starts = [rb.first_row for rb in iter_batches(p, csv_block_bytes=64 << 10)]
    assert starts[0] == 1 and len(starts) > 1
    sizes = [rb.batch.num_rows for rb in iter_batches(p, csv_block_bytes=64 << 10)]
    assert [s - 1 for s in starts[1:]] == [sum(sizes[: i + 1]) for i in range(len(sizes) - 1)]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "file is empty"),
        (b"id,cost\n1,abc\n", "row 1, column 'cost': expected a number (got 'abc')"),
        (b"id,cost\n1,2\n2,3,4\n", "row 2: malformed row"),
        (b"id,cost\ncaf\xe9,1\n", "invalid text encoding; expected UTF-8"),
    ],
)
def test_csv_errors_name_file_row_and_column(tmp_path: Path, content: bytes, expected: str) -> None:
    p = tmp_path / "x.csv"
    p.write_bytes(content)
    with pytest.raises(InputError, match=r"x\.csv") as err:
        _rows(p, types={"cost": pa.float64()})
    assert expected in str(err.value)


def test_truncated_gzip_is_an_input_error(tmp_path: Path) -> None:
    p = tmp_path / "t.csv.gz"
    data = gzip.compress(("id,cost\n" + "".join(f"{i},{i}.5\n" for i in range(100_000))).encode())
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="truncated gzip"):
        _rows(p, types={"cost": pa.float64()})


def test_jsonl_flattens_objects_and_keeps_lists_as_json(tmp_path: Path) -> None:
    p = tmp_path / "g.jsonl"
    p.write_text(json.dumps({"sku": {"id": "X"}, "credits": [{"amount": -1.5}], "cost": 3}) + "\n")
    assert read_header(p) == ["sku.id", "credits", "cost"]
    (row,) = _rows(p, types={"cost": pa.float64()})
    assert row == {"sku.id": "X", "credits": '[{"amount": -1.5}]', "cost": 3.0}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"cost": 1}\n{"cost": \n')
    with pytest.raises(InputError, match="row 2"):
        _rows(bad)


def test_parquet_structs_flatten_and_ints_become_text(tmp_path: Path) -> None:
    p = tmp_path / "x.parquet"
    pq.write_table(pa.table({"service": [{"description": "Compute Engine"}], "account": [111122223333]}), p)
    assert read_header(p) == ["service.description", "account"]
    assert _rows(p) == [{"service.description": "Compute Engine", "account": "111122223333"}]


def test_discover_walks_directories_and_rejects_empty_ones(tmp_path: Path) -> None:
    (tmp_path / "d" / ".hidden").mkdir(parents=True)
    (tmp_path / "d" / "a.csv").write_text("x\n1\n")
    (tmp_path / "d" / ".hidden" / "b.csv").write_text("x\n1\n")
    (tmp_path / "d" / "notes.txt").write_text("hi")
    assert [p.name for p in discover([tmp_path / "d"])] == ["a.csv"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="holds no billing export files"):
        discover([tmp_path / "empty"], what="billing export")
    with pytest.raises(InputError, match="no such file"):
        discover([tmp_path / "missing.csv"])
    with pytest.raises(InputError, match="unsupported file type"):
        discover([tmp_path / "d" / "notes.txt"])


def test_to_utc_accepts_the_formats_exports_use() -> None:
    values = pa.array(
        ["2026-10-01T00:00:00Z", "2026-10-01 00:00:00", "2026-10-01 02:00:00+02:00", "2026-10-01 00:00:00 UTC"]
    )
    got = to_utc(values, path="f", column="c")
    assert {v.isoformat() for v in got.to_pylist()} == {"2026-10-01T00:00:00+00:00"}
    assert to_utc(pa.array(["10/31/2026"]), path="f", column="c")[0].as_py().day == 31
    with pytest.raises(InputError, match="row 2, column 'c'"):
        to_utc(pa.array(["2026-10-01", "yesterday"]), path="f", column="c")


def test_registry_resolves_aliases_and_lists_valid_names() -> None:
    assert BILLING_FORMATS.from_str("CUR2").name == "aws-cur2"
    with pytest.raises(InputError, match="expected one of: auto, aws-cur, aws-cur2"):
        BILLING_FORMATS.from_str("oracle")


def test_registry_sniff_ties_and_misses_are_errors() -> None:
    reg: Registry[str] = Registry("thing")
    reg.register("a", sniff=lambda cols: "x" in cols)("A")
    reg.register("b", sniff=lambda cols: "x" in cols)("B")
    with pytest.raises(InputError, match="fits several"):
        reg.sniff(["x"])
    with pytest.raises(InputError, match="matches no known thing"):
        reg.sniff(["y"])


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("billing/aws-cur-2026-10.csv.gz", "aws-cur"),
        ("billing/aws-cur2-2026-10.parquet", "aws-cur2"),
        ("billing/gcp-billing-2026-10.jsonl", "gcp"),
        ("billing/azure-amortized-2026-10.csv", "azure"),
        ("billing-azure-actual/azure-actual-2026-10.csv", "azure"),
        ("billing/focus-2026-10.csv", "focus"),
    ],
)
def test_auto_sniffs_every_sample(name: str, fmt: str) -> None:
    path = SAMPLES / name
    assert BILLING_FORMATS.sniff(read_header(path), path).name == fmt
