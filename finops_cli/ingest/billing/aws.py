"""AWS Cost and Usage Report → FOCUS: the legacy CUR (``lineItem/…``) and CUR 2.0 (snake_case).

The two layouts carry the same facts under different names: each has a name map (internal name → source
columns) and :func:`convert_aws` does the conversion once. The mapping rules are in docs/formats.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.ingest.billing.base import (
    BILLING_FORMATS,
    BatchContext,
    BillingFormat,
    Converted,
    SourceColumns,
    coalesce,
    col,
    const,
    empty_to_null,
    fill0,
    isin,
    lookup,
    only,
    parse_json_cells,
    tags_from_columns,
    tags_json,
    where,
)
from finops_cli.ingest.billing.units import focus_units

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
#: AWS IoT's other product codes (Analytics, Device Management, …), one category with AWSIoT
IOT_CODES = ("AWSIoTAnalytics", "AWSIoTDeviceManagement", "AWSIoTDeviceDefender", "AWSIoTEvents", "AWSIoTSiteWise")
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
    "AWSCloudTrail": "Management and Governance",
    "AWSConfig": "Management and Governance",
    "AWSGlue": "Analytics",
    "AmazonAthena": "Analytics",
    "AmazonKinesis": "Analytics",
    "ElasticMapReduce": "Analytics",
    "AmazonSNS": "Integration",
    "AWSQueueService": "Integration",
    "AmazonStates": "Integration",
    "AWSEvents": "Integration",
    "awskms": "Security",
    "AWSSecretsManager": "Security",
    "AmazonGuardDuty": "Security",
    "AWSIoT": "Internet of Things",
    **dict.fromkeys(IOT_CODES, "Internet of Things"),
    "AmazonRoute53": "Networking",
    "AWSELB": "Networking",
    "AmazonElastiCache": "Databases",
    "AmazonECR": "Compute",
}
#: display names for product codes whose lines carry no ``product/ProductName``
SERVICE_NAME = {
    "AmazonCloudWatch": "Amazon CloudWatch",
    "AWSGlue": "AWS Glue",
    "AmazonSNS": "Amazon Simple Notification Service",
    "AWSQueueService": "Amazon Simple Queue Service",
    "AmazonStates": "AWS Step Functions",
    "awskms": "AWS Key Management Service",
    "AWSSecretsManager": "AWS Secrets Manager",
    "AWSCloudTrail": "AWS CloudTrail",
    "AWSIoT": "AWS IoT",
}

#: internal names every AWS layout maps; the money and quantity ones are read as float64.
NUMERIC = (
    "unblended_cost",
    "usage_amount",
    "public_on_demand_cost",
    "public_on_demand_rate",
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
        """A product or pricing attribute; empty is null (Parquet keeps ``""`` where CSV has nothing)."""
        a = get(key)
        if a is None and product_map is not None and key in _PRODUCT_KEYS:
            a = _product_attr(product_map, _PRODUCT_KEYS[key], ctx)
        return None if a is None else empty_to_null(a)

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
    pricing = only(priced, pricing)
    charge_class = only(pc.equal(t, "Refund"), "Correction")

    unit = text("pricing_unit")  # AWS rates are per one unit: the FOCUS spelling only (Hrs → Hours, GB-Mo → GB-Months)
    consumed_unit = aws_units(unit) if unit is not None else const(None, n)
    usage_amount = num("usage_amount")
    is_usage = pc.equal(charge_category, "Usage")
    quantity = only(is_usage, usage_amount)
    # Instance time: hourly usage that is not the negation of Savings Plan covered usage.
    hourly = pc.and_(pc.fill_null(pc.equal(consumed_unit, "Hours"), False), pc.not_equal(t, "SavingsPlanNegation"))
    usage_hours = where(pc.and_(is_usage, hourly), fill0(usage_amount, n), 0.0)

    az = text("availability_zone")
    region = coalesce(text("region"), pc.utf8_slice_codeunits(az, 0, -1) if az is not None else None)
    product_code = text("product_code")
    named = lookup(product_code, SERVICE_NAME, None) if product_code is not None else None
    service = coalesce(text("product_name"), named, product_code)
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
        # FOCUS: list unit price and SKU price id on Usage and Purchase lines, where the CUR carries them
        "ListUnitPrice": only(priced, num("public_on_demand_rate")),
        "SkuPriceId": only(priced, text("rate_code")),
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
        "ConsumedUnit": only(is_usage, consumed_unit),
        "PricingQuantity": only(priced, usage_amount),  # purchases (RI fees) are priced in their hours too
        "PricingUnit": only(priced, consumed_unit),
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


def aws_units(unit: pa.Array) -> pa.Array:
    """``pricing/unit`` in FOCUS Unit Format where it reads as one unit (a block would change the CUR's quantity)."""
    block, name, _ = focus_units(unit)
    return where(pc.equal(block, 1.0), name, unit)


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


#: internal name → (legacy CUR columns, CUR 2.0 columns); the first column a file has wins
NAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "payer_account_id": (("bill/PayerAccountId",), ("bill_payer_account_id",)),
    "usage_account_id": (("lineItem/UsageAccountId",), ("line_item_usage_account_id",)),
    "billing_period_start": (("bill/BillingPeriodStartDate",), ("bill_billing_period_start_date",)),
    "billing_period_end": (("bill/BillingPeriodEndDate",), ("bill_billing_period_end_date",)),
    "usage_start": (("lineItem/UsageStartDate",), ("line_item_usage_start_date",)),
    "usage_end": (("lineItem/UsageEndDate",), ("line_item_usage_end_date",)),
    "line_item_type": (("lineItem/LineItemType",), ("line_item_line_item_type",)),
    "product_code": (("lineItem/ProductCode",), ("line_item_product_code",)),
    "product_name": (("product/ProductName",), ("product_product_name", "product_servicename")),
    "usage_type": (("lineItem/UsageType",), ("line_item_usage_type",)),
    "availability_zone": (("lineItem/AvailabilityZone",), ("line_item_availability_zone",)),
    "resource_id": (("lineItem/ResourceId",), ("line_item_resource_id",)),
    "usage_amount": (("lineItem/UsageAmount",), ("line_item_usage_amount",)),
    "currency": (("lineItem/CurrencyCode",), ("line_item_currency_code",)),
    "unblended_cost": (("lineItem/UnblendedCost",), ("line_item_unblended_cost",)),
    "description": (("lineItem/LineItemDescription",), ("line_item_line_item_description",)),
    "instance_type": (("product/instanceType",), ("product_instance_type",)),
    "region": (("product/region", "product/regionCode"), ("product_region_code", "product_region")),
    "sku": (("product/sku",), ("product_sku",)),
    "pricing_unit": (("pricing/unit",), ("pricing_unit",)),
    "public_on_demand_cost": (("pricing/publicOnDemandCost",), ("pricing_public_on_demand_cost",)),
    "public_on_demand_rate": (("pricing/publicOnDemandRate",), ("pricing_public_on_demand_rate",)),
    "rate_code": (("pricing/RateCode",), ("pricing_rate_code",)),
    "ri_effective_cost": (("reservation/EffectiveCost",), ("reservation_effective_cost",)),
    "ri_unused_upfront": (
        ("reservation/UnusedAmortizedUpfrontFeeForBillingPeriod",),
        ("reservation_unused_amortized_upfront_fee_for_billing_period",),
    ),
    "ri_unused_recurring": (("reservation/UnusedRecurringFee",), ("reservation_unused_recurring_fee",)),
    "reservation_arn": (
        ("reservation/ReservationARN",),
        ("reservation_reservation_arn", "reservation_reservation_a_r_n"),
    ),
    "sp_effective_cost": (("savingsPlan/SavingsPlanEffectiveCost",), ("savings_plan_savings_plan_effective_cost",)),
    "sp_total_commitment": (("savingsPlan/TotalCommitmentToDate",), ("savings_plan_total_commitment_to_date",)),
    "sp_used_commitment": (("savingsPlan/UsedCommitment",), ("savings_plan_used_commitment",)),
    "savings_plan_arn": (
        ("savingsPlan/SavingsPlanARN",),
        ("savings_plan_savings_plan_arn", "savings_plan_savings_plan_a_r_n"),
    ),
}
CUR_NAMES = {key: layouts[0] for key, layouts in NAMES.items()}
CUR2_NAMES = {key: layouts[1] for key, layouts in NAMES.items()}


# ------------------------------------------------------------------------- legacy CUR
CUR_TAG_PREFIX = "resourceTags/"


def _sniff_cur(cols: frozenset[str]) -> float:
    return 2.0 if "lineItem/UnblendedCost" in cols and "lineItem/LineItemType" in cols else 0.0


@BILLING_FORMATS.register(
    "aws-cur",
    aliases=["cur", "aws-cur-legacy", "cur1"],
    sniff=_sniff_cur,
)
class AwsCur(AwsCurFormat):
    name = "aws-cur"
    required = (
        "bill/PayerAccountId",
        "bill/BillingPeriodStartDate",
        "lineItem/LineItemType",
        "lineItem/UnblendedCost",
        "lineItem/CurrencyCode",
        "lineItem/UsageStartDate",
    )
    types = aws_types(CUR_NAMES)
    optional = tuple(c for cs in CUR_NAMES.values() for c in cs)
    tag_prefix = CUR_TAG_PREFIX

    def convert(self, batch: pa.RecordBatch, ctx: BatchContext) -> Converted:
        tag_cols = {c: _cur_tag_key(c) for c in batch.schema.names if c.startswith(CUR_TAG_PREFIX)}
        return convert_aws(batch, ctx, CUR_NAMES, tags_from_columns(batch, tag_cols))


def _cur_tag_key(column: str) -> str:
    """``resourceTags/user:team`` → ``team``; AWS-generated tags keep their ``aws:`` prefix."""
    key = column[len(CUR_TAG_PREFIX) :]
    return key[len("user:") :] if key.startswith("user:") else key


# ------------------------------------------------------------------------- CUR 2.0
CUR2_TAG_PREFIX = "resource_tags_"


def _sniff_cur2(cols: frozenset[str]) -> float:
    return 2.0 if "line_item_unblended_cost" in cols and "line_item_line_item_type" in cols else 0.0


@BILLING_FORMATS.register("aws-cur2", aliases=["cur2", "aws-data-exports"], sniff=_sniff_cur2)
class AwsCur2(AwsCurFormat):
    name = "aws-cur2"
    required = (
        "bill_payer_account_id",
        "bill_billing_period_start_date",
        "line_item_line_item_type",
        "line_item_unblended_cost",
        "line_item_currency_code",
        "line_item_usage_start_date",
    )
    types = aws_types(CUR2_NAMES)
    optional = (*(c for cs in CUR2_NAMES.values() for c in cs), "product", "resource_tags")
    tag_prefix = CUR2_TAG_PREFIX

    def convert(self, batch: pa.RecordBatch, ctx: BatchContext) -> Converted:
        tag_map = col(batch, "resource_tags")
        if tag_map is not None:
            tags = _map_tags(tag_map, ctx)
        else:
            flat = {
                c: _cur2_tag_key(c[len(CUR2_TAG_PREFIX) :]) for c in batch.schema.names if c.startswith(CUR2_TAG_PREFIX)
            }
            tags = tags_from_columns(batch, flat)
        return convert_aws(batch, ctx, CUR2_NAMES, tags, product_map=col(batch, "product"))


def _cur2_tag_key(key: str) -> str:
    """``user_team`` → ``team``; ``aws_created_by`` stays as is."""
    return key[len("user_") :] if key.startswith("user_") else key


def _normalise(obj: object) -> str | None:
    if isinstance(obj, dict):
        obj = {_cur2_tag_key(str(k)): v for k, v in obj.items()}
    return tags_json(obj)


def _map_tags(values: pa.Array, ctx: BatchContext) -> pa.Array:
    if pa.types.is_map(values.type):
        return pa.array([_normalise(dict(m)) if m else None for m in values.to_pylist()], pa.string())
    return parse_json_cells(values, _normalise, path=ctx.path, column="resource_tags", first_row=ctx.first_row)
