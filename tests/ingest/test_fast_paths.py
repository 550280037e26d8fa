"""The vectorised ingest paths (#15 item 3) store exactly what the per-row Python paths stored.

- tag columns → Tags JSON with Arrow kernels: the text :func:`tags_json` writes, for quotes, backslashes,
  control and non-ASCII characters, empty cells and repeated keys;
- GCP JSON Lines through DuckDB's ``read_json`` (credits and labels as lists of structs): the same store rows and
  totals as the Python decoder and as the same export in CSV (lists as JSON text), on a messy export with
  three currencies, missing and repeated labels, escaped strings, credit lists and missing end times;
- a file DuckDB refuses part-way is finished by the Python decoder from the first row not yet
  stored: the same result, or the same one-line error naming the row.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from finops_cli.errors import InputError
from finops_cli.ingest.billing import ingest_billing
from finops_cli.ingest.billing.base import tags_from_columns, tags_from_lists, tags_json
from finops_cli.ingest.billing.gcp import GcpBilling
from finops_cli.ingest.readers import jsonl as jsonl_reader
from finops_cli.store import Store

WORDS = ["", "research", 'say "hi"', "back\\slash", "tab\tand\nnewline", "é-accent", "日本", "🙂", "\x01", "x" * 40]
SKUS = [
    ("Nvidia H100 80GB GPU attached to Spot Preemptible VMs in EMEA", "a3-highgpu-8g"),
    ("Spot Preemptible A3 Instance Core running in EMEA", "a3-highgpu-8g"),
    ("Nvidia L4 GPU running in Americas", "g2-standard-4"),
    ("Commitment v1: A2 Cores in Americas for 1 Year", None),
    ("Storage PD Capacity", None),
]


def test_tag_columns_give_the_text_tags_json_gives() -> None:
    rng = random.Random(5)
    n = 3000
    columns = {f"resourceTags/user:k{i}": [rng.choice([*WORDS, None]) for _ in range(n)] for i in range(5)}
    columns["resourceTags/user:name"] = [f"user-{rng.randrange(10**6)}" if rng.random() < 0.3 else "" for _ in range(n)]
    columns["resourceTags/aws:createdBy"] = [rng.choice(WORDS) for _ in range(n)]
    columns["resourceTags/k0"] = [rng.choice(WORDS) for _ in range(n)]  # a second column for key k0
    for values in columns.values():  # row 0 has no tag at all: null, not "{}"
        values[0] = rng.choice(["", None])
    batch = pa.RecordBatch.from_pydict({k: pa.array(v, pa.string()) for k, v in columns.items()})
    keys = {c: c.removeprefix("resourceTags/").removeprefix("user:") for c in columns}
    got = tags_from_columns(batch, keys).to_pylist()
    for i, text in enumerate(got):
        row: dict[str, str] = {}
        for c in sorted(columns, key=lambda c: keys[c]):  # the first non-empty of two columns wins
            v = columns[c][i]
            if v and keys[c] not in row:
                row[keys[c]] = v
        assert text == tags_json(row), (i, text)
    assert got[0] is None and len(got) == n


def test_label_lists_give_the_text_tags_json_gives() -> None:
    rng = random.Random(9)
    rows = []
    for _ in range(2000):
        if rng.random() < 0.1:
            rows.append(None)
            continue
        entries = [
            {"key": rng.choice(["team", "workload", "é", 'q"k', "team"]), "value": rng.choice([*WORDS, None])}
            for _ in range(rng.randrange(0, 5))
        ]
        rows.append(entries)
    values = pa.array(rows, pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())])))
    assert tags_from_lists(values).to_pylist() == [tags_json(r) if r else None for r in rows]


def _line(rng: random.Random, i: int) -> dict:
    currency = ["USD", "EUR", "JPY"][i % 3]
    sku, spec = SKUS[i % len(SKUS)]
    cost = round(rng.uniform(0.01, 900), 6) if currency != "JPY" else float(rng.randrange(1, 90000))
    line: dict = {
        "billing_account_id": f"01A2B3-{currency}",
        "service": {"id": "6F81", "description": "Compute Engine"},
        "sku": {"id": f"SKU-{i % 5}", "description": sku},
        "usage_start_time": f"2026-10-{1 + i % 28:02d} {i % 24:02d}:00:00 UTC",
        "usage_end_time": f"2026-10-{1 + i % 28:02d} {i % 24:02d}:59:59 UTC",
        "project": {"id": f"proj-{i % 4}", "name": rng.choice(WORDS[1:])},
        "location": {"location": "europe-west4", "region": "europe-west4", "zone": "europe-west4-b"},
        "cost": cost,
        "currency": currency,
        "usage": {"amount": 3600.0 * (1 + i % 3), "unit": rng.choice(["seconds", "hour"])},
        "invoice": {"month": "202610"},
        "cost_type": rng.choice(["regular"] * 8 + ["tax", "adjustment"]),
    }
    kind = i % 6
    if kind != 0:  # some lines have no labels at all, some an empty list, some repeated keys
        labels = [{"key": "team", "value": rng.choice(WORDS)}, {"key": "workload", "value": f"wl-{i % 7}"}]
        if kind == 2:
            labels = []
        if kind == 3:
            labels.append({"key": "team", "value": "overrides"})
        line["labels"] = labels
    if spec is not None and kind != 4:
        line["system_labels"] = [
            {"key": "compute.googleapis.com/cores", "value": "208"},
            {"key": "compute.googleapis.com/machine_spec", "value": spec},
        ]
    if kind in (1, 3, 5):  # credit lists: several, committed use, a null amount
        line["credits"] = [
            {"name": "SUD", "amount": -round(cost * 0.1, 6), "type": "SUSTAINED_USAGE_DISCOUNT"},
            {"name": "CUD", "amount": -round(cost * 0.2, 6), "type": "COMMITTED_USAGE_DISCOUNT"}
            if kind == 3
            else {"name": "promo", "amount": None, "type": "PROMOTION"},
        ]
    elif kind == 2:
        line["credits"] = []
    if kind == 5:
        del line["usage_end_time"]
    return line


def _export(tmp_path: Path, n: int = 600, edit: dict[int, dict] | None = None) -> list[dict]:
    rng = random.Random(11)
    lines = [_line(rng, i) for i in range(n)]
    for i, fields in (edit or {}).items():
        lines[i].update(fields)
    return lines


def _write_jsonl(path: Path, lines: list[dict]) -> Path:
    text = "\n".join(json.dumps(line) for line in lines[:5]) + "\n\n"  # a blank line is not a row
    text += "\n".join(json.dumps(line) for line in lines[5:]) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def _write_csv(path: Path, lines: list[dict]) -> Path:
    """The same export as BigQuery's CSV: nested objects dotted, lists as JSON text."""
    rows = [jsonl_reader.flatten_record(line) for line in lines]
    names = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, names)
        w.writeheader()
        for r in rows:
            w.writerow({k: json.dumps(v) if isinstance(v, list) else v for k, v in r.items()})
    return path


def _stored(root: Path, lines_path: Path) -> tuple[pa.Table, dict]:
    summary = ingest_billing([lines_path], "gcp", Store(root))
    table = Store(root).read("billing")
    table = table.drop_columns(["x_SourceFile", "x_SourceFormat"]).sort_by("x_SourceRow")
    totals = summary.to_dict()
    totals.pop("store"), totals.pop("files"), totals.pop("sources")
    return table, totals


@pytest.fixture
def python_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GcpBilling, "nested", None)


def test_gcp_jsonl_through_pyarrow_stores_what_the_python_decoder_and_the_csv_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _export(tmp_path)
    jsonl = _write_jsonl(tmp_path / "export.jsonl", lines)
    monkeypatch.setattr(jsonl_reader, "JSON_BATCH_ROWS", 97)  # several batches
    fast, fast_totals = _stored(tmp_path / "fast", jsonl)
    assert pa.types.is_string(fast.schema.field("Tags").type)
    with monkeypatch.context() as m:
        m.setattr(GcpBilling, "nested", None)
        slow, slow_totals = _stored(tmp_path / "slow", jsonl)
    via_csv, csv_totals = _stored(tmp_path / "csv", _write_csv(tmp_path / "export.csv", lines))
    assert fast.num_rows == len(lines)
    assert fast.equals(slow) and fast_totals == slow_totals
    assert fast.equals(via_csv) and fast_totals == csv_totals
    # the messy parts really were there: three currencies, escaped tag text, CUD credits, end = start
    assert {c["currency"] for c in fast_totals["conservation"]} == {"EUR", "JPY", "USD"}
    tags = [t for t in fast["Tags"].to_pylist() if t]
    assert any("\\u" in t for t in tags) and any('\\"' in t for t in tags) and any("overrides" in t for t in tags)
    assert "Committed" in fast["PricingCategory"].to_pylist()


def _handovers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The rows DuckDB had already handed over each time the Python decoder took a file over."""
    skips: list[int] = []
    python_decoder = jsonl_reader.iter_jsonl

    def spy(path: Path, wanted: list[str] | None, types: dict, batch_rows: int, skip: int = 0) -> object:
        skips.append(skip)
        return python_decoder(path, wanted, types, batch_rows, skip=skip)

    monkeypatch.setattr(jsonl_reader, "iter_jsonl", spy)
    return skips


@pytest.mark.parametrize("bad_row", [3, 450])
def test_a_line_duckdb_refuses_is_finished_by_the_python_decoder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad_row: int
) -> None:
    """Labels as one object (valid JSON, not the list the schema says; the Python decoder dots it away);
    a cost as text and a number as a project id (which both decoders take alike) on the way."""
    edit: dict[int, dict] = {bad_row: {"labels": {"team": "obj-form"}}, 2: {"cost": "12.5", "project": {"id": 42}}}
    lines = _export(tmp_path, edit=edit)
    jsonl = _write_jsonl(tmp_path / "export.jsonl", lines)
    monkeypatch.setattr(jsonl_reader, "JSON_BATCH_ROWS", 50)
    skips = _handovers(monkeypatch)
    fast, fast_totals = _stored(tmp_path / "fast", jsonl)
    # DuckDB parses a buffer (≥ 16 MiB) before it hands any row over: here the whole file goes to Python
    assert len(skips) == 1 and skips[0] <= bad_row, skips
    monkeypatch.setattr(GcpBilling, "nested", None)
    slow, slow_totals = _stored(tmp_path / "slow", jsonl)
    assert fast.num_rows == len(lines) and fast.equals(slow) and fast_totals == slow_totals


def test_a_duckdb_error_after_batches_were_handed_over_continues_at_the_next_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a file larger than DuckDB's buffer the error comes after earlier rows were converted: the Python
    decoder must take over at the first row not yet handed over, none twice and none lost."""
    import duckdb

    jsonl = _write_jsonl(tmp_path / "export.jsonl", _export(tmp_path))
    monkeypatch.setattr(jsonl_reader, "JSON_BATCH_ROWS", 50)
    batches = 0
    json_table = jsonl_reader._json_table

    def failing_third(*args: object) -> pa.Table:
        nonlocal batches
        batches += 1
        if batches == 3:
            raise duckdb.InvalidInputException("Malformed JSON (as if in a later buffer)")
        return json_table(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(jsonl_reader, "_json_table", failing_third)
    skips = _handovers(monkeypatch)
    fast, fast_totals = _stored(tmp_path / "fast", jsonl)
    assert skips == [100]
    monkeypatch.setattr(GcpBilling, "nested", None)
    slow, slow_totals = _stored(tmp_path / "slow", jsonl)
    assert fast.num_rows == 600 and fast.equals(slow) and fast_totals == slow_totals


def test_credits_and_labels_first_seen_late_with_varying_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole batches without credits, labels or system labels (the columns are left out of those batches),
    then lists of every shape: empty, one entry, keys that vary from line to line, a null key's value."""
    rng = random.Random(4)
    lines = _export(tmp_path, n=500)
    for i, line in enumerate(lines):
        if i < 230:
            for key in ("credits", "labels", "system_labels"):
                line.pop(key, None)
        elif i % 4 == 0:
            line["labels"] = [
                {"key": f"k{rng.randrange(40)}", "value": rng.choice([*WORDS, None])} for _ in range(i % 5)
            ]
    jsonl = _write_jsonl(tmp_path / "export.jsonl", lines)
    monkeypatch.setattr(jsonl_reader, "JSON_BATCH_ROWS", 64)
    skips = _handovers(monkeypatch)
    fast, fast_totals = _stored(tmp_path / "fast", jsonl)
    assert skips == []  # DuckDB read all of it
    with monkeypatch.context() as m:
        m.setattr(GcpBilling, "nested", None)
        slow, slow_totals = _stored(tmp_path / "slow", jsonl)
    via_csv, csv_totals = _stored(tmp_path / "csv", _write_csv(tmp_path / "export.csv", lines))
    assert fast.equals(slow) and fast_totals == slow_totals
    assert fast.equals(via_csv) and fast_totals == csv_totals
    tags = fast["Tags"].to_pylist()
    assert tags[:230] == [None] * 230 and sum(t is not None and '"k' in t for t in tags) >= 40
    assert fast["BilledCost"].to_pylist() != fast["ListCost"].to_pylist()  # the late credits were counted


def test_a_bad_value_after_the_handover_names_its_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _export(tmp_path, edit={500: {"cost": "not money"}})
    jsonl = _write_jsonl(tmp_path / "export.jsonl", lines)
    monkeypatch.setattr(jsonl_reader, "JSON_BATCH_ROWS", 50)
    store = Store(tmp_path / "store")
    with pytest.raises(InputError, match=r"row 501, column 'cost'"):  # data row 501 (the blank line is no row)
        ingest_billing([jsonl], "gcp", store)
    assert not (store.root / "billing").exists()


def test_credit_sums_from_lists_equal_the_json_text_sums() -> None:
    rng = random.Random(3)
    rows = [
        [{"amount": rng.choice([None, -rng.uniform(0, 1e6), -0.1, -0.2])} for _ in range(rng.randrange(0, 4))]
        if rng.random() > 0.1
        else None
        for _ in range(3000)
    ]
    from finops_cli.ingest.billing.base import BatchContext
    from finops_cli.ingest.billing.gcp import _credit_sums

    ctx = BatchContext(Path("x.jsonl"), 1)
    typed = _credit_sums(pa.array(rows, pa.list_(pa.struct([("amount", pa.float64())]))), ctx)
    text = _credit_sums(pa.array([json.dumps(r) if r is not None else None for r in rows], pa.string()), ctx)
    assert pc.all(pc.equal(typed, text)).as_py()


# ---------------------------------------------------------------------------------------- DCGM scrapes
def _scrape_text(rng: random.Random, f: int, *, line_ts: bool = False) -> str:
    """A messy dcgm-exporter scrape: other metrics, comments, blank lines, missing and escaped labels,
    both utilisation metrics for some devices, a repeated sample, optional millisecond timestamps."""
    out = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge", ""]
    for host in range(3):
        for gpu in range(4):
            labels = [f'gpu="{gpu}"', f'modelName="NVIDIA {rng.choice(["H100 80GB HBM3", "A100-SXM4-80GB"])}"']
            if (host + gpu) % 3:
                labels.append(f'UUID="GPU-{host}-{gpu}"')
            if host != 2:
                labels.append(f'Hostname="node-{host}"')
            if gpu == 1:
                labels.append('pod="train \\"big\\" \\\\ run\\nx"')  # escaped quote, backslash, newline
            if gpu == 2:
                labels += ['team="research"', 'namespace="ignored"', 'resource_id="i-0abc"']
            text = "{" + ",".join(labels) + ("," if gpu == 3 else "") + "}"
            ts = f" {1793491200000 + f * 60000 + rng.randrange(0, 999)}" if line_ts else ""
            out.append(f"DCGM_FI_DEV_GPU_UTIL{text} {rng.randrange(0, 101)}{ts}")
            out.append(f"DCGM_FI_DEV_FB_USED{text} {rng.randrange(0, 80000)}")
            if gpu % 2 == 0:
                out.append(f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{text} {rng.random():.6f}{ts}")
            if gpu == 3:
                out.append(f"DCGM_FI_DEV_GPU_UTIL{text} {rng.randrange(0, 100)}.5{ts}")  # repeated: last wins
    out.append("go_goroutines 42")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("line_ts", [False, True])
def test_dcgm_vectorised_parse_gives_prometheus_clients_rows(line_ts: bool) -> None:
    from finops_cli.ingest.utilization.dcgm import parse_scrape, parse_scrapes, timestamp_from_name

    rng = random.Random(2)
    group = []
    for f in range(5):
        path = Path(f"scrape-2026-10-01T00-{f:02d}-00Z.prom")
        group.append((path, _scrape_text(rng, f, line_ts=line_ts), timestamp_from_name(path.name)))
    fast = parse_scrapes(group)
    assert fast is not None  # the messy but valid scrapes stay on the vectorised path
    expected: dict[str, list] = {}
    for path, text, ts in group:
        for k, v in parse_scrape(text, path, ts).items():
            expected.setdefault(k, []).extend(v)
    assert {k: v.to_pylist() for k, v in fast.items()} == expected
    assert any("\n" in (w or "") for w in expected["workload"]) and None in expected["host"]


@pytest.mark.parametrize(
    "line, says",
    [
        ('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 140', "expected a utilisation"),
        ('DCGM_FI_DEV_GPU_UTIL{gpu="0"} NaN', "expected a utilisation"),
        ('DCGM_FI_DEV_GPU_UTIL{gpu="0" 5', "not Prometheus text"),
        ('DCGM_FI_DEV_FB_USED{gpu="0"} lots', "not Prometheus text"),
        ('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 5 -99999999999999999', "expected Unix epoch seconds"),
    ],
)
def test_dcgm_problems_are_named_as_before(tmp_path: Path, line: str, says: str) -> None:
    """What the vectorised path does not vouch for goes to prometheus_client, which names it."""
    from finops_cli.ingest.utilization.dcgm import iter_dcgm

    rng = random.Random(4)
    d = tmp_path / "scrapes"
    d.mkdir()
    (d / "scrape-2026-10-01T00-00-00Z.prom").write_text(_scrape_text(rng, 0))
    (d / "scrape-2026-10-01T00-01-00Z.prom").write_text(_scrape_text(rng, 1) + line + "\n")
    with pytest.raises(InputError, match=says):
        list(iter_dcgm(d))


def test_a_counter_typed_utilisation_metric_is_left_to_prometheus_client() -> None:
    from finops_cli.ingest.utilization.dcgm import parse_scrape, parse_scrapes

    text = '# TYPE DCGM_FI_DEV_GPU_UTIL counter\nDCGM_FI_DEV_GPU_UTIL{UUID="a"} 5\n'
    path = Path("scrape-1793491200.prom")
    assert parse_scrapes([(path, text, 1793491200 * 10**9)]) is None
    assert parse_scrape(text, path, 1793491200 * 10**9)["device_id"] == []  # renamed *_total: not ours


def _prometheus_rows(d: Path) -> dict[str, list]:
    from finops_cli.ingest.utilization.dcgm import parse_scrape, scrape_files, timestamp_from_name

    expected: dict[str, list] = {}
    for path in scrape_files(d):
        for k, v in parse_scrape(path.read_text(), path, timestamp_from_name(path.name)).items():
            expected.setdefault(k, []).extend(v)
    return expected


def test_dcgm_groups_parsed_on_threads_come_in_file_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many small groups on two parser threads, CRLF files and indented lines among them (lines that need
    trimming): the rows prometheus_client gives file by file, in file order, and at most two groups parsed
    at once."""
    from finops_cli.ingest.utilization import dcgm

    rng = random.Random(6)
    d = tmp_path / "scrapes"
    d.mkdir()
    for f in range(12):
        text = _scrape_text(rng, f)
        if f % 4 == 1:
            text = text.replace("\n", "\r\n")
        if f % 4 == 2:
            text = "\n".join(("  " + line + " \t") if line.startswith("DCGM") else line for line in text.split("\n"))
        (d / f"scrape-2026-10-01T00-{f:02d}-00Z.prom").write_bytes(text.encode())
    monkeypatch.setattr(dcgm, "_GROUP_CHARS", 3000)  # a group per file or two
    running, most = 0, 0
    parse = dcgm.parse_scrapes

    def counted(group: list) -> object:
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            return parse(group)
        finally:
            running -= 1

    monkeypatch.setattr(dcgm, "parse_scrapes", counted)
    batches = list(dcgm.iter_dcgm(d))
    assert len(batches) >= 6 and most <= 2
    got: dict[str, list] = {}
    for b in batches:
        for k, v in b.to_pydict().items():
            got.setdefault(k, []).extend(v)
    assert got == _prometheus_rows(d)


def test_dcgm_whitespace_edged_lines_stay_on_the_vectorised_path() -> None:
    from finops_cli.ingest.utilization.dcgm import parse_scrape, parse_scrapes

    rng = random.Random(8)
    text = _scrape_text(rng, 0).replace("\n", "\r\n")
    path = Path("scrape-2026-10-01T00-00-00Z.prom")
    fast = parse_scrapes([(path, text.encode(), 1793491200 * 10**9)])
    assert fast is not None
    assert {k: v.to_pylist() for k, v in fast.items()} == parse_scrape(text, path, 1793491200 * 10**9)


def test_dcgm_bad_utf8_and_an_unreadable_file_are_named_in_file_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first bad file in name order is the one named, whichever parser thread or read comes first."""
    from finops_cli.ingest.utilization import dcgm

    rng = random.Random(9)
    d = tmp_path / "scrapes"
    d.mkdir()
    for f in range(6):
        (d / f"scrape-2026-10-01T00-{f:02d}-00Z.prom").write_text(_scrape_text(rng, f))
    (d / "scrape-2026-10-01T00-02-00Z.prom").write_bytes(
        _scrape_text(rng, 2).encode() + b'DCGM_FI_DEV_GPU_UTIL{gpu="\xff"} 5\n'
    )
    (d / "scrape-2026-10-01T00-04-00Z.prom.gz").write_bytes(b"not gzip at all")
    monkeypatch.setattr(dcgm, "_GROUP_CHARS", 3000)
    with pytest.raises(InputError, match=r"00-02-00Z\.prom: not UTF-8 text \(byte \d+\)"):
        list(dcgm.iter_dcgm(d))
    (d / "scrape-2026-10-01T00-02-00Z.prom").write_text(_scrape_text(rng, 2))
    with pytest.raises(InputError, match=r"00-04-00Z\.prom\.gz: cannot read"):
        list(dcgm.iter_dcgm(d))


def test_a_conversion_error_on_the_read_ahead_thread_names_its_row_and_stops_the_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The format's conversion runs a batch ahead on a thread: its error still names the row, comes after
    the batches before it were written, leaves the store untouched and no reading thread behind."""
    import threading

    lines = _export(tmp_path, edit={500: {"usage_start_time": "not a time"}})
    jsonl = _write_jsonl(tmp_path / "export.jsonl", lines)
    monkeypatch.setattr(jsonl_reader, "JSON_BATCH_ROWS", 50)
    store = Store(tmp_path / "store")
    with pytest.raises(InputError, match=r"row 501, column 'usage_start_time'"):
        ingest_billing([jsonl], "gcp", store)
    assert not (store.root / "billing").exists()
    assert not [t for t in threading.enumerate() if t.name.startswith("read-ahead") and t.is_alive()]
