"""Spot-price feeds → the ``spot_prices`` dataset (partitioned by provider and month).

Sources: AWS ``describe_spot_price_history`` through boto3 (:mod:`finops_cli.adapters.aws`), the JSON the
AWS CLI prints, CSV/TSV feeds with AWS's column names, and the GCP Cloud Billing Catalog
(:mod:`finops_cli.adapters.gcp`). Every row is one price change per instance-hour with the GPU count and
accelerator attached from ``pricebooks/instance_types.csv``. Schema: :mod:`finops_cli.report.prices`.
"""

from finops_cli.ingest.spot.ingest import SPOT_SCHEMA, SpotIngest, ingest_spot_prices

__all__ = ["SPOT_SCHEMA", "SpotIngest", "ingest_spot_prices"]
