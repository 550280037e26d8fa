"""Issue 27 items 8, 9, 12: every price read from a file or an API is a finite positive number of the right type,
and API strings are checked before they reach the pricebook.

A user ``reference_prices.csv`` with ``inf`` passed the loader (``nan`` and ``-1`` were refused) and ``plan``
exited 70; ``pricebook refresh`` wrote ``inf`` from ``retailPrice: 1e999``, took ``retailPrice: true`` as $1,
died of RecursionError on a deeply nested answer, and stored region, meterId and skuName verbatim (newline,
ESC, a leading ``=``). The Azure answers come from a real HTTP server on 127.0.0.1; AWS's through boto3's
Stubber, as in ``test_pricebook_refresh``.
"""

from __future__ import annotations

import csv
import json
import re
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.catalog.fetchers.aws import aws_rows
from finops_cli.catalog.pricebook import REF_COLUMNS
from finops_cli.cli.app import app
from finops_cli.errors import InputError

NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
HEADER = ",".join(REF_COLUMNS)
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


# ------------------------------------------------------------------------------------- the user's price table
def _estate(tmp_path: Path, price: str) -> tuple[Path, list[str]]:
    book = tmp_path / "book"
    book.mkdir()
    (book / "instance_types.csv").write_text(
        "provider,kind,instance_type,gpus,accelerator,gpu_memory_gb,source,date_read\n"
        "aws,instance,p3.2xlarge,1,V100,16,https://aws.amazon.com/ec2/instance-types/p3/,2026-12-01\n"
    )
    (book / "reference_prices.csv").write_text(
        HEADER + f"\naws,p3.2xlarge,on_demand,V100,1,{price},{price},,,us-east-1,our quote,2026-12-01\n"
    )
    fleet, workloads = tmp_path / "fleet.yaml", tmp_path / "workloads.yaml"
    fleet.write_text(
        "version: 1\nsubstrates:\n  - {id: od, provider: aws, kind: on_demand, accelerator: V100, region: us-east-1, "
        "jurisdiction: US, price_ref: aws/p3.2xlarge/on_demand}\n"
    )
    workloads.write_text(
        "version: 1\nworkloads:\n  - {id: train, unit: gpu_hours, throughput: {V100: 1}, demand: {total: 96}}\n"
    )
    plan = ["--pricebook", str(book), "plan", "--fleet", str(fleet), "--workloads", str(workloads),
            "--horizon", "2026-11-01T00:00:00Z:24", "--format", "json"]  # fmt: skip
    return book, plan


def test_a_finite_price_plans(tmp_path: Path) -> None:
    _, plan = _estate(tmp_path, "3.06")
    r = CliRunner().invoke(app, plan)
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("price", ["inf", "-inf", "Infinity", "1e999", "nan", "-1", "0", "abc"])
def test_a_price_that_is_not_a_finite_positive_number_is_exit_2(tmp_path: Path, price: str) -> None:
    _, plan = _estate(tmp_path, price)
    r = CliRunner().invoke(app, plan)
    assert r.exit_code == 2, r.output
    line = r.stderr.strip()
    assert "\n" not in line and "reference_prices.csv" in line and "line 2" in line and "finite price" in line


@pytest.mark.parametrize("gpus", ["0", "1.5", "inf", "-8"])
def test_gpus_must_be_a_whole_positive_number(tmp_path: Path, gpus: str) -> None:
    book, _ = _estate(tmp_path, "3.06")
    path = book / "reference_prices.csv"
    path.write_text(path.read_text().replace(",V100,1,", f",V100,{gpus},"))
    r = CliRunner().invoke(app, ["--pricebook", str(book), "pricebook", "show"])
    assert r.exit_code == 2 and "gpus" in r.stderr and "line 2" in r.stderr, r.output


# --------------------------------------------------------------------------------------- Azure Retail Prices
def _item(**change: object) -> dict:
    item = {
        "currencyCode": "USD", "retailPrice": 98.32, "armRegionName": "eastus",
        "armSkuName": "Standard_ND96isr_H100_v5",
        "effectiveStartDate": "2026-10-01T00:00:00Z", "meterId": "m-1", "skuName": "ND96isr H100 v5",
        "productName": "Virtual Machines NDisrH100v5 Series", "unitOfMeasure": "1 Hour", "type": "Consumption",
    }  # fmt: skip
    item.update(change)
    return item


class _Answer(BaseHTTPRequestHandler):
    """Answers every request with :attr:`body`, the test's chosen page."""

    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def azure():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def refresh(body: bytes, book: Path) -> Any:
        _Answer.body = body
        url = f"http://127.0.0.1:{server.server_address[1]}/api/retail/prices"
        return api.pricebook_refresh(providers=["azure"], regions={"azure": ["eastus"]}, pricebook=book,
                                     azure_url=url, now=NOW)  # fmt: skip

    yield refresh
    server.shutdown()
    server.server_close()


def _page(*items: dict) -> bytes:
    return json.dumps({"BillingCurrency": "USD", "Items": list(items), "NextPageLink": None}).encode()


def _rows(book: Path) -> list[dict[str, str]]:
    with open(book / "reference_prices.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize(
    "body, says",
    [
        (_page(_item()).replace(b"98.32", b"1e999"), "inf"),  # JSON reads it as infinity
        (_page(_item(retailPrice=True)), "True"),  # not $1
        (_page(_item(retailPrice="98.32")), "'98.32'"),  # a string where the API sends a number
        (_page(_item(retailPrice=-4.0)), "-4.0"),
        (_page(_item(retailPrice=1e300)), "1e+300"),
        (_page(_item(retailPrice=None)), "None"),
    ],
    ids=["1e999", "true", "string", "negative", "absurd", "null"],
)
def test_azure_prices_must_be_finite_numbers(tmp_path: Path, azure, body: bytes, says: str) -> None:
    book = tmp_path / "b"
    azure(_page(_item()), book)
    before = (book / "reference_prices.csv").read_bytes()
    with pytest.raises(InputError, match="retailPrice") as err:
        azure(body, book)
    assert says in str(err.value) and "\n" not in str(err.value)
    assert (book / "reference_prices.csv").read_bytes() == before


def test_a_deeply_nested_answer_is_one_line_not_a_recursion_error(tmp_path: Path, azure) -> None:
    depth = 200_000
    with pytest.raises(InputError, match="not JSON"):
        azure(b'{"Items": ' + b"[" * depth + b"]" * depth + b"}", tmp_path / "b")
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    "change",
    [
        {"armRegionName": "eastus\nazure,forged,on_demand"},
        {"armRegionName": "=cmd|' /C calc'!A0"},
        {"armSkuName": "Standard_ND96isr_H100_v5\x1b]0;pwned\x07"},
        {"armSkuName": "-Standard_ND96"},
    ],
    ids=["region-newline", "region-formula", "size-escape", "size-leading-minus"],
)
def test_api_names_that_are_not_names_are_refused(tmp_path: Path, azure, change: dict) -> None:
    with pytest.raises(InputError, match="is not a valid name") as err:
        azure(_page(_item(**change)), tmp_path / "b")
    assert not UNSAFE.search(str(err.value)), repr(str(err.value))
    assert not (tmp_path / "b").exists()


def test_api_free_text_is_stored_as_one_clean_line(tmp_path: Path, azure) -> None:
    book = tmp_path / "b"
    hostile = _item(meterId="m-1\n=HYPERLINK(\"x\")\x1b[2J", skuName="ND96isr H100 v5\u202e",
                    productName="Virtual Machines\r\nforged")  # fmt: skip
    result = azure(_page(hostile), book)
    assert result.rows == {"azure": 1}
    (row,) = _rows(book)
    assert row["region"] == "eastus" and row["usd_per_instance_hour"] == "98.32"
    assert not UNSAFE.search(row["source"]) and "m-1 =HYPERLINK" in row["source"], repr(row["source"])
    assert len((book / "reference_prices.csv").read_text().splitlines()) == 2  # header and one row


# --------------------------------------------------------------------------------------------- AWS Price List
def _product(usd: object, itype: str = "p5.48xlarge", region: str = "us-east-1") -> dict:
    return {
        "product": {"sku": "S", "attributes": {"instanceType": itype, "regionCode": region, "operatingSystem": "Linux",
                                               "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}},
        "terms": {"OnDemand": {"S.T": {"offerTermCode": "T", "effectiveDate": "2026-10-01",
                                       "priceDimensions": {"S.T.D": {"unit": "Hrs", "beginRange": "0",
                                                                     "pricePerUnit": {"USD": usd}}}}}},
    }  # fmt: skip


@pytest.mark.parametrize("usd", ["inf", "NaN", "1e999", "-3", True, 55.04])
def test_aws_prices_must_be_finite_number_strings(usd: object) -> None:
    assert aws_rows([_product("55.04")], NOW)[0]["usd_per_instance_hour"] == "55.04"
    with pytest.raises(InputError, match=r"AWS Price List: p5\.48xlarge in us-east-1"):
        aws_rows([_product(usd)], NOW)


def test_aws_region_with_a_line_end_is_refused() -> None:
    with pytest.raises(InputError, match=r"region .* is not a valid name"):
        aws_rows([_product("55.04", region="us-east-1\nforged")], NOW)


def test_a_deeply_nested_price_list_item_is_one_line(tmp_path: Path) -> None:
    client = boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": ["[" * 200_000]}, {
            "ServiceCode": ANY, "Filters": ANY, "FormatVersion": ANY, "MaxResults": ANY})  # fmt: skip
        with pytest.raises(InputError, match="not JSON"):
            api.pricebook_refresh(providers=["aws"], regions={"aws": ["us-east-1"]}, pricebook=tmp_path / "b",
                                  aws_client=client, now=NOW)  # fmt: skip
