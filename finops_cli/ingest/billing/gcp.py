"""Google Cloud billing export (BigQuery detailed/standard export as CSV, JSON Lines or Parquet) → FOCUS.

Credits are nested in the usage line, so the money in is ``cost + Σ credits[].amount``; GPU SKUs are billed
per GPU. The mapping rules: docs/formats.md ("GCP billing export").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.catalog.gpus import gcp_gpu_sku_facts, gcp_pricing_category
from finops_cli.errors import InputError
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
    first_col,
    hours_factor,
    isin,
    lookup,
    only,
    parse_json_cells,
    tags_from_lists,
    tags_json,
    where,
)
from finops_cli.ingest.billing.units import focus_units
from finops_cli.ingest.readers.values import MAX_YEAR, MIN_YEAR, map_unique, refuse_first

MACHINE_SPEC = "compute.googleapis.com/machine_spec"
COST_TYPE = {"regular": "Usage", "tax": "Tax", "adjustment": "Adjustment", "rounding_error": "Adjustment"}
SERVICE_CATEGORY = {
    "Compute Engine": "Compute",
    "Kubernetes Engine": "Compute",
    "Cloud Storage": "Storage",
    "Networking": "Networking",
    "Vertex AI": "AI and Machine Learning",
    "BigQuery": "Analytics",
}


def _sniff(cols: frozenset[str]) -> float:
    return 2.0 if {"billing_account_id", "cost", "currency"} <= cols and "sku.description" in cols else 0.0


@BILLING_FORMATS.register("gcp", aliases=["gcp-billing", "bigquery"], sniff=_sniff)
class GcpBilling(BillingFormat):
    name = "gcp"
    required = ("billing_account_id", "cost", "currency", "usage_start_time", "sku.description")
    types: ClassVar[Mapping[str, pa.DataType]] = {
        "cost": pa.float64(),
        "usage.amount": pa.float64(),
        "usage.amount_in_pricing_units": pa.float64(),
        "currency_conversion_rate": pa.float64(),
    }
    nested: ClassVar[Mapping[str, pa.DataType]] = {
        "credits": pa.list_(
            pa.struct(
                [
                    ("name", pa.string()),
                    ("amount", pa.float64()),
                    ("full_name", pa.string()),
                    ("id", pa.string()),
                    ("type", pa.string()),
                ]
            )
        ),
        "labels": pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())])),
        "system_labels": pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())])),
    }
    optional = (
        "service.id",
        "service.description",
        "sku.id",
        "usage_end_time",
        "project.id",
        "project.name",
        "labels",
        "system_labels",
        "location.region",
        "location.zone",
        "location.location",
        "usage.unit",
        "usage.pricing_unit",
        "credits",
        "invoice.month",
        "cost_type",
        "resource.name",
        "resource.global_name",
    )

    def convert(self, batch: pa.RecordBatch, ctx: BatchContext) -> Converted:
        n = batch.num_rows
        src = SourceColumns(batch, ctx)
        cost = src.num("cost")
        if cost is not None:  # an empty cost is not $0.00 (FOCUS and CUR refuse it too)
            refuse_first(
                pc.is_null(cost),
                "cost is empty: every GCP billing line has one",
                path=ctx.path,
                first_row=ctx.first_row,
                column="cost",
            )
        credits = col(batch, "credits")
        credit_sum = _credit_sums(credits, ctx) if credits is not None else pa.repeat(pa.scalar(0.0), n)
        has_cud = _has_cud(credits, ctx) if credits is not None else pa.repeat(pa.scalar(False), n)
        billed = pc.add(fill0(cost, n), credit_sum)

        start = src.ts("usage_start_time")
        end = src.ts("usage_end_time")
        end = start if end is None else end
        period_start = _invoice_month(col(batch, "invoice.month"), start, ctx)

        sku = col(batch, "sku.description")
        cost_type = col(batch, "cost_type")
        category = lookup(cost_type, COST_TYPE, "Usage") if cost_type is not None else const("Usage", n)
        commitment_sku = pc.fill_null(pc.match_substring_regex(sku, r"^(?i)commitment"), False)
        category = where(pc.and_(pc.equal(category, "Usage"), commitment_sku), "Purchase", category)
        pricing = map_unique(sku, gcp_pricing_category, pa.string())
        pricing = where(has_cud, "Committed", pc.fill_null(pricing, "Standard"))
        priced = isin(category, ["Usage", "Purchase"])
        pricing = only(priced, pricing)

        gpu_acc = map_unique(sku, lambda d: (f := gcp_gpu_sku_facts(d)) and f.accelerator, pa.string())
        amount = src.num("usage.amount")
        unit = col(batch, "usage.unit")
        unit_hours = hours_factor(unit) if unit is not None else None
        gpu_hours = (
            pc.multiply(fill0(amount, n), fill0(unit_hours, n))
            if amount is not None and unit_hours is not None
            else pa.repeat(pa.scalar(0.0), n)
        )
        gpu_hours = where(pc.and_(pc.is_valid(gpu_acc), pc.equal(category, "Usage")), gpu_hours, 0.0)

        system_labels, labels = col(batch, "system_labels"), col(batch, "labels")
        instance_type = None if system_labels is None else _labels(system_labels, ctx, "system_labels", MACHINE_SPEC)
        tags = None if labels is None else _labels(labels, ctx, "labels")
        service = col(batch, "service.description")
        resource_name = col(batch, "resource.name")
        resource_id = first_col(batch, "resource.global_name", "resource.name")
        region = first_col(batch, "location.region", "location.location")

        columns = {
            "BillingAccountId": col(batch, "billing_account_id"),
            "SubAccountId": col(batch, "project.id"),
            "BillingPeriodStart": period_start,
            "BillingPeriodEnd": add_months(period_start, 1),
            "ChargePeriodStart": start,
            "ChargePeriodEnd": end,
            "BilledCost": billed,
            "EffectiveCost": billed,
            "ListCost": cost,
            "BillingCurrency": col(batch, "currency"),
            "ChargeCategory": category,
            "ChargeDescription": sku,
            "PricingCategory": pricing,
            "ConsumedQuantity": only(pc.equal(category, "Usage"), amount),
            "ConsumedUnit": only(pc.equal(category, "Usage"), _focus_unit(unit, 1)),
            # the SKU's pricing unit and the quantity in it, as the export states them (``gibibyte month``)
            "PricingQuantity": only(priced, src.num("usage.amount_in_pricing_units")),
            "PricingUnit": only(priced, _focus_unit(col(batch, "usage.pricing_unit"), 2)),
            "ResourceId": resource_id,
            "ResourceName": resource_name,
            "ServiceName": service,
            "ServiceCategory": lookup(service, SERVICE_CATEGORY, "Other") if service is not None else const("Other", n),
            "ProviderName": const("Google Cloud", n),
            "PublisherName": const("Google Cloud", n),
            "InvoiceIssuerName": const("Google Cloud", n),
            "RegionId": region,
            "AvailabilityZone": col(batch, "location.zone"),
            "SkuId": col(batch, "sku.id"),
            "Tags": tags,
            "x_InstanceType": instance_type,
            "x_AcceleratorType": gpu_acc,
            "x_GpuHours": gpu_hours,
        }
        return Converted(columns, cost_in=billed, usage_hours=None, provider="gcp")


def _focus_unit(units: pa.Array | None, which: int) -> pa.Array | None:
    """GCP's unit names in FOCUS Unit Format (``seconds`` → Seconds, ``gibibyte month`` → GiB-Months): ``which`` 1
    for the consumed unit, 2 for the pricing unit (a block, if any, kept: the quantity counts blocks)."""
    return None if units is None else focus_units(units)[which]


def _invoice_month(values: pa.Array | None, start: pa.Array, ctx: BatchContext) -> pa.Array:
    """``invoice.month`` ``202610`` → 2026-10-01T00:00Z; without it, the month of usage_start_time."""
    if values is None:
        return pc.floor_temporal(start, unit="month")
    text = pc.cast(values, pa.string())
    try:
        parsed = pc.strptime(text, format="%Y%m", unit="us", error_is_null=False)
    except pa.ArrowException:
        for i, v in enumerate(text.to_pylist()):
            try:
                pc.strptime(pa.array([v]), format="%Y%m", unit="us", error_is_null=False)
            except pa.ArrowException:
                raise InputError(
                    f"expected YYYYMM (got {v!r})",
                    path=ctx.path,
                    where=f"row {ctx.first_row + i}, column 'invoice.month'",
                ) from None
        raise
    years = pc.year(parsed)
    refuse_first(
        pc.or_(pc.less(years, MIN_YEAR), pc.greater(years, MAX_YEAR)),
        lambda i: f"invoice month {text[i].as_py()!r} is outside {MIN_YEAR}–{MAX_YEAR}",
        path=ctx.path,
        first_row=ctx.first_row,
        column="invoice.month",
    )
    return pc.cast(parsed, pa.timestamp("us", tz="UTC"))


def _credit_sums(values: pa.Array, ctx: BatchContext) -> pa.Array:
    """Σ credits[].amount per row, from JSON text (CSV/JSONL) or list<struct> (Parquet)."""
    n = len(values)
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        flat = pc.list_flatten(values)
        if len(flat) == 0:
            return pa.repeat(pa.scalar(0.0), n)
        amounts = pc.fill_null(pc.cast(pc.struct_field(flat, "amount"), pa.float64()), 0.0).to_numpy()
        parents = pc.list_parent_indices(values).to_numpy()
        # in list order from 0.0, as the JSON-text path adds them: the same float, bit for bit
        return pa.array(np.bincount(parents, weights=amounts, minlength=n), pa.float64())

    def total(obj: object) -> str | None:
        if not isinstance(obj, list):
            raise ValueError("credits must be a list")
        return repr(sum(float(c.get("amount") or 0.0) for c in obj))

    sums_text = parse_json_cells(
        values, total, path=ctx.path, column="credits", first_row=ctx.first_row, python_literals=True
    )
    return pc.fill_null(pc.cast(sums_text, pa.float64()), 0.0)


def _has_cud(values: pa.Array, ctx: BatchContext) -> pa.Array:
    """True where a committed-use discount credit covers the line."""
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        flat = pc.list_flatten(values)
        hit = pc.fill_null(pc.match_substring(pc.struct_field(flat, "type"), "COMMITTED_USAGE"), False)
        parents = pc.list_parent_indices(values).to_numpy()
        out = np.zeros(len(values), dtype=bool)
        out[parents[hit.to_numpy(zero_copy_only=False)]] = True
        return pa.array(out)

    def cud(obj: object) -> str | None:
        return "1" if isinstance(obj, list) and any("COMMITTED_USAGE" in str(c.get("type", "")) for c in obj) else None

    flags = parse_json_cells(
        values, cud, path=ctx.path, column="credits", first_row=ctx.first_row, python_literals=True
    )
    return pc.is_valid(flags)


def _labels(values: pa.Array, ctx: BatchContext, column: str, pick: str | None = None) -> pa.Array:
    """GCP labels ([{key, value}]) → Tags JSON, or one label's value when ``pick`` is given."""

    def fn(obj: object) -> str | None:
        if pick is None:
            return tags_json(obj)
        if isinstance(obj, list):
            return next((d.get("value") for d in obj if isinstance(d, dict) and d.get("key") == pick), None)
        if isinstance(obj, dict):
            return obj.get(pick)
        raise ValueError("labels must be a list")

    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        return _pick_label(values, pick) if pick is not None else tags_from_lists(values)
    return parse_json_cells(values, fn, path=ctx.path, column=column, first_row=ctx.first_row, python_literals=True)


def _pick_label(values: pa.Array, key: str) -> pa.Array:
    """The value of the first ``{key, value}`` entry named ``key`` in each row's list (null if none)."""
    flat = pc.list_flatten(values)
    match = pc.fill_null(pc.equal(pc.struct_field(flat, "key"), key), False).to_numpy(zero_copy_only=False)
    where_ = np.flatnonzero(match)
    parents = pc.list_parent_indices(values).to_numpy()[where_]
    rows, first = np.unique(parents, return_index=True)
    pos = np.full(len(values), -1, dtype=np.int64)
    pos[rows] = where_[first]
    return pc.take(pc.struct_field(flat, "value"), pa.array(pos, mask=pos < 0))
