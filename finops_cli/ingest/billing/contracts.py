"""FOCUS 1.3's Contract Commitment dataset: the terms of the contracts a bill's lines are applied to (one row per
contract commitment). It is not billed money (the charges are in the cost and usage data, linked through
``ContractApplied``), so it goes to its own dataset, ``contract_commitments``, keyed by ContractCommitmentId:
a re-export replaces the rows of the same commitments, never adds money to the bill."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from finops_cli.errors import InputError
from finops_cli.ingest.readers.values import map_unique, refuse_first, to_float, to_utc
from finops_cli.schema.billing import provider_slug
from finops_cli.schema.contracts import CONTRACT_SCHEMA, NOT_NULL, NULLABLE, NUMBERS, TIMES

DATASET = "contract_commitments"
SCHEMA = CONTRACT_SCHEMA
CATEGORIES = {"spend": "Spend", "usage": "Usage"}


def is_contract_commitment(header: Sequence[str]) -> bool:
    """A Contract Commitment file, not cost and usage lines (it has no BilledCost)."""
    have = set(header)
    return {"ContractCommitmentId", "ContractId", "ContractCommitmentCategory"} <= have and "BilledCost" not in have


@dataclass
class ContractIngest:
    """What a Contract Commitment ingest stored: rows per file, commitments new or replaced, and the committed
    cost read and stored per currency (equal: nothing is dropped)."""

    files: dict[str, int] = field(default_factory=dict)
    commitments: int = 0
    replaced: int = 0
    cost_in: dict[str, float] = field(default_factory=dict)
    cost_stored: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_contracts(path: Path) -> pa.Table:
    """One Contract Commitment CSV, typed and checked: a missing column, an empty required cell, a category
    other than Spend/Usage or a bad number or time is one line naming the file (and row)."""
    try:
        raw = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(encoding="utf-8"),
            convert_options=pacsv.ConvertOptions(column_types=dict.fromkeys(SCHEMA.names, pa.string()),
                                                 strings_can_be_null=True, null_values=["", "NULL"]),
        )  # fmt: skip
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the Contract Commitment file ({str(exc).splitlines()[0]})", path=path) from None
    missing = [c for c in (*NOT_NULL, *NULLABLE) if c not in raw.column_names]
    if missing:
        raise InputError(f"not a FOCUS Contract Commitment file: missing column(s) {', '.join(missing)}", path=path)
    cols: dict[str, pa.Array] = {}
    for name in NOT_NULL:
        refuse_first(pc.is_null(raw[name]), f"{name} is empty (FOCUS: it may not be null)", path=path, first_row=1,
                     column=name)  # fmt: skip
    for name in SCHEMA.names:
        values = raw[name] if name in raw.column_names else pa.nulls(raw.num_rows, pa.string())
        if name in TIMES:
            cols[name] = to_utc(values, path=path, column=name, first_row=1)
        elif name in NUMBERS:
            cols[name] = to_float(values, path=path, column=name, first_row=1)
        else:
            cols[name] = values
    category = map_unique(cols["ContractCommitmentCategory"], lambda v: CATEGORIES.get(v.strip().lower()), pa.string())
    refuse_first(pc.is_null(category), "ContractCommitmentCategory: expected Spend or Usage", path=path, first_row=1,
                 column="ContractCommitmentCategory")  # fmt: skip
    spend = pc.equal(category, "Spend")
    refuse_first(pc.and_(spend, pc.is_null(cols["ContractCommitmentCost"])),
                 "ContractCommitmentCost is empty on a Spend commitment", path=path, first_row=1,
                 column="ContractCommitmentCost")  # fmt: skip
    cols["ContractCommitmentCategory"] = category
    cols["x_SourceFile"] = pa.repeat(pa.scalar(path.name), raw.num_rows)
    return pa.table({n: pc.cast(cols[n], SCHEMA.field(n).type) for n in SCHEMA.names}, schema=SCHEMA)


def _cost_by_currency(table: pa.Table) -> dict[str, float]:
    if table.num_rows == 0:
        return {}
    sums = table.group_by("BillingCurrency").aggregate([("ContractCommitmentCost", "sum")])
    return {
        str(r["BillingCurrency"]): round(float(r["ContractCommitmentCost_sum"] or 0.0), 6) for r in sums.to_pylist()
    }


def ingest_contract_commitments(store: Any, paths: Sequence[Path]) -> ContractIngest:
    """Read every file first, then merge into ``contract_commitments`` (partition: the service provider) in one
    transaction: a commitment id already stored is replaced by the newer row (a later file, a later line)."""
    import pyarrow.dataset as ds

    result = ContractIngest()
    tables = []
    for path in paths:
        t = read_contracts(path)
        result.files[str(path)] = t.num_rows
        tables.append(t)
    new = pa.concat_tables(tables)
    last = {cid: i for i, cid in enumerate(new["ContractCommitmentId"].to_pylist())}
    new = new.take(pa.array(sorted(last.values()), pa.int64()))
    result.cost_in = _cost_by_currency(new)
    providers = map_unique(pc.fill_null(new["ServiceProviderName"], ""), provider_slug, pa.string())
    with store.transaction() as tx:
        for provider in sorted(set(providers.to_pylist())):
            part = new.filter(pc.equal(providers, provider))
            key = {"provider": provider}
            old = store.read(DATASET, filter=ds.field("provider") == provider) if store.has(DATASET) else None
            if old is not None and old.num_rows:
                old = old.select(SCHEMA.names).cast(SCHEMA)
                stale = pc.is_in(old["ContractCommitmentId"], part["ContractCommitmentId"])
                result.replaced += int(pc.sum(stale).as_py() or 0)
                part = pa.concat_tables([old.filter(pc.invert(stale)), part])
            tx.write(DATASET, key, "commitments", part)
            tx.replace_partition(DATASET, key)
        result.commitments = new.num_rows
        slugs = sorted(set(providers.to_pylist()))
        tx.record({"dataset": DATASET, "source_key": "contracts:" + "+".join(slugs), "files": sorted(result.files),
                   "commitments": result.commitments})  # fmt: skip
    stored = store.read(DATASET)
    result.cost_stored = _cost_by_currency(stored.filter(pc.is_in(stored["ContractCommitmentId"],
                                                                  new["ContractCommitmentId"])))  # fmt: skip
    return result
