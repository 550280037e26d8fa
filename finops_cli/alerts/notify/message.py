"""A result as a message: the headline figure first, a few facts, the items that are incidents, and the command
that reproduces it. Destinations render this one model in their own markup (:mod:`finops_cli.alerts.notify`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from finops_cli.errors import InputError

#: facts listed in one message (the rest: "… and N more", the full result is one command away)
MAX_LINES = 8


@dataclass(frozen=True)
class Item:
    """One budget, anomaly or gate verdict: one incident (``key`` is stable across runs, so repeats update it)."""

    key: str
    title: str
    active: bool  # True: trigger (over budget, anomalous, failed); False: resolved
    severity: str = "warning"  # critical | error | warning | info
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Message:
    kind: str
    headline: str
    lines: list[str]
    items: list[Item]
    command: str
    link: str | None
    key: str  # the result's fingerprint: the same result sent twice is one message

    @property
    def alerting(self) -> bool:
        return any(i.active for i in self.items)


def _money(value: float, currency: str) -> str:
    from finops_cli.report.format import money

    return money(value, currency)


def _more(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_LINES:
        return lines
    return [*lines[: MAX_LINES - 1], f"… and {len(lines) - MAX_LINES + 1} more"]


def _savings(doc: dict[str, Any]) -> tuple[str, list[str], list[Item], str]:
    by = ",".join(doc["by"])
    heads = [
        f"Realised savings {_money(t['savings'], c)} "
        f"({100 * t['savings'] / t['reference_cost'] if t['reference_cost'] else 0:.1f} %) on {_money(t['cost'], c)} "
        f"spend, {', '.join(doc['months'])}"
        for c, t in sorted(doc["totals"].items())
    ]
    lines = [
        f"{by}={','.join(str(r[b]) for b in doc['by'])}: saved {_money(r['savings'], r['currency'])} "
        f"of {_money(r['reference_cost'], r['currency'])} at on-demand ({r['reference']})"
        for r in doc["rows"]
    ]
    return "; ".join(heads) or "No spend in scope", lines, [], f"finops savings --by {by} --month {doc['months'][-1]}"


def _budgets(doc: dict[str, Any]) -> tuple[str, list[str], list[Item], str]:
    rows = doc["budgets"]
    over = [r for r in rows if r["crossed"]]
    head = (
        f"{len(over)} of {len(rows)} budgets over a threshold" if over else f"All {len(rows)} budgets within thresholds"
    )
    lines, items = [], []
    for r in sorted(rows, key=lambda r: -r["actual_pct"]):
        cur, f = r["currency"], r["forecast"]
        fc = (
            "period closed"
            if f["remaining_days"] == 0
            else (
                f"forecast {_money(f['expected'], cur)} ({_money(f['low'], cur)}–{_money(f['high'], cur)})"
                if f["expected"] is not None
                else f"no forecast: {f['reason']}"
            )
        )
        text = (
            f"{r['name']} ({r['scope']}): {_money(r['actual'], cur)} of {_money(r['amount'], cur)} "
            f"({r['actual_pct']:.0f} %), {fc}"
        )
        lines.append(text)
        worst = max((c["percent"] for c in r["crossed"]), default=0.0)
        severity = "critical" if worst >= 100 else "warning"
        items.append(Item(r["dedup_key"], f"Budget {text}", bool(r["crossed"]), severity, r))
    return head, lines, items, "finops budget check --budgets budgets.yaml"


def _anomalies(doc: dict[str, Any]) -> tuple[str, list[str], list[Item], str]:
    found = doc["anomalies"]
    window = doc["window"]
    if not found:
        return f"No cost anomalies {window['start']} – {window['end']}", [], [], "finops anomalies"
    by_cur: dict[str, float] = {}
    for a in found:
        by_cur[a["currency"]] = by_cur.get(a["currency"], 0.0) + a["impact"]
    impact = ", ".join(f"{_money(v, c)}" for c, v in sorted(by_cur.items()))
    head = f"{len(found)} cost anomal{'y' if len(found) == 1 else 'ies'}: {impact} over expected"
    lines, items = [], []
    for a in found:
        top = "; ".join(
            f"{c['dimension']}={c['value']} +{_money(c['impact'], a['currency'])}" for c in a["contributors"][:2]
        )
        text = (
            f"{a['day']} {a['scope']}: {_money(a['actual'], a['currency'])} vs "
            f"{_money(a['expected'], a['currency'])} expected ({_money(a['impact'], a['currency'])})"
            + (f"; top: {top}" if top else "")
        )
        lines.append(text)
        items.append(Item(a["dedup_key"], f"Cost anomaly {text}", True, "error", a))
    by = ",".join(doc.get("parameters", {}).get("by") or [])
    return head, lines, items, f"finops anomalies --by {by}" if by else "finops anomalies"


def _gate(doc: dict[str, Any]) -> tuple[str, list[str], list[Item], str]:
    cur = doc.get("currency") or "USD"
    verdict = "PASSED" if doc["passed"] else "FAILED"
    delta = doc.get("delta")
    change = f" ({_money(delta, cur)}, {doc.get('delta_pct') or 0:+.1f} %)" if delta is not None else ""
    base = f" vs {_money(doc['baseline_cost'], cur)}" if doc.get("baseline_cost") is not None else ""
    head = f"Cost gate {verdict}: planned {_money(doc['planned_cost'], cur)}{base}{change}"
    lines = [f"{r['name']}: {'pass' if r['passed'] else 'FAIL'}" for r in doc.get("rules", [])]
    start = (doc.get("horizon") or {}).get("start", "plan")
    item = Item(f"finops/gate/{start}", head, not doc["passed"], "error", {"rules": doc.get("rules", [])})
    return head, lines, [item], "finops gate --plan plan.json"


def _plan(doc: dict[str, Any]) -> tuple[str, list[str], list[Item], str]:
    t, cur = doc["totals"], doc.get("currency") or "USD"
    head = (
        f"Plan saves {_money(t['savings'], cur)} ({t.get('savings_pct') or 0:.1f} %): {_money(t['planned_cost'], cur)} "
        f"planned vs {_money(t['baseline_cost'], cur)} baseline"
    )
    levers = (doc.get("savings_by_lever") or {}).get("levers") or []
    lines = [
        f"{lv.get('label') or lv.get('lever', '?')}: {_money(float(lv.get('saving') or 0.0), cur)}"
        f" ({str(lv.get('evidence', '')).replace('_', ' ')})"
        for lv in levers
        if isinstance(lv, dict) and lv.get("applied", True) and abs(float(lv.get("saving") or 0.0)) >= 0.005
    ]
    return head, lines, [], "finops plan --fleet fleet.yaml --workloads workloads.yaml"


def kind_of(doc: Any) -> str:
    """Which result ``doc`` is: a finops.* document, a gate result or a plan."""
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object: the JSON result of savings, budget check, anomalies, gate or plan")
    if str(doc.get("kind", "")).startswith("finops."):
        return str(doc["kind"])
    if "passed" in doc and "rules" in doc:
        return "finops.gate"
    if "totals" in doc and "allocations" in doc:
        return "finops.plan"
    raise InputError("not a finops result: expected the JSON result of savings, budget check, anomalies, gate or plan")


_BUILDERS = {
    "finops.savings": _savings,
    "finops.budget_check": _budgets,
    "finops.anomalies": _anomalies,
    "finops.gate": _gate,
    "finops.plan": _plan,
}


def _rounded(value: Any) -> Any:
    """``value`` with every float to 4 decimals: the last bits of a parallel sum do not make a new result."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def message_of(doc: dict[str, Any], *, command: str | None = None, link: str | None = None) -> Message:
    """The message for a result document; ``command`` overrides the reproducing command, ``link`` adds a link."""
    kind = kind_of(doc)
    if kind not in _BUILDERS:
        raise InputError(f"cannot notify a {kind} result (known: {', '.join(_BUILDERS)})")
    try:
        head, lines, items, default = _BUILDERS[kind](doc)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise InputError(f"a {kind} result without the fields it needs ({type(exc).__name__}: {exc})") from None
    canonical = json.dumps(_rounded(doc), sort_keys=True, separators=(",", ":"), default=str)
    key = hashlib.sha256(f"{kind}\n{canonical}".encode()).hexdigest()[:32]
    return Message(kind, head, _more(lines), items, command or default, link, key)
