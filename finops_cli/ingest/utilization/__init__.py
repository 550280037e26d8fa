"""GPU utilisation traces → the ``utilization`` dataset (partitioned by ``month``).

Parsers (one per format) yield raw sample batches in :data:`RAW_SCHEMA`; :mod:`.pipeline` infers each
sample's interval from the device's sampling cadence, spills by device to bound memory, and writes the
store atomically. Its parts: :mod:`.sources` (find, sniff, key and parse a source), :mod:`.spill` (the two
passes: spill by device, then intervals and per-month files) and :mod:`.overlaps` (no sample counted twice).
See ``docs/formats.md`` ("Utilisation traces").
"""

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
