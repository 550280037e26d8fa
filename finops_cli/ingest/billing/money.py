"""Money in billing ingest: each line's amounts checked, and every cost tallied exactly, so what is written
equals what was read, to the cent, per file and per currency (the conservation promise of
:mod:`finops_cli.ingest.billing.pipeline`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Context, Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.errors import InputError
from finops_cli.ingest.billing.base import BatchContext, Converted
from finops_cli.ingest.readers import (
    first_bad_row,
)
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
    """Running totals for one ingest; the conservation tallies are exact decimals (see :func:`exact_sum`)."""

    cost_in: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    billed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    #: the format's EffectiveCost in and EffectiveCost written, per currency (the other money column the
    #: store keeps; ListCost and ContractedCost default to BilledCost, which is conserved)
    effective_in: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    effective: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    by_provider: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(_zero_totals))
    gpu: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    currency_of: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    #: where each (account, period, currency) was first seen: (file, data row), for error messages
    first_seen: dict[tuple[str, str, str], tuple[str, int]] = field(default_factory=dict)
    rows_in: int = 0
    rows_written: int = 0
    pending: dict[tuple[str, str, str], list[pa.Table]] = field(default_factory=dict)
    #: (file, currency) -> [cost in, BilledCost written] in nano-units: names the file when money is not conserved
    by_file: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(_zero_pair))
    unknown_gpu_types: dict[str, int] = field(default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        """Picklable without the factories' lambdas: another process (a Spark task) returns its totals."""
        return {k: dict(v) if isinstance(v, defaultdict) else v for k, v in self.__dict__.items()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        fresh = _Acc()
        for k, v in state.items():
            default = getattr(fresh, k)
            if isinstance(default, defaultdict):
                default.update(v)
                v = default
            setattr(self, k, v)

    def merge(self, other: _Acc, order: dict[str, int]) -> None:
        """Add another task's totals (every tally is a sum, so the order tasks finish in does not matter).

        ``order`` ranks the input files, so "first seen" stays the first in file order, as in one process.
        """
        for c, nano in other.cost_in.items():
            self.cost_in[c] += nano
        for c, nano in other.billed.items():
            self.billed[c] += nano
        for c, nano in other.effective_in.items():
            self.effective_in[c] += nano
        for c, nano in other.effective.items():
            self.effective[c] += nano
        for pc_key, totals in other.by_provider.items():
            tot = self.by_provider[pc_key]
            for i in range(3):
                tot[i] += totals[i]
        for gpu_key, hours in other.gpu.items():
            self.gpu[gpu_key] += hours
        for key, info in other.keys.items():
            mine = self.keys.setdefault(
                key, {**info, "providers": set(), "files": set(), "rows": 0, "billed": defaultdict(float)}
            )
            mine["providers"] |= info["providers"]
            mine["files"] |= info["files"]
            mine["rows"] += info["rows"]
            for c, amount in info["billed"].items():
                mine["billed"][c] += amount
        for account_period, currencies in other.currency_of.items():
            self.currency_of[account_period] |= currencies
        for where, seen in other.first_seen.items():
            mine_seen = self.first_seen.get(where)
            if mine_seen is None or (order.get(seen[0], 0), seen[1]) < (order.get(mine_seen[0], 0), mine_seen[1]):
                self.first_seen[where] = seen
        for k, (cin, out) in other.by_file.items():
            self.by_file[k][0] += cin
            self.by_file[k][1] += out
        for name, lines in other.unknown_gpu_types.items():
            self.unknown_gpu_types[name] = self.unknown_gpu_types.get(name, 0) + lines
        self.rows_in += other.rows_in
        self.rows_written += other.rows_written


def _zero_totals() -> list[float]:
    return [0.0, 0.0, 0]


def _zero_pair() -> list[int]:
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
    i = first_bad_row(pc.invert(pc.fill_null(ok, True)))
    if i is not None:
        raise InputError(
            f"{name} is {x[i].as_py()!r}: expected a finite amount of money within ±{MAX_LINE_AMOUNT:.0e}",
            path=ctx.path,
            where=f"row {ctx.first_row + i}",
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
    i = first_bad_row(pc.and_(pc.is_null(effective), pc.is_valid(amounts)))
    if i is not None:
        raise InputError(
            "EffectiveCost is empty or not a number (FOCUS: it must not be null; write BilledCost "
            "where nothing is amortized)",
            path=ctx.path,
            where=f"row {ctx.first_row + i}, column 'EffectiveCost'",
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
