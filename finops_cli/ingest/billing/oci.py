"""Oracle Cloud (OCI) native cost reports (``reports/cost-csv``, ``lineItem/…``, ``cost/…`` columns) → FOCUS.

The money in is ``cost/myCost`` (the line's cost at the tenancy's rates; ``cost/myCostOverage`` is the part of it
billed as overage, not more money). OCI bills GPUs per GPU-hour: a line whose SKU description names an
accelerator and whose unit is a GPU hour is GPU time directly. Rules: docs/formats.md ("OCI cost reports").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.ingest.billing.base import (
    BILLING_FORMATS,
    BatchContext,
    BillingFormat,
    Converted,
    SourceColumns,
    add_months,
    col,
    const,
    fill0,
    hours_factor,
    lookup,
    month_floor,
    only,
    tags_from_columns,
    where,
)
from finops_cli.ingest.billing.units import focus_units
from finops_cli.ingest.readers.values import map_unique, refuse_first

TAG_PREFIX = "tags/"
SERVICE_CATEGORY = {
    "COMPUTE": "Compute",
    "BLOCK_STORAGE": "Storage",
    "OBJECTSTORE": "Storage",
    "FILE_STORAGE": "Storage",
    "NETWORK": "Networking",
    "DATABASE": "Databases",
    "DATA_SCIENCE": "AI and Machine Learning",
    "GENERATIVE_AI": "AI and Machine Learning",
}
#: an accelerator named in an OCI SKU description ("Compute - GPU - H100", "GPU Standard - A10")
_ACCELERATOR = re.compile(r"\b(GB200|B200|H200|H100|A100|A10|L40S|V100|P100|MI300X)\b", re.IGNORECASE)


def _sniff(cols: frozenset[str]) -> float:
    return 2.5 if {"lineItem/intervalUsageStart", "cost/myCost", "cost/currencyCode"} <= cols else 0.0


def oci_accelerator(description: str | None) -> str | None:
    """The accelerator a GPU SKU description names (``"Compute - GPU - H100"`` → ``H100``), else None."""
    if not description or "gpu" not in description.lower():
        return None
    m = _ACCELERATOR.search(description)
    return m.group(1).upper() if m else None


@BILLING_FORMATS.register("oci", aliases=["oci-cost"], sniff=_sniff)
class OciCostReport(BillingFormat):
    name = "oci"
    required = ("lineItem/intervalUsageStart", "cost/myCost", "cost/currencyCode")
    types: ClassVar[Mapping[str, pa.DataType]] = {"cost/myCost": pa.float64(), "usage/billedQuantity": pa.float64()}
    optional = (
        "lineItem/referenceNo",
        "lineItem/tenantId",
        "lineItem/intervalUsageEnd",
        "lineItem/isCorrection",
        "product/service",
        "product/compartmentId",
        "product/compartmentName",
        "product/region",
        "product/availabilityDomain",
        "product/resourceId",
        "product/Description",
        "cost/productSku",
        "cost/unitPrice",
        "cost/skuUnitDescription",
        "cost/billingUnitReadable",
    )

    def columns(self, header: Sequence[str], *, every_known: bool = False) -> list[str] | None:
        out = super().columns(header, every_known=every_known) or []
        return out + [h for h in header if h.startswith(TAG_PREFIX) and h not in out]

    def convert(self, batch: pa.RecordBatch, ctx: BatchContext) -> Converted:
        n = batch.num_rows
        src = SourceColumns(batch, ctx)
        cost = src.num("cost/myCost")
        refuse_first(pc.is_null(cost), "cost/myCost is empty: every OCI cost line has one", path=ctx.path,
                     first_row=ctx.first_row, column="cost/myCost")  # fmt: skip
        start = src.ts("lineItem/intervalUsageStart")
        end = src.ts("lineItem/intervalUsageEnd")
        end = start if end is None else end
        period_start = month_floor(start)

        quantity = src.num("usage/billedQuantity")
        unit = col(batch, "cost/skuUnitDescription")
        description = col(batch, "product/Description")
        accelerator = (map_unique(description, oci_accelerator, pa.string()) if description is not None
                       else pa.nulls(n, pa.string()))  # fmt: skip
        per_hour = hours_factor(unit) if unit is not None else None
        gpu_unit = pc.fill_null(pc.match_substring(pc.utf8_lower(unit), "gpu"), False) if unit is not None else None
        gpu_line = pc.and_(pc.is_valid(accelerator), gpu_unit if gpu_unit is not None else pa.scalar(False))
        hours = (
            pc.multiply(fill0(quantity, n), pc.fill_null(per_hour, 1.0)) if per_hour is not None else fill0(quantity, n)
        )
        gpu_hours = where(gpu_line, hours, 0.0)
        correction = col(batch, "lineItem/isCorrection")
        is_correction = (pc.fill_null(pc.equal(pc.utf8_lower(correction), "true"), False) if correction is not None
                         else pa.repeat(pa.scalar(False), n))  # fmt: skip
        service = col(batch, "product/service")
        tags = tags_from_columns(
            batch, {h: h[len(TAG_PREFIX) :] for h in batch.schema.names if h.startswith(TAG_PREFIX)}
        )

        columns = {
            "BillingAccountId": col(batch, "lineItem/tenantId"),
            "SubAccountId": col(batch, "product/compartmentId"),
            "SubAccountName": col(batch, "product/compartmentName"),
            "BillingPeriodStart": period_start,
            "BillingPeriodEnd": add_months(period_start, 1),
            "ChargePeriodStart": start,
            "ChargePeriodEnd": end,
            "BilledCost": cost,
            "EffectiveCost": cost,
            "BillingCurrency": col(batch, "cost/currencyCode"),
            "ChargeCategory": const("Usage", n),
            "ChargeClass": only(is_correction, "Correction"),
            "ChargeDescription": description,
            "PricingCategory": const("Standard", n),
            **_units(quantity, unit),
            "ResourceId": col(batch, "product/resourceId"),
            "ServiceName": service,
            "ServiceCategory": lookup(service, SERVICE_CATEGORY, "Other") if service is not None else const("Other", n),
            "ProviderName": const("Oracle", n),
            "PublisherName": const("Oracle", n),
            "InvoiceIssuerName": const("Oracle", n),
            "RegionId": col(batch, "product/region"),
            "AvailabilityZone": col(batch, "product/availabilityDomain"),
            "SkuId": col(batch, "cost/productSku"),
            "Tags": tags,
            "x_AcceleratorType": only(gpu_line, accelerator),
            "x_GpuHours": gpu_hours,
        }
        return Converted(columns, cost_in=cost, usage_hours=None, provider="oci")


def _units(quantity: pa.Array | None, unit: pa.Array | None) -> dict[str, pa.Array | None]:
    """OCI counts blocks (``Million Datapoints``: the quantity is in millions): PricingQuantity/Unit as given
    (``1000000 Datapoints``), ConsumedQuantity × the block in the single unit; names in FOCUS Unit Format."""
    if unit is None:
        return {"ConsumedQuantity": quantity, "PricingQuantity": quantity}
    block, consumed_unit, pricing_unit = focus_units(unit)
    consumed = None if quantity is None else pc.multiply(quantity, block)
    return {"ConsumedQuantity": consumed, "ConsumedUnit": consumed_unit, "PricingQuantity": quantity,
            "PricingUnit": pricing_unit}  # fmt: skip
