"""AWS Cost and Usage Report → FOCUS, shared by the legacy CUR (``lineItem/…``) and CUR 2.0 (snake_case).

The two layouts carry the same facts under different names; each module gives a name map (internal name →
source column) and this module does the conversion once.

Rules (documented in docs/formats.md):

- BilledCost = ``UnblendedCost`` on every line (the conservation column); credits, refunds, tax and Savings
  Plan negation lines are kept, so the sum is the invoice.
- EffectiveCost (amortized): DiscountedUsage → ``reservation/EffectiveCost``; SavingsPlanCoveredUsage →
  ``savingsPlan/SavingsPlanEffectiveCost``; SavingsPlanNegation, SavingsPlanUpfrontFee and RI upfront
  ``Fee`` → 0 (their money is already spread over the covered usage); RIFee → the unused amortized upfront +
  unused recurring fee; SavingsPlanRecurringFee → the unused commitment (TotalCommitmentToDate − UsedCommitment);
  everything else = BilledCost.
- PricingCategory: RI/SP lines → Committed; ``…SpotUsage…`` usage types → Dynamic; other usage and
  purchases → Standard; tax, credits, refunds → null (FOCUS: not priced).
- ChargeCategory: Usage / DiscountedUsage / SavingsPlanCoveredUsage / SavingsPlanNegation → Usage; RIFee, Fee,
  SavingsPlanRecurringFee, SavingsPlanUpfrontFee → Purchase; Tax → Tax; Credit and discounts → Credit;
  Refund → Adjustment with ChargeClass Correction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.ingest.billing.base import (
    BatchContext,
    BillingFormat,
    Converted,
    SourceColumns,
    coalesce,
    const,
    fill0,
    isin,
    lookup,
    parse_json_cells,
    where,
)

_USAGE = ("Usage", "DiscountedUsage", "SavingsPlanCoveredUsage", "SavingsPlanNegation")
_PURCHASE = ("RIFee", "Fee", "SavingsPlanRecurringFee", "SavingsPlanUpfrontFee")
_COMMITTED = (
    "DiscountedUsage",
    "SavingsPlanCoveredUsage",
    "SavingsPlanNegation",
    "RIFee",
    "SavingsPlanRecurringFee",
    "SavingsPlanUpfrontFee",
)
_CREDIT = ("Credit", "EdpDiscount", "BundledDiscount", "PrivateRateDiscount", "DistributorDiscount", "SppDiscount")
CHARGE_CATEGORY = {
    **dict.fromkeys(_USAGE, "Usage"),
    **dict.fromkeys(_PURCHASE, "Purchase"),
    **dict.fromkeys(_CREDIT, "Credit"),
    "Tax": "Tax",
    "Refund": "Adjustment",
}
SERVICE_CATEGORY = {
    "AmazonEC2": "Compute",
    "AmazonECS": "Compute",
    "AmazonEKS": "Compute",
    "AWSLambda": "Compute",
    "AmazonSageMaker": "AI and Machine Learning",
    "AmazonBedrock": "AI and Machine Learning",
    "AmazonS3": "Storage",
    "AmazonEFS": "Storage",
    "AmazonFSx": "Storage",
    "AWSDataTransfer": "Networking",
    "AmazonVPC": "Networking",
    "AmazonCloudFront": "Networking",
    "AmazonRDS": "Databases",
    "AmazonDynamoDB": "Databases",
    "AWSSupportBusiness": "Management and Governance",
    "AWSSupportEnterprise": "Management and Governance",
    "AmazonCloudWatch": "Management and Governance",
}

#: internal names every AWS layout maps; the money and quantity ones are read as float64.
NUMERIC = (
    "unblended_cost",
    "usage_amount",
    "public_on_demand_cost",
    "ri_effective_cost",
    "ri_unused_upfront",
    "ri_unused_recurring",
    "sp_effective_cost",
    "sp_total_commitment",
    "sp_used_commitment",
)


def aws_types(names: Mapping[str, tuple[str, ...]]) -> dict[str, pa.DataType]:
    return {src: pa.float64() for key in NUMERIC for src in names.get(key, ())}


class AwsCurFormat(BillingFormat):
    """What both CUR layouts share: one record per line, and open-ended tag columns under ``tag_prefix``."""

    tag_prefix: ClassVar[str] = ""
    newlines_in_values = False  # AWS writes one line per record

    def extra_column(self, name: str) -> bool:
        return name.startswith(self.tag_prefix)


def convert_aws(
    batch: pa.RecordBatch,
    ctx: BatchContext,
    names: Mapping[str, tuple[str, ...]],
    tags: pa.Array,
    product_map: pa.Array | None = None,
) -> Converted:
    """Convert one batch of either CUR layout; ``names`` maps internal names to candidate source columns."""
    n = batch.num_rows
    src = SourceColumns(batch, ctx, names)
    get, num, ts = src.get, src.num, src.ts

    def text(key: str) -> pa.Array | None:
        a = get(key)
        if a is None and product_map is not None and key in _PRODUCT_KEYS:
            a = _product_attr(product_map, _PRODUCT_KEYS[key], ctx)
        return a

    item_type = pc.fill_null(get("line_item_type"), "Usage")
    usage_type = get("usage_type") if get("usage_type") is not None else const(None, n)
    cost = num("unblended_cost")
    assert cost is not None  # required column
    ri_eff, sp_eff = fill0(num("ri_effective_cost"), n), fill0(num("sp_effective_cost"), n)
    ri_unused = pc.add(fill0(num("ri_unused_upfront"), n), fill0(num("ri_unused_recurring"), n))
    sp_unused = pc.max_element_wise(
        pc.subtract(fill0(num("sp_total_commitment"), n), fill0(num("sp_used_commitment"), n)), 0.0
    )
    commitment_id = coalesce(get("reservation_arn"), get("savings_plan_arn"))
    if commitment_id is None:
        commitment_id = const(None, n)
    t = item_type
    effective = where(pc.equal(t, "DiscountedUsage"), ri_eff, cost)
    effective = where(pc.equal(t, "SavingsPlanCoveredUsage"), sp_eff, effective)
    effective = where(isin(t, ["SavingsPlanNegation", "SavingsPlanUpfrontFee"]), 0.0, effective)
    effective = where(pc.equal(t, "RIFee"), ri_unused, effective)
    effective = where(pc.equal(t, "SavingsPlanRecurringFee"), sp_unused, effective)
    effective = where(pc.and_(pc.equal(t, "Fee"), pc.is_valid(commitment_id)), 0.0, effective)

    charge_category = lookup(t, CHARGE_CATEGORY, "Usage")
    spot = pc.fill_null(pc.match_substring(usage_type, "SpotUsage"), False)
    pricing = where(isin(t, _COMMITTED), "Committed", where(spot, "Dynamic", "Standard"))
    priced = isin(charge_category, ["Usage", "Purchase"])
    pricing = where(priced, pricing, pa.scalar(None, pa.string()))
    charge_class = where(pc.equal(t, "Refund"), "Correction", pa.scalar(None, pa.string()))

    unit = text("pricing_unit")
    consumed_unit = lookup(unit, {"Hrs": "Hours", "Hours": "Hours"}, None) if unit is not None else const(None, n)
    consumed_unit = pc.coalesce(consumed_unit, unit) if unit is not None else consumed_unit
    usage_amount = num("usage_amount")
    is_usage = pc.equal(charge_category, "Usage")
    quantity = where(is_usage, usage_amount, pa.scalar(None, pa.float64())) if usage_amount is not None else None
    # Instance time: hourly usage that is not the negation of Savings Plan covered usage.
    hourly = pc.and_(pc.fill_null(pc.equal(consumed_unit, "Hours"), False), pc.not_equal(t, "SavingsPlanNegation"))
    usage_hours = where(pc.and_(is_usage, hourly), fill0(usage_amount, n), 0.0)

    az = text("availability_zone")
    region = coalesce(text("region"), pc.utf8_slice_codeunits(az, 0, -1) if az is not None else None)
    product_code = text("product_code")
    service = coalesce(text("product_name"), product_code)
    service_category = (
        lookup(product_code, SERVICE_CATEGORY, "Other") if product_code is not None else const("Other", n)
    )

    columns = {
        "BillingAccountId": get("payer_account_id"),
        "SubAccountId": get("usage_account_id"),
        "BillingPeriodStart": ts("billing_period_start"),
        "BillingPeriodEnd": ts("billing_period_end"),
        "ChargePeriodStart": ts("usage_start"),
        "ChargePeriodEnd": ts("usage_end"),
        "BilledCost": cost,
        "EffectiveCost": effective,
        "ListCost": num("public_on_demand_cost"),
        "BillingCurrency": get("currency"),
        "ChargeCategory": charge_category,
        "ChargeClass": charge_class,
        "ChargeDescription": get("description"),
        "ChargeFrequency": where(
            isin(t, ["RIFee", "SavingsPlanRecurringFee"]),
            "Recurring",
            where(pc.equal(charge_category, "Usage"), "Usage-Based", "One-Time"),
        ),
        "PricingCategory": pricing,
        "CommitmentDiscountId": commitment_id,
        "ConsumedQuantity": quantity,
        "ConsumedUnit": where(is_usage, consumed_unit, pa.scalar(None, pa.string())),
        "ResourceId": get("resource_id"),
        "ServiceName": service,
        "ServiceCategory": service_category,
        "ProviderName": const("AWS", n),
        "PublisherName": const("Amazon Web Services, Inc.", n),
        "InvoiceIssuerName": const("Amazon Web Services, Inc.", n),
        "RegionId": region,
        "AvailabilityZone": az,
        "SkuId": text("sku"),
        "Tags": tags,
        "x_InstanceType": text("instance_type"),
    }
    return Converted(columns, cost_in=cost, usage_hours=usage_hours, provider="aws")


#: CUR 2.0 keeps product attributes in the ``product`` map; these internal names can come from it.
_PRODUCT_KEYS = {
    "instance_type": ("instance_type", "instanceType"),
    "region": ("region_code", "region", "regionCode"),
    "product_name": ("product_name", "productName", "servicename"),
    "sku": ("sku",),
    "pricing_unit": ("pricing_unit",),
    "availability_zone": ("availability_zone",),
}


def _product_attr(product: pa.Array, keys: tuple[str, ...], ctx: BatchContext) -> pa.Array:
    if pa.types.is_map(product.type):
        out = []
        for m in product.to_pylist():
            d = dict(m) if m else {}
            out.append(next((d[k] for k in keys if d.get(k)), None))
        return pa.array(out, pa.string())

    def pick(obj: object) -> str | None:
        if not isinstance(obj, dict):
            return None
        v = next((obj[k] for k in keys if obj.get(k) not in (None, "")), None)
        return None if v is None else (v if isinstance(v, str) else json.dumps(v))

    return parse_json_cells(product, pick, path=ctx.path, column="product", first_row=ctx.first_row)
