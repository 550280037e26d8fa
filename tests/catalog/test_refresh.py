"""``finops pricebook refresh`` through each provider's real client code, and the user pricebook overlay.

AWS: boto3's ``pricing`` client under botocore's Stubber, answering ``GetProducts`` pages shaped as AWS returns them
(``PriceList`` items are JSON *strings*; several regions, operating systems, tenancies; ``NextToken``). GCP: the real
``CloudCatalogClient`` over the library's transport seam. Azure: the Retail Prices API served by a local
``http.server`` (``Items`` pages chained by ``NextPageLink``).
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.stub import Stubber
from gcp_catalog import FakeCatalogTransport, gcp_sku
from google.api_core import exceptions as gexc
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.catalog.fetchers.aws import aws_filters
from finops_cli.catalog.pricebook import REF_COLUMNS, use_pricebook
from finops_cli.catalog.prices import reference_price
from finops_cli.catalog.refresh import _wanted
from finops_cli.cli.app import app
from finops_cli.errors import InputError

NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
HEADER = ",".join(REF_COLUMNS)
runner = CliRunner()


# ------------------------------------------------------------------------------------------------------- AWS
def _product(itype: str, region: str, usd: str, *, os: str = "Linux", tenancy: str = "Shared", status: str = "Used",
             gpu: str = "8", sku: str = "SKU1") -> str:  # fmt: skip
    """One ``PriceList`` item as GetProducts returns it: a JSON string with product, OnDemand and Reserved terms."""
    term = f"{sku}.JRTCKXETXF"
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "attributes": {
                    "instanceType": itype,
                    "regionCode": region,
                    "location": "US East (N. Virginia)",
                    "operatingSystem": os,
                    "tenancy": tenancy,
                    "preInstalledSw": "NA",
                    "capacitystatus": status,
                    "licenseModel": "No License required",
                    "instanceFamily": "GPU instance",
                    "gpu": gpu,
                    "vcpu": "192",
                    "memory": "2048 GiB",
                    "servicecode": "AmazonEC2",
                    "usagetype": f"USE1-BoxUsage:{itype}",
                    "operation": "RunInstances",
                },
                "sku": sku,
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    term: {
                        "priceDimensions": {
                            f"{term}.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "endRange": "Inf",
                                "beginRange": "0",
                                "appliesTo": [],
                                "description": f"${usd} per On Demand {os} {itype} Instance Hour",
                                "rateCode": f"{term}.6YS6EN2CT7",
                                "pricePerUnit": {"USD": usd},
                            }
                        },
                        "sku": sku,
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "offerTermCode": "JRTCKXETXF",
                        "termAttributes": {},
                    }
                },
                "Reserved": {
                    f"{sku}.4NA7Y494T4": {
                        "priceDimensions": {
                            f"{sku}.4NA7Y494T4.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "beginRange": "0",
                                "endRange": "Inf",
                                "pricePerUnit": {"USD": "20.1"},
                            }
                        },
                        "termAttributes": {"LeaseContractLength": "1yr", "PurchaseOption": "No Upfront"},
                    }
                },
            },
            "version": "20261101000000",
            "publicationDate": "2026-11-01T00:00:00Z",
        }
    )


def _pricing_client() -> boto3.client:
    return boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def _stub_aws(stub: Stubber, types: list[str]) -> None:
    def expect(region: str, token: str | None = None) -> dict:
        params = {"ServiceCode": "AmazonEC2", "Filters": aws_filters(region, types), "FormatVersion": "aws_v1",
                  "MaxResults": 100}  # fmt: skip
        return params | ({"NextToken": token} if token else {})

    page1 = [
        _product("p5.48xlarge", "us-east-1", "55.0400000000"),
        _product("p5.48xlarge", "us-east-1", "70.1", os="Windows", sku="SKU2"),
        _product("p5.48xlarge", "us-east-1", "60.5", tenancy="Dedicated", sku="SKU3"),
    ]
    page2 = [
        _product("p5.48xlarge", "us-east-1", "0.0000000000", status="UnusedCapacityReservation", sku="SKU4"),
        _product("p3.2xlarge", "us-east-1", "3.0600000000", gpu="1", sku="SKU5"),
        _product("g4dn.xlarge", "us-east-1", "0.5260000000", gpu="1", os="RHEL", sku="SKU6"),
    ]
    page3 = [_product("p4d.24xlarge", "us-west-2", "21.9600000000", sku="SKU7")]
    stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": page1, "NextToken": "t1"},
                      expect("us-east-1"))  # fmt: skip
    stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": page2}, expect("us-east-1", "t1"))
    stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": page3}, expect("us-west-2"))


def _user_instance_types(book: Path) -> None:
    """What a user adds for types the shipped pricebook lacks (no package edit)."""
    book.mkdir(parents=True, exist_ok=True)
    (book / "instance_types.csv").write_text(
        "provider,kind,instance_type,gpus,accelerator,gpu_memory_gb,source,date_read\n"
        "aws,instance,p3.2xlarge,1,V100,16,https://aws.amazon.com/ec2/instance-types/p3/,2026-12-01\n"
        "aws,instance,g4dn.xlarge,1,T4,16,https://aws.amazon.com/ec2/instance-types/g4/,2026-12-01\n"
    )


def _rows(book: Path) -> dict[tuple[str, str, str, str], dict[str, str]]:
    import csv

    with open(book / "reference_prices.csv", newline="") as fh:
        return {(r["provider"], r["offering"], r["term"], r["region"]): r for r in csv.DictReader(fh)}


def test_aws_get_products_pages_regions_and_only_the_linux_shared_list_price(tmp_path: Path) -> None:
    book = tmp_path / "book"
    _user_instance_types(book)
    use_pricebook(book)
    types = _wanted("aws", [])
    assert {"p3.2xlarge", "g4dn.xlarge", "p5.48xlarge"} <= set(types)  # the user's types are priced too
    client = _pricing_client()
    with Stubber(client) as stub:
        _stub_aws(stub, types)
        result = api.pricebook_refresh(providers=["aws"], regions={"aws": ["us-east-1", "us-west-2"]},
                                       aws_client=client, now=NOW)  # fmt: skip
        stub.assert_no_pending_responses()
    assert result.rows == {"aws": 3}
    rows = _rows(book)
    assert set(rows) == {("aws", "p5.48xlarge", "on_demand", "us-east-1"),
                         ("aws", "p3.2xlarge", "on_demand", "us-east-1"),
                         ("aws", "p4d.24xlarge", "on_demand", "us-west-2")}  # fmt: skip
    p5 = rows[("aws", "p5.48xlarge", "on_demand", "us-east-1")]
    assert (p5["usd_per_instance_hour"], p5["usd_per_gpu_hour"], p5["gpus"], p5["accelerator"]) == (
        "55.04",
        "6.88",
        "8",
        "H100",
    )
    assert "sku SKU1" in p5["source"] and "GetProducts" in p5["source"]
    assert (p5["read_on"], p5["fetched_at"]) == ("2026-12-01", "2026-12-01T09:30:00Z")
    v100 = reference_price("aws/p3.2xlarge/on_demand", region="us-east-1")
    assert (v100.accelerator, v100.usd_per_gpu_hour, v100.origin) == ("V100", 3.06, str(book / "reference_prices.csv"))
    # the refreshed us-east-1 row wins over the shipped one; other regions of the ref stay reachable
    assert reference_price("aws/p5.48xlarge/on_demand", region="us-east-1").fetched_at == "2026-12-01T09:30:00Z"
    assert reference_price("aws/p4d.24xlarge/on_demand/us-west-2").usd_per_gpu_hour == 2.745


def test_aws_denied_or_no_credentials_leaves_the_pricebook_as_it_was(tmp_path: Path, monkeypatch) -> None:
    book = tmp_path / "book"
    book.mkdir()
    before = HEADER + "\n"
    before += "aws,p5.48xlarge,on_demand,H100,8,40,5,,,us-east-1,our negotiated rate,2026-11-01\n"
    (book / "reference_prices.csv").write_text(before)
    client = _pricing_client()
    with Stubber(client) as stub:
        stub.add_client_error(
            "get_products", "AccessDeniedException", "User is not authorized to perform pricing:GetProducts"
        )
        with pytest.raises(InputError, match="AccessDeniedException: User is not authorized"):
            api.pricebook_refresh(providers=["aws"], pricebook=book, aws_client=client, now=NOW)
    assert (book / "reference_prices.csv").read_text() == before
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    r = runner.invoke(app, ["pricebook", "refresh", "--provider", "aws", "--pricebook", str(book)])
    assert r.exit_code == 2, r.output
    assert "no AWS credentials found" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert (book / "reference_prices.csv").read_text() == before


# ------------------------------------------------------------------------------------------------------- GCP
AMERICAS = ["us-central1", "us-east4"]
GCP_PAGES = [
    [
        gcp_sku("G1", "Nvidia H100 80GB GPU running in Americas", "OnDemand", AMERICAS, 11, 60_000_000),
        gcp_sku(
            "G2",
            "Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in Americas",
            "Preemptible",
            AMERICAS,
            2,
            250_000_000,
        ),
        gcp_sku("C1", "A3 Instance Core running in Americas", "OnDemand", AMERICAS, 0, 29_000_000, group="CPU"),
    ],
    [
        gcp_sku(
            "R1",
            "A3 Instance Ram running in Americas",
            "OnDemand",
            AMERICAS,
            0,
            3_000_000,
            group="RAM",
            usage_unit="GiBy.h",
        ),
        gcp_sku(
            "C2",
            "Spot Preemptible A3 Instance Core running in Americas",
            "Preemptible",
            AMERICAS,
            0,
            9_000_000,
            group="CPU",
        ),
        gcp_sku(
            "R2",
            "Spot Preemptible A3 Instance Ram running in Americas",
            "Preemptible",
            AMERICAS,
            0,
            1_000_000,
            group="RAM",
            usage_unit="GiBy.h",
        ),
        gcp_sku("N1", "N2 Instance Core running in Americas", "OnDemand", AMERICAS, 0, 31_000_000, group="CPU"),
        gcp_sku("E1", "Nvidia H100 80GB GPU running in EMEA", "OnDemand", ["europe-west4"], 12, 0),
        gcp_sku(
            "K1", "Commitment v1: Nvidia H100 80GB GPU running in Americas for 1 Year", "Commit1Yr", AMERICAS, 7, 0
        ),
    ],
]


def test_gcp_gpu_and_machine_family_skus_through_the_catalog_client(tmp_path: Path) -> None:
    transport = FakeCatalogTransport(GCP_PAGES)
    result = api.pricebook_refresh(providers=["gcp"], regions={"gcp": ["us-central1"]}, pricebook=tmp_path / "b",
                                   gcp_transport=transport, now=NOW)  # fmt: skip
    assert [r.page_token for r in transport.requests] == ["", "1"]  # the client's pager followed the token
    rows = _rows(tmp_path / "b")
    gpu = rows[("gcp", "gpu-h100-80gb", "on_demand", "us-central1")]
    assert float(gpu["usd_per_gpu_hour"]) == pytest.approx(11.06)
    assert float(rows[("gcp", "gpu-h100-80gb", "spot", "us-central1")]["usd_per_gpu_hour"]) == pytest.approx(2.25)
    a3 = rows[("gcp", "a3-highgpu-8g", "on_demand", "us-central1")]
    want = 8 * 11.06 + 208 * 0.029 + 1872 * 0.003  # GPUs + vCPUs + GiB, each at its SKU's base tier
    assert float(a3["usd_per_instance_hour"]) == pytest.approx(want, abs=1e-6)
    assert float(a3["usd_per_gpu_hour"]) == pytest.approx(want / 8, abs=1e-6)
    spot = rows[("gcp", "a3-highgpu-1g", "spot", "us-central1")]
    assert float(spot["usd_per_instance_hour"]) == pytest.approx(2.25 + 26 * 0.009 + 234 * 0.001, abs=1e-6)
    assert "G1" in a3["source"] and "C1" in a3["source"] and "R1" in a3["source"]
    assert not any(k[3] != "us-central1" for k in rows)  # only the region asked for
    assert not any(k[1].startswith("a3-mega") for k in rows)  # its GPU SKU (H100 Mega) is not in the catalog
    assert result.rows["gcp"] == len(rows)


def test_gcp_permission_denied_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    transport = FakeCatalogTransport(GCP_PAGES, fail_with=gexc.PermissionDenied("Cloud Billing API has not been used"))
    with pytest.raises(InputError, match="PermissionDenied"):
        api.pricebook_refresh(providers=["gcp"], pricebook=tmp_path / "b", gcp_transport=transport, now=NOW)
    assert not (tmp_path / "b" / "reference_prices.csv").exists()


# ----------------------------------------------------------------------------------------------------- Azure
def _azure_item(size: str, price: float, *, sku: str, product: str, region: str = "eastus", type_: str = "Consumption",
                unit: str = "1 Hour") -> dict:  # fmt: skip
    return {
        "currencyCode": "USD", "tierMinimumUnits": 0.0, "retailPrice": price, "unitPrice": price,
        "armRegionName": region, "location": "US East", "effectiveStartDate": "2026-10-01T00:00:00Z",
        "meterId": f"m-{size}-{sku}", "meterName": sku, "productId": "DZH318Z0BQ4L", "skuId": "DZH318Z0BQ4L/00K1",
        "productName": product, "skuName": sku, "serviceName": "Virtual Machines", "serviceId": "DZH313Z7MMC8",
        "serviceFamily": "Compute", "unitOfMeasure": unit, "type": type_, "isPrimaryMeterRegion": True,
        "armSkuName": size,
    }  # fmt: skip


class _RetailPrices(BaseHTTPRequestHandler):
    """Serves two pages per request filter, chained by NextPageLink ($skip), like prices.azure.com."""

    requests: list[dict] = []  # noqa: RUF012 - per test class state, reset by the fixture
    status = 200

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        type(self).requests.append(query)
        if self.status != 200:
            self.send_error(self.status, "Service Unavailable")
            return
        skip = int(query.get("$skip", ["0"])[0])
        h100 = "Virtual Machines NDisrH100v5 Series"
        pages = [
            [_azure_item("Standard_ND96isr_H100_v5", 98.32, sku="ND96isr H100 v5", product=h100),
             _azure_item("Standard_ND96isr_H100_v5", 118.0, sku="ND96isr H100 v5", product=f"{h100} Windows"),
             _azure_item("Standard_ND96isr_H100_v5", 39.33, sku="ND96isr H100 v5 Spot", product=h100)],
            [_azure_item("Standard_ND96isr_H100_v5", 19.6, sku="ND96isr H100 v5 Low Priority", product=h100),
             _azure_item("Standard_ND96isr_H100_v5", 60000.0, sku="ND96isr H100 v5", product=h100, type_="Reservation",
                         unit="1 Hour"),
             _azure_item("Standard_NC4as_T4_v3", 0.526, sku="NC4as T4 v3",
                         product="Virtual Machines NCasv3_T4 Series")],
        ]  # fmt: skip
        host = f"http://127.0.0.1:{self.server.server_address[1]}"
        base = f"{host}/api/retail/prices?$filter={query['$filter'][0]}"
        body = {
            "BillingCurrency": "USD", "CustomerEntityId": "Default", "CustomerEntityType": "Retail",
            "Items": pages[skip // 3], "NextPageLink": f"{base}&$skip={skip + 3}" if skip == 0 else None,
            "Count": len(pages[skip // 3]),
        }  # fmt: skip
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def azure_url():
    _RetailPrices.requests = []
    _RetailPrices.status = 200
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RetailPrices)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api/retail/prices"
    server.shutdown()
    server.server_close()


def test_azure_retail_prices_pages_and_linux_consumption_meters(tmp_path: Path, azure_url: str) -> None:
    api.pricebook_refresh(providers=["azure"], regions={"azure": ["eastus"]}, pricebook=tmp_path / "b",
                          azure_url=azure_url, now=NOW)  # fmt: skip
    assert len(_RetailPrices.requests) == 2 and _RetailPrices.requests[1]["$skip"] == ["3"]
    odata = _RetailPrices.requests[0]["$filter"][0]
    assert "armRegionName eq 'eastus'" in odata and "armSkuName eq 'Standard_ND96isr_H100_v5'" in odata
    assert "serviceName eq 'Virtual Machines'" in odata and "priceType eq 'Consumption'" in odata
    rows = _rows(tmp_path / "b")
    assert set(rows) == {("azure", "Standard_ND96isr_H100_v5", "on_demand", "eastus"),
                         ("azure", "Standard_ND96isr_H100_v5", "spot", "eastus"),
                         ("azure", "Standard_NC4as_T4_v3", "on_demand", "eastus")}  # fmt: skip
    assert rows[("azure", "Standard_ND96isr_H100_v5", "on_demand", "eastus")]["usd_per_gpu_hour"] == "12.29"
    assert rows[("azure", "Standard_ND96isr_H100_v5", "spot", "eastus")]["usd_per_gpu_hour"] == "4.91625"
    assert "Azure Retail Prices API" in rows[("azure", "Standard_NC4as_T4_v3", "on_demand", "eastus")]["source"]


def test_azure_unreachable_or_failing_keeps_the_pricebook(tmp_path: Path, azure_url: str) -> None:
    book = tmp_path / "b"
    api.pricebook_refresh(providers=["azure"], regions={"azure": ["eastus"]}, pricebook=book, azure_url=azure_url,
                          now=NOW)  # fmt: skip
    before = (book / "reference_prices.csv").read_bytes()
    _RetailPrices.status = 503
    with pytest.raises(InputError, match="HTTP 503"):
        api.pricebook_refresh(providers=["azure"], pricebook=book, azure_url=azure_url, now=NOW)
    with pytest.raises(InputError, match="cannot reach"):
        api.pricebook_refresh(providers=["azure"], pricebook=book, azure_url="http://127.0.0.1:9/api", now=NOW)
    assert (book / "reference_prices.csv").read_bytes() == before


# ------------------------------------------------------------------------------------------------ the overlay
def test_refresh_replaces_same_key_rows_and_keeps_hand_added_ones(tmp_path: Path, azure_url: str) -> None:
    book = tmp_path / "b"
    book.mkdir()
    (book / "reference_prices.csv").write_text(
        HEADER + "\n"
        "azure,Standard_ND96isr_H100_v5,on_demand,H100,8,80,10,,,eastus,old fetch,2026-10-01\n"
        "acme,h100-colo,reserved,H100,8,,1.9,,,us-east,our colo contract,2026-11-01\n"
    )
    result = api.pricebook_refresh(providers=["azure"], regions={"azure": ["eastus"]}, pricebook=book,
                                   azure_url=azure_url, now=NOW)  # fmt: skip
    assert (result.replaced, result.kept, result.rows) == (1, 1, {"azure": 3})
    rows = _rows(book)
    assert rows[("azure", "Standard_ND96isr_H100_v5", "on_demand", "eastus")]["usd_per_gpu_hour"] == "12.29"
    assert rows[("acme", "h100-colo", "reserved", "us-east")]["source"] == "our colo contract"


def _estate(tmp_path: Path, ref: str) -> tuple[Path, Path]:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "version: 1\nsubstrates:\n"
        "  - {id: od, provider: aws, kind: on_demand, accelerator: V100, region: us-east-1, jurisdiction: US, "
        f"price_ref: {ref}}}\n"
    )
    workloads = tmp_path / "workloads.yaml"
    workloads.write_text(
        "version: 1\nworkloads:\n  - {id: train, unit: gpu_hours, throughput: {V100: 1}, demand: {total: 96}}\n"
    )
    return fleet, workloads


def test_every_command_reads_the_user_pricebook(tmp_path: Path, monkeypatch) -> None:
    book = tmp_path / "book"
    _user_instance_types(book)
    (book / "reference_prices.csv").write_text(
        HEADER + ",fetched_at\n"
        "aws,p3.2xlarge,on_demand,V100,1,3.06,3.06,,,us-east-1,AWS Price List API GetProducts (sku X),2026-12-01,"
        "2026-12-01T09:30:00Z\n"
    )
    fleet, workloads = _estate(tmp_path, "aws/p3.2xlarge/on_demand")
    r = runner.invoke(app, ["validate", "--fleet", str(fleet), "--workloads", str(workloads)])
    assert r.exit_code == 2 and "price_ref" in r.stderr  # not in the shipped pricebook
    r = runner.invoke(app, ["--pricebook", str(book), "validate", "--fleet", str(fleet), "--workloads", str(workloads)])
    assert r.exit_code == 0, r.output
    monkeypatch.setenv("FINOPS_PRICEBOOK", str(book))
    r = runner.invoke(app, ["plan", "--fleet", str(fleet), "--workloads", str(workloads), "--horizon",
                            "2026-11-01T00:00:00Z:24", "--format", "json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    price = next(p for p in doc["prices"] if p["substrate"] == "od")
    assert price["value"] == 3.06 and price["source"] == "price_ref"
    assert price["fetched_at"] == "2026-12-01T09:30:00Z" and "GetProducts" in price["pricebook_source"]
    assert any("od" in n and "GetProducts" in n and "2026-12-01T09:30:00Z" in n for n in doc["notes"])
    monkeypatch.setenv("FINOPS_PRICEBOOK", str(tmp_path / "typo"))
    r = runner.invoke(app, ["validate", "--fleet", str(fleet), "--workloads", str(workloads)])
    assert r.exit_code == 2 and "pricebook directory not found" in r.stderr


def test_a_bad_user_table_is_named(tmp_path: Path) -> None:
    book = tmp_path / "book"
    book.mkdir()
    (book / "instance_types.csv").write_text(
        "provider,kind,instance_type,gpus,accelerator\naws,instance,p3.8xlarge,four,V100\n"
    )
    r = runner.invoke(app, ["--pricebook", str(book), "pricebook", "show"])
    # show reads the reference prices only; the instance table is read by ingest and refresh
    assert r.exit_code == 0
    r = runner.invoke(app, ["pricebook", "refresh", "--provider", "azure", "--pricebook", str(book)])
    assert r.exit_code == 2 and "instance_types.csv" in r.stderr and "line 2" in r.stderr and "gpus" in r.stderr


def test_price_ref_prices_api_substrates_per_unit(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "version: 1\ncurrency: CAD\nfx: {USD:CAD: 1.5}\nsubstrates:\n"
        "  - {id: claude, provider: anthropic, kind: api, jurisdiction: US, "
        "price_ref: anthropic/claude-sonnet-output/api}\n"
        "  - {id: gpt, provider: openai, kind: api, jurisdiction: US, "
        "price_ref: {Mtokens_out: openai/gpt-4o-output/api}}\n"
    )
    workloads = tmp_path / "workloads.yaml"
    workloads.write_text(
        "version: 1\nworkloads:\n"
        "  - {id: chat, unit: Mtokens, throughput: {}, demand: {total: 240}}\n"
        "  - {id: summarise, unit: Mtokens_out, throughput: {}, demand: {total: 24}}\n"
    )
    r = runner.invoke(app, ["plan", "--fleet", str(fleet), "--workloads", str(workloads), "--horizon",
                            "2026-11-01T00:00:00Z:24", "--format", "json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    alloc = {a["substrate"]: a for a in doc["allocations"]}
    assert alloc["claude"]["price_per_unit"] == pytest.approx(15.0 * 1.5)  # USD row × fx into the fleet's CAD
    assert alloc["gpt"]["price_per_unit"] == pytest.approx(10.0 * 1.5)
    assert alloc["claude"]["cost"] == pytest.approx(240 * 22.5, abs=0.01)
    prices = {p["substrate"]: p for p in doc["prices"]}
    assert prices["claude"]["unit_prices"] == {"Mtokens": 22.5} and prices["claude"]["source"] == "price_ref"
    assert prices["gpt"]["ref"] == "openai/gpt-4o-output/api" and "openai.com" in prices["gpt"]["pricebook_source"]
    assert any(
        n.startswith("price of claude: per unit: Mtokens 22.5") and "shipped pricebook" in n for n in doc["notes"]
    )
    fleet.write_text(fleet.read_text().replace("anthropic/claude-sonnet-output/api", "aws/p5.48xlarge/on_demand"))
    r = runner.invoke(app, ["validate", "--fleet", str(fleet), "--workloads", str(workloads)])
    assert r.exit_code == 2 and "per GPU-hour; an api substrate needs a per-unit" in r.stderr


def test_first_refresh_into_a_new_directory_named_by_the_environment(tmp_path: Path, monkeypatch, azure_url) -> None:
    """``$FINOPS_PRICEBOOK`` may name a directory the first refresh creates (other commands need it to exist)."""
    book = tmp_path / "new" / "book"
    monkeypatch.setenv("FINOPS_PRICEBOOK", str(book))
    with pytest.raises(InputError, match="not a GPU instance type"):
        api.pricebook_refresh(providers=["azure"], instance_types=["Standard_D8s_v5"], azure_url=azure_url, now=NOW)
    assert not book.exists()  # a refused refresh leaves no trace
    api.pricebook_refresh(providers=["azure"], regions={"azure": ["eastus"]}, instance_types=["Standard_NC6s_v3"],
                          azure_url=azure_url, now=NOW)  # fmt: skip
    assert (book / "reference_prices.csv").is_file()
    assert "armSkuName eq 'Standard_NC6s_v3'" in _RetailPrices.requests[0]["$filter"][0]
