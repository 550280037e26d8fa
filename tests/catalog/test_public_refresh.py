"""Credential-free refresh against a local server on 127.0.0.1 serving each provider's documented shape: the AWS
Price List bulk offer file (CSV form: metadata lines, then the ``SKU`` header) and the Azure Retail Prices API
(``Items`` pages chained by ``NextPageLink``), with throttling (429 + ``Retry-After``), a body cut off before its
``Content-Length``, and no server at all (offline)."""

from __future__ import annotations

import csv
import io
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.catalog.fetchers import aws_offers
from finops_cli.cli.app import app
from finops_cli.errors import InputError

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
COLUMNS = ["SKU", "OfferTermCode", "RateCode", "TermType", "PriceDescription", "EffectiveDate", "StartingRange",
           "EndingRange", "Unit", "PricePerUnit", "Currency", "LeaseContractLength", "PurchaseOption", "Product Family",
           "serviceCode", "Location", "Instance Type", "Instance Family", "vCPU", "Memory", "Tenancy",
           "Operating System", "License Model", "CapacityStatus", "GPU", "Pre Installed S/W",
           "Region Code"]  # fmt: skip


def offer_line(itype: str, usd: str, region: str, *, term: str = "OnDemand", os: str = "Linux",
               tenancy: str = "Shared", status: str = "Used", sku: str = "SKU1") -> list[str]:  # fmt: skip
    return [sku, "JRTCKXETXF", f"{sku}.JRTCKXETXF.6YS6EN2CT7", term, f"${usd} per On Demand {os} {itype} Instance Hour",
            "2026-11-01T00:00:00Z", "0", "Inf", "Hrs", usd, "USD", "", "", "Compute Instance", "AmazonEC2",
            "US East (N. Virginia)", itype, "GPU instance", "192", "2048 GiB", tenancy, os, "No License required",
            status, "8", "NA", region]  # fmt: skip


def offer_file(region: str, filler: int = 2000) -> bytes:
    """An EC2 offer file in CSV form; ``filler`` CPU rows make it larger than one read buffer."""
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for meta in (["FormatVersion", "v1.0"], ["Disclaimer", "This pricing list is for informational purposes only."],
                 ["Publication Date", "2026-11-30T20:00:00Z"], ["Version", "20261130200000"],
                 ["OfferCode", "AmazonEC2"]):  # fmt: skip
        w.writerow(meta)
    w.writerow(COLUMNS)
    w.writerow(offer_line("p5.48xlarge", "55.04", region, sku="P5"))
    w.writerow(offer_line("p5.48xlarge", "63.00", region, os="Windows", sku="P5W"))
    w.writerow(offer_line("p5.48xlarge", "60.00", region, tenancy="Dedicated", sku="P5D"))
    w.writerow(offer_line("p5.48xlarge", "55.04", region, status="UnusedCapacityReservation", sku="P5U"))
    w.writerow(offer_line("p5.48xlarge", "0.0", region, term="Reserved", sku="P5R"))
    for i in range(filler):
        w.writerow(offer_line(f"m5.{i}xlarge", "0.192", region, sku=f"M{i}"))
    w.writerow(offer_line("p3.2xlarge", "3.06", region, sku="P3"))
    w.writerow(offer_line("g4dn.xlarge", "0.526", region, sku="G4"))
    return out.getvalue().encode()


def azure_page(items: list[dict], next_link: str | None) -> bytes:
    return json.dumps({"BillingCurrency": "USD", "CustomerEntityId": "Default", "CustomerEntityType": "Retail",
                       "Items": items, "NextPageLink": next_link, "Count": len(items)}).encode()  # fmt: skip


def azure_item(size: str, price: float, sku: str) -> dict:
    return {"currencyCode": "USD", "retailPrice": price, "unitPrice": price, "armRegionName": "eastus",
            "location": "US East", "effectiveStartDate": "2026-11-01T00:00:00Z", "meterId": "m-1", "meterName": sku,
            "productName": "Virtual Machines NCsv3 Series", "skuName": sku, "serviceName": "Virtual Machines",
            "unitOfMeasure": "1 Hour", "type": "Consumption", "armSkuName": size}  # fmt: skip


class _Prices(BaseHTTPRequestHandler):
    """Serves /offers/…/<region>/index.csv and /api/retail/prices; ``throttle`` 429s first, ``cut`` truncates."""

    throttle = 0
    cut = False
    hits: list[str] = []  # noqa: RUF012 - reset by the fixture

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        if type(self).throttle > 0:
            type(self).throttle -= 1
            self.send_response(429)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        url = urlsplit(self.path)
        if url.path.startswith("/offers/"):
            body = offer_file(url.path.split("/")[-2])
        else:
            skip = int(parse_qs(url.query).get("$skip", ["0"])[0])
            base = f"http://127.0.0.1:{self.server.server_address[1]}{url.path}?$filter=x"
            body = azure_page([azure_item("Standard_NC6s_v3", 3.06, "NC6s v3")], f"{base}&$skip=1") if skip == 0 else (
                azure_page([azure_item("Standard_NC6s_v3", 0.61, "NC6s v3 Spot")], None))  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2] if type(self).cut else body)
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Prices.throttle, _Prices.cut, _Prices.hits = 0, False, []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Prices)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _offers(base: str) -> str:
    return base + "/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv"


def _table(book: Path) -> dict[tuple[str, str, str, str], dict[str, str]]:
    with (book / "reference_prices.csv").open() as f:
        return {(r["provider"], r["offering"], r["term"], r["region"]): r for r in csv.DictReader(f)}


def test_aws_offer_files_streamed_per_region(tmp_path: Path, server: str) -> None:
    book = tmp_path / "book"
    result = api.pricebook_refresh(providers=["aws"], regions={"aws": ["us-east-1", "us-west-2"]}, pricebook=book,
                                   aws_source="offers", aws_offers_url=_offers(server), now=NOW)  # fmt: skip
    assert result.rows == {"aws": 6} and len(_Prices.hits) == 2
    rows = _table(book)
    p5 = rows[("aws", "p5.48xlarge", "on_demand", "us-west-2")]
    assert (p5["usd_per_instance_hour"], p5["usd_per_gpu_hour"], p5["accelerator"]) == ("55.04", "6.88", "H100")
    assert "offer file" in p5["source"] and "sku P5," in p5["source"]
    assert rows[("aws", "p3.2xlarge", "on_demand", "us-east-1")]["usd_per_gpu_hour"] == "3.06"
    assert rows[("aws", "g4dn.xlarge", "on_demand", "us-east-1")]["accelerator"] == "T4"
    assert not any(k[1].startswith("m5.") for k in rows)


def test_throttling_is_retried(tmp_path: Path, server: str) -> None:
    _Prices.throttle = 2
    result = api.pricebook_refresh(providers=["aws"], regions={"aws": ["us-east-1"]}, pricebook=tmp_path / "a",
                                   aws_source="offers", aws_offers_url=_offers(server), now=NOW)  # fmt: skip
    assert result.rows == {"aws": 3} and len(_Prices.hits) == 3
    _Prices.throttle, _Prices.hits = 2, []
    result = api.pricebook_refresh(providers=["azure"], regions={"azure": ["eastus"]}, pricebook=tmp_path / "z",
                                   azure_url=server + "/api/retail/prices", now=NOW)  # fmt: skip
    assert result.rows == {"azure": 2} and len(_Prices.hits) == 4  # two 429s, then both pages
    _Prices.throttle = 10
    with pytest.raises(InputError, match=r"HTTP 429 .* after 3 retries .* the pricebook is left as it was"):
        api.pricebook_refresh(providers=["azure"], regions={"azure": ["eastus"]}, pricebook=tmp_path / "z",
                              azure_url=server + "/api/retail/prices", now=NOW)  # fmt: skip


@pytest.mark.parametrize("provider", ["aws", "azure"])
def test_truncated_or_offline_leaves_the_pricebook_untouched(tmp_path: Path, server: str, provider: str) -> None:
    book = tmp_path / "book"
    book.mkdir()
    before = "provider,offering,term,accelerator,gpus,usd_per_instance_hour,usd_per_gpu_hour,unit,usd_per_unit,"
    before += "region,source,read_on\nacme,h100-colo,reserved,H100,8,,1.9,,,us-east,our contract,2026-11-01\n"
    (book / "reference_prices.csv").write_text(before)
    seams = {"aws": {"aws_source": "offers", "aws_offers_url": _offers(server)},
             "azure": {"azure_url": server + "/api/retail/prices"}}[provider]  # fmt: skip
    _Prices.cut = True
    with pytest.raises(InputError, match="cut off") as err:
        api.pricebook_refresh(providers=[provider], pricebook=book, now=NOW, **seams)  # type: ignore[arg-type]
    assert "left as it was" in str(err.value) and "\n" not in str(err.value)
    offline = {"aws": {"aws_source": "offers", "aws_offers_url": "http://127.0.0.1:9/{region}/index.csv"},
               "azure": {"azure_url": "http://127.0.0.1:9/api/retail/prices"}}[provider]  # fmt: skip
    with pytest.raises(InputError, match="offline or unreachable"):
        api.pricebook_refresh(providers=[provider], pricebook=book, now=NOW, **offline)  # type: ignore[arg-type]
    assert (book / "reference_prices.csv").read_text() == before


def test_cli_offline_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aws_offers, "OFFERS_URL", "http://127.0.0.1:9/{region}/index.csv")
    book = tmp_path / "book"
    r = CliRunner().invoke(app, ["pricebook", "refresh", "--provider", "aws", "--aws-source", "offers",
                                 "--pricebook", str(book)])  # fmt: skip
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "offline or unreachable" in r.stderr and not book.exists()
    r = CliRunner().invoke(app, ["pricebook", "refresh", "--provider", "aws", "--aws-source", "ftp"])
    assert r.exit_code == 2 and "expected api or offers" in r.stderr


def test_not_an_offer_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no SKU header"):
        list(aws_offers.offer_rows([["FormatVersion", "v1.0"], ["a", "b"]], "here"))
    with pytest.raises(InputError, match="no column"):
        list(aws_offers.offer_rows([["SKU", "Unit"], ["x", "Hrs"]], "here"))
