"""Money in billing ingest: each line's amounts checked, and every cost tallied exactly, so what is written
equals what was read, to the cent, per file and per currency (the conservation promise of
:mod:`finops_cli.ingest.billing.pipeline`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Context, Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.errors import InputError
from finops_cli.ingest.billing.base import BatchContext, Converted
from finops_cli.ingest.readers.values import refuse_first
from finops_cli.schema.currency import is_iso4217

#: half a cent, in the nano-units of :func:`exact_sum`
CENT = 5_000_000


#: No billing line is this large in any currency (1e15 IDR is about 60 M USD). Bounding lines keeps every
#: sum finite, and the conservation check exact: amounts are summed as decimals with 9 places.
MAX_LINE_AMOUNT = 1e15


_EXACT = pa.decimal128(38, 9)


_NANO = Context(prec=100)


#: canonical money columns checked line by line before anything is summed or written
MONEY_COLUMNS = ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost")


@dataclass
class _Acc:
    """Running totals of an ingest, or of one file's staging; every tally is a sum, so totals merge.

    The conservation tallies are exact nano-units (:func:`exact_sum`), per currency and per (file, currency).
    """

    cost_in: Counter[str] = field(default_factory=Counter)
    billed: Counter[str] = field(default_factory=Counter)
    #: the format's EffectiveCost in and written (ListCost and ContractedCost default to the conserved BilledCost)
    effective_in: Counter[str] = field(default_factory=Counter)
    effective: Counter[str] = field(default_factory=Counter)
    #: (provider, currency) -> [billed, effective, rows]
    by_provider: defaultdict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(_zeros))
    gpu: Counter[tuple[str, str]] = field(default_factory=Counter)
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    currency_of: defaultdict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    #: where each (account, period, currency) was first seen: (file, data row), for error messages
    first_seen: dict[tuple[str, str, str], tuple[str, int]] = field(default_factory=dict)
    rows_in: int = 0
    rows_written: int = 0
    pending: dict[tuple[str, str, str], list[pa.Table]] = field(default_factory=dict)
    #: (file, currency) -> [cost in, BilledCost written]: names the file when money is not conserved
    by_file: defaultdict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(_pair))
    unknown_gpu_types: Counter[str] = field(default_factory=Counter)

    def merge(self, other: _Acc, order: dict[str, int]) -> None:
        """Add another file's totals; ``order`` ranks the files, so "first seen" is the first in file order."""
        sums: list[tuple[Counter[Any], Counter[Any]]] = [
            (self.cost_in, other.cost_in),
            (self.billed, other.billed),
            (self.effective_in, other.effective_in),
            (self.effective, other.effective),
            (self.gpu, other.gpu),
            (self.unknown_gpu_types, other.unknown_gpu_types),
        ]
        for mine, theirs in sums:
            for k, v in theirs.items():
                mine[k] += v
        rows: list[tuple[defaultdict[Any, list[Any]], defaultdict[Any, list[Any]]]] = [
            (self.by_provider, other.by_provider),
            (self.by_file, other.by_file),
        ]
        for pairs, their_pairs in rows:
            for k, values in their_pairs.items():
                pairs[k] = [a + b for a, b in zip(pairs[k], values, strict=True)]
        for key, info in other.keys.items():
            mine_info = self.keys.setdefault(
                key, {**info, "providers": set(), "files": set(), "rows": 0, "billed": defaultdict(float)}
            )
            mine_info["providers"] |= info["providers"]
            mine_info["files"] |= info["files"]
            mine_info["rows"] += info["rows"]
            for c, amount in info["billed"].items():
                mine_info["billed"][c] += amount
        for account_period, currencies in other.currency_of.items():
            self.currency_of[account_period] |= currencies
        for where, seen in other.first_seen.items():
            mine_seen = self.first_seen.get(where)
            if mine_seen is None or (order.get(seen[0], 0), seen[1]) < (order.get(mine_seen[0], 0), mine_seen[1]):
                self.first_seen[where] = seen
        self.rows_in += other.rows_in
        self.rows_written += other.rows_written


def _zeros() -> list[float]:
    return [0.0, 0.0, 0]


def _pair() -> list[int]:
    return [0, 0]


def exact_sum(values: pa.Array | pa.ChunkedArray) -> int:
    """Σ values, exactly, in nano-units (each value rounded to 9 decimal places, then summed as decimals).

    Float sums lose cents above ~10^13 and overflow to inf; decimals do neither. Callers bound each
    value to ±:data:`MAX_LINE_AMOUNT` first, so a batch's decimal128 sum cannot overflow.
    """
    total = pc.sum(pc.cast(values, _EXACT, safe=False)).as_py()
    return 0 if total is None else int(_NANO.scaleb(total, 9))


def _units(nano: int) -> Decimal:
    return _NANO.scaleb(Decimal(nano), -9)


def check_money(values: pa.Array | pa.ChunkedArray, name: str, ctx: BatchContext) -> None:
    """Refuse a NaN, an infinity or an absurd amount (naming file and row) before it is summed or stored."""
    x = pc.cast(values, pa.float64())
    ok = pc.and_(pc.is_finite(x), pc.less_equal(pc.abs(x), MAX_LINE_AMOUNT))
    refuse_first(
        pc.invert(ok),
        lambda i: f"{name} is {x[i].as_py()!r}: expected a finite amount of money within ±{MAX_LINE_AMOUNT:.0e}",
        path=ctx.path,
        first_row=ctx.first_row,
    )


def _cost_in(conv: Converted, ctx: BatchContext, acc: _Acc) -> None:
    """Add the source's own money (per currency, before any mapping or splitting) to the conservation tally,
    and the format's EffectiveCost to its own: an empty one is refused, never summed as nothing."""
    currency = conv.columns.get("BillingCurrency")
    amounts = pc.cast(conv.cost_in, pa.float64())
    if currency is None:
        raise InputError("no billing currency column", path=ctx.path)
    check_money(amounts, "the line's cost", ctx)
    effective = conv.columns.get("EffectiveCost")
    effective = amounts if effective is None else pc.cast(effective, pa.float64())
    # FOCUS: "EffectiveCost MUST NOT be null"; a silent null would drop money from every amortized report.
    # (Where BilledCost is empty too, the check of required columns names BilledCost.)
    refuse_first(
        pc.and_(pc.is_null(effective), pc.is_valid(amounts)),
        "EffectiveCost is empty or not a number (FOCUS: it must not be null; write BilledCost "
        "where nothing is amortized)",
        path=ctx.path,
        first_row=ctx.first_row,
        column="EffectiveCost",
    )
    check_money(effective, "EffectiveCost", ctx)
    distinct = pc.unique(currency).to_pylist()
    for c in distinct:  # a currency is printed next to every amount: only ISO 4217 codes enter the store
        if c is not None and not is_iso4217(c):
            i = pc.index(currency, c).as_py()
            raise InputError(
                f"BillingCurrency {str(c)[:40]!r} is not an ISO 4217 code (such as USD, EUR, JPY)",
                path=ctx.path,
                where=f"row {ctx.first_row + i}",
            )
    for c in distinct:
        if len(distinct) == 1:
            cost, eff = exact_sum(amounts), exact_sum(effective)
        else:
            mask = pc.is_null(currency) if c is None else pc.fill_null(pc.equal(currency, c), False)
            cost, eff = exact_sum(pc.filter(amounts, mask)), exact_sum(pc.filter(effective, mask))
        acc.cost_in[c] += cost
        acc.by_file[(str(ctx.path), c)][0] += cost
        acc.effective_in[c] += eff


def _check_conservation(acc: _Acc) -> None:
    """Per file and currency, then per currency overall: the source's money in equals BilledCost written.

    A mismatch is the file's fault (amounts so large or so many orders of magnitude apart that their
    sum loses cents in float64, or values that are not numbers): exit 2 naming the file and currency.
    """
    if acc.rows_in != acc.rows_written:
        raise RuntimeError(f"{acc.rows_in} lines read but {acc.rows_written} written; nothing written")
    for (path, currency), (cost_in, written) in sorted(acc.by_file.items()):
        _conserved(cost_in, written, currency, path)
    for currency in sorted(set(acc.cost_in) | set(acc.billed)):
        _conserved(acc.cost_in.get(currency, 0), acc.billed.get(currency, 0), currency, None)
    for currency in sorted(set(acc.effective_in) | set(acc.effective)):
        _conserved(acc.effective_in.get(currency, 0), acc.effective.get(currency, 0), currency, None, "EffectiveCost")


def _conserved(cin: int, out: int, currency: str, path: str | None, what: str = "cost") -> None:
    """``cin`` and ``out`` are exact nano-unit sums (:func:`exact_sum`): no NaN, inf or lost cent."""
    if abs(cin - out) < CENT:
        return
    raise InputError(
        f"money not conserved in {currency}: the {what} in the file{'' if path else 's'} sums to {_units(cin):,.2f} "
        f"but {_units(out):,.2f} would be written; nothing written",
        path=path,
    )


def _check_currencies(acc: _Acc) -> None:
    for (account, period), currencies in acc.currency_of.items():
        if len(currencies) > 1:
            first, *others = sorted(currencies, key=lambda c: acc.first_seen[(account, period, c)])
            path, row = acc.first_seen[(account, period, others[0])]
            seen, seen_row = acc.first_seen[(account, period, first)]
            raise InputError(
                f"billing account {account} is billed in {others[0]} here but in {first} at {seen} row {seen_row} "
                f"(period {period}); FOCUS requires one BillingCurrency per billing account",
                path=path,
                where=f"row {row}",
            )
