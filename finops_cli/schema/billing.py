"""The canonical billing line: FOCUS column names plus ``x_`` extensions, as stored in ``billing/``.

Every billing parser emits exactly :data:`BILLING_SCHEMA` (same names, order and types), so the store's files read
as one table in DuckDB, Spark or Athena. The conventions (money, timestamps, ``Tags``, ``x_GpuHours``, partition
columns) are in docs/schema.md.
"""

from __future__ import annotations

import re

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")

#: (name, type, meaning). Order is the column order in every stored file.
BILLING_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("BillingAccountId", pa.string(), "the account invoiced (AWS payer, GCP billing account, Azure billing account)"),
    ("BillingAccountName", pa.string(), "display name of the billing account, where the source has one"),
    ("SubAccountId", pa.string(), "usage account / project / subscription"),
    ("SubAccountName", pa.string(), "display name of the sub-account, where the source has one"),
    ("BillingPeriodStart", TS, "first instant of the invoice period"),
    ("BillingPeriodEnd", TS, "exclusive end of the invoice period"),
    ("ChargePeriodStart", TS, "start of the charge"),
    ("ChargePeriodEnd", TS, "exclusive end of the charge"),
    ("BilledCost", pa.float64(), "what the invoice charges for the line (BillingCurrency)"),
    ("EffectiveCost", pa.float64(), "amortized cost: commitments spread over the usage they cover"),
    ("ListCost", pa.float64(), "public on-demand price × quantity; BilledCost where the source has no list price"),
    ("ContractedCost", pa.float64(), "negotiated-rate cost; BilledCost where the source has no contracted rate"),
    ("ListUnitPrice", pa.float64(), "list price per PricingUnit, where the source says it"),
    ("ContractedUnitPrice", pa.float64(), "negotiated price per PricingUnit, where the source says it"),
    ("BillingCurrency", pa.string(), "ISO 4217 code"),
    ("ChargeCategory", pa.string(), "Usage | Purchase | Tax | Credit | Adjustment"),
    ("ChargeClass", pa.string(), "Correction for corrections of earlier periods, else null"),
    ("ChargeDescription", pa.string(), "the source's line description"),
    ("ChargeFrequency", pa.string(), "One-Time | Recurring | Usage-Based"),
    ("PricingCategory", pa.string(), "Standard (on-demand) | Dynamic (spot) | Committed (RI/SP/reserved) | Other"),
    ("CommitmentDiscountId", pa.string(), "reservation / savings plan / commitment id covering the line"),
    ("CommitmentDiscountCategory", pa.string(), "Usage (RIs, reserved capacity) | Spend (savings plans)"),
    ("CommitmentDiscountName", pa.string(), "display name of the commitment"),
    ("CommitmentDiscountStatus", pa.string(), "Used | Unused (usage lines under a commitment)"),
    ("CommitmentDiscountType", pa.string(), "provider's commitment type (Reservation, Savings Plan, …)"),
    ("ConsumedQuantity", pa.float64(), "usage amount in ConsumedUnit"),
    ("ConsumedUnit", pa.string(), "the unit of ConsumedQuantity in FOCUS Unit Format (Hours, GB-Months, Requests)"),
    ("PricingQuantity", pa.float64(), "quantity priced (= ConsumedQuantity unless the source says otherwise)"),
    ("PricingUnit", pa.string(), "unit of PricingQuantity"),
    ("ResourceId", pa.string(), "instance / VM / node id"),
    ("ResourceName", pa.string(), "display name of the resource"),
    ("ResourceType", pa.string(), "kind of resource, where the source says it"),
    ("ServiceName", pa.string(), "e.g. Amazon Elastic Compute Cloud, Compute Engine, Virtual Machines"),
    ("ServiceCategory", pa.string(), "Compute | Storage | Networking | … | Other"),
    ("ProviderName", pa.string(), "who provides the resource (AWS, Google Cloud, Microsoft, CoreWeave, On-Premises)"),
    ("PublisherName", pa.string(), "who publishes the service"),
    ("InvoiceIssuerName", pa.string(), "who issues the invoice"),
    ("RegionId", pa.string(), "provider region code (us-east-1, europe-west4, eastus, us-east-04)"),
    ("RegionName", pa.string(), "region display name, where the source has one"),
    ("AvailabilityZone", pa.string(), "zone, where the source has one"),
    ("SkuId", pa.string(), "provider SKU id"),
    ("SkuPriceId", pa.string(), "provider SKU price id, where the source has one"),
    ("Tags", pa.string(), "JSON object text, keys sorted, provider prefixes stripped"),
    # FOCUS 1.1-1.3 columns: as the source states them, null where it has none (docs/schema.md)
    ("InvoiceId", pa.string(), "the invoice the line is billed on"),
    ("BillingAccountType", pa.string(), "the provider's kind of billing account (Billing Profile, …)"),
    ("SubAccountType", pa.string(), "the provider's kind of sub-account (Subscription, Project, …)"),
    ("ServiceSubcategory", pa.string(), "FOCUS subcategory of ServiceCategory (Virtual Machines, …)"),
    (
        "ServiceProviderName",
        pa.string(),
        "who makes the service available (FOCUS 1.3's name for ProviderName; ProviderName where the source has none)",
    ),
    ("HostProviderName", pa.string(), "whose infrastructure hosts the service (FOCUS 1.3)"),
    ("SkuMeter", pa.string(), "the functionality the SKU meters (a meter name)"),
    ("SkuPriceDetails", pa.string(), "JSON object text: properties of the SKU price (as the source writes it)"),
    ("PricingCurrency", pa.string(), "ISO 4217 code the line was priced in (the PricingCurrency* columns' currency)"),
    ("PricingCurrencyListUnitPrice", pa.float64(), "ListUnitPrice in PricingCurrency"),
    ("PricingCurrencyContractedUnitPrice", pa.float64(), "ContractedUnitPrice in PricingCurrency"),
    ("PricingCurrencyEffectiveCost", pa.float64(), "EffectiveCost in PricingCurrency"),
    ("CommitmentDiscountQuantity", pa.float64(), "commitment bought or used, in CommitmentDiscountUnit"),
    ("CommitmentDiscountUnit", pa.string(), "unit of CommitmentDiscountQuantity"),
    ("CapacityReservationId", pa.string(), "capacity reservation covering the line"),
    ("CapacityReservationStatus", pa.string(), "Used | Unused (lines under a capacity reservation)"),
    ("ContractApplied", pa.string(), "JSON text: the contract commitments the charge counts towards (FOCUS 1.3)"),
    ("AllocatedMethodId", pa.string(), "the provider's split-cost allocation method (FOCUS 1.3)"),
    ("AllocatedMethodDetails", pa.string(), "JSON object text: how the split was calculated (FOCUS 1.3)"),
    ("AllocatedResourceId", pa.string(), "resource a split charge is allocated to (FOCUS 1.3)"),
    ("AllocatedResourceName", pa.string(), "display name of AllocatedResourceId (FOCUS 1.3)"),
    ("AllocatedTags", pa.string(), "JSON object text: tags of the allocated resource (FOCUS 1.3)"),
    ("x_InstanceType", pa.string(), "compute instance / machine type (p5.48xlarge, a3-highgpu-8g), never a DB class"),
    ("x_GpuCount", pa.int32(), "GPUs per instance of x_InstanceType (null: not a GPU type in the pricebook)"),
    ("x_AcceleratorType", pa.string(), "H100, A100, L4, … (null when no GPU)"),
    ("x_GpuHours", pa.float64(), "GPU-hours of the line = usage hours × GPUs (0 for non-GPU and non-usage lines)"),
    ("x_SourceFormat", pa.string(), "aws-cur | aws-cur2 | gcp | azure | oci | focus"),
    ("x_SourceFile", pa.string(), "file name the line came from"),
    ("x_SourceRow", pa.int64(), "1-based data row in that file"),
]

BILLING_SCHEMA: pa.Schema = pa.schema([(n, t) for n, t, _ in BILLING_COLUMNS])

#: Schema of a batch handed to the store: the body plus the partition columns.
BILLING_WRITE_SCHEMA: pa.Schema = BILLING_SCHEMA.append(pa.field("provider", pa.string())).append(
    pa.field("billing_period", pa.string())
)

CHARGE_CATEGORIES = ("Usage", "Purchase", "Tax", "Credit", "Adjustment")
PRICING_CATEGORIES = ("Standard", "Dynamic", "Committed", "Other")

#: A **GPU line** (GPU spend): a line that carries GPU-hours, or a usage charge of a GPU instance type
#: (``x_GpuCount > 0``) such as the vCPU and memory SKUs of a GCP accelerator-optimised machine, billed beside
#: its GPU SKU with no GPU-hours of their own. Credits, refunds, taxes and purchases are not usage.
#: ``finops costs``, ``finops estate draft`` and the plan's billed baseline (which matches lines to substrates by
#: instance type) count the same lines, so their totals agree to the cent.
GPU_LINE_SQL = "(COALESCE(x_GpuHours, 0.0) > 0 OR (COALESCE(x_GpuCount, 0) > 0 AND ChargeCategory = 'Usage'))"


#: Known provider names → partition slug; anything else is slugified (lower-case, [a-z0-9-]).
PROVIDER_SLUGS: dict[str, str] = {
    name: slug
    for slug, names in {
        "aws": ("aws", "amazon web services", "amazon web services, inc."),
        "gcp": ("gcp", "google", "google cloud", "google cloud platform"),
        "azure": ("azure", "microsoft", "microsoft azure"),
        "coreweave": ("coreweave",),
        "oci": ("oci", "oracle", "oracle cloud", "oracle cloud infrastructure"),
        "onprem": ("onprem", "on-prem", "on prem", "on-premises", "on premises"),
    }.items()
    for name in names
}


def provider_slug(name: str | None) -> str:
    """Partition value for a ProviderName: ``"On-Premises"`` → ``onprem``, ``"Lambda Labs"`` → ``lambda-labs``."""
    if not name or not name.strip():
        return "unknown"
    key = name.strip().lower()
    if key in PROVIDER_SLUGS:
        return PROVIDER_SLUGS[key]
    slug = re.sub(r"[^a-z0-9]+", "-", key).strip("-")
    return slug or "unknown"
