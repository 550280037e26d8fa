"""Users' bad input, end to end through the CLI: exit code 2 and one clear line, never a traceback.

Every command is attacked the way a careless or hostile user would: missing files, a directory where a
file belongs (and the reverse), empty files, binary garbage, truncated gzip/JSON/YAML, wrong ``--format``,
renamed columns, non-numbers, NaN/inf/negatives, bad dates, YAML of the wrong shape, unknown keys, plans
of the wrong schema or currency, a ``--store``/``--out`` that cannot be written, bad option values. Each
case asserts the exit code (3 only for "no compliant destination", 1 only for a failed gate), that the
one ``error:`` line names the file and the row/column/field, that ``result.exception`` is the
``SystemExit`` of a handled error, and that the store, the ``--out`` directory and every input file are
byte-for-byte as they were (DESIGN §3 and §6).
"""

from __future__ import annotations

import copy
import csv
import gzip
import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.csv
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.store import Store
from tests.store_files import newest_log, to_legacy

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
GOLDEN_PLAN = REPO / "tests" / "report" / "golden" / "sample-plan.json"
ENV = {"NO_COLOR": "1", "COLUMNS": "200", "FINOPS_STORE": ""}


# --- inputs, written once per module -------------------------------------------------------------


def _write_csv(path: Path, rows: list[list[str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(path.read_text(encoding="utf-8").splitlines()))


def _edited(rows: list[list[str]], row: int, column: str, value: str) -> list[list[str]]:
    out = [list(r) for r in rows]
    out[row][rows[0].index(column)] = value
    return out


def _dump(path: Path, data: object) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _write_inputs(d: Path) -> None:
    """Every bad file the cases below point at (plus valid copies of the samples to edit)."""
    d.mkdir()
    (d / "empty.csv").write_bytes(b"")
    garbage = bytes(range(256))[::-1] * 8
    for name in ("garbage.csv", "garbage.json", "garbage.yaml"):
        (d / name).write_bytes(garbage)
    (d / "trunc.csv.gz").write_bytes((SAMPLES / "billing" / "aws-cur-2026-10.csv.gz").read_bytes()[:2000])
    (d / "notastore").mkdir()
    (d / "notastore" / "keep.txt").write_text("precious\n", encoding="utf-8")
    (d / "afile").write_text("a regular file\n", encoding="utf-8")

    # billing (FOCUS)
    focus = _rows(SAMPLES / "billing" / "focus-2026-10.csv")[:20]
    _write_csv(d / "focus_badnum.csv", _edited(focus, 5, "BilledCost", "abc"))
    _write_csv(d / "focus_inf.csv", _edited(focus, 5, "BilledCost", "inf"))
    _write_csv(d / "focus_baddate.csv", _edited(focus, 5, "ChargePeriodStart", "31/10/2026"))
    renamed = [list(r) for r in focus]
    renamed[0][renamed[0].index("BilledCost")] = "Billed_Cost"
    _write_csv(d / "focus_renamed.csv", renamed)
    _write_csv(d / "focus_header_only.csv", focus[:1])
    _write_csv(d / "focus_gpus.csv", _edited(focus, 7, "x_GpuCount", "1e40"))

    # utilisation (generic CSV)
    with gzip.open(SAMPLES / "utilization" / "gpu_util_hourly.csv.gz", "rt", encoding="utf-8") as fh:
        util = list(csv.reader(fh.readlines()[:30]))
    _write_csv(d / "util.csv", util)
    for name, value in (("badnum", "high"), ("neg", "-5"), ("nan", "nan"), ("250", "250")):
        _write_csv(d / f"util_{name}.csv", _edited(util, 3, "utilization", value))
    _write_csv(d / "util_baddate.csv", _edited(util, 3, "timestamp", "yesterday"))
    prom = {"metric": {"__name__": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "UUID": "GPU-1", "Hostname": "h"}}
    prom["values"] = [["inf", "0.5"], [1793491200, "0.4"]]
    (d / "prom_labels.json").write_text(
        json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {"gpu": [0]}}]}})
    )
    (d / "prom_ts_inf.json").write_text(
        json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [prom]}})
    )
    scrape = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-1",Hostname="h"} NaN\n'
    (d / "scrape-2026-10-01T00-00-00Z.prom").write_text(scrape, encoding="utf-8")
    (d / "util_trunc.csv.gz").write_bytes(gzip.compress("\n".join(",".join(r) for r in util).encode())[:300])

    # spot prices
    spot = _rows(SAMPLES / "spot_prices" / "g6-spot-feed-2026-10.csv")[:3]
    _write_csv(d / "spot_badnum.csv", _edited(spot, 1, "SpotPrice", "cheap"))
    _write_csv(d / "spot_neg.csv", _edited(spot, 1, "SpotPrice", "-1"))
    _write_csv(d / "spot_inf.csv", _edited(spot, 1, "SpotPrice", "inf"))
    _write_csv(d / "spot_baddate.csv", _edited(spot, 1, "Timestamp", "last tuesday"))
    renamed = [list(r) for r in spot]
    renamed[0][renamed[0].index("SpotPrice")] = "Price"
    _write_csv(d / "spot_renamed.csv", renamed)
    (d / "spot_trunc.json").write_text('{"SpotPriceHistory": [\n', encoding="utf-8")
    record = {"Timestamp": "2026-10-01T00:00:00Z", "SpotPrice": "4.1", "InstanceType": "p5.48xlarge"}
    record["AvailabilityZone"] = ["us-east-1a"]
    (d / "spot_zone_list.json").write_text(json.dumps({"SpotPriceHistory": [record]}), encoding="utf-8")
    (d / "spot_shape.json").write_text('{"SpotPriceHistory": "nope"}', encoding="utf-8")

    # the estate: fleet.yaml / workloads.yaml and their demand profiles
    shutil.copytree(SAMPLES / "demand", d / "demand")
    fleet = yaml.safe_load((SAMPLES / "fleet.yaml").read_text(encoding="utf-8"))
    workloads = yaml.safe_load((SAMPLES / "workloads.yaml").read_text(encoding="utf-8"))
    _dump(d / "fleet.yaml", fleet)
    _dump(d / "workloads.yaml", workloads)
    (d / "list.yaml").write_text("- a\n- b\n", encoding="utf-8")
    (d / "scalar.yaml").write_text("just a string\n", encoding="utf-8")
    (d / "trunc.yaml").write_text("version: 1\ncurrency: USD\nsubstrates: [\n", encoding="utf-8")
    for name, edit in (
        ("unknown", lambda f: f.update(bogus_key=1)),
        ("wrongtype", lambda f: f["substrates"][0].update(gpus="lots")),
        ("inf", lambda f: f["substrates"][0].update(price_per_gpu_hour=float("inf"))),
        ("eur", lambda f: f.update(currency="EUR")),
    ):
        f = copy.deepcopy(fleet)
        edit(f)
        _dump(d / f"fleet_{name}.yaml", f)
    (d / "prof_bad.csv").write_text("hour,units\n2026-10-01T00:00:00Z,abc\n", encoding="utf-8")
    (d / "prof_inf.csv").write_text("hour,units\n2026-10-01T00:00:00Z,inf\n", encoding="utf-8")
    for name, edit in (
        ("inf", lambda w: w["workloads"][0].update(demand={"total": float("inf")})),
        ("unknown", lambda w: w["workloads"][0].update(surprise=1)),
        ("profile", lambda w: w["workloads"][4].update(demand={"profile": "prof_bad.csv"})),
        ("profile_inf", lambda w: w["workloads"][4].update(demand={"profile": "prof_inf.csv"})),
        ("nodest", lambda w: w["workloads"][0].update(requires={"jurisdictions": ["XX"]})),
    ):
        w = copy.deepcopy(workloads)
        edit(w)
        _dump(d / f"wl_{name}.yaml", w)

    # plan documents
    plan = json.loads(GOLDEN_PLAN.read_text(encoding="utf-8"))
    (d / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    (d / "plan_trunc.json").write_text(json.dumps(plan)[:500], encoding="utf-8")
    (d / "plan_list.json").write_text("[1, 2]", encoding="utf-8")
    for name, edit in (
        ("v99", lambda p: p.update(schema_version=99)),
        ("nototals", lambda p: p.pop("totals")),
        ("eur", lambda p: p.update(currency="EUR")),
        ("nan", lambda p: p["totals"].update(planned_cost=float("nan"))),
        ("netc_dict", lambda p: p["allocations"][0].update(netc_overhead={"a": 1})),
    ):
        p = copy.deepcopy(plan)
        edit(p)
        (d / f"plan_{name}.json").write_text(json.dumps(p), encoding="utf-8")

    _write_issue12_inputs(d, focus, spot)

    # simulators
    (d / "trace.csv").write_text("timestamp,workload,units\n2026-10-01T00:00:00Z,chat-serving,4\n", encoding="utf-8")
    (d / "trace_badnum.csv").write_text("timestamp,workload,units\n2026-10-01T00:00:00Z,chat-serving,abc\n")
    (d / "trace_unknown.csv").write_text("timestamp,workload,units\n2026-10-01T00:00:00Z,nope,1\n")
    _dump(d / "ev_badtype.yaml", [{"type": "outage", "substrate": "frontier-api", "start": "soon"}])
    _dump(d / "ev_nanend.yaml", [{"type": "outage", "substrate": "frontier-api", "start": 5, "end": float("nan")}])
    _dump(d / "ev_unknown_sub.yaml", [{"type": "outage", "substrate": "no-such", "start": 1}])
    scenario = yaml.safe_load((SAMPLES / "market" / "laissezcloud_two_tenants.yaml").read_text(encoding="utf-8"))
    s = copy.deepcopy(scenario)
    s["tenants"][1]["execution_hours"] = {"H100": 1.0}  # every accelerator this tenant can use is missing
    _dump(d / "mkt_noacc.yaml", s)
    s = copy.deepcopy(scenario)
    s["tenants"][1]["execution_hours"] = {"A10": "slow"}
    _dump(d / "mkt_badtype.yaml", s)


#: limits lowered for this module (the readers read them at call time), so each bomb is a few MB
BOMB_LIMIT = 2 << 20


@pytest.fixture(autouse=True)
def _small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    from finops_cli import files
    from finops_cli.ingest import readers

    monkeypatch.setattr(readers, "MAX_LINE_BYTES", BOMB_LIMIT)
    monkeypatch.setattr(files, "MAX_TEXT_BYTES", BOMB_LIMIT)


def _write_issue12_inputs(d: Path, focus: list[list[str]], spot: list[list[str]]) -> None:
    """Issue 12: a bomb for every reader, and the inputs that used to end in a traceback."""
    big = BOMB_LIMIT + 1024
    (d / "bomb_header.csv.gz").write_bytes(gzip.compress(b"BilledCost," * (big // 11)))
    gcp_head = json.dumps(
        {
            "billing_account_id": "a",
            "cost": 1.0,
            "currency": "USD",
            "usage_start_time": "2026-10-01T00:00:00Z",
            "sku": {"description": "x"},
        }
    )
    # DuckDB's JSON reader holds lines up to its 16 MiB buffer whatever the limit; a longer one goes to the
    # Python decoder, which names it: 40 MiB of "a" (40 kB of gzip) is past both
    giant = "a" * max(big, 40 << 20)
    (d / "bomb_line.jsonl.gz").write_bytes(gzip.compress((gcp_head + '\n{"x": "' + giant + '"}\n').encode()))
    (d / "bomb_util.csv.gz").write_bytes(gzip.compress(b"timestamp," * (big // 10)))
    whole = b'{"data": {"resultType": "matrix", "result": [' + b" " * big + b"]}}"
    (d / "bomb_prom.json.gz").write_bytes(gzip.compress(whole))
    (d / "bomb_spot.json.gz").write_bytes(gzip.compress(b'{"SpotPriceHistory": [' + b" " * big + b"]}"))
    laughs = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    (d / "laughs.yaml").write_text(laughs, encoding="utf-8")
    (d / "deep.yaml").write_text("version: 1\nx: " + "[" * 3000 + "]" * 3000 + "\n", encoding="utf-8")
    plan = json.loads(GOLDEN_PLAN.read_text(encoding="utf-8"))
    (d / "plan_deep.json").write_text(json.dumps(plan)[:-1] + ', "x": ' + "[" * 3000 + "]" * 3000 + "}")
    (d / "plan_digits.json").write_text(
        json.dumps(plan).replace('"planned_cost": ', '"planned_cost": ' + "9" * 5000 + ', "_": ', 1)
    )
    workloads = yaml.safe_load((SAMPLES / "workloads.yaml").read_text(encoding="utf-8"))
    workloads["workloads"][4]["demand"] = {"profile": "/dev/zero"}
    _dump(d / "wl_devzero.yaml", workloads)

    # tracebacks that remained
    header = focus[0]
    _write_csv(d / "focus_twice.csv", [header + header] + [r + r for r in focus[1:5]])
    _write_csv(d / "focus_provider300.csv", _edited(focus, 3, "ProviderName", "Acme " + "x" * 300))
    _write_csv(d / "focus_feb30.csv", _edited(focus, 3, "ChargePeriodStart", "02/30/2026"))
    _write_csv(d / "focus_year0.csv", _edited(focus, 3, "ChargePeriodStart", "0000-10-01T00:00:00Z"))
    table = pa.csv.read_csv(
        d / "focus_feb30.csv", convert_options=pa.csv.ConvertOptions(column_types={c: pa.string() for c in header})
    )
    i = header.index("ChargePeriodStart")
    stamps = pa.array([-(2**62)] * table.num_rows, pa.timestamp("ns"))
    pq.write_table(table.set_column(i, "ChargePeriodStart", stamps), d / "focus_ts_min.parquet")
    with gzip.open(SAMPLES / "billing" / "aws-cur-2026-10.csv.gz", "rt", encoding="utf-8") as fh:
        cur = list(csv.reader(fh.readlines()[:10]))
    cost = cur[0].index("lineItem/UnblendedCost")
    _write_csv(d / "cur_dupcol.csv", [[*r, r[cost]] for r in cur])
    gcp = "billing_account_id,sku.description,usage_start_time,usage_end_time,cost,currency,credits,invoice.month\n"
    gcp += "01A2B3,L4 core,2026-10-01 00:00:00+00:00,2026-10-01 01:00:00+00:00,1.0,USD,[],202610\n"
    gcp += "01A2B3,L4 core,2026-10-01 00:00:00+00:00,2026-10-01 01:00:00+00:00,1.0,USD,[],999912\n"
    (d / "gcp_month.csv").write_text(gcp, encoding="utf-8")
    (d / "spot_badutf8.csv").write_bytes(
        ("\n".join(",".join(r) for r in spot) + "\n").encode().replace(b"\n", b"\n\xff\xfe", 1)
    )
    _write_csv(d / "spot_header_only.csv", spot[:1])
    (d / "loop").symlink_to(d / "loop")
    # item 11: currencies are ISO 4217 codes at every boundary
    fleet = yaml.safe_load((SAMPLES / "fleet.yaml").read_text(encoding="utf-8"))
    _dump(d / "fleet_cur_html.yaml", {**fleet, "currency": "<b>"})
    (d / "plan_cur_mention.json").write_text(json.dumps({**plan, "currency": "@ab"}), encoding="utf-8")
    _write_csv(d / "focus_cur_html.csv", _edited(focus, 4, "BillingCurrency", "<b>"))


def _lock_is_a_directory(store: Path) -> None:
    (store / ".lock").unlink(missing_ok=True)
    (store / ".lock").mkdir()


def _journal_outside(store: Path) -> None:
    to_legacy(store)  # journals exist only in stores written before the log
    plan = {"deletes": ["../../../../../../../../etc/passwd-never"], "moves": [], "staging": ".staging/tx"}
    (store / ".journal-tx.json").write_text(json.dumps(plan), encoding="utf-8")


def _journal_pending(store: Path) -> None:
    to_legacy(store)
    plan = {"deletes": [], "moves": [], "staging": ".staging/tx"}
    (store / ".journal-tx.json").write_text(json.dumps(plan), encoding="utf-8")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real store (FOCUS billing, AWS spot history, 30 utilisation samples) and the bad inputs."""
    root = tmp_path_factory.mktemp("bad-input")
    _write_inputs(root / "in")
    store = api.open_store(root / "store")
    api.ingest_billing([SAMPLES / "billing" / "focus-2026-10.csv"], store=store)
    api.ingest_spot_prices(store=store, files=[SAMPLES / "spot_prices" / "aws-spot-history-2026-10.json"])
    api.ingest_utilization([root / "in" / "util.csv"], store=store)
    return root


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
    }


# --- the table -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    says: tuple[str, ...]  # substrings of the error line ({I} inputs, {O} out dir, {S} store, {SAMP} samples)
    code: int = 2
    usage: bool = False  # a click usage error (boxed by rich) rather than an ``error:`` line
    damage: Callable[[Path], None] | None = None  # done to the store copy first (a damaged or foreign store)


def C(
    id: str, args: str, *says: str, code: int = 2, usage: bool = False, damage: Callable[[Path], None] | None = None
) -> Case:
    return Case(id, tuple(args.split()), says, code, usage, damage)


def _garbage_manifest(store: Path) -> None:
    newest_log(store).write_text("{not json", encoding="utf-8")


def _truncated_parquet(store: Path) -> None:
    st = Store(store)
    path = Path(st.locate(st.files("utilization")[0]))
    path.write_bytes(path.read_bytes()[:40])


S = "--store {S}"
FW = "--fleet {I}/fleet.yaml --workloads {I}/workloads.yaml"
CASES = [
    # ingest billing
    C("billing-missing", f"ingest billing {{I}}/nope.csv {S}", "{I}/nope.csv", "no such file"),
    C("billing-empty", f"ingest billing {{I}}/empty.csv {S}", "{I}/empty.csv", "empty"),
    C("billing-garbage", f"ingest billing {{I}}/garbage.csv {S}", "{I}/garbage.csv", "UTF-8"),
    C("billing-truncated-gzip", f"ingest billing {{I}}/trunc.csv.gz {S}", "{I}/trunc.csv.gz", "truncated gzip"),
    C(
        "billing-wrong-format",
        f"ingest billing {{SAMP}}/billing/focus-2026-10.csv --format aws-cur {S}",
        "focus-2026-10.csv",
        "lineItem/UnblendedCost",
    ),
    C("billing-unknown-format", f"ingest billing {{I}}/focus_badnum.csv --format xls {S}", "'xls'", "focus"),
    C("billing-renamed-column", f"ingest billing {{I}}/focus_renamed.csv --format focus {S}", "BilledCost"),
    C("billing-not-a-number", f"ingest billing {{I}}/focus_badnum.csv {S}", "row 5", "'BilledCost'", "'abc'"),
    C("billing-inf", f"ingest billing {{I}}/focus_inf.csv {S}", "row 5", "'BilledCost'", "finite"),
    C("billing-gpu-count", f"ingest billing {{I}}/focus_gpus.csv {S}", "row 7", "'x_GpuCount'", "whole number"),
    C("billing-bad-date", f"ingest billing {{I}}/focus_baddate.csv {S}", "'ChargePeriodStart'", "31/10/2026"),
    C("billing-header-only", f"ingest billing {{I}}/focus_header_only.csv {S}", "focus_header_only.csv", "no billing"),
    C("billing-empty-dir", f"ingest billing {{I}}/notastore {S}", "notastore", "no billing export"),
    C("billing-store-is-file", "ingest billing {I}/focus_badnum.csv --store {I}/afile", "{I}/afile", "--store"),
    C(
        "billing-out-under-file",
        f"ingest billing {{SAMP}}/billing/focus-2026-10.csv {S} --out {{I}}/afile/summary.txt",
        "{I}/afile/summary.txt",
        "not a directory",
    ),
    C(
        "billing-foreign-store",
        f"ingest billing {{SAMP}}/billing/focus-2026-10.csv {S}",
        "{S}/_log/",
        "unreadable store state",
        damage=_garbage_manifest,
    ),
    C("waste-damaged-store", f"waste {S}", "{S}/utilization/", "damaged store file", damage=_truncated_parquet),
    C(
        "billing-out-is-the-export",
        f"ingest billing {{I}}/focus_badnum.csv {S} --out {{I}}/focus_badnum.csv",
        "{I}/focus_badnum.csv",
        "input",
    ),
    # ingest utilization
    C("util-not-a-number", f"ingest utilization {{I}}/util_badnum.csv {S}", "row 3", "'utilization'", "'high'"),
    C("util-negative", f"ingest utilization {{I}}/util_neg.csv {S}", "row 3", "-5.0", "0–100"),
    C("util-nan", f"ingest utilization {{I}}/util_nan.csv {S}", "util_nan.csv", "row 3", "0–100"),
    C("util-above-100", f"ingest utilization {{I}}/util_250.csv {S}", "row 3", "250.0"),
    C("util-bad-date", f"ingest utilization {{I}}/util_baddate.csv {S}", "'timestamp'", "yesterday"),
    C("util-truncated-gzip", f"ingest utilization {{I}}/util_trunc.csv.gz {S}", "util_trunc.csv.gz", "gzip"),
    C("util-unknown-column", f"ingest utilization {{I}}/util.csv --util-col nope {S}", "--util-col 'nope'"),
    C("util-bad-scale", f"ingest utilization {{I}}/util.csv --util-scale 7 {S}", "--util-scale", "1 or 100"),
    C("util-wrong-format", f"ingest utilization {{I}}/util.csv --format dcgm {S}", "{I}/util.csv", "Prometheus"),
    C("util-prometheus-bad-labels", f"ingest utilization {{I}}/prom_labels.json {S}", "data.result[0]", "label"),
    C("util-prometheus-time-inf", f"ingest utilization {{I}}/prom_ts_inf.json {S}", "data.result[0]", "epoch"),
    C(
        "util-dcgm-nan",
        f"ingest utilization {{I}}/scrape-2026-10-01T00-00-00Z.prom {S}",
        "scrape-2026-10-01T00-00-00Z.prom",
        "GPU-1",
        "nan",
    ),
    C("util-store-is-file", "ingest utilization {I}/util.csv --store {I}/afile", "{I}/afile", "directory"),
    # ingest spot-prices
    C("spot-missing", f"ingest spot-prices --file {{I}}/nope.json {S}", "{I}/nope.json", "no such file"),
    C("spot-directory", f"ingest spot-prices --file {{I}}/notastore {S}", "{I}/notastore", "is a directory"),
    C("spot-truncated-json", f"ingest spot-prices --file {{I}}/spot_trunc.json {S}", "spot_trunc.json", "line 2"),
    C(
        "spot-wrong-shape",
        f"ingest spot-prices --file {{I}}/spot_shape.json {S}",
        "spot_shape.json",
        "SpotPriceHistory",
    ),
    C(
        "spot-zone-is-a-list",
        f"ingest spot-prices --file {{I}}/spot_zone_list.json {S}",
        "SpotPriceHistory[0]",
        "AvailabilityZone",
    ),
    C("spot-not-a-number", f"ingest spot-prices --file {{I}}/spot_badnum.csv {S}", "row 1", "'cheap'"),
    C("spot-negative", f"ingest spot-prices --file {{I}}/spot_neg.csv {S}", "row 1", "non-negative"),
    C("spot-inf", f"ingest spot-prices --file {{I}}/spot_inf.csv {S}", "row 1", "SpotPrice 'inf'"),
    C("spot-bad-date", f"ingest spot-prices --file {{I}}/spot_baddate.csv {S}", "Timestamp", "last tuesday"),
    C("spot-renamed-column", f"ingest spot-prices --file {{I}}/spot_renamed.csv {S}", "spot_renamed.csv", "SpotPrice"),
    C("spot-nothing", f"ingest spot-prices {S}", "nothing to ingest"),
    C("spot-store-is-file", "ingest spot-prices --file {I}/spot_neg.csv --store {I}/afile", "{I}/afile", "--store"),
    # validate
    C("validate-fleet-list", "validate --fleet {I}/list.yaml", "{I}/list.yaml", "mapping"),
    C("validate-fleet-scalar", "validate --fleet {I}/scalar.yaml", "{I}/scalar.yaml", "mapping"),
    C("validate-fleet-garbage", "validate --fleet {I}/garbage.yaml", "{I}/garbage.yaml", "UTF-8"),
    C("validate-fleet-truncated", "validate --fleet {I}/trunc.yaml", "{I}/trunc.yaml", "line 4"),
    C("validate-fleet-unknown-key", "validate --fleet {I}/fleet_unknown.yaml", "fleet_unknown.yaml", "bogus_key"),
    C("validate-fleet-wrong-type", "validate --fleet {I}/fleet_wrongtype.yaml", "substrates[0].gpus", "number"),
    C("validate-fleet-inf", "validate --fleet {I}/fleet_inf.yaml", "substrates[0].price_per_gpu_hour", "finite"),
    C("validate-fleet-directory", "validate --fleet {I}/notastore", "{I}/notastore", "is a directory"),
    C("validate-fleet-missing", "validate --fleet {I}/nope.yaml", "{I}/nope.yaml", "not found"),
    C(
        "validate-workloads-inf",
        "validate --fleet {I}/fleet.yaml --workloads {I}/wl_inf.yaml",
        "wl_inf.yaml",
        "workloads[0].demand.total",
        "finite",
    ),
    C("validate-workloads-unknown", "validate --fleet {I}/fleet.yaml --workloads {I}/wl_unknown.yaml", "surprise"),
    C(
        "validate-profile-not-a-number",
        "validate --fleet {I}/fleet.yaml --workloads {I}/wl_profile.yaml",
        "prof_bad.csv",
        "line 2",
        "units",
    ),
    C(
        "plan-profile-inf",
        f"plan --fleet {{I}}/fleet.yaml --workloads {{I}}/wl_profile_inf.yaml {S}",
        "prof_inf.csv",
        "line 2",
        "'inf'",
    ),
    C(
        "validate-no-compliant-destination",
        "validate --fleet {I}/fleet.yaml --workloads {I}/wl_nodest.yaml",
        "pretrain-70b",
        "no compliant destination",
        code=3,
    ),
    # stack / netc
    C("stack-bad-mode", f"stack {FW} --mode nope {S}", "--mode", "nope", usage=True),
    C("stack-bad-horizon", f"stack {FW} --horizon garbage {S}", "horizon 'garbage'", "YYYY-MM"),
    C("stack-unknown-workload", f"stack {FW} --workload nope {S}", "--workload 'nope'", "workloads.yaml"),
    C("stack-chart-under-file", f"stack {FW} --chart {{I}}/afile/c.png {S}", "{I}/afile/c.png", "not a directory"),
    C("stack-out-is-dir", f"stack {FW} --out {{O}} {S}", "{O}", "is a directory"),
    C(
        "netc-garbage-trace",
        f"netc {FW} --trace {{I}}/garbage.json --substrate aws-p5-spot-use1 {S}",
        "{I}/garbage.json",
    ),
    C("netc-trace-which-pool", f"netc {FW} --trace {{I}}/garbage.json {S}", "3 spot substrates", "--substrate"),
    C("netc-unknown-substrate", f"netc {FW} --substrate nope {S}", "--substrate 'nope'"),
    # plan
    C("plan-blocks-0", f"plan {FW} {S} --blocks 0", "--blocks", usage=True),
    C("plan-gap-2", f"plan {FW} {S} --gap 2", "--gap 2.0", "[0, 1)"),
    C("plan-time-limit-negative", f"plan {FW} {S} --time-limit -1", "--time-limit -1.0", "> 0"),
    C("plan-time-limit-nan", f"plan {FW} {S} --time-limit nan", "--time-limit nan", "> 0"),
    C("plan-horizon-year-9999", f"plan {FW} {S} --horizon 9999-12", "horizon '9999-12'", "YYYY-MM"),
    C("plan-horizon-garbage", f"plan {FW} {S} --horizon garbage", "horizon 'garbage'"),
    C("plan-out-under-file", f"plan {FW} {S} --out {{I}}/afile/plan.json", "{I}/afile/plan.json", "not a directory"),
    C("plan-store-is-file", f"plan {FW} --store {{I}}/afile", "{I}/afile", "--store"),
    C(
        "plan-fleet-other-currency",
        f"plan --fleet {{I}}/fleet_eur.yaml --workloads {{I}}/workloads.yaml {S}",
        "USD",
        "EUR",
    ),
    C(
        "plan-no-compliant-destination",
        f"plan --fleet {{I}}/fleet.yaml --workloads {{I}}/wl_nodest.yaml {S}",
        "pretrain-70b",
        code=3,
    ),
    # report
    C("report-plan-not-json", f"report --plan {{I}}/garbage.json {S} --out {{O}}/r.md", "{I}/garbage.json"),
    C("report-plan-truncated", f"report --plan {{I}}/plan_trunc.json {S} --out {{O}}/r.md", "plan_trunc.json", "JSON"),
    C("report-plan-v99", f"report --plan {{I}}/plan_v99.json {S} --out {{O}}/r.md", "plan_v99.json", "schema_version"),
    C("report-plan-no-totals", f"report --plan {{I}}/plan_nototals.json {S} --out {{O}}/r.md", "totals"),
    C(
        "report-plan-other-currency",
        f"report --plan {{I}}/plan_eur.json {FW} {S} --out {{O}}/r.md",
        "{I}/plan_eur.json",
        "currency",
        "EUR",
    ),
    C(
        "report-fleet-is-a-list",
        f"report --plan {{I}}/plan.json --fleet {{I}}/list.yaml --workloads {{I}}/workloads.yaml {S} --out {{O}}/r.md",
        "{I}/list.yaml",
        "mapping",
    ),
    C(
        "report-plan-bad-extra",
        f"report --plan {{I}}/plan_netc_dict.json {S} --format json",
        "plan_netc_dict.json",
        "allocations.0.netc_overhead",
    ),
    C("report-out-is-the-plan", f"report --plan {{I}}/plan.json {S} --out {{I}}/plan.json", "--out", "input"),
    C("report-out-is-dir", f"report --plan {{I}}/plan.json {S} --out {{O}}", "{O}", "is a directory"),
    # gate
    C("gate-plan-nan", "gate --plan {I}/plan_nan.json", "plan_nan.json", "totals.planned_cost", "finite"),
    C("gate-plan-list", "gate --plan {I}/plan_list.json", "plan_list.json", "JSON object"),
    C("gate-plan-directory", "gate --plan {I}/notastore", "{I}/notastore"),
    C("gate-baseline-currency", "gate --plan {I}/plan.json --baseline {I}/plan_eur.json", "currency", "EUR"),
    C("gate-budget-nan", "gate --plan {I}/plan.json --budget nan", "--budget", "finite"),
    C("gate-spot-share-2", "gate --plan {I}/plan.json --max-spot-share 2", "--max-spot-share", "between 0 and 1"),
    C("gate-out-under-file", "gate --plan {I}/plan.json --out {I}/afile/g.txt", "{I}/afile/g.txt"),
    C("gate-out-is-the-plan", "gate --plan {I}/plan.json --out {I}/plan.json", "{I}/plan.json", "input"),
    C("gate-fails", "gate --plan {I}/plan.json --budget 1", "FAILED", "budget", code=1),
    # simulate
    C("dispatch-trace-not-a-number", f"simulate dispatch {FW} {S} --trace {{I}}/trace_badnum.csv", "units"),
    C(
        "dispatch-trace-unknown-workload",
        f"simulate dispatch {FW} {S} --trace {{I}}/trace_unknown.csv",
        "trace_unknown.csv",
        "line 2",
        "'nope'",
    ),
    C(
        "dispatch-events-bad-type",
        f"simulate dispatch {FW} {S} --trace {{I}}/trace.csv --events {{I}}/ev_badtype.yaml",
        "ev_badtype.yaml",
        "events[0].start",
    ),
    C(
        "dispatch-events-nan-end",
        f"simulate dispatch {FW} {S} --trace {{I}}/trace.csv --events {{I}}/ev_nanend.yaml",
        "events[0].end",
        "finite",
    ),
    C(
        "dispatch-events-unknown-substrate",
        f"simulate dispatch {FW} {S} --trace {{I}}/trace.csv --events {{I}}/ev_unknown_sub.yaml",
        "events[0].substrate",
        "no-such",
    ),
    C("dispatch-negative-seed", f"simulate dispatch {FW} {S} --generate --requests 10 --seed -1", "--seed -1"),
    C("dispatch-absurd-requests", f"simulate dispatch {FW} {S} --generate --requests 10000000000000", "--requests"),
    C("dispatch-absurd-horizon", f"simulate dispatch {FW} {S} --generate --horizon 2026-10-01:99999999999", "HOURS"),
    C("dispatch-window-nan", f"simulate dispatch {FW} {S} --trace {{I}}/trace.csv --window-hours nan", "--window"),
    C(
        "market-tenant-without-accelerator",
        "simulate market --scenario {I}/mkt_noacc.yaml",
        "mkt_noacc.yaml",
        "tenants[1].execution_hours.H100",
    ),
    C("market-bad-type", "simulate market --scenario {I}/mkt_badtype.yaml", "tenants[1].execution_hours.A10"),
    C("market-scenario-list", "simulate market --scenario {I}/list.yaml", "{I}/list.yaml", "mapping"),
    C("market-bad-policy", "simulate market --scenario {I}/mkt_badtype.yaml --policy nope", "--policy", usage=True),
    # prices / waste / demo
    C("prices-bad-since", f"prices --since garbage {S}", "--since 'garbage'", "ISO-8601"),
    C("prices-out-under-file", f"prices {S} --out {{I}}/afile/p.txt", "{I}/afile/p.txt", "not a directory"),
    C("waste-bad-month", f"waste --month oct {S}", "--month 'oct'", "YYYY-MM"),
    C("waste-negative-price", f"waste --price-per-gpu-hour -1 {S}", "--price-per-gpu-hour", usage=True),
    C("waste-fleet-garbage", f"waste --fleet {{I}}/garbage.yaml {S}", "{I}/garbage.yaml", "UTF-8"),
    C("waste-fleet-other-currency", f"waste --fleet {{I}}/fleet_eur.yaml {S}", "currency", "EUR", "USD"),
    C(
        "demo-keep-store-not-a-store",
        "demo --samples {SAMP} --out {O}/demo --keep-store {I}/notastore",
        "{I}/notastore",
        "not a finops store",
    ),
    C("demo-out-under-file", "demo --samples {SAMP} --out {I}/afile/demo", "{I}/afile/demo", "not a directory"),
]


CASES += [
    # issue 12: bombs for every reader (limits lowered to BOMB_LIMIT for this module)
    C(
        "bomb-billing-header",
        f"ingest billing {{I}}/bomb_header.csv.gz {S}",
        "bomb_header.csv.gz",
        "header line longer",
    ),
    C(
        "bomb-billing-jsonl-line",
        f"ingest billing {{I}}/bomb_line.jsonl.gz --format gcp {S}",
        "bomb_line.jsonl.gz",
        "longer than",
    ),
    C("bomb-util-header", f"ingest utilization {{I}}/bomb_util.csv.gz {S}", "bomb_util.csv.gz", "longer than"),
    C("bomb-prometheus", f"ingest utilization {{I}}/bomb_prom.json.gz {S}", "bomb_prom.json.gz", "decompressed"),
    C("bomb-spot-json", f"ingest spot-prices --file {{I}}/bomb_spot.json.gz {S}", "bomb_spot.json.gz", "decompressed"),
    C(
        "bomb-profile-dev-zero",
        "validate --fleet {I}/fleet.yaml --workloads {I}/wl_devzero.yaml",
        "/dev/zero",
        "larger",
    ),
    C("bomb-plan-dev-zero", "gate --plan /dev/zero", "/dev/zero", "larger"),
    C("bomb-yaml-laughs", "validate --fleet {I}/laughs.yaml", "{I}/laughs.yaml", "expands to more than"),
    C("deep-yaml", "validate --fleet {I}/deep.yaml", "{I}/deep.yaml", "nested"),
    C("deep-plan-json", "gate --plan {I}/plan_deep.json", "plan_deep.json", "nested"),
    C("plan-5000-digits", "gate --plan {I}/plan_digits.json", "plan_digits.json", "digits"),
    # issue 12: tracebacks that remained
    C("billing-every-column-twice", f"ingest billing {{I}}/focus_twice.csv {S}", "focus_twice.csv", "more than once"),
    C(
        "billing-cur-duplicate-column",
        f"ingest billing {{I}}/cur_dupcol.csv {S}",
        "lineItem/UnblendedCost",
        "more than once",
    ),
    C("billing-provider-300", f"ingest billing {{I}}/focus_provider300.csv {S}", "row 3", "ProviderName of more than"),
    C("billing-feb-30", f"ingest billing {{I}}/focus_feb30.csv {S}", "row 3", "'ChargePeriodStart'", "02/30/2026"),
    C("billing-year-0", f"ingest billing {{I}}/focus_year0.csv {S}", "row 3", "outside 1970"),
    C("billing-parquet-ts-min", f"ingest billing {{I}}/focus_ts_min.parquet {S}", "focus_ts_min.parquet", "1970"),
    C("billing-gcp-month-999912", f"ingest billing {{I}}/gcp_month.csv {S}", "row 2", "'invoice.month'", "999912"),
    C("spot-invalid-utf8", f"ingest spot-prices --file {{I}}/spot_badutf8.csv {S}", "spot_badutf8.csv", "UTF-8"),
    C(
        "spot-header-only",
        f"ingest spot-prices --file {{I}}/spot_header_only.csv {S}",
        "spot_header_only.csv",
        "no spot prices",
    ),
    C("billing-symlink-loop", f"ingest billing {{I}}/loop {S}", "{I}/loop"),
    C("billing-store-symlink-loop", "ingest billing {I}/focus_badnum.csv --store {I}/loop", "{I}/loop"),
    C(
        "billing-lock-is-a-directory",
        f"ingest billing {{SAMP}}/billing/focus-2026-10.csv {S}",
        ".lock",
        damage=_lock_is_a_directory,
    ),
    C(
        "billing-journal-outside",
        f"ingest billing {{SAMP}}/billing/focus-2026-10.csv {S}",
        ".journal-tx.json",
        "outside",
        damage=_journal_outside,
    ),
    C("fleet-currency-html", "validate --fleet {I}/fleet_cur_html.yaml", "fleet_cur_html.yaml", "ISO 4217"),
    C("gate-plan-currency-mention", "gate --plan {I}/plan_cur_mention.json", "plan_cur_mention.json", "ISO 4217"),
    C("billing-currency-html", f"ingest billing {{I}}/focus_cur_html.csv {S}", "row 4", "ISO 4217"),
    C("waste-journal-pending", f"waste {S}", "{S}", "interrupted while committing", damage=_journal_pending),
]


def _invoke(args: list[str]):
    return CliRunner().invoke(app, args, env=ENV)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_clear_line_and_changes_nothing(case: Case, base: Path, tmp_path: Path) -> None:
    store, out = tmp_path / "store", tmp_path / "out"
    shutil.copytree(base / "store", store)
    out.mkdir()
    if case.damage is not None:
        case.damage(store)
    ctx = {"S": str(store), "O": str(out), "I": str(base / "in"), "SAMP": str(SAMPLES)}
    before = {root: _snapshot(root) for root in (store, out, base / "in")}

    result = _invoke([a.format(**ctx) for a in case.args])

    stderr = result.stderr
    assert result.exit_code == case.code, stderr
    assert isinstance(result.exception, SystemExit), f"unhandled {result.exception!r}"
    assert "Traceback" not in result.output + stderr
    if case.usage:
        assert "Invalid value" in stderr
        lines = [" ".join(stderr.split())]
    else:
        lines = [line for line in stderr.splitlines() if line.startswith("error:")]
        assert len(lines) == 1, stderr  # one line, not a cascade
    for needle in case.says:
        assert needle.format(**ctx) in lines[0], lines[0]
    for root, snap in before.items():
        assert _snapshot(root) == snap, f"{root} changed"


# --- random garbage never gets a traceback ---------------------------------------------------------

_FLEET = yaml.safe_load((SAMPLES / "fleet.yaml").read_text(encoding="utf-8"))
_PLAN = json.loads(GOLDEN_PLAN.read_text(encoding="utf-8"))
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _leaves(doc: object, path: tuple = ()) -> list[tuple]:
    if isinstance(doc, dict):
        return [path] + [p for k, v in doc.items() for p in _leaves(v, (*path, k))]
    if isinstance(doc, list):
        return [path] + [p for i, v in enumerate(doc) for p in _leaves(v, (*path, i))]
    return [path]


def _replace(doc: object, path: tuple, value: object) -> object:
    if not path:
        return value
    doc = copy.deepcopy(doc)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


_FLEET_PATHS, _PLAN_PATHS = _leaves(_FLEET), _leaves(_PLAN)


def _yaml_text(doc: object) -> str:
    return yaml.safe_dump(doc, allow_unicode=True)


@pytest.mark.parametrize("data", [b"\x00", b"version: 1\x07\n", b"\x1bsubstrates: []"])
def test_control_characters_in_yaml_are_bad_input(data: bytes, tmp_path: Path) -> None:
    """PyYAML's reader refuses control characters while the loader is built: that is exit 2, not 70."""
    path = tmp_path / "fleet.yaml"
    path.write_bytes(data)
    result = _invoke(["validate", "--fleet", str(path)])
    assert result.exit_code == 2 and "invalid YAML" in result.stderr and str(path) in result.stderr


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    payload=st.one_of(
        st.binary(max_size=300).map(lambda b: ("bytes", b)),
        _values.map(lambda v: ("yaml", _yaml_text(v).encode())),
        st.tuples(st.sampled_from(_FLEET_PATHS), _values).map(
            lambda pv: ("fleet", _yaml_text(_replace(_FLEET, *pv)).encode())
        ),
    )
)
def test_validate_never_tracebacks(payload: tuple[str, bytes], tmp_path: Path) -> None:
    kind, data = payload
    path = tmp_path / "fleet.yaml"
    path.write_bytes(data)
    result = _invoke(["validate", "--fleet", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in {0, 2}, f"{kind}: {result.stderr}"
    if result.exit_code == 2:
        assert str(path) in result.stderr


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    payload=st.one_of(
        st.binary(max_size=300),
        _values.map(lambda v: json.dumps(v).encode()),
        st.tuples(st.sampled_from(_PLAN_PATHS), _values).map(lambda pv: json.dumps(_replace(_PLAN, *pv)).encode()),
    )
)
def test_gate_never_tracebacks(payload: bytes, tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(payload)
    result = _invoke(["gate", "--plan", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in {0, 2}, result.stderr  # no rules given: the gate can only pass or refuse the file
    if result.exit_code == 2:
        assert str(path) in result.stderr
