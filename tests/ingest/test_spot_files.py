"""Spot-price files: AWS CLI JSON, CSV and TSV feeds; merging is idempotent; errors name the record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.errors import InputError
from finops_cli.ingest.spot import ingest_spot_prices
from finops_cli.ingest.spot.ingest import region_of_zone
from finops_cli.store import Store
from tests.price_statistic import price_statistic

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "spot_prices"


def _cli_json(path: Path, records: list[dict]) -> Path:
    path.write_text(json.dumps({"SpotPriceHistory": records, "NextToken": ""}))
    return path


REC = {
    "AvailabilityZone": "us-east-1a",
    "InstanceType": "p5.48xlarge",
    "ProductDescription": "Linux/UNIX",
    "SpotPrice": "31.464000",
    "Timestamp": "2026-10-01T06:12:44+00:00",
}


def test_aws_cli_json(tmp_path: Path, store: Store) -> None:
    f = _cli_json(tmp_path / "h.json", [REC, {**REC, "SpotPrice": "30.0", "Timestamp": "2026-10-01T00:00:00+00:00"}])
    result = ingest_spot_prices(store, files=[f])
    assert result.rows_new == 2 and result.partitions == [{"provider": "aws", "month": "2026-10"}]
    [row] = [r for r in store.read("spot_prices").to_pylist() if r["usd_per_instance_hour"] == 31.464]
    assert (row["region"], row["zone"], row["gpus"], row["accelerator"], row["source"]) == (
        "us-east-1",
        "us-east-1a",
        8,
        "H100",
        "aws-cli-json",
    )
    assert row["usd_per_gpu_hour"] == pytest.approx(31.464 / 8)


def test_reingest_and_overlap_are_idempotent(tmp_path: Path, store: Store) -> None:
    a = _cli_json(tmp_path / "a.json", [REC])
    b = _cli_json(tmp_path / "b.json", [REC, {**REC, "Timestamp": "2026-10-02T00:00:00+00:00"}])
    ingest_spot_prices(store, files=[a])
    ingest_spot_prices(store, files=[a])
    assert store.read("spot_prices").num_rows == 1
    result = ingest_spot_prices(store, files=[b])
    assert result.rows_new == 1
    assert store.read("spot_prices").num_rows == 2
    assert len(store.files("spot_prices")) == 1


def test_csv_feed_with_zone_ids(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "feed.csv"
    f.write_text(
        "AvailabilityZoneId,InstanceType,ProductDescription,SpotPrice,Timestamp\n"
        "use1-az4,g6.12xlarge,Linux/UNIX,2.1,2026-10-01T00:00:00Z\n"
        "usw2-az1,g6.12xlarge,Linux/UNIX,2.3,2026-10-01T00:00:00Z\n"
    )
    ingest_spot_prices(store, files=[f])
    rows = {r["zone"]: r for r in store.read("spot_prices").to_pylist()}
    assert rows["use1-az4"]["region"] == "us-east-1" and rows["usw2-az1"]["region"] == "us-west-2"
    assert rows["use1-az4"]["gpus"] == 4 and rows["use1-az4"]["accelerator"] == "L4"


def test_tsv_feed(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "feed.tsv"
    f.write_text(
        "AvailabilityZone\tInstanceType\tProductDescription\tSpotPrice\tTimestamp\n"
        "us-west-2b\tp4d.24xlarge\tLinux/UNIX\t9.8304\t2026-10-03T05:58:02+00:00\n"
    )
    ingest_spot_prices(store, files=[f])
    assert price_statistic(store.read("spot_prices"), "aws", "us-west-2", "p4d.24xlarge", "latest") == 9.8304


def test_unknown_instance_type_is_kept_without_gpu_price(tmp_path: Path, store: Store) -> None:
    f = _cli_json(tmp_path / "h.json", [{**REC, "InstanceType": "zz7.large", "SpotPrice": "0.05"}])
    result = ingest_spot_prices(store, files=[f])
    assert result.unknown_instance_types == ["aws/zz7.large"]
    [row] = store.read("spot_prices").to_pylist()
    assert row["gpus"] is None and row["usd_per_gpu_hour"] is None


@pytest.mark.parametrize(
    ("patch", "match"),
    [
        ({"SpotPrice": "cheap"}, r"SpotPriceHistory\[1\].*SpotPrice 'cheap'"),
        ({"Timestamp": "last tuesday"}, r"SpotPriceHistory\[1\].*Timestamp"),
    ],
)
def test_bad_record_names_its_index(tmp_path: Path, store: Store, patch: dict, match: str) -> None:
    f = _cli_json(tmp_path / "h.json", [REC, {**REC, **patch}])
    with pytest.raises(InputError, match=match):
        ingest_spot_prices(store, files=[f])
    assert store.read("spot_prices") is None


def test_missing_columns_are_named(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "feed.csv"
    f.write_text("Zone,Type,Price\nus-east-1a,p5.48xlarge,1\n")
    with pytest.raises(InputError, match="InstanceType, SpotPrice, Timestamp"):
        ingest_spot_prices(store, files=[f])


def test_not_json(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "h.json"
    f.write_text("{nope")
    with pytest.raises(InputError, match="not JSON"):
        ingest_spot_prices(store, files=[f])


def test_region_of_zone() -> None:
    assert region_of_zone("us-east-1a") == "us-east-1"
    assert region_of_zone("us-gov-west-1b") == "us-gov-west-1"
    assert region_of_zone(None, "euw1-az2") == "eu-west-1"
    assert region_of_zone(None, "zzz9-az1") is None


# ------------------------------------------------------------------------------------------------- CLI
def test_cli_spot_prices_and_prices(tmp_path: Path) -> None:
    runner = CliRunner()
    store = str(tmp_path / "s")
    files = [str(SAMPLES / "aws-spot-history-2026-10.json"), str(SAMPLES / "g6-spot-feed-2026-10.csv")]
    res = runner.invoke(
        app, ["ingest", "spot-prices", "--store", store, "--file", files[0], "--file", files[1], "--json"]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["rows_in"] == summary["rows_new"] > 800
    res = runner.invoke(app, ["prices", "--store", store, "--instance-type", "p5.48xlarge", "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["time_weighted"] is True
    assert {r["zone"] for r in doc["rows"]} == {"us-east-1a", "us-east-1b", "us-east-1d"}
    for r in doc["rows"]:
        assert r["min"] <= r["p50"] <= r["p90"] <= r["max"] and r["min"] <= r["mean"] <= r["max"]
        assert r["usd_per_gpu_hour_mean"] == pytest.approx(r["mean"] / 8)
    res = runner.invoke(app, ["prices", "--store", store, "--region", "us-west-2", "--format", "markdown"])
    assert res.exit_code == 0 and "p4d.24xlarge" in res.stdout and "Time-weighted" in res.stdout
    res = runner.invoke(app, ["prices", "--store", store], env={"COLUMNS": "160"})
    assert res.exit_code == 0 and "g6.12xlarge" in res.stdout and "us-east-1d" in res.stdout


def test_cli_errors_exit_2(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["prices", "--store", str(tmp_path / "empty")])
    assert res.exit_code == 2 and "ingest spot-prices" in res.output
    res = runner.invoke(app, ["ingest", "spot-prices", "--store", str(tmp_path / "s")])
    assert res.exit_code == 2 and "nothing to ingest" in res.output
    res = runner.invoke(
        app, ["ingest", "spot-prices", "--store", str(tmp_path / "s"), "--file", str(tmp_path / "x.json")]
    )
    assert res.exit_code == 2 and "Traceback" not in res.output


@pytest.mark.parametrize("command", [["spot-prices", "--file"], ["billing"], ["utilization"]])
def test_a_fifo_or_a_device_is_named_for_what_it_is(tmp_path: Path, command: list[str]) -> None:
    """Issue 27 item 17: ``--file`` on a FIFO or ``/dev/zero`` said "no such file" (reading either would block
    or never end)."""
    import os

    fifo = tmp_path / "feed.csv"
    os.mkfifo(fifo)
    for path, says in ((fifo, "is a named pipe (FIFO)"), (Path("/dev/zero"), "is a character device")):
        args = ["ingest", *command, str(path), "--store", str(tmp_path / "s")]
        r = CliRunner().invoke(app, args, env={"NO_COLOR": "1"})
        assert r.exit_code == 2 and says in r.stderr and "regular file" in r.stderr, r.output
        assert "no such file" not in r.stderr
