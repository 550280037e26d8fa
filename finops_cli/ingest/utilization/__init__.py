"""GPU utilisation traces → the ``utilization`` dataset (partitioned by ``month``): one parser per format
(raw sample batches in :data:`RAW_SCHEMA`), and :mod:`.pipeline`. See docs/formats.md ("Utilisation traces")."""

from finops_cli.ingest.utilization.common import RAW_SCHEMA, accelerator_from_model_name
from finops_cli.ingest.utilization.csv import CsvMapping
from finops_cli.ingest.utilization.pipeline import UtilizationIngest, ingest_utilization
from finops_cli.schema.utilization import STORE_SCHEMA

__all__ = [
    "RAW_SCHEMA",
    "STORE_SCHEMA",
    "CsvMapping",
    "UtilizationIngest",
    "accelerator_from_model_name",
    "ingest_utilization",
]
