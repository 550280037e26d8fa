"""Which billing lines a question covers: groups and filters by dimension or tag, as SQL slots and parameters.

Names are those of ``finops costs --by`` (:data:`~finops_cli.store.cost_query.DIMENSIONS`, raw billing columns,
else a tag key read from ``Tags``); every value a user typed travels as a ``$parameter``, never spliced into SQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from finops_cli.errors import InputError
from finops_cli.schema.billing import BILLING_SCHEMA, GPU_LINE_SQL
from finops_cli.store import engine
from finops_cli.store.cost_query import DIMENSIONS, NONE
from finops_cli.store.engine import json_path

#: money columns a question may sum: ``effective`` (amortised) or ``billed``
COST_COLUMNS = {"effective": "EffectiveCost", "billed": "BilledCost"}


def parse_where(items: Sequence[str] | None) -> dict[str, list[str]]:
    """``["team=research,data"]`` → ``{"team": ["research", "data"]}`` (repeats of one name add values)."""
    out: dict[str, list[str]] = {}
    for item in items or []:
        name, sep, values = item.partition("=")
        if not sep or not name.strip() or not values.strip():
            raise InputError(f"{item!r}: expected NAME=VALUE[,VALUE...] such as team=research", param="where")
        out.setdefault(dimension(name), []).extend(v.strip() for v in values.split(",") if v.strip())
    return out


def dimension(name: str) -> str:
    """A ``--by``/``--where`` name as the store knows it: ``tag:run_id`` is the tag ``run_id``."""
    name = name.strip()
    return name[4:].strip() if name.startswith("tag:") else name


def cost_column(cost: str) -> str:
    if cost not in COST_COLUMNS:
        raise InputError(f"cost {cost!r}: expected effective or billed")
    return COST_COLUMNS[cost]


@dataclass
class Selection:
    """A question's ``{groups}`` and ``{conditions}`` slots and the parameters they use."""

    params: dict[str, Any] = field(default_factory=lambda: {"none": NONE})
    groups: str = ""
    conditions: list[str] = field(default_factory=lambda: ["TRUE"])

    def expr(self, name: str) -> str:
        """The SQL value of dimension, billing column or tag ``name`` (empty: ``(none)``)."""
        raw = set(BILLING_SCHEMA.names) | {"provider", "billing_period"}
        col = DIMENSIONS.get(name, name if name in raw else None)
        if col is not None:
            return f"COALESCE(CAST({engine.quote_identifier(col)} AS VARCHAR), $none)"
        key = f"tag{len(self.params)}"
        self.params[key] = json_path(name)
        return f"COALESCE(CASE WHEN json_valid(Tags) THEN json_extract_string(Tags, ${key}) END, $none)"

    def values(self, prefix: str, values: Sequence[object]) -> str:
        """Add ``values`` as parameters; their ``$name, …`` for an ``IN (…)``."""
        names = []
        for v in values:
            key = f"{prefix}{len(self.params)}"
            self.params[key] = v
            names.append(f"${key}")
        return ", ".join(names)

    def slots(self) -> dict[str, str]:
        groups = {"groups": self.groups} if self.groups else {}  # a query without a {groups} slot takes none
        return {**groups, "conditions": " AND ".join(self.conditions)}


def selection(
    by: Sequence[str] = (),
    where: Mapping[str, Sequence[str]] | None = None,
    *,
    months: Sequence[str] | None = None,
    gpu_only: bool = True,
) -> Selection:
    """Groups ``by`` (each as ``"gN"``) and the filters: GPU lines (as ``finops costs``), ``months`` (billing
    periods: whole partitions pruned), ``where`` name → accepted values (``(none)`` selects empty ones)."""
    sel = Selection()
    sel.groups = "".join(f'{sel.expr(c)} AS "g{i}", ' for i, c in enumerate(by))
    if gpu_only:
        sel.conditions.append(GPU_LINE_SQL)
    if months:
        sel.conditions.append(f"billing_period IN ({sel.values('m', list(months))})")
    for name, accepted in (where or {}).items():
        sel.conditions.append(f"{sel.expr(name)} IN ({sel.values('w', [str(v) for v in accepted])})")
    return sel


def run(store: Any, query: Any, sel: Selection, by: Sequence[str] = (), **slots: str) -> Any:
    """Run ``query`` with ``sel``'s slots; the ``gN`` columns renamed to ``by``'s names (None: no billing)."""
    frame = engine.run_pandas(store, query, sel.params, **sel.slots(), **slots)
    if frame is None:
        return None
    return frame.rename(columns={f"g{i}": c for i, c in enumerate(by)})
