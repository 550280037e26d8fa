"""The questions alerts ask of the store, as SQL written once (the conventions of :mod:`finops_cli.store.queries`).

``{groups}`` and ``{conditions}`` are filled by :func:`finops_cli.alerts.scope.selection` from allow-listed
columns and ``$parameters``; ``{cost}`` is ``EffectiveCost`` or ``BilledCost``. Spend itself comes from
:data:`~finops_cli.store.queries.COST_GROUPS` (``finops costs``'s question) wherever a total must match it.
"""

from __future__ import annotations

from finops_cli.store.queries import Query

#: The bill's own on-demand reference per group: Σ ListCost and how many lines state a list unit price.
REFERENCE_GROUPS = Query(
    "alerts_reference_groups",
    ("billing",),
    """
SELECT {groups}BillingCurrency AS currency,
       sum(COALESCE(ListCost, 0.0)) AS list_cost,
       count(ListUnitPrice) AS list_priced_lines
FROM billing
WHERE {conditions}
GROUP BY ALL
""",
)

#: Spend per UTC day (of the charge period's start) × group × currency: the series budgets forecast and
#: anomaly detection models. Summed as decimals: a parallel sum of doubles differs in its last bits from run to
#: run, and a forecast (and a notification's fingerprint) must not.
DAILY_COSTS = Query(
    "alerts_daily_costs",
    ("billing",),
    """
SELECT CAST(date_trunc('day', ChargePeriodStart) AS DATE) AS day,
       {groups}BillingCurrency AS currency,
       CAST(sum(CAST(COALESCE({cost}, 0.0) AS DECIMAL(38, 9))) AS DOUBLE) AS cost
FROM billing
WHERE {conditions}
GROUP BY ALL
""",
)

#: :data:`DAILY_COSTS` per UTC hour (``day`` is the hour's start), over the lines billed per hour (a charge period of
#: an hour or less): a daily line says nothing about which of its hours cost what.
HOURLY_COSTS = Query(
    "alerts_hourly_costs",
    ("billing",),
    """
SELECT date_trunc('hour', ChargePeriodStart) AS day,
       {groups}BillingCurrency AS currency,
       CAST(sum(CAST(COALESCE({cost}, 0.0) AS DECIMAL(38, 9))) AS DOUBLE) AS cost
FROM billing
WHERE {conditions} AND ChargePeriodEnd <= ChargePeriodStart + INTERVAL 1 HOUR
GROUP BY ALL
""",
)

#: The instant the store's billing runs to (the latest charge period end) and the first charge start.
DATA_SPAN = Query(
    "alerts_data_span",
    ("billing",),
    """
SELECT min(ChargePeriodStart) AS since,
       max(CASE WHEN ChargePeriodEnd > ChargePeriodStart THEN ChargePeriodEnd ELSE ChargePeriodStart END) AS through
FROM billing
WHERE {conditions}
""",
)

#: The spot resources an interruption trace names, per group: when their lines run, GPUs, GPU-hours, cost and the
#: bill's list cost (what the redone work cost, and what it would have cost on demand).
SPOT_RESOURCES = Query(
    "alerts_spot_resources",
    ("billing",),
    """
SELECT {groups}BillingCurrency AS currency,
       min(ChargePeriodStart) AS first_start,
       max(CASE WHEN ChargePeriodEnd > ChargePeriodStart THEN ChargePeriodEnd ELSE ChargePeriodStart END) AS last_end,
       max(x_GpuCount) AS gpus,
       sum(COALESCE(x_GpuHours, 0.0)) AS gpu_hours,
       sum(COALESCE(BilledCost, 0.0)) AS billed_cost,
       sum(COALESCE(EffectiveCost, 0.0)) AS effective_cost,
       sum(COALESCE(ListCost, 0.0)) AS list_cost,
       count(ListUnitPrice) AS list_priced_lines
FROM billing
WHERE {conditions} AND PricingCategory = 'Dynamic'
GROUP BY ALL
""",
)
