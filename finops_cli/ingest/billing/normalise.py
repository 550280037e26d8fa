"""One billing file → canonical FOCUS tables: the format's conversion, FOCUS defaults, GPU facts from the catalog,
provenance and partition columns, each line's money checked (:mod:`~finops_cli.ingest.billing.money`)."""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.catalog.gpus import instance_gpu_facts, is_database_class
from finops_cli.errors import InputError
from finops_cli.ingest.billing.base import BatchContext, BillingFormat, Converted, finish
from finops_cli.ingest.billing.money import MONEY_COLUMNS, _Acc, _cost_in, check_money
from finops_cli.ingest.readers.common import RowBatch, kind_of
from finops_cli.ingest.readers.jsonl import read_ahead
from finops_cli.ingest.readers.stream import iter_batches
from finops_cli.ingest.readers.values import map_unique, refuse_first
from finops_cli.schema.billing import BILLING_SCHEMA, provider_slug

#: a provider becomes a partition directory (``provider=<slug>``)
MAX_PROVIDER_CHARS = 64


def convert_file(
    path: Path, parser: BillingFormat, header: list[str], acc: _Acc, state: dict[str, Any]
) -> Generator[pa.Table]:
    """One file's canonical tables, batch by batch, with its money in tallied in ``acc`` (every engine's step)."""
    rows = 0

    def parsed(batches: Iterator[RowBatch]) -> Iterator[tuple[pa.RecordBatch, BatchContext, Converted]]:
        for rb in batches:
            ctx = BatchContext(path, rb.first_row, state)
            yield rb.batch, ctx, parser.convert(rb.batch, ctx)

    # a three-stage pipeline: the format's own conversion of the next batch runs on a thread (Arrow
    # releases the GIL) while this thread finishes this one and stage_file's writes the one before; in
    # order, one batch in flight, so tallies, errors and memory are as when run one after the other. On
    # an error the thread is joined, then the reader closed (its own threads and files with it).
    with contextlib.ExitStack() as stack:
        batches = stack.enter_context(
            contextlib.closing(
                iter_batches(
                    path,
                    columns=parser.columns(header, every_known=kind_of(path) == "jsonl"),
                    types=parser.types_for(header),
                    newlines_in_values=parser.newlines_in_values,
                    nested=parser.nested,
                )
            )
        )
        for batch, ctx, conv in read_ahead(parsed(batches), stack):
            table = _convert(parser, batch, ctx, acc, conv)
            rows += table.num_rows
            yield table
    if rows == 0:
        raise InputError("has a header but no billing lines", path=path)
    acc.unknown_gpu_types.update(state.get("unknown_gpu_types", {}))


def _convert(parser: BillingFormat, batch: pa.RecordBatch, ctx: BatchContext, acc: _Acc, conv: Converted) -> pa.Table:
    """Source batch → canonical table with GPU facts, provenance and partition columns (``conv``: the
    format's conversion of ``batch``, done on the read-ahead thread)."""
    n = batch.num_rows
    _cost_in(conv, ctx, acc)
    acc.rows_in += n
    cols = dict(conv.columns)
    if cols.get("BillingAccountId") is None or cols.get("BillingPeriodStart") is None:
        raise InputError("lines without a billing account or billing period", path=ctx.path)
    cols["x_SourceFormat"] = pa.repeat(pa.scalar(parser.name), n)
    cols["x_SourceFile"] = pa.repeat(pa.scalar(ctx.path.name), n)
    cols["x_SourceRow"] = pa.array(np.arange(ctx.first_row, ctx.first_row + n, dtype=np.int64))
    table = _focus_defaults(finish(cols, n))
    table = _set(table, "x_InstanceType", _compute_types(table["x_InstanceType"]))
    _require(table, ctx, ["BilledCost", "BillingCurrency", "BillingAccountId", "BillingPeriodStart"])
    for name in MONEY_COLUMNS:
        check_money(table[name], name, ctx)

    if conv.provider is not None:  # one provider per format (AWS, GCP, Azure): no per-row work
        provider = pa.repeat(pa.scalar(conv.provider), n)
    else:
        provider = pc.fill_null(map_unique(table["ProviderName"], provider_slug, pa.string()), "unknown")
        too_long = pc.greater(pc.utf8_length(provider), MAX_PROVIDER_CHARS)
        if pc.any(too_long).as_py():  # it names a store directory: bounded, and the row is named here
            i = pc.index(too_long, True).as_py()
            raise InputError(
                f"ProviderName of more than {MAX_PROVIDER_CHARS} characters "
                f"({table['ProviderName'][i].as_py()[:40]!r}...)",
                path=ctx.path,
                where=f"row {ctx.first_row + i}",
            )
    # GPU facts: the file's own (FOCUS x_ columns, GCP GPU SKUs) win; else the pricebook by instance type.
    key = pc.binary_join_element_wise(provider, pc.fill_null(table["x_InstanceType"], ""), "\x1f")
    if isinstance(key, pa.ChunkedArray):
        key = key.combine_chunks()
    enc = pc.dictionary_encode(key)  # distinct (provider, instance type) pairs: looked up once each
    facts = [_facts(k) for k in enc.dictionary.to_pylist()]
    gpus_pb = pc.take(pa.array([f and f[0] for f in facts], pa.int32()), enc.indices)
    acc_pb = pc.take(pa.array([f and f[1] for f in facts], pa.string()), enc.indices)
    gpus = pc.coalesce(table["x_GpuCount"], gpus_pb)
    accel = pc.coalesce(table["x_AcceleratorType"], acc_pb)
    # GPU-hours: the file's own where it states them, else usage hours × GPUs per instance
    gpu_hours = table["x_GpuHours"]
    if conv.usage_hours is not None:
        derived = pc.multiply(pc.fill_null(conv.usage_hours, 0.0), pc.cast(pc.fill_null(gpus, 0), pa.float64()))
        gpu_hours = pc.coalesce(gpu_hours, derived)
    gpu_hours = pc.fill_null(gpu_hours, 0.0)
    for name, values in (("x_GpuCount", gpus), ("x_AcceleratorType", accel), ("x_GpuHours", gpu_hours)):
        table = _set(table, name, values)
    period = map_unique(table["BillingPeriodStart"], lambda ts: ts.strftime("%Y-%m"), pa.string())
    return table.append_column("provider", provider).append_column("billing_period", period)


_FREQUENCY = {"Usage": "Usage-Based", "Purchase": "One-Time", "Tax": "One-Time", "Credit": "One-Time"}


def _focus_defaults(table: pa.Table) -> pa.Table:
    """Fill FOCUS columns the source leaves empty with the defaults docs/formats.md lists (ListCost and
    ContractedCost = BilledCost, pricing = consumed quantity, ChargeFrequency from ChargeCategory, …)."""

    def setcol(name: str, values: pa.Array) -> None:
        nonlocal table
        table = _set(table, name, values)

    billed = table["BilledCost"]
    setcol("ListCost", pc.coalesce(table["ListCost"], billed))
    setcol("ContractedCost", pc.coalesce(table["ContractedCost"], billed))
    setcol("PricingQuantity", pc.coalesce(table["PricingQuantity"], table["ConsumedQuantity"]))
    setcol("PricingUnit", pc.coalesce(table["PricingUnit"], table["ConsumedUnit"]))
    frequency = map_unique(table["ChargeCategory"], lambda c: _FREQUENCY.get(c, "One-Time"), pa.string())
    setcol("ChargeFrequency", pc.coalesce(table["ChargeFrequency"], frequency))
    commitment = table["CommitmentDiscountId"]
    if commitment.null_count < len(commitment):
        spend = map_unique(
            commitment, lambda c: "Spend" if "savingsplan" in c.lower().replace(" ", "") else "Usage", pa.string()
        )
        setcol("CommitmentDiscountCategory", pc.coalesce(table["CommitmentDiscountCategory"], spend))
        used = pc.if_else(
            pc.and_(pc.is_valid(commitment), pc.equal(table["ChargeCategory"], "Usage")),
            pa.scalar("Used"),
            pa.scalar(None, pa.string()),
        )
        setcol("CommitmentDiscountStatus", pc.coalesce(table["CommitmentDiscountStatus"], used))
    return table


def _compute_types(types: pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``x_InstanceType`` names compute instance types: a database class (``db.r6g.large``, ``GP_Gen5_4``) is left
    empty, so it is never matched to a substrate nor reported as a GPU type the pricebook lacks."""
    if types.null_count == len(types):
        return types
    return map_unique(types, lambda t: None if is_database_class(t) else t, pa.string())


def _set(table: pa.Table, name: str, values: pa.Array | pa.ChunkedArray) -> pa.Table:
    """``table`` with its billing column ``name`` replaced."""
    return table.set_column(BILLING_SCHEMA.get_field_index(name), name, values)


def _facts(key: str) -> tuple[int, str] | None:
    """``provider\x1finstance_type`` → (GPUs, accelerator) from the pricebook (called once per distinct key)."""
    provider, _, instance = key.partition("\x1f")
    return instance_gpu_facts(provider, instance) if instance else None


def _require(table: pa.Table, ctx: BatchContext, names: Iterable[str]) -> None:
    for name in names:
        refuse_first(pc.is_null(table[name]), f"{name} is empty", path=ctx.path, first_row=ctx.first_row)
