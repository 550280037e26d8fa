"""Billing ingest: AWS CUR (legacy and 2.0), GCP billing export, Azure cost exports and FOCUS → one FOCUS store.

``BILLING_FORMATS`` is the registry (``--format``); ``ingest_billing`` is the pipeline entry point.
"""

from finops_cli.ingest.billing.base import BILLING_FORMATS, BillingFormat
from finops_cli.ingest.billing.pipeline import IngestSummary, ingest_billing
from finops_cli.ingest.billing.write import idempotency_key

__all__ = ["BILLING_FORMATS", "BillingFormat", "IngestSummary", "idempotency_key", "ingest_billing"]
