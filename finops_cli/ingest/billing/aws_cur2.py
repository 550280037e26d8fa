"""AWS CUR 2.0 (Data Exports): snake_case columns; ``product`` and ``resource_tags`` are map columns.

In Parquet the maps are MAP<string,string>; in CSV they are JSON text. Athena-style flattened exports
(``resource_tags_user_team``, ``product_instance_type``) are read too. Cost in (conservation):
``line_item_unblended_cost`` per ``line_item_currency_code``. Mapping rules: see
:mod:`finops_cli.ingest.billing.aws_common`.
"""

from __future__ import annotations

import pyarrow as pa

from finops_cli.ingest.billing.aws_common import AwsCurFormat, aws_types, convert_aws
from finops_cli.ingest.billing.base import (
    BILLING_FORMATS,
    BatchContext,
    Converted,
    col,
    parse_json_cells,
    tags_from_columns,
    tags_json,
)

NAMES: dict[str, tuple[str, ...]] = {
    "payer_account_id": ("bill_payer_account_id",),
    "usage_account_id": ("line_item_usage_account_id",),
    "billing_period_start": ("bill_billing_period_start_date",),
    "billing_period_end": ("bill_billing_period_end_date",),
    "usage_start": ("line_item_usage_start_date",),
    "usage_end": ("line_item_usage_end_date",),
    "line_item_type": ("line_item_line_item_type",),
    "product_code": ("line_item_product_code",),
    "product_name": ("product_product_name", "product_servicename"),
    "usage_type": ("line_item_usage_type",),
    "availability_zone": ("line_item_availability_zone",),
    "resource_id": ("line_item_resource_id",),
    "usage_amount": ("line_item_usage_amount",),
    "currency": ("line_item_currency_code",),
    "unblended_cost": ("line_item_unblended_cost",),
    "description": ("line_item_line_item_description",),
    "instance_type": ("product_instance_type",),
    "region": ("product_region_code", "product_region"),
    "sku": ("product_sku",),
    "pricing_unit": ("pricing_unit",),
    "public_on_demand_cost": ("pricing_public_on_demand_cost",),
    "ri_effective_cost": ("reservation_effective_cost",),
    "ri_unused_upfront": ("reservation_unused_amortized_upfront_fee_for_billing_period",),
    "ri_unused_recurring": ("reservation_unused_recurring_fee",),
    "reservation_arn": ("reservation_reservation_arn", "reservation_reservation_a_r_n"),
    "sp_effective_cost": ("savings_plan_savings_plan_effective_cost",),
    "sp_total_commitment": ("savings_plan_total_commitment_to_date",),
    "sp_used_commitment": ("savings_plan_used_commitment",),
    "savings_plan_arn": ("savings_plan_savings_plan_arn", "savings_plan_savings_plan_a_r_n"),
}
TAG_PREFIX = "resource_tags_"


def _sniff(cols: frozenset[str]) -> float:
    return 2.0 if "line_item_unblended_cost" in cols and "line_item_line_item_type" in cols else 0.0


@BILLING_FORMATS.register("aws-cur2", aliases=["cur2", "aws-data-exports"], sniff=_sniff, description="AWS CUR 2.0")
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
    types = aws_types(NAMES)
    optional = (*(c for cs in NAMES.values() for c in cs), "product", "resource_tags")
    tag_prefix = TAG_PREFIX

    def convert(self, batch: pa.RecordBatch, ctx: BatchContext) -> Converted:
        tag_map = col(batch, "resource_tags")
        if tag_map is not None:
            tags = _map_tags(tag_map, ctx)
        else:
            flat = {c: _tag_key(c[len(TAG_PREFIX) :]) for c in batch.schema.names if c.startswith(TAG_PREFIX)}
            tags = tags_from_columns(batch, flat)
        return convert_aws(batch, ctx, NAMES, tags, product_map=col(batch, "product"))


def _tag_key(key: str) -> str:
    """``user_team`` → ``team``; ``aws_created_by`` stays as is."""
    return key[len("user_") :] if key.startswith("user_") else key


def _normalise(obj: object) -> str | None:
    if isinstance(obj, dict):
        obj = {_tag_key(str(k)): v for k, v in obj.items()}
    return tags_json(obj)


def _map_tags(values: pa.Array, ctx: BatchContext) -> pa.Array:
    if pa.types.is_map(values.type):
        return pa.array([_normalise(dict(m)) if m else None for m in values.to_pylist()], pa.string())
    return parse_json_cells(values, _normalise, path=ctx.path, column="resource_tags", first_row=ctx.first_row)
