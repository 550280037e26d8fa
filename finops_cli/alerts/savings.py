"""Realised savings: what each run, team or workload cost against what the same usage costs at on-demand price.

For every group of ``finops savings --by`` the store's spend (``finops costs``'s own query, so totals agree to the
cent) is set against an on-demand reference, line group by line group (provider × region × instance type ×
pricing category × source format):

- **bill**: the export's own list price (FOCUS ``ListCost``/``ListUnitPrice``, CUR ``pricing/publicOnDemandCost``,
  Azure ``PayGPrice``), where it carries one. GCP's list cost is the cost before credits, not an on-demand price,
  so only its on-demand lines use it;
- **pricebook**: otherwise the pricebook's on-demand $/GPU-hour × the lines' GPU-hours (the instance type's own
  row, else the cheapest on-demand row of the same accelerator: a conservative claim);
- **none**: no reference (no GPU-hours, no price; taxes): reference = cost, no savings claimed.

With ``--all-lines`` a credit's reference is 0 (the credit is a saving, on the ``on_demand`` lever) and an up-front
commitment purchase counts against the usage it covers.

Savings = reference − cost, attributed to the lever the line's pricing category names: ``spot`` (Dynamic),
``commitments`` (Committed), ``owned`` (Other: owned capacity), ``api`` (a model API provider) and ``on_demand``
(Standard: negotiated discounts and credits on on-demand lines). The levers add up to the savings exactly.
Spot work redone after preemptions is in the cost; given an interruption trace it leaves the on-demand reference
and the spot lever (:mod:`finops_cli.alerts.interruptions`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pandas as pd

from finops_cli.alerts import queries
from finops_cli.alerts.scope import cost_column, dimension, run, selection
from finops_cli.errors import InputError
from finops_cli.store.cost_query import NONE, cost_groups
from finops_cli.store.store import Store

LEVERS = ("spot", "commitments", "owned", "api", "on_demand")
_LEVER_OF_CATEGORY = {"Dynamic": "spot", "Committed": "commitments", "Other": "owned", "Standard": "on_demand"}
#: providers whose lines are model-API usage (per token / request), as the pricebook's ``api`` rows name them
API_PROVIDERS = frozenset({"anthropic", "openai", "mistral", "fal", "cohere", "google-ai", "bedrock"})
#: the line-group keys a reference is decided on
_FINE = (
    "provider",
    "region",
    "instance_type",
    "pricing_category",
    "x_AcceleratorType",
    "x_SourceFormat",
    "ChargeCategory",
)


@dataclass
class SavingsResult:
    """Rows per group × currency (largest savings first) and totals per currency."""

    by: list[str]
    cost: str
    months: list[str]
    rows: list[dict[str, Any]]
    totals: dict[str, dict[str, float]]
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": "finops.savings",
            "schema_version": 1,
            "by": self.by,
            "cost": self.cost,
            "months": self.months,
            "rows": self.rows,
            "totals": self.totals,
            "notes": self.notes,
        }


@cache
def _on_demand_prices() -> tuple[dict[tuple[str, str], list[tuple[str, float]]], dict[str, tuple[str, float]]]:
    """(provider, instance type) → [(region, $/GPU-h)], and accelerator → its cheapest on-demand (ref, $/GPU-h)."""
    from finops_cli.catalog.prices import reference_prices

    table = reference_prices()
    exact: dict[tuple[str, str], list[tuple[str, float]]] = {}
    cheapest: dict[str, tuple[str, float]] = {}
    for r in table[table["term"] == "on_demand"].to_dict("records"):
        if not r["usd_per_gpu_hour"]:
            continue
        price = float(r["usd_per_gpu_hour"])
        exact.setdefault((r["provider"], r["offering"]), []).append((r["region"], price))
        acc = r["accelerator"]
        if acc and (acc not in cheapest or price < cheapest[acc][1]):
            cheapest[acc] = (f"{r['provider']}/{r['offering']}/on_demand", price)
    return exact, cheapest


def pricebook_rate(provider: str, region: str, instance_type: str, accelerator: str) -> tuple[str, float] | None:
    """The on-demand $/GPU-hour the pricebook gives these lines, and which row it is (None: no row fits)."""
    exact, cheapest = _on_demand_prices()
    rows = exact.get((provider, instance_type))
    if rows:
        _, price = next(((g, p) for g, p in rows if g == region), rows[0])
        return f"{provider}/{instance_type}/on_demand", price
    if accelerator in cheapest:
        ref, price = cheapest[accelerator]
        return f"{ref} (cheapest on-demand {accelerator})", price
    return None


def _reference(r: Mapping[str, Any], cost: float) -> tuple[float, str, str | None]:
    """(reference cost, basis, pricebook row) of one line group."""
    category, fmt = r["pricing_category"], r["x_SourceFormat"]
    if r["ChargeCategory"] == "Tax":  # paid at any price: no saving either way
        return cost, "none", None
    list_cost = float(r.get("list_cost") or 0.0)
    stated = int(r.get("list_priced_lines") or 0) > 0 or abs(list_cost - float(r["billed_cost"])) > 0.005
    if category == "Standard" or (fmt != "gcp" and stated):
        return list_cost, "bill", None
    gpu_hours = float(r["gpu_hours"])
    if gpu_hours > 0 and r["provider"] not in API_PROVIDERS:
        rate = pricebook_rate(r["provider"], r["region"], r["instance_type"], r["x_AcceleratorType"])
        if rate is not None:
            return gpu_hours * rate[1], "pricebook", rate[0]
    return cost, "none", None


def realised_savings(
    store: Store,
    by: Sequence[str],
    *,
    where: Mapping[str, Sequence[str]] | None = None,
    months: Sequence[str] | None = None,
    cost: str = "effective",
    all_lines: bool = False,
    interruptions: pd.DataFrame | None = None,
    checkpoint_minutes: float = 30.0,
) -> SavingsResult:
    """Cost, on-demand reference and savings per ``by`` group × currency, split by lever (module docstring).

    ``by``: dimensions or tag keys (``finops costs --by``); ``where``: name → accepted values; ``months``: billing
    periods (None: all); ``cost``: effective or billed; ``all_lines``: every line, not only GPU lines.
    ``interruptions``: spot preemptions (:func:`~finops_cli.alerts.interruptions.read_interruptions`), whose
    redone work leaves the on-demand reference (``checkpoint_minutes``: the interval where a preemption does not
    say what it lost).
    """
    cost_column(cost)  # checks the name
    column = f"{cost}_cost"  # as cost_groups names its sums
    by = [dimension(b) for b in by if b.strip()]
    if not by:
        raise InputError(": name at least one dimension or tag, e.g. tag:run_id or team", param="by")
    if not store.has("billing"):
        raise InputError("no billing in the store; run 'finops ingest billing' first")
    periods = store.partition_values("billing", "billing_period")
    unknown = [m for m in months or [] if m not in periods]
    if unknown:
        raise InputError(f"{unknown[0]}: no billing for it in the store (have {', '.join(periods)})", param="months")
    keys = list(dict.fromkeys([*by, *_FINE]))
    spend = cost_groups(store, keys, where=where, months=months, gpu_only=not all_lines)
    sel = selection(keys, where, months=months, gpu_only=not all_lines)
    refs = run(store, queries.REFERENCE_GROUPS, sel, keys)
    assert spend is not None and refs is not None  # the store has billing
    frame = spend.merge(refs, on=[*keys, "currency"], how="left")
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    used: set[str] = set()
    for r in frame.to_dict("records"):
        line_cost = float(r[column])
        reference, basis, book = _reference(r, line_cost)
        if book:
            used.add(book)
        lever = "api" if r["provider"] in API_PROVIDERS else _LEVER_OF_CATEGORY.get(r["pricing_category"], "on_demand")
        key = tuple(str(r[k]) for k in [*by, "currency"])
        acc = out.setdefault(key, {"cost": 0.0, "reference_cost": 0.0, "gpu_hours": 0.0, "bases": set()})
        acc["cost"] += line_cost
        acc["reference_cost"] += reference
        acc["gpu_hours"] += float(r["gpu_hours"])
        acc[lever] = acc.get(lever, 0.0) + (reference - line_cost)
        acc["bases"].add(basis)
    redone: dict[tuple[str, ...], dict[str, float]] = {}
    if interruptions is not None:
        from finops_cli.alerts.interruptions import redone_work

        redone, more = redone_work(store, by, interruptions, where=where, months=months, cost=cost,
                                   checkpoint_minutes=checkpoint_minutes, reference=_reference)  # fmt: skip
        notes_redone = more
    else:
        notes_redone = []
    rows: list[dict[str, Any]] = []
    totals: dict[str, dict[str, float]] = {}
    for key, acc in out.items():
        lost = redone.get(key, {"gpu_hours": 0.0, "cost": 0.0, "value": 0.0})
        acc["reference_cost"] -= lost["value"]  # on demand, the lost work is not done twice
        acc["spot"] = acc.get("spot", 0.0) - lost["value"]
        savings = acc["reference_cost"] - acc["cost"]
        bases = sorted(acc["bases"] - {"none"}) or ["none"]
        row: dict[str, Any] = {
            **dict(zip([*by, "currency"], key, strict=True)),
            "cost": acc["cost"],
            "reference_cost": acc["reference_cost"],
            "savings": savings,
            "savings_pct": 100.0 * savings / acc["reference_cost"] if acc["reference_cost"] > 0 else None,
            **{lever: acc.get(lever, 0.0) for lever in LEVERS},
            "gpu_hours": acc["gpu_hours"],
            "redone_gpu_hours": lost["gpu_hours"],
            "redone_cost": lost["cost"],
            "reference": "+".join(bases),
        }
        rows.append(row)
        t = totals.setdefault(key[-1], {"cost": 0.0, "reference_cost": 0.0, "savings": 0.0})
        for name in t:
            t[name] += row[name]
    rows.sort(key=lambda r: (r["currency"], -r["savings"], *(str(r[b]) for b in by)))
    notes = [f"pricebook reference: {row}" for row in sorted(used)] + notes_redone
    if frame.empty:
        notes.append("no billing line matches" + ("" if all_lines else " (GPU lines only; `all_lines` for every line)"))
    if any(r[b] == NONE for r in rows for b in by):
        notes.append(f"{NONE}: lines without that dimension or tag")
    return SavingsResult(by, cost, list(months or periods), rows, totals, notes)


def frame_of(result: SavingsResult) -> pd.DataFrame:
    """The rows as a DataFrame (tests, notebooks)."""
    return pd.DataFrame(result.rows)
