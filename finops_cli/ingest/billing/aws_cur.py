"""AWS Cost and Usage Report, legacy layout (``lineItem/UnblendedCost``, ``resourceTags/user:team``).

Cost in (conservation): ``lineItem/UnblendedCost`` per ``lineItem/CurrencyCode``. Mapping rules: see
:mod:`finops_cli.ingest.billing.aws_common` and docs/formats.md.
"""

from __future__ import annotations

import pyarrow as pa

from finops_cli.ingest.billing.aws_common import AwsCurFormat, aws_types, convert_aws
from finops_cli.ingest.billing.base import BILLING_FORMATS, BatchContext, Converted, tags_from_columns

NAMES: dict[str, tuple[str, ...]] = {
    "payer_account_id": ("bill/PayerAccountId",),
    "usage_account_id": ("lineItem/UsageAccountId",),
    "billing_period_start": ("bill/BillingPeriodStartDate",),
    "billing_period_end": ("bill/BillingPeriodEndDate",),
    "usage_start": ("lineItem/UsageStartDate",),
    "usage_end": ("lineItem/UsageEndDate",),
    "line_item_type": ("lineItem/LineItemType",),
    "product_code": ("lineItem/ProductCode",),
    "product_name": ("product/ProductName",),
    "usage_type": ("lineItem/UsageType",),
    "availability_zone": ("lineItem/AvailabilityZone",),
    "resource_id": ("lineItem/ResourceId",),
    "usage_amount": ("lineItem/UsageAmount",),
    "currency": ("lineItem/CurrencyCode",),
    "unblended_cost": ("lineItem/UnblendedCost",),
    "description": ("lineItem/LineItemDescription",),
    "instance_type": ("product/instanceType",),
    "region": ("product/region", "product/regionCode"),
    "sku": ("product/sku",),
    "pricing_unit": ("pricing/unit",),
    "public_on_demand_cost": ("pricing/publicOnDemandCost",),
    "ri_effective_cost": ("reservation/EffectiveCost",),
    "ri_unused_upfront": ("reservation/UnusedAmortizedUpfrontFeeForBillingPeriod",),
    "ri_unused_recurring": ("reservation/UnusedRecurringFee",),
    "reservation_arn": ("reservation/ReservationARN",),
    "sp_effective_cost": ("savingsPlan/SavingsPlanEffectiveCost",),
    "sp_total_commitment": ("savingsPlan/TotalCommitmentToDate",),
    "sp_used_commitment": ("savingsPlan/UsedCommitment",),
    "savings_plan_arn": ("savingsPlan/SavingsPlanARN",),
}
TAG_PREFIX = "resourceTags/"


def _sniff(cols: frozenset[str]) -> float:
    return 2.0 if "lineItem/UnblendedCost" in cols and "lineItem/LineItemType" in cols else 0.0


@BILLING_FORMATS.register(
    "aws-cur", aliases=["cur", "aws-cur-legacy", "cur1"], sniff=_sniff, description="AWS CUR (legacy lineItem/ columns)"
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
    types = aws_types(NAMES)
    optional = tuple(c for cs in NAMES.values() for c in cs)
    tag_prefix = TAG_PREFIX

    def convert(self, batch: pa.RecordBatch, ctx: BatchContext) -> Converted:
        tag_cols = {c: _tag_key(c) for c in batch.schema.names if c.startswith(TAG_PREFIX)}
        return convert_aws(batch, ctx, NAMES, tags_from_columns(batch, tag_cols))


def _tag_key(column: str) -> str:
    """``resourceTags/user:team`` → ``team``; AWS-generated tags keep their ``aws:`` prefix."""
    key = column[len(TAG_PREFIX) :]
    return key[len("user:") :] if key.startswith("user:") else key
