"""Azure Cost Management exports (EA and MCA; actual and amortized cost) → FOCUS.

Column spellings, dates, Tags without braces and the actual/amortized rules: docs/formats.md ("Azure cost
exports"). Both kinds of export describe the same money, so they share one idempotency key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.errors import InputError
from finops_cli.ingest.billing.base import (
    BILLING_FORMATS,
    BatchContext,
    BillingFormat,
    Converted,
    SourceColumns,
    add_months,
    canonical,
    coalesce,
    const,
    hours_factor,
    isin,
    lookup,
    month_floor,
    only,
    parse_json_cells,
    tags_json,
    where,
)
from finops_cli.ingest.billing.units import focus_units
from finops_cli.ingest.readers.values import map_unique

PRICING_MODEL = {
    "OnDemand": "Standard",
    "On Demand": "Standard",
    "On-Demand": "Standard",
    "Spot": "Dynamic",
    "Reservation": "Committed",
    "SavingsPlan": "Committed",
    "Savings Plan": "Committed",
}
CHARGE_TYPE = {
    "Usage": "Usage",
    "UnusedReservation": "Usage",
    "UnusedSavingsPlan": "Usage",
    "Purchase": "Purchase",
    "Tax": "Tax",
    "Credit": "Credit",
    "Refund": "Adjustment",
    "RoundingAdjustment": "Adjustment",
    "Adjustment": "Adjustment",
}
SERVICE_CATEGORY = {
    "Virtual Machines": "Compute",
    "Azure Kubernetes Service": "Compute",
    "Storage": "Storage",
    "Bandwidth": "Networking",
    "Virtual Network": "Networking",
    "Azure Machine Learning": "AI and Machine Learning",
}
#: canonical (EA PascalCase) name → accepted spellings, first found wins (matched case-insensitively)
NAMES: dict[str, tuple[str, ...]] = {
    "BillingAccountId": ("BillingAccountId",),  # absent from the legacy cost report: the subscription stands in
    "BillingAccountName": ("BillingAccountName",),
    "SubscriptionName": ("SubscriptionName",),
    "ReservationName": ("ReservationName",),
    "BillingPeriodStartDate": ("BillingPeriodStartDate",),
    "BillingPeriodEndDate": ("BillingPeriodEndDate",),
    "SubscriptionId": ("SubscriptionId", "SubscriptionGuid"),
    "Date": ("Date", "UsageDateTime", "UsageDate"),
    "MeterCategory": ("MeterCategory",),
    "MeterSubCategory": ("MeterSubCategory",),
    "MeterName": ("MeterName",),
    "MeterRegion": ("MeterRegion",),
    "MeterId": ("MeterId",),
    "ProductName": ("ProductName", "Product"),
    "Quantity": ("Quantity", "UsageQuantity"),
    "Cost": ("CostInBillingCurrency", "Cost", "PreTaxCost"),
    "BillingCurrency": ("BillingCurrency", "BillingCurrencyCode", "Currency"),
    "ResourceLocation": ("ResourceLocation", "ResourceLocationNormalized"),
    "AvailabilityZone": ("AvailabilityZone",),
    "ResourceId": ("ResourceId", "InstanceId"),
    "ResourceName": ("ResourceName",),
    "AdditionalInfo": ("AdditionalInfo",),
    "Tags": ("Tags",),
    "UnitOfMeasure": ("UnitOfMeasure",),
    "ReservationId": ("ReservationId",),
    "BenefitId": ("BenefitId",),
    "ChargeType": ("ChargeType",),
    "PricingModel": ("PricingModel",),
    "PayGPrice": ("PayGPrice",),
    "EffectivePrice": ("EffectivePrice", "UnitPrice", "ResourceRate"),
    "Frequency": ("Frequency",),
    "PublisherName": ("PublisherName",),
}
NUMERIC = ("Quantity", "Cost", "PayGPrice", "EffectivePrice")


def _sniff(cols: frozenset[str]) -> float:
    """EA/MCA (PascalCase or camelCase: ChargeType) and the legacy cost report (UsageDateTime, PreTaxCost)."""
    low = {c.lower() for c in cols}
    cost = "costinbillingcurrency" in low or "cost" in low or "pretaxcost" in low
    return 2.0 if cost and "metercategory" in low and ("chargetype" in low or "usagedatetime" in low) else 0.0


def _resolve(header: Sequence[str]) -> dict[str, str]:
    """Canonical name → the header's actual spelling."""
    low = {h.lower(): h for h in header}
    out: dict[str, str] = {}
    for canon, spellings in NAMES.items():
        for s in spellings:
            if s.lower() in low:
                out[canon] = low[s.lower()]
                break
    return out


@BILLING_FORMATS.register("azure", aliases=["azure-ea", "azure-mca", "azure-cost"], sniff=_sniff)
class AzureCost(BillingFormat):
    name = "azure"
    required = ("Date", "Cost", "BillingCurrency")

    def columns(self, header: Sequence[str], *, every_known: bool = False) -> list[str] | None:
        """The header's spelling of each column (Azure varies the case): always from the header itself."""
        return list(_resolve(header).values())

    def check_header(self, header: Sequence[str], path: Path) -> None:
        found = _resolve(header)
        missing = [
            f"{c} (or {'/'.join(NAMES[c][1:])})" if len(NAMES[c]) > 1 else c for c in self.required if c not in found
        ]
        if missing:
            raise InputError(f"not an Azure cost export: missing column(s) {', '.join(missing)}", path=path)

    def types_for(self, header: Sequence[str]) -> dict[str, pa.DataType]:
        found = _resolve(header)
        return {found[c]: pa.float64() for c in NUMERIC if c in found}

    def convert(self, batch: pa.RecordBatch, ctx: BatchContext) -> Converted:
        n = batch.num_rows
        found = _resolve(batch.schema.names)
        src = SourceColumns(batch, ctx, {c: (spelling,) for c, spelling in found.items()})
        get, num, ts = src.get, src.num, src.ts

        def json_cells(key: str, fn: Callable[[Any], str | None]) -> pa.Array | None:  # Azure drops the braces
            a = get(key)
            if a is None:
                return None
            return parse_json_cells(a, fn, path=ctx.path, column=found[key], first_row=ctx.first_row, brace_less=True)

        cost = num("Cost")
        given_type = get("ChargeType")  # the legacy cost report has none: every line is usage
        charge_type = pc.fill_null(given_type, "Usage") if given_type is not None else const("Usage", n)
        unused = isin(charge_type, ["UnusedReservation", "UnusedSavingsPlan"])
        category = lookup(charge_type, CHARGE_TYPE, "Usage")
        model = get("PricingModel")
        pricing = lookup(model, PRICING_MODEL, "Standard") if model is not None else const("Standard", n)
        pricing = where(unused, "Committed", pricing)
        pricing = only(isin(category, ["Usage", "Purchase"]), pricing)
        charge_class = only(pc.equal(charge_type, "Refund"), "Correction")
        _note_kind(ctx, charge_type, model, cost)

        day = ts("Date")
        # an empty billingPeriodStartDate (camelCase usage details) is the month of the line's date
        period_start = coalesce(ts("BillingPeriodStartDate"), month_floor(day))
        period_end = ts("BillingPeriodEndDate")
        # Azure's BillingPeriodEndDate is the last day (inclusive); FOCUS ends are exclusive.
        one_day = pa.scalar(86_400_000_000, pa.duration("us"))
        period_end = coalesce(pc.add(period_end, one_day) if period_end is not None else None, add_months(period_start))

        # A block-priced unit (``10K``, ``100 Hours``) counts blocks: PricingQuantity is the quantity as given, in
        # ``10000 Units``; ConsumedQuantity is that × the block, in Units (docs/formats.md, "Units").
        unit = get("UnitOfMeasure")
        quantity = num("Quantity")
        block, consumed_unit, pricing_unit = focus_units(unit) if unit is not None else (None, None, None)
        consumed = pc.multiply(quantity, block) if quantity is not None and block is not None else quantity
        factor = hours_factor(consumed_unit) if consumed_unit is not None else None
        is_usage = pc.equal(category, "Usage")
        priced = isin(category, ["Usage", "Purchase"])
        hours = pc.multiply(consumed, factor) if consumed is not None and factor is not None else None
        usage_hours = where(pc.and_(is_usage, pc.is_valid(hours)), hours, 0.0) if hours is not None else None
        # Unused commitment lines are paid-for idle time, not GPU work.
        if usage_hours is not None:
            usage_hours = where(unused, 0.0, usage_hours)

        location = get("ResourceLocation")
        region = pc.utf8_lower(pc.replace_substring(location, " ", "")) if location is not None else None
        paygo = num("PayGPrice")
        list_cost = pc.multiply(paygo, quantity) if paygo is not None and quantity is not None else None
        commitment = coalesce(get("BenefitId"), get("ReservationId"))
        service = get("MeterCategory")
        publisher = get("PublisherName")

        columns = {
            "BillingAccountId": coalesce(get("BillingAccountId"), get("SubscriptionId")),
            "BillingAccountName": get("BillingAccountName"),
            "SubAccountName": get("SubscriptionName"),
            "CommitmentDiscountName": get("ReservationName"),
            "CommitmentDiscountStatus": only(unused, "Unused"),
            "SubAccountId": get("SubscriptionId"),
            "BillingPeriodStart": period_start,
            "BillingPeriodEnd": period_end,
            "ChargePeriodStart": day,
            "ChargePeriodEnd": pc.add(day, one_day),
            "BilledCost": cost,
            "EffectiveCost": where(_commitment_purchase(charge_type, model), 0.0, cost),
            "ListCost": list_cost,
            "ListUnitPrice": only(priced, paygo),
            "BillingCurrency": get("BillingCurrency"),
            "ChargeCategory": category,
            "ChargeClass": charge_class,
            "ChargeDescription": _description(get, num("EffectivePrice"), charge_type),
            "ChargeFrequency": _frequency(get("Frequency")),
            "PricingCategory": pricing,
            "CommitmentDiscountId": commitment,
            "ConsumedQuantity": only(is_usage, consumed),
            "ConsumedUnit": only(is_usage, consumed_unit),
            "PricingQuantity": only(priced, quantity),
            "PricingUnit": only(priced, pricing_unit),
            "ResourceId": get("ResourceId"),
            "ResourceName": get("ResourceName"),
            "ServiceName": service,
            "ServiceCategory": lookup(service, SERVICE_CATEGORY, "Other") if service is not None else const("Other", n),
            "ProviderName": const("Microsoft", n),
            "PublisherName": coalesce(publisher, const("Microsoft", n)),
            "InvoiceIssuerName": const("Microsoft", n),
            "RegionId": region,
            "AvailabilityZone": get("AvailabilityZone"),
            "SkuId": get("MeterId"),
            "Tags": json_cells("Tags", tags_json),
            "x_InstanceType": _compute_only(json_cells("AdditionalInfo", _service_type), service),
        }
        return Converted(columns, cost_in=cost, usage_hours=usage_hours, provider="azure")


#: PricingModel spellings of a commitment (a purchase of one has EffectiveCost 0 in FOCUS)
COMMITMENT_MODELS = ["Reservation", "SavingsPlan", "Savings Plan"]


def _commitment_purchase(charge_type: pa.Array, model: pa.Array | None) -> pa.Array:
    """True on a commitment purchase line: ChargeType Purchase with a Reservation or SavingsPlan pricing model."""
    purchase = pc.fill_null(pc.equal(charge_type, "Purchase"), False)
    if model is None:
        return pc.and_(purchase, pa.scalar(False))
    return pc.and_(purchase, pc.fill_null(isin(model, COMMITMENT_MODELS), False))


#: MeterCategory of database services: the size in their AdditionalInfo (``GP_Gen5_4``, or a VM size behind a
#: flexible server) is a database class, not a compute instance type
DATABASE_SERVICES = (
    "SQL Database",
    "SQL Managed Instance",
    "Azure Database for PostgreSQL",
    "Azure Database for MySQL",
    "Azure Database for MariaDB",
    "Azure Cosmos DB",
    "Redis Cache",
    "Azure Cache for Redis",
    "Azure Synapse Analytics",
)


def _compute_only(types: pa.Array | None, service: pa.Array | None) -> pa.Array | None:
    """The instance type of compute lines; null on database services' lines."""
    if types is None or service is None:
        return types
    return where(isin(service, DATABASE_SERVICES), pa.scalar(None, pa.string()), types)


def _frequency(values: pa.Array | None) -> pa.Array | None:
    """Azure's ``Frequency`` (``UsageBased``, ``OneTime``, ``Recurring``) in FOCUS spelling; unknown → the default."""
    return None if values is None else canonical(values, ("One-Time", "Recurring", "Usage-Based"), keep_unknown=False)


UNUSED = {"UnusedReservation": "Unused reservation: ", "UnusedSavingsPlan": "Unused savings plan: "}


def _description(
    get: Callable[[str], pa.Array | None], price: pa.Array | None, charge_type: pa.Array
) -> pa.Array | None:
    """FOCUS ChargeDescription, "a self-contained summary of the charge's purpose and price": the product (EA
    ``Product``, MCA ``ProductName``), else meter category - subcategory - meter - region (the legacy cost report),
    then the price per the source's unit (``, 98.32 USD per 1 Hour``); unused commitment lines say so first."""
    parts = [get(k) for k in ("MeterCategory", "MeterSubCategory", "MeterName", "MeterRegion")]
    present = [pc.fill_null(pc.cast(p, pa.string()), "") for p in parts if p is not None]
    meter = map_unique(pc.binary_join_element_wise(*present, "\x1f"), _meter_summary, pa.string()) if present else None
    product = get("ProductName")
    if product is not None:
        product = where(pc.equal(pc.utf8_trim_whitespace(product), ""), pa.scalar(None, pa.string()), product)
    text = coalesce(product, meter)
    if text is None:
        return None
    currency, unit = get("BillingCurrency"), get("UnitOfMeasure")
    if price is not None and currency is not None and unit is not None:
        priced = pc.binary_join_element_wise(text, ", ", map_unique(price, _price, pa.string()), " ", currency,
                                             " per ", unit, "")  # fmt: skip
        text = pc.coalesce(priced, text)
    prefix = lookup(charge_type, UNUSED, "")
    return pc.binary_join_element_wise(prefix, text, "")


def _meter_summary(joined: str) -> str | None:
    words: list[str] = []
    for part in joined.split("\x1f"):
        if part.strip() and part.strip() not in words:
            words.append(part.strip())
    return " - ".join(words) or None


def _price(value: float | None) -> str | None:
    """A price as written on a price list: ``98.32``, ``0.000114``, ``100`` (no exponent, no trailing zeros)."""
    if value is None or value != value:
        return None
    return format(Decimal(repr(value)).normalize(), "f")


def _service_type(obj: object) -> str | None:
    if not isinstance(obj, dict):
        raise ValueError("AdditionalInfo must be an object")
    v = obj.get("ServiceType") or obj.get("VMSize") or obj.get("vmSize")
    return str(v) if v else None


def _note_kind(ctx: BatchContext, charge_type: pa.Array, model: pa.Array | None, cost: pa.Array) -> None:
    """Remember whether this file looks like an amortized or an actual export (for the manifest and checks)."""
    if ctx.state.get("azure_kind") in ("amortized", "actual"):
        return
    name = ctx.path.name.lower()
    if "amortiz" in name:
        ctx.state["azure_kind"] = "amortized"
        return
    if "actual" in name:
        ctx.state["azure_kind"] = "actual"
        return
    unused = pc.any(isin(charge_type, ["UnusedReservation", "UnusedSavingsPlan"])).as_py()
    covered = None
    if model is not None:
        committed_usage = pc.and_(pc.equal(charge_type, "Usage"), isin(model, COMMITMENT_MODELS))
        if pc.any(pc.fill_null(committed_usage, False)).as_py():
            covered = pc.any(pc.fill_null(pc.and_(committed_usage, pc.greater(cost, 0.0)), False)).as_py()
    if unused or covered:
        ctx.state["azure_kind"] = "amortized"
    elif covered is False or pc.any(pc.fill_null(pc.equal(charge_type, "Purchase"), False)).as_py():
        ctx.state["azure_kind"] = "actual"
    else:
        ctx.state.setdefault("azure_kind", "unknown")
