"""FOCUS 1.0–1.3 exports, read natively: typed, Tags normalised, enumerations spelled canonically.

FOCUS has no instance-type column: :data:`_TYPE_RULES` recognises it per line from the first column that
names one (each rule and its source: docs/formats.md, "FOCUS 1.0–1.3").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.catalog.gpus import (
    gcp_gpu_sku_facts,
    instance_gpu_facts,
    instance_type_in,
    is_database_class,
    is_gpu_family,
)
from finops_cli.ingest.billing.base import (
    BILLING_FORMATS,
    BatchContext,
    BillingFormat,
    Converted,
    SourceColumns,
    add_months,
    canonical,
    col,
    const,
    hours_factor,
    month_floor,
    only,
    parse_json_cells,
    tags_json,
    where,
)
from finops_cli.ingest.billing.oci import oci_accelerator
from finops_cli.ingest.readers.values import map_unique, refuse_first
from finops_cli.schema.billing import BILLING_SCHEMA, CHARGE_CATEGORIES, PRICING_CATEGORIES, provider_slug

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


#: columns FOCUS 1.1+ and the providers' own FOCUS exports add that name the instance type
PROVIDER_COLUMNS = ("SkuPriceDetails", "SkuMeter", "x_SkuDetails", "x_SkuMeterName", "x_UsageType")


def _sniff(cols: frozenset[str]) -> float:
    return 3.0 if {"BilledCost", "ChargePeriodStart", "BillingCurrency"} <= cols else 0.0


#: columns each FOCUS version added (newest first): a file's version is the newest whose columns it has
VERSION_COLUMNS = (
    ("1.3", ("ServiceProviderName", "HostProviderName", "ContractApplied", "AllocatedMethodId")),
    ("1.2", ("InvoiceId", "PricingCurrency", "BillingAccountType", "SubAccountType", "PricingCurrencyEffectiveCost")),
    (
        "1.1",
        (
            "ServiceSubcategory",
            "SkuMeter",
            "SkuPriceDetails",
            "CapacityReservationId",
            "CommitmentDiscountQuantity",
            "CommitmentDiscountUnit",
        ),
    ),
)


def focus_version(header: Sequence[str]) -> str:
    """The FOCUS version a file's columns show (1.0 when it has none of the later versions' columns)."""
    have = set(header)
    return next((v for v, cols in VERSION_COLUMNS if have.intersection(cols)), "1.0")


@BILLING_FORMATS.register("focus", aliases=["focus-1.0", "focus-1.2", "focus-1.3"], sniff=_sniff)
class Focus(BillingFormat):
    name = "focus"
    required = ("BilledCost", "BillingCurrency", "ChargePeriodStart", "BillingAccountId")
    types: ClassVar[Mapping[str, pa.DataType]] = {c: pa.float64() for c in MONEY}
    optional = (*TEXT, *TIMES, "Tags", "ServiceProviderName", "ChargeCategory", "PricingCategory", *PROVIDER_COLUMNS)

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
        # Canonical spelling of the enumerations (files in the wild vary in case: Oracle's 'Usage-based').
        for name, allowed in (("ChargeCategory", CHARGE_CATEGORIES), ("PricingCategory", PRICING_CATEGORIES)):
            if columns[name] is not None:
                columns[name] = canonical(columns[name], allowed, keep_unknown=False)
        for name, spelled in ENUMERATIONS.items():
            if columns[name] is not None:
                columns[name] = canonical(columns[name], spelled, keep_unknown=True)
        tags = col(batch, "Tags")
        columns["Tags"] = (
            parse_json_cells(tags, tags_json, path=ctx.path, column="Tags", first_row=ctx.first_row)
            if tags is not None
            else None
        )
        columns["x_InstanceType"], details_gpus = _instance_types(batch, columns)
        if columns["x_GpuCount"] is None:
            columns["x_GpuCount"] = details_gpus
        _count_unknown_gpu_types(columns["x_InstanceType"], ctx)
        usage_hours = None
        if columns["ConsumedQuantity"] is not None:
            unit = columns["ConsumedUnit"] if columns["ConsumedUnit"] is not None else const(None, n)
            factor = hours_factor(unit)
            is_usage = pc.equal(columns["ChargeCategory"], "Usage") if columns["ChargeCategory"] is not None else None
            hours = pc.fill_null(pc.multiply(columns["ConsumedQuantity"], factor), 0.0)
            usage_hours = where(is_usage, hours, 0.0) if is_usage is not None else hours
            if columns["ChargeDescription"] is not None:  # per-GPU SKUs (Google Cloud): the hours are GPU-hours
                sku = map_unique(columns["ChargeDescription"], _gpu_sku, pa.string())
                per_gpu = pc.and_(pc.is_valid(sku), pc.is_null(columns["x_InstanceType"]))
                found = only(per_gpu, sku)
                have = columns["x_AcceleratorType"]
                columns["x_AcceleratorType"] = found if have is None else pc.coalesce(have, found)
                direct = only(per_gpu, usage_hours)
                columns["x_GpuHours"] = (
                    direct if columns["x_GpuHours"] is None else pc.coalesce(columns["x_GpuHours"], direct)
                )
        _oracle_gpu_skus(columns)
        cost_in = columns["BilledCost"]
        return Converted(columns, cost_in=cost_in, usage_hours=usage_hours)


#: FOCUS enumerations spelled as the spec spells them (a value outside the list is kept as the file has it)
ENUMERATIONS = {
    "ChargeFrequency": ("One-Time", "Recurring", "Usage-Based"),
    "ChargeClass": ("Correction",),
    "CommitmentDiscountCategory": ("Spend", "Usage"),
    "CommitmentDiscountStatus": ("Used", "Unused"),
}


def _oracle_gpu_skus(columns: dict[str, pa.Array | None]) -> None:
    """OCI's FOCUS export bills GPUs per GPU-hour ("Compute - GPU - H100"): such usage lines are GPU time."""
    provider, description = columns["ProviderName"], columns["ChargeDescription"]
    quantity, category = columns["ConsumedQuantity"], columns["ChargeCategory"]
    if provider is None or description is None or quantity is None:
        return
    oracle = pc.fill_null(pc.equal(map_unique(provider, provider_slug, pa.string()), "oci"), False)
    if not pc.any(oracle).as_py():
        return
    accelerator = only(oracle, map_unique(description, oci_accelerator, pa.string()))
    usage = pc.fill_null(pc.equal(category, "Usage"), False) if category is not None else oracle
    gpu = pc.and_(pc.fill_null(pc.is_valid(accelerator), False), pc.and_(usage, pc.is_null(columns["x_InstanceType"])))
    have_acc, have_hours = columns["x_AcceleratorType"], columns["x_GpuHours"]
    found = only(gpu, accelerator)
    columns["x_AcceleratorType"] = found if have_acc is None else pc.coalesce(have_acc, found)
    hours = only(gpu, pc.fill_null(quantity, 0.0))
    columns["x_GpuHours"] = hours if have_hours is None else pc.coalesce(have_hours, hours)


def _check_gpu_count(gpus: pa.Array | None, ctx: BatchContext) -> None:
    """``x_GpuCount`` is stored as int32: a fraction, a negative or an absurd count is the file's mistake."""
    if gpus is None:
        return
    whole = pc.and_(pc.equal(pc.floor(gpus), gpus), pc.and_(pc.greater_equal(gpus, 0), pc.less_equal(gpus, 100_000)))
    refuse_first(
        pc.invert(whole),
        lambda i: f"expected a whole number of GPUs per instance (got {gpus[i].as_py()!r})",
        path=ctx.path,
        first_row=ctx.first_row,
        column="x_GpuCount",
    )


# ------------------------------------------------------------------------------ instance types of FOCUS lines
def _known(name: str | None) -> str | None:
    return name if name and instance_gpu_facts("", name) else None


def _from_details(cell: str, keys: tuple[str, ...]) -> dict[str, object] | None:
    """A JSON key-value cell (SkuPriceDetails, x_SkuDetails) as a dict, or None when it is not one."""
    try:
        obj = json.loads(cell)
    except (ValueError, TypeError):
        return None
    return {k: obj[k] for k in keys if k in obj} if isinstance(obj, dict) else None


_TYPE_KEYS = ("F_InstanceType", "InstanceType", "x_InstanceType", "ServiceType", "VMSize", "vmSize")
_GPU_KEYS = ("F_GpuCount", "GpuCount", "x_GpuCount")


def _details_type(cell: str) -> str | None:
    d = _from_details(cell, _TYPE_KEYS)
    return next((str(d[k]) for k in _TYPE_KEYS if d and d.get(k)), None)


def _details_gpus(cell: str) -> int | None:
    d = _from_details(cell, _GPU_KEYS)
    for k in _GPU_KEYS:
        v = d.get(k) if d else None
        if isinstance(v, int | float) and not isinstance(v, bool) and v == int(v) and 0 < v <= 100_000:
            return int(v)
    return None


def _meter_type(meter: str) -> str | None:
    """An Azure VM meter (``ND96isr H100 v5``, ``NC24ads A100 v4 Spot``) as its size, when the pricebook knows it."""
    name = re.sub(r"\s+(Spot|Low Priority)$", "", meter.strip(), flags=re.IGNORECASE)
    if not re.fullmatch(r"[A-Z]{1,3}\d+[A-Za-z]*( [A-Za-z0-9]+)*", name):
        return None
    return _known("Standard_" + name.replace(" ", "_"))


def _gpu_sku(description: str) -> str | None:
    facts = gcp_gpu_sku_facts(description)
    return facts.accelerator if facts else None


#: (column, cell → instance type) in the order they are tried; the first that names a type wins per line
_TYPE_RULES = (
    ("x_InstanceType", lambda v: v.strip() or None),
    ("SkuPriceDetails", _details_type),
    ("x_SkuDetails", _details_type),
    ("x_UsageType", instance_type_in),
    ("SkuMeter", _meter_type),
    ("x_SkuMeterName", _meter_type),
    ("ChargeDescription", instance_type_in),
    ("ResourceType", instance_type_in),
    ("SkuId", _known),
)


def _compute_type(rule: Callable[[str], str | None], cell: str) -> str | None:
    """A rule's type unless it is a database class (``db.r6g.large``, ``GP_Gen5_4``): the next rule may name one."""
    found = rule(cell)
    return None if found is None or is_database_class(found) else found


def _instance_types(batch: pa.RecordBatch, columns: dict[str, pa.Array | None]) -> tuple[pa.Array, pa.Array | None]:
    """Each line's instance type by :data:`_TYPE_RULES`, and GPUs per instance from SkuPriceDetails (or None)."""
    found = []
    for name, rule in _TYPE_RULES:
        values = columns.get(name) if name in columns else col(batch, name)
        if values is not None:
            found.append(map_unique(pc.cast(values, pa.string()), partial(_compute_type, rule), pa.string()))
    types = pc.coalesce(*found) if len(found) > 1 else found[0] if found else pa.nulls(batch.num_rows, pa.string())
    details = col(batch, "SkuPriceDetails")
    gpus = map_unique(pc.cast(details, pa.string()), _details_gpus, pa.int32()) if details is not None else None
    return types, gpus


def _count_unknown_gpu_types(types: pa.Array, ctx: BatchContext) -> None:
    """Tally lines whose type is of a GPU family but not in the pricebook (``ctx.state['unknown_gpu_types']``)."""
    counts = pc.value_counts(types)
    unknown = ctx.state.setdefault("unknown_gpu_types", {})
    for name, lines in zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True):
        if name and is_gpu_family(name) and instance_gpu_facts("", name) is None:
            unknown[name] = unknown.get(name, 0) + lines
