"""Spot-price files: the AWS CLI's ``describe-spot-price-history`` JSON and CSV/TSV feeds with AWS's column
names (layouts: docs/formats.md, "Spot-price feeds")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

from finops_cli.errors import InputError
from finops_cli.files import read_json
from finops_cli.ingest.readers.common import NULL_VALUES
from finops_cli.ingest.readers.stream import iter_batches, read_header

REQUIRED = ("InstanceType", "SpotPrice", "Timestamp")


def read_aws_cli_json(path: Path) -> list[dict[str, Any]]:
    doc = read_json(path, kind="AWS CLI describe-spot-price-history JSON", problem="not JSON")
    pages = (
        doc if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "SpotPriceHistory" in doc[0] else [doc]
    )
    records: list[dict[str, Any]] = []
    for page in pages:
        recs = page.get("SpotPriceHistory") if isinstance(page, dict) else page
        if not isinstance(recs, list):
            raise InputError(
                'expected the AWS CLI\'s describe-spot-price-history output ({"SpotPriceHistory": [...]})',
                path=path,
            )
        records.extend(recs)
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            raise InputError("expected an object", path=path, where=f"SpotPriceHistory[{i}]")
        missing = [c for c in REQUIRED if c not in r]
        if missing:
            raise InputError(f"missing {', '.join(missing)}", path=path, where=f"SpotPriceHistory[{i}]")
        if "AvailabilityZone" not in r and "AvailabilityZoneId" not in r:
            raise InputError("missing AvailabilityZone", path=path, where=f"SpotPriceHistory[{i}]")
    return records


def read_table_feed(path: Path) -> tuple[list[dict[str, Any]], int]:
    """CSV (through the shared readers) or TSV (``.tsv``/``.tsv.gz``) → records, first data row number."""
    name = path.name.lower()
    if name.endswith((".tsv", ".tsv.gz")):
        try:
            table = pacsv.read_csv(
                path,
                parse_options=pacsv.ParseOptions(delimiter="\t"),
                convert_options=pacsv.ConvertOptions(
                    column_types={}, strings_can_be_null=True, null_values=NULL_VALUES, auto_dict_encode=False
                ),
                read_options=pacsv.ReadOptions(use_threads=False),
            )
        except (pa.ArrowException, OSError, EOFError) as exc:
            raise InputError(f"unreadable TSV: {str(exc).splitlines()[0]}", path=path) from None
        table = table.cast(pa.schema([(f.name, pa.string()) for f in table.schema]))
        header = table.column_names
        rows = table.to_pylist()
    else:
        header = read_header(path)
        rows = []
        for rb in iter_batches(path):
            rows.extend(rb.batch.to_pylist())
    missing = [c for c in REQUIRED if c not in header]
    if "AvailabilityZone" not in header and "AvailabilityZoneId" not in header:
        missing.append("AvailabilityZone (or AvailabilityZoneId)")
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}; columns: {', '.join(header)}", path=path)
    return rows, 1
