"""What a data file of each dataset must hold: a store file of another schema is named, never read as one."""

from __future__ import annotations

import functools

import duckdb
import pyarrow as pa

from finops_cli.schema.billing import BILLING_SCHEMA
from finops_cli.schema.contracts import CONTRACT_SCHEMA
from finops_cli.schema.spot import SPOT_SCHEMA
from finops_cli.schema.utilization import STORE_SCHEMA
from finops_cli.store.queries import AGGREGATES

_DETAILS = {
    "billing": BILLING_SCHEMA,
    "utilization": STORE_SCHEMA,
    "spot_prices": SPOT_SCHEMA,
    "contract_commitments": CONTRACT_SCHEMA,
}


def _family(t: pa.DataType) -> str:
    """What a query can do with a column of type ``t``: older writers' types of one family read alike."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return str(t)


@functools.cache
def dataset_schema(name: str) -> pa.Schema:
    """The schema ingest writes for dataset ``name``; an aggregate's is its query's answer over no detail lines."""
    if name in _DETAILS:
        return _DETAILS[name]
    detail, query = AGGREGATES[name]
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register(detail, _DETAILS[detail].empty_table())
        return con.sql(query.sql).arrow().schema  # a table (DuckDB 1) or a batch reader (DuckDB 2)
    finally:
        con.close()


def schema_problem(name: str, schema: pa.Schema) -> str | None:
    """Why a file of dataset ``name`` with ``schema`` cannot be read as one (a column of another type), else None.

    A column the dataset does not know, or one an older file lacks, is fine: queries see NULL for it.
    """
    want = dataset_schema(name)
    for f in schema:
        i = want.get_field_index(f.name)
        if i >= 0 and _family(f.type) != _family(want.field(i).type):
            return f"column {f.name} is {f.type}, a {name} file holds {want.field(i).type}"
    return None
