"""FOCUS 1.0–1.3 exports (FinOps Open Cost and Usage Specification), read natively.

Columns already have their FOCUS names; this parser types them, normalises Tags to sorted JSON, reads
``ServiceProviderName`` (1.3) where ``ProviderName`` is absent, and accepts the literal ``NULL`` that
some generators write. Cost in (conservation): ``BilledCost`` per ``BillingCurrency``.

GPU columns: ``x_InstanceType`` / ``x_GpuCount`` / ``x_AcceleratorType`` / ``x_GpuHours`` are taken from the
file when present (the CoreWeave and on-prem samples carry them); otherwise ``x_InstanceType`` falls back to
``SkuId`` when that names a known instance type in ``finops_cli/pricebooks/instance_types.csv``, and GPU-hours are
``ConsumedQuantity`` (in hours) × GPUs on usage lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.errors import InputError
from finops_cli.estate.pricebook import instance_gpu_facts
from finops_cli.ingest.billing.base import (
    BILLING_FORMATS,
    BatchContext,
    BillingFormat,
    Converted,
    SourceColumns,
    add_months,
    col,
    const,
    hours_factor,
    lookup,
    month_floor,
    parse_json_cells,
    tags_json,
    where,
)
from finops_cli.ingest.readers import map_unique
from finops_cli.schema.billing import BILLING_SCHEMA, CHARGE_CATEGORIES, PRICING_CATEGORIES

MONEY = (
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ContractedCost",
    "ListUnitPrice",
    "ContractedUnitPrice",
    "ConsumedQuantity",
    "PricingQuantity",
    "x_GpuHours",
    "x_GpuCount",
)
TIMES = ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd")
TEXT = tuple(f.name for f in BILLING_SCHEMA if f.name not in MONEY + TIMES and f.name not in ("Tags", "x_SourceRow"))


def _sniff(cols: frozenset[str]) -> float:
    return 3.0 if {"BilledCost", "ChargePeriodStart", "BillingCurrency"} <= cols else 0.0


@BILLING_FORMATS.register("focus", aliases=["focus-1.0", "focus-1.2", "focus-1.3"], sniff=_sniff, description="FOCUS")
class Focus(BillingFormat):
    name = "focus"
    required = ("BilledCost", "BillingCurrency", "ChargePeriodStart", "BillingAccountId")
    types: ClassVar[Mapping[str, pa.DataType]] = {c: pa.float64() for c in MONEY}
    optional = (*TEXT, *TIMES, "Tags", "ServiceProviderName", "ChargeCategory", "PricingCategory")

    def convert(self, batch: pa.RecordBatch, ctx: BatchContext) -> Converted:
        n = batch.num_rows
        src = SourceColumns(batch, ctx)
        columns: dict[str, pa.Array | None] = {}
        for name in TEXT:
            a = src.get(name)
            columns[name] = None if a is None else pc.cast(a, pa.string())
        columns.update({name: src.num(name) for name in MONEY})
        columns.update({name: src.ts(name) for name in TIMES})
        _check_gpu_count(columns["x_GpuCount"], ctx)
        if columns["ChargePeriodEnd"] is None:
            columns["ChargePeriodEnd"] = columns["ChargePeriodStart"]
        if columns["BillingPeriodStart"] is None:
            columns["BillingPeriodStart"] = month_floor(columns["ChargePeriodStart"])
        if columns["BillingPeriodEnd"] is None:
            columns["BillingPeriodEnd"] = add_months(columns["BillingPeriodStart"], 1)
        if columns["ProviderName"] is None:
            columns["ProviderName"] = col(batch, "ServiceProviderName")
        if columns["EffectiveCost"] is None:
            columns["EffectiveCost"] = columns["BilledCost"]
        # Canonical spelling of the enumerations (files in the wild vary in case).
        for name, allowed in (("ChargeCategory", CHARGE_CATEGORIES), ("PricingCategory", PRICING_CATEGORIES)):
            if columns[name] is not None:
                columns[name] = lookup(columns[name], {v: v for v in allowed}, None)
        tags = col(batch, "Tags")
        columns["Tags"] = (
            parse_json_cells(tags, tags_json, path=ctx.path, column="Tags", first_row=ctx.first_row)
            if tags is not None
            else None
        )
        if columns["x_InstanceType"] is None and columns["SkuId"] is not None:
            columns["x_InstanceType"] = map_unique(
                columns["SkuId"], lambda s: s if instance_gpu_facts("", s) else None, pa.string()
            )
        usage_hours = None
        if columns["x_GpuHours"] is None and columns["ConsumedQuantity"] is not None:
            unit = columns["ConsumedUnit"] if columns["ConsumedUnit"] is not None else const(None, n)
            factor = hours_factor(unit)
            is_usage = pc.equal(columns["ChargeCategory"], "Usage") if columns["ChargeCategory"] is not None else None
            hours = pc.fill_null(pc.multiply(columns["ConsumedQuantity"], factor), 0.0)
            usage_hours = where(is_usage, hours, 0.0) if is_usage is not None else hours
        cost_in = columns["BilledCost"]
        return Converted(columns, cost_in=cost_in, usage_hours=usage_hours)


def _check_gpu_count(gpus: pa.Array | None, ctx: BatchContext) -> None:
    """``x_GpuCount`` is stored as int32: a fraction, a negative or an absurd count is the file's mistake."""
    if gpus is None:
        return
    whole = pc.and_(pc.equal(pc.floor(gpus), gpus), pc.and_(pc.greater_equal(gpus, 0), pc.less_equal(gpus, 100_000)))
    bad = pc.invert(pc.fill_null(whole, True))
    if pc.any(bad).as_py():
        i = pc.index(bad, True).as_py()
        raise InputError(
            f"expected a whole number of GPUs per instance (got {gpus[i].as_py()!r})",
            path=ctx.path,
            where=f"row {ctx.first_row + i}, column 'x_GpuCount'",
        )
