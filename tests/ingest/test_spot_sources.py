"""Spot prices through the real SDK clients: boto3 (botocore Stubber, paginated) and google-cloud-billing
(the library's ``CloudCatalogTransport`` subclassed as a local fake endpoint)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from gcp_catalog import FakeCatalogTransport, gcp_sku

from finops_cli.adapters import aws as aws_adapter
from finops_cli.adapters.gcp import catalog_client, list_skus
from finops_cli.errors import InputError
from finops_cli.ingest.spot import ingest_spot_prices
from finops_cli.store import Store
from tests.price_statistic import price_statistic

SINCE = datetime(2026, 10, 1, tzinfo=UTC)


def _record(zone: str, itype: str, price: str, ts: str) -> dict:
    return {
        "AvailabilityZone": zone,
        "InstanceType": itype,
        "ProductDescription": "Linux/UNIX",
        "SpotPrice": price,
        "Timestamp": datetime.fromisoformat(ts),
    }


def _ec2(region: str) -> boto3.client:
    return boto3.client("ec2", region_name=region, aws_access_key_id="testing", aws_secret_access_key="testing")


# ------------------------------------------------------------------------------------------------ AWS
def test_aws_paginator_follows_next_token(store: Store) -> None:
    client = _ec2("us-east-1")
    expected = {"InstanceTypes": ["p5.48xlarge"], "StartTime": SINCE, "ProductDescriptions": ["Linux/UNIX"]}
    with Stubber(client) as stub:
        stub.add_response(
            "describe_spot_price_history",
            {
                "SpotPriceHistory": [_record("us-east-1a", "p5.48xlarge", "30.000000", "2026-10-01T00:00:00+00:00")],
                "NextToken": "page-2",
            },
            expected,
        )
        stub.add_response(
            "describe_spot_price_history",
            {
                "SpotPriceHistory": [_record("us-east-1a", "p5.48xlarge", "34.000000", "2026-10-01T06:00:00+00:00")],
                "NextToken": "",
            },
            {**expected, "NextToken": "page-2"},
        )
        result = ingest_spot_prices(
            store,
            aws_regions=["us-east-1"],
            instance_types=["p5.48xlarge"],
            since=SINCE,
            aws_client_factory=lambda region: client,
        )
        stub.assert_no_pending_responses()  # both pages were requested
    assert result.sources == {"aws:us-east-1": 2}
    table = store.read("spot_prices")
    rows = sorted(table.to_pylist(), key=lambda r: r["timestamp"])
    assert [r["usd_per_instance_hour"] for r in rows] == [30.0, 34.0]
    assert {(r["gpus"], r["accelerator"], r["region"], r["source"]) for r in rows} == {
        (8, "H100", "us-east-1", "aws-api")
    }
    assert rows[0]["usd_per_gpu_hour"] == pytest.approx(30.0 / 8)


def test_aws_failing_region_is_reported_and_the_rest_kept(store: Store) -> None:
    ok, denied = _ec2("us-west-2"), _ec2("eu-west-1")
    with Stubber(ok) as s1, Stubber(denied) as s2:
        s1.add_response(
            "describe_spot_price_history",
            {"SpotPriceHistory": [_record("us-west-2a", "p4d.24xlarge", "9.5", "2026-10-02T00:00:00+00:00")]},
        )
        s2.add_client_error(
            "describe_spot_price_history", service_error_code="UnauthorizedOperation", service_message="denied"
        )
        result = ingest_spot_prices(
            store,
            aws_regions=["us-west-2", "eu-west-1"],
            instance_types=["p4d.24xlarge"],
            aws_client_factory=lambda region: ok if region == "us-west-2" else denied,
        )
    assert result.failures == {"aws:eu-west-1": "UnauthorizedOperation: denied"}
    assert price_statistic(store.read("spot_prices"), "aws", "us-west-2", "p4d.24xlarge", "latest") == 9.5


def test_aws_every_region_failing_is_an_error(store: Store) -> None:
    denied = _ec2("eu-west-1")
    with Stubber(denied) as stub:
        stub.add_client_error("describe_spot_price_history", service_error_code="AuthFailure", service_message="no")
        with pytest.raises(InputError, match=r"every source failed.*AuthFailure"):
            ingest_spot_prices(
                store, aws_regions=["eu-west-1"], instance_types=["p5.48xlarge"], aws_client_factory=lambda r: denied
            )
    assert store.read("spot_prices") is None


def test_aws_unknown_profile_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config"
    cfg.write_text("[default]\nregion = us-east-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(cfg))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    with pytest.raises(InputError, match="AWS profile 'nope'"):
        aws_adapter.ec2_client("us-east-1", profile="nope")


def test_aws_region_needs_instance_types(store: Store) -> None:
    with pytest.raises(InputError, match="`instance_types`"):
        ingest_spot_prices(store, aws_regions=["us-east-1"])


# ------------------------------------------------------------------------------------------------ GCP
GCP_PAGES = [
    [
        gcp_sku(
            "A1",
            "Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in EMEA",
            "Preemptible",
            ["europe-west4", "europe-west1"],
            2,
            250_000_000,
        ),
        gcp_sku(
            "C1", "Spot Preemptible A3 Instance Core running in EMEA", "Preemptible", ["europe-west4"], 0, 9_000_000
        ),
    ],
    [
        gcp_sku("A2", "Nvidia H100 80GB GPU running in EMEA", "OnDemand", ["europe-west4"], 11, 60_000_000),
        gcp_sku(
            "A3", "Commitment v1: Nvidia H100 80GB GPU running in EMEA for 1 Year", "Commit1Yr", ["europe-west4"], 7, 0
        ),
    ],
]


def test_gcp_catalog_client_pages_through_skus() -> None:
    transport = FakeCatalogTransport(GCP_PAGES)
    skus = list(list_skus(catalog_client(transport=transport)))
    assert [s.sku_id for s in skus] == ["A1", "C1", "A2", "A3"]
    assert [r.parent for r in transport.requests] == ["services/6F81-5844-456A"] * 2
    assert [r.page_token for r in transport.requests] == ["", "1"]


def test_gcp_gpu_skus_stored_per_gpu_hour(store: Store) -> None:
    result = ingest_spot_prices(
        store, gcp=True, gcp_regions=["europe-west4"], gcp_transport=FakeCatalogTransport(GCP_PAGES)
    )
    assert result.sources == {"gcp:catalog": 2}
    rows = sorted(store.read("spot_prices").to_pylist(), key=lambda r: r["price_kind"])
    assert [(r["price_kind"], r["instance_type"], r["region"], r["gpus"], r["accelerator"]) for r in rows] == [
        ("on_demand", "gpu-h100-80gb", "europe-west4", 1, "H100"),
        ("spot", "gpu-h100-80gb", "europe-west4", 1, "H100"),
    ]
    assert rows[0]["usd_per_gpu_hour"] == pytest.approx(11.06)
    assert rows[1]["usd_per_gpu_hour"] == rows[1]["usd_per_instance_hour"] == pytest.approx(2.25)
    table = store.read("spot_prices")
    assert price_statistic(table, "gcp", "europe-west4", "gpu-h100-80gb", "latest", per="gpu_hour") == 2.25
    assert price_statistic(table, "gcp", "europe-west4", "gpu-h100-80gb", "latest", price_kind="on_demand") == 11.06


def test_aws_default_session_path_with_moto(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real client factory (boto3.Session from the standard credential chain) against moto's EC2."""
    from moto import mock_aws

    for var, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        result = ingest_spot_prices(
            store, aws_regions=["us-east-1", "us-west-2"], instance_types=["p5.48xlarge"], product_descriptions=[]
        )
    assert set(result.sources) == {"aws:us-east-1", "aws:us-west-2"} and not result.failures
    rows = store.read("spot_prices").to_pylist()
    assert rows and {r["region"] for r in rows} == {"us-east-1", "us-west-2"}
    assert {(r["gpus"], r["accelerator"]) for r in rows} == {(8, "H100")}
