"""Exports refused before, read now, each on a month generated in its real layout: Azure usage details
(camelCase v2, with billingPeriodStartDate empty) and the legacy Azure cost report, a GCP export whose credits
and labels are Python literals, the OCI native cost report and OCI's FOCUS export. Each: totals equal the input
to the cent, GPU lines recognised, a second ingest changes nothing."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pandas as pd
import pytest

from finops_cli.errors import InputError
from finops_cli.ingest.billing import ingest_billing
from finops_cli.store import Store

DAYS = range(1, 31)


def _write(path: Path, header: str, rows: list[dict], *, bom: bool = False) -> Path:
    """``rows`` under the comma-separated ``header`` (cells a row lacks are empty)."""
    with path.open("w", newline="", encoding="utf-8-sig" if bom else "utf-8") as f:
        w = csv.DictWriter(f, header.split(","), restval="")
        w.writeheader()
        w.writerows(rows)
    return path


def _ingest_twice(store: Store, path: Path, fmt: str) -> pd.DataFrame:
    summary = ingest_billing([path], "auto", store)
    assert summary.files[0].format == fmt
    first = store.read("billing").to_pandas()
    ingest_billing([path], "auto", store)
    again = store.read("billing").to_pandas()
    assert len(again) == len(first)  # idempotent
    return again


def _cents(x: float) -> int:
    return round(x * 100)


# --- Azure usage details, camelCase v2 (EA/MCA) ------------------------------------------------------------------
CAMEL = ("invoiceId,previousInvoiceId,billingAccountId,billingAccountName,billingProfileId,billingProfileName,"
         "invoiceSectionId,invoiceSectionName,resellerName,resellerMpnId,costCenter,billingPeriodEndDate,"
         "billingPeriodStartDate,servicePeriodEndDate,servicePeriodStartDate,date,serviceFamily,productOrderId,"
         "productOrderName,consumedService,meterId,meterName,meterCategory,meterSubCategory,meterRegion,ProductId,"
         "product,subscriptionId,subscriptionName,publisherType,publisherId,publisherName,resourceGroupName,"
         "InstanceName,resourceLocation,Location,effectivePrice,quantity,unitOfMeasure,chargeType,billingCurrency,"
         "pricingCurrency,costInBillingCurrency,costInPricingCurrency,costInUsd,paygCostInBillingCurrency,"
         "paygCostInUsd,exchangeRatePricingToBilling,exchangeRateDate,isAzureCreditEligible,serviceInfo1,"
         "serviceInfo2,additionalInfo,tags,payGPrice,frequency,term,reservationId,reservationName,unitPrice"
         )  # fmt: skip


def azure_camel_month(path: Path, rng: random.Random) -> tuple[Path, float]:
    rows, total = [], 0.0
    for day in DAYS:
        date = f"10/{day:02d}/2026"
        gpu_cost = round(24 * 3.67 * rng.uniform(0.9, 1.0), 6)
        disk_cost = round(rng.uniform(0.01, 2), 6)
        total += gpu_cost + disk_cost
        base = {"billingAccountId": "acct-1", "billingAccountName": "Kestrel", "subscriptionId": "sub-1",
                "date": date, "billingCurrency": "USD", "pricingCurrency": "USD", "chargeType": "Usage",
                "frequency": "UsageBased", "resourceLocation": "eastus", "billingPeriodStartDate": "",
                "billingPeriodEndDate": ""}  # fmt: skip
        rows.append({**base, "meterCategory": "Virtual Machines", "meterName": "NC24ads A100 v4", "quantity": 24,
                     "unitOfMeasure": "1 Hour", "costInBillingCurrency": gpu_cost, "payGPrice": 3.67,
                     "InstanceName": "/subscriptions/sub-1/resourceGroups/ml/providers/Microsoft.Compute/"
                                     "virtualMachines/train-0",
                     "additionalInfo": json.dumps({"ServiceType": "Standard_NC24ads_A100_v4", "VCPUs": 24}),
                     "tags": '"team": "ml"'})  # fmt: skip
        rows.append({**base, "meterCategory": "Storage", "meterName": "P30 LRS Disk", "quantity": 1 / 30,
                     "unitOfMeasure": "1/Month", "costInBillingCurrency": disk_cost})  # fmt: skip
    return _write(path, CAMEL, rows), total


def test_azure_camelcase_usage_details_with_empty_billing_period(tmp_path: Path, store: Store) -> None:
    path, total = azure_camel_month(tmp_path / "usage-details.csv", random.Random(1))
    lines = _ingest_twice(store, path, "azure")
    assert len(lines) == 60 and _cents(lines["BilledCost"].sum()) == _cents(total)
    assert set(lines["BillingPeriodStart"].astype(str)) == {"2026-10-01 00:00:00+00:00"}
    assert set(lines["BillingPeriodEnd"].astype(str)) == {"2026-11-01 00:00:00+00:00"}
    gpu = lines[lines["x_GpuHours"] > 0]
    assert len(gpu) == 30 and set(gpu["x_InstanceType"]) == {"Standard_NC24ads_A100_v4"}
    assert gpu["x_GpuHours"].sum() == pytest.approx(30 * 24) and set(gpu["x_AcceleratorType"]) == {"A100"}


# --- the legacy Azure cost report (PascalCase, UsageDateTime, PreTaxCost) -----------------------------------------
LEGACY = ("SubscriptionGuid,ResourceGroup,ResourceLocation,UsageDateTime,MeterCategory,MeterSubcategory,MeterId,"
          "MeterName,MeterRegion,UsageQuantity,ResourceRate,PreTaxCost,ConsumedService,ResourceType,InstanceId,Tags,"
          "OfferId,AdditionalInfo,ServiceInfo1,ServiceInfo2,ServiceName,ServiceTier,Currency,UnitOfMeasure"
          )  # fmt: skip


def test_azure_legacy_cost_report(tmp_path: Path, store: Store) -> None:
    rng, rows, total = random.Random(2), [], 0.0
    for day in DAYS:
        for meter, qty, rate, info in (
            ("ND96isr H100 v5", 24, 98.32, {"ServiceType": "Standard_ND96isr_H100_v5", "VCPUs": 96}),
            ("Data Transfer Out", rng.uniform(1, 50), 0.087, {"UsageType": "DataTrOut", "ServiceType": None}),
        ):
            cost = round(qty * rate, 8)
            total += cost
            rows.append({"SubscriptionGuid": "0039de71-0000", "ResourceGroup": "ml", "ResourceLocation": "US East 2",
                         "UsageDateTime": f"2026-10-{day:02d} 00:00:00", "MeterCategory": "Virtual Machines",
                         "MeterName": meter, "UsageQuantity": qty, "ResourceRate": rate, "PreTaxCost": cost,
                         "InstanceId": "/subscriptions/0039de71-0000/resourceGroups/ml/providers/"
                                       "Microsoft.Compute/virtualMachines/h100-0",
                         "Tags": json.dumps({"project": "p1"}), "AdditionalInfo": json.dumps(info),
                         "Currency": "USD", "UnitOfMeasure": "1 Hour" if "H100" in meter else "1 GB"})  # fmt: skip
    path = _write(tmp_path / "costreport.csv", LEGACY, rows, bom=True)
    lines = _ingest_twice(store, path, "azure")
    assert _cents(lines["BilledCost"].sum()) == _cents(total)
    assert set(lines["BillingAccountId"]) == {"0039de71-0000"} and set(lines["ChargeCategory"]) == {"Usage"}
    assert lines["x_GpuHours"].sum() == pytest.approx(30 * 24 * 8) and set(lines["RegionId"]) == {"useast2"}


# --- GCP: credits and labels written as Python literals ------------------------------------------------------------
GCP = ("billing_account_id,service.id,service.description,sku.id,sku.description,usage_start_time,usage_end_time,"
       "project.id,project.name,project.labels,project.ancestry_numbers,labels,system_labels,location.location,"
       "location.country,location.region,location.zone,export_time,cost,currency,currency_conversion_rate,"
       "usage.amount,usage.unit,usage.amount_in_pricing_units,usage.pricing_unit,credits,invoice.month,cost_type,"
       "resource.name,resource.global_name,partition_date")  # fmt: skip


def test_gcp_credits_as_python_literals(tmp_path: Path, store: Store) -> None:
    rng, rows, total = random.Random(3), [], 0.0
    for day in DAYS:
        for hour in range(0, 24, 6):
            for sku, cost in (("Nvidia Tesla T4 GPU running in Americas", 0.35), ("N1 Predefined Instance Core "
                              "running in Americas", 0.19)):  # fmt: skip
                credit = -round(cost * rng.uniform(0, 0.3), 6)
                total += cost + credit
                start = f"2026-10-{day:02d} {hour:02d}:00:00+00:00"
                credits = [{"name": "Sustained use discount", "amount": credit, "full_name": None, "id": "x",
                            "type": "SUSTAINED_USAGE_DISCOUNT"}]  # fmt: skip
                rows.append({"billing_account_id": "01A2B3", "service.description": "Compute Engine",
                             "sku.description": sku, "usage_start_time": start,
                             "usage_end_time": f"2026-10-{day:02d} {hour + 1:02d}:00:00+00:00",
                             "project.id": "ml-prod", "labels": repr([{"key": "team", "value": "ml"}]),
                             "system_labels": "[]", "location.region": "us-central1", "cost": cost,
                             "currency": "USD", "usage.amount": 3600, "usage.unit": "seconds",
                             "credits": repr(credits), "invoice.month": "202610", "cost_type": "regular"})  # fmt: skip
    path = _write(tmp_path / "gcp.csv", GCP, rows)
    lines = _ingest_twice(store, path, "gcp")
    assert _cents(lines["BilledCost"].sum()) == _cents(total)
    gpu = lines[lines["x_GpuHours"] > 0]
    assert len(gpu) == 120 and set(gpu["x_AcceleratorType"]) == {"T4"} and gpu["x_GpuHours"].sum() == 120
    assert set(lines["Tags"]) == {'{"team":"ml"}'}


def test_a_python_literal_is_read_as_data_never_run(tmp_path: Path, store: Store) -> None:
    row = {"billing_account_id": "01A2B3", "sku.description": "core", "usage_start_time": "2026-10-01 00:00:00+00:00",
           "cost": 1, "currency": "USD", "credits": "__import__('os').system('touch pwned')"}  # fmt: skip
    path = _write(tmp_path / "gcp.csv", GCP, [row])
    with pytest.raises(InputError, match=r"row 1, column 'credits'"):
        ingest_billing([path], "auto", store)
    assert not Path("pwned").exists()


# --- OCI native cost report -----------------------------------------------------------------------------------------
OCI = ("lineItem/referenceNo,lineItem/tenantId,lineItem/intervalUsageStart,lineItem/intervalUsageEnd,product/service,"
       "product/compartmentId,product/compartmentName,product/region,product/availabilityDomain,product/resourceId,"
       "usage/billedQuantity,usage/billedQuantityOverage,cost/subscriptionId,cost/productSku,product/Description,"
       "cost/unitPrice,cost/unitPriceOverage,cost/myCost,cost/myCostOverage,cost/currencyCode,"
       "cost/billingUnitReadable,cost/skuUnitDescription,cost/overageFlag,lineItem/isCorrection,"
       "lineItem/backreferenceNo,tags/Oracle-Tags.CreatedBy,tags/team")  # fmt: skip


def test_oci_native_cost_report(tmp_path: Path, store: Store) -> None:
    rng, rows, total, ref = random.Random(4), [], 0.0, 0
    for day in DAYS:
        for hour in range(24):
            start = f"2026-10-{day:02d}T{hour:02d}:00Z"
            end = f"2026-10-{day:02d}T{hour:02d}:59:59Z" if hour == 23 else f"2026-10-{day:02d}T{hour + 1:02d}:00Z"
            for sku, desc, qty, price, unit in (
                ("B98415", "Compute - GPU - H100", 8.0, 10.0, "GPU Per Hour"),
                ("B93113", "Compute - Standard - E4 - OCPU", 16.0, 0.025, "OCPU Per Hour"),
                ("B91961", "Storage - Block Volume - Storage", rng.uniform(1, 9), 0.0255 / 744, "Gigabyte Per Month"),
            ):
                ref += 1
                cost = qty * price
                total += cost
                rows.append({"lineItem/referenceNo": f"r{ref}", "lineItem/tenantId": "ocid1.tenancy.oc1..aaa",
                             "lineItem/intervalUsageStart": start, "lineItem/intervalUsageEnd": end,
                             "product/service": "COMPUTE" if "Compute" in desc else "BLOCK_STORAGE",
                             "product/compartmentId": "ocid1.compartment.oc1..ml", "product/compartmentName": "ml",
                             "product/region": "us-ashburn-1", "product/resourceId": "ocid1.instance.oc1.iad.h100-0",
                             "usage/billedQuantity": qty, "cost/productSku": sku, "product/Description": desc,
                             "cost/unitPrice": price, "cost/myCost": cost, "cost/currencyCode": "USD",
                             "cost/skuUnitDescription": unit, "lineItem/isCorrection": "false",
                             "tags/team": "ml"})  # fmt: skip
    rows.append({**rows[0], "lineItem/referenceNo": "fix-1", "cost/myCost": -4.5, "lineItem/isCorrection": "true",
                 "usage/billedQuantity": 0, "product/Description": "Compute - Standard - E4 - OCPU"})  # fmt: skip
    total -= 4.5
    path = _write(tmp_path / "oci-cost.csv", OCI, rows)
    lines = _ingest_twice(store, path, "oci")
    assert len(lines) == 30 * 24 * 3 + 1 and _cents(lines["BilledCost"].sum()) == _cents(total)
    assert set(lines["provider"]) == {"oci"} and (lines["ChargeClass"] == "Correction").sum() == 1
    gpu = lines[lines["x_GpuHours"] > 0]
    assert len(gpu) == 720 and set(gpu["x_AcceleratorType"]) == {"H100"} and gpu["x_GpuHours"].sum() == 720 * 8
    assert set(lines["Tags"]) == {'{"team":"ml"}'}


# --- OCI's FOCUS export ('Usage-based', Oracle as provider) ---------------------------------------------------------
FOCUS = ("AvailabilityZone,BilledCost,BillingAccountId,BillingAccountName,BillingCurrency,BillingPeriodEnd,"
         "BillingPeriodStart,ChargeCategory,ChargeDescription,ChargeFrequency,ChargePeriodEnd,ChargePeriodStart,"
         "ConsumedQuantity,ConsumedUnit,EffectiveCost,InvoiceIssuerName,ListCost,ListUnitPrice,PricingCategory,"
         "PricingQuantity,PricingUnit,ProviderName,PublisherName,RegionId,RegionName,ResourceId,ResourceType,"
         "ServiceCategory,ServiceName,SkuId,SkuPriceId,SubAccountId,SubAccountName,Tags,oci_ReferenceNumber,"
         "oci_CompartmentId")  # fmt: skip


def test_oci_focus_export(tmp_path: Path, store: Store) -> None:
    rows, total = [], 0.0
    for day in DAYS:
        for desc, qty, price, unit in (("Compute - GPU - A100 - v2", 192.0, 4.0, "GPU Per Hour"),
                                       ("Object Storage - Storage", 1000.0, 0.0255 / 31, "GB Months")):  # fmt: skip
            cost = round(qty * price, 10)
            total += cost
            rows.append({"BilledCost": cost, "EffectiveCost": cost, "ListCost": cost, "BillingAccountId": "ocid1.t",
                         "BillingCurrency": "USD", "BillingPeriodStart": "2026-10-01T00:00Z",
                         "BillingPeriodEnd": "2026-11-01T00:00Z", "ChargeCategory": "Usage",
                         "ChargeDescription": desc, "ChargeFrequency": "Usage-based",
                         "ChargePeriodStart": f"2026-10-{day:02d}T00:00Z",
                         "ChargePeriodEnd": f"2026-10-{day:02d}T23:59Z", "ConsumedQuantity": qty,
                         "ConsumedUnit": unit, "PricingCategory": "Standard", "ProviderName": "Oracle",
                         "PublisherName": "Oracle", "InvoiceIssuerName": "Oracle", "RegionId": "us-ashburn-1",
                         "ServiceCategory": "Compute", "ServiceName": "COMPUTE",
                         "oci_ReferenceNumber": str(day)})  # fmt: skip
    path = _write(tmp_path / "oci-focus.csv", FOCUS, rows)
    lines = _ingest_twice(store, path, "focus")
    assert _cents(lines["BilledCost"].sum()) == _cents(total)
    assert set(lines["provider"]) == {"oci"} and set(lines["ChargeFrequency"]) == {"Usage-Based"}
    gpu = lines[lines["x_GpuHours"] > 0]
    assert len(gpu) == 30 and set(gpu["x_AcceleratorType"]) == {"A100"} and gpu["x_GpuHours"].sum() == 30 * 192
