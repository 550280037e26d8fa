"""Every question asked of the store, as SQL text written once (DuckDB's dialect; Spark runs it through sqlglot).

Rules that keep them portable and cheap: filter on the partition columns so engines read only the horizon's
partitions, and name only the columns a question needs; aggregate in the engine (one row per group reaches
pandas); values are ``$name`` parameters; identifiers that vary are ``{slot}`` templates filled only from an
allow-list (:func:`finops_cli.store.engine.render`), never from user text.
"""

from __future__ import annotations

from dataclasses import dataclass

from finops_cli.schema.billing import GPU_LINE_SQL


@dataclass(frozen=True)
class Query:
    """One question: its name, the datasets it reads, and its SQL (``$param`` values, ``{slot}`` identifiers)."""

    name: str
    tables: tuple[str, ...]
    sql: str


#: The device group waste reports by: the raw query, the ingest aggregate and the query over it group by these.
_DEVICE_GROUP = "device_id, resource_id, host, team, workload, accelerator"

#: Utilisation per device group for one month: the waste report's input. ``first_ts``/``last_ts``/
#: ``max_interval_s`` give each device's observed span (``last − first + longest interval``).
WASTE_DEVICE_USAGE = Query(
    "waste_device_usage",
    ("utilization",),
    f"""
SELECT {_DEVICE_GROUP},
       count(utilization) AS samples,
       CAST(sum(CASE WHEN utilization = 0 THEN 1 ELSE 0 END) AS BIGINT) AS zero_samples,
       sum(interval_s) / 3600.0 AS device_hours,
       sum(utilization * interval_s) / 3600.0 AS busy_hours,
       min("timestamp") AS first_ts,
       max("timestamp") AS last_ts,
       max(interval_s) AS max_interval_s
FROM utilization
WHERE month = $month
GROUP BY {_DEVICE_GROUP}
""",
)

#: a sample's bin of the waste histogram: utilisation × 1000, floored, clipped to 0 … 999
_UTIL_BIN = "LEAST(GREATEST(CAST(FLOOR(utilization * 1000) AS BIGINT), 0), 999)"
#: Sample utilisation in 1000 bins over [0, 1] plus exact zeros, of the samples ``{where}`` selects (non-finite
#: values are left out: ``BETWEEN`` is false for NaN and ±inf in DuckDB and Spark alike).
_HISTOGRAM = f"""
SELECT {_UTIL_BIN} AS bin,
       count(*) AS samples,
       CAST(sum(CASE WHEN utilization = 0 THEN 1 ELSE 0 END) AS BIGINT) AS zeros
FROM utilization
WHERE {{where}}utilization BETWEEN -1.0e308 AND 1.0e308
GROUP BY {_UTIL_BIN}
"""

#: The month's histogram: deciles and the share at 0 %.
WASTE_HISTOGRAM = Query("waste_histogram", ("utilization",), _HISTOGRAM.replace("{where}", "month = $month AND "))

#: Billed lines of one billing period per resource and what prices and matches it (``{match_columns}``: the
#: fleet's ``match`` columns): the waste report's cost per GPU-hour.
RESOURCE_COSTS = Query(
    "resource_costs",
    ("billing",),
    """
SELECT ResourceId, provider, RegionId, x_InstanceType, x_AcceleratorType, PricingCategory, BillingCurrency,
       json_extract_string(Tags, '$.team') AS team{match_columns},
       sum(COALESCE(x_GpuHours, 0.0)) AS gpu_hours,
       sum(EffectiveCost) AS cost,
       sum(BilledCost) AS billed_cost,
       count(*) AS lines
FROM billing
WHERE billing_period = $month
GROUP BY ResourceId, provider, RegionId, x_InstanceType, x_AcceleratorType, PricingCategory, BillingCurrency,
         json_extract_string(Tags, '$.team'){match_columns}
""",
)

#: what :data:`RESOURCE_COSTS` groups by besides the baseline's columns (no ``{match_columns}`` repeat)
RESOURCE_COSTS_GROUPED = ("ResourceId", "x_AcceleratorType")
#: :data:`RESOURCE_COSTS`' columns that describe a resource (few distinct values over many resources)
RESOURCE_COSTS_ATTRIBUTES = (
    "provider", "RegionId", "x_InstanceType", "x_AcceleratorType", "PricingCategory", "BillingCurrency", "team",
)  # fmt: skip

#: Lines charged in ``[$start, $end)`` grouped by what matches them to a substrate: the billed baseline's input.
#: Periods before the horizon's cannot hold its charges; later ones may (corrections of earlier periods).
BILLED_BASELINE = Query(
    "billed_baseline",
    ("billing",),
    """
SELECT provider, RegionId, x_InstanceType, PricingCategory, BillingCurrency{match_columns},
       count(*) AS lines,
       sum(EffectiveCost) AS cost,
       sum(BilledCost) AS billed_cost,
       sum(COALESCE(x_GpuHours, 0.0)) AS gpu_hours
FROM billing
WHERE billing_period >= $first_period
  AND ChargePeriodStart >= $start AND ChargePeriodStart < $end
GROUP BY provider, RegionId, x_InstanceType, PricingCategory, BillingCurrency{match_columns}
""",
)

#: Busy and allocated GPU-hours per hour and accelerator of the devices whose ``{tag_column}`` equals ``$value``:
#: demand ``from_store``. A sample counts in the hour it starts; ``observed_until`` is the latest sample end.
DEMAND_FROM_UTILIZATION = Query(
    "demand_from_utilization",
    ("utilization",),
    """
SELECT date_trunc('hour', "timestamp") AS "timestamp", accelerator,
       sum(utilization * interval_s) / 3600.0 AS busy_gpu_hours,
       sum(interval_s) / 3600.0 AS allocated_gpu_hours,
       max("timestamp" + INTERVAL 1 SECOND * interval_s) AS observed_until
FROM utilization
WHERE month >= $first_month AND month <= $last_month
  AND {tag_column} = $value
  AND "timestamp" >= $start AND "timestamp" < $end
GROUP BY date_trunc('hour', "timestamp"), accelerator
""",
)

#: Billed GPU-hours (``ConsumedQuantity × x_GpuCount``) per hour and accelerator of the lines tagged
#: ``$tag_path = $value``: demand ``from_store`` without utilisation (a line without a later end counts one hour).
DEMAND_FROM_BILLING = Query(
    "demand_from_billing",
    ("billing",),
    """
SELECT date_trunc('hour', ChargePeriodStart) AS "timestamp", x_AcceleratorType AS accelerator,
       sum(ConsumedQuantity * x_GpuCount) AS gpu_hours,
       max(CASE WHEN ChargePeriodEnd > ChargePeriodStart THEN ChargePeriodEnd
                ELSE ChargePeriodStart + INTERVAL 1 HOUR END) AS observed_until
FROM billing
WHERE billing_period >= $first_period
  AND ChargePeriodStart >= $start AND ChargePeriodStart < $end
  AND x_GpuCount > 0 AND ConsumedQuantity IS NOT NULL
  AND json_extract_string(Tags, $tag_path) = $value
GROUP BY date_trunc('hour', ChargePeriodStart), x_AcceleratorType
""",
)

#: The newest spot price per provider: how old each price feed is (the report's price-feed table).
SPOT_FEED_LATEST = Query(
    "spot_feed_latest",
    ("spot_prices",),
    """
SELECT provider, max("timestamp") AS latest
FROM spot_prices
GROUP BY provider
ORDER BY provider
""",
)

# ------------------------------------------------------------------------------ ingest aggregates
# Each is built from one detail file and written beside it in the same transaction (docs/schema.md); rows are
# sorted (``ORDER BY ALL``: a parallel GROUP BY has no order), so a re-ingest writes the same aggregate file.

#: ``billing_hourly``: per hour × account, region, type, accelerator, category, currency, team tag; the figures
#: of :data:`BILLED_BASELINE` and :data:`DEMAND_FROM_BILLING`.
BILLING_HOURLY = Query(
    "billing_hourly",
    ("billing",),
    """
SELECT date_trunc('hour', ChargePeriodStart) AS hour,
       SubAccountId, RegionId, x_InstanceType, x_AcceleratorType, PricingCategory, BillingCurrency,
       json_extract_string(Tags, '$.team') AS team,
       count(*) AS lines,
       sum(COALESCE(x_GpuHours, 0.0)) AS gpu_hours,
       sum(CASE WHEN x_GpuCount > 0 THEN ConsumedQuantity * x_GpuCount END) AS consumed_gpu_hours,
       max(CASE WHEN x_GpuCount > 0 AND ConsumedQuantity IS NOT NULL
                THEN CASE WHEN ChargePeriodEnd > ChargePeriodStart THEN ChargePeriodEnd
                          ELSE ChargePeriodStart + INTERVAL 1 HOUR END END) AS observed_until,
       sum(BilledCost) AS billed_cost,
       sum(EffectiveCost) AS effective_cost
FROM billing
GROUP BY date_trunc('hour', ChargePeriodStart), SubAccountId, RegionId, x_InstanceType, x_AcceleratorType,
         PricingCategory, BillingCurrency, json_extract_string(Tags, '$.team')
ORDER BY ALL
""",
)

#: ``utilization_hourly``: :data:`DEMAND_FROM_UTILIZATION`'s figures per hour × accelerator, team, workload.
UTILIZATION_HOURLY = Query(
    "utilization_hourly",
    ("utilization",),
    """
SELECT date_trunc('hour', "timestamp") AS hour, accelerator, team, workload,
       count(utilization) AS samples,
       sum(utilization * interval_s) / 3600.0 AS busy_gpu_hours,
       sum(interval_s) / 3600.0 AS allocated_gpu_hours,
       max("timestamp" + INTERVAL 1 SECOND * interval_s) AS observed_until
FROM utilization
GROUP BY date_trunc('hour', "timestamp"), accelerator, team, workload
ORDER BY ALL
""",
)

#: ``utilization_devices``: :data:`WASTE_DEVICE_USAGE`'s sums and extremes per device group, in seconds (sums of
#: whole-second intervals are exact); summing a month's files gives :data:`WASTE_DEVICE_USAGE`.
UTILIZATION_DEVICES = Query(
    "utilization_devices",
    ("utilization",),
    f"""
SELECT {_DEVICE_GROUP},
       count(utilization) AS samples,
       CAST(sum(CASE WHEN utilization = 0 THEN 1 ELSE 0 END) AS BIGINT) AS zero_samples,
       sum(interval_s) AS device_seconds,
       sum(utilization * interval_s) AS busy_seconds,
       min("timestamp") AS first_ts,
       max("timestamp") AS last_ts,
       max(interval_s) AS max_interval_s
FROM utilization
GROUP BY {_DEVICE_GROUP}
ORDER BY ALL
""",
)

#: ``utilization_histogram``: :data:`WASTE_HISTOGRAM`'s bins (≤ 1000 rows; counts add up).
UTILIZATION_HISTOGRAM = Query(
    "utilization_histogram", ("utilization",), _HISTOGRAM.replace("{where}", "") + "ORDER BY ALL\n"
)

#: :data:`WASTE_DEVICE_USAGE` from ``utilization_devices``: the same groups and figures from thousands of rows.
WASTE_DEVICE_USAGE_AGGREGATE = Query(
    "waste_device_usage_aggregate",
    ("utilization_devices",),
    f"""
SELECT {_DEVICE_GROUP},
       sum(samples) AS samples,
       CAST(sum(zero_samples) AS BIGINT) AS zero_samples,
       sum(device_seconds) / 3600.0 AS device_hours,
       sum(busy_seconds) / 3600.0 AS busy_hours,
       min(first_ts) AS first_ts,
       max(last_ts) AS last_ts,
       max(max_interval_s) AS max_interval_s
FROM utilization_devices
WHERE month = $month
GROUP BY {_DEVICE_GROUP}
""",
)

#: :data:`WASTE_HISTOGRAM` from ``utilization_histogram``.
WASTE_HISTOGRAM_AGGREGATE = Query(
    "waste_histogram_aggregate",
    ("utilization_histogram",),
    """
SELECT bin, sum(samples) AS samples, CAST(sum(zeros) AS BIGINT) AS zeros
FROM utilization_histogram
WHERE month = $month
GROUP BY bin
""",
)

#: columns of ``billing_hourly`` a fleet ``match`` rule may name (beyond provider, region, type, category)
BILLING_HOURLY_MATCHABLE = frozenset({"SubAccountId"})

#: :data:`BILLED_BASELINE` from ``billing_hourly`` (when it covers every file and the fleet's match columns).
BILLED_BASELINE_HOURLY = Query(
    "billed_baseline_hourly",
    ("billing_hourly",),
    """
SELECT provider, RegionId, x_InstanceType, PricingCategory, BillingCurrency{match_columns},
       sum(lines) AS lines,
       sum(effective_cost) AS cost,
       sum(billed_cost) AS billed_cost,
       sum(gpu_hours) AS gpu_hours
FROM billing_hourly
WHERE billing_period >= $first_period
  AND hour >= $start AND hour < $end
GROUP BY provider, RegionId, x_InstanceType, PricingCategory, BillingCurrency{match_columns}
""",
)

#: :data:`DEMAND_FROM_UTILIZATION` from ``utilization_hourly``.
DEMAND_FROM_UTILIZATION_HOURLY = Query(
    "demand_from_utilization_hourly",
    ("utilization_hourly",),
    """
SELECT hour AS "timestamp", accelerator,
       sum(busy_gpu_hours) AS busy_gpu_hours,
       sum(allocated_gpu_hours) AS allocated_gpu_hours,
       max(observed_until) AS observed_until
FROM utilization_hourly
WHERE month >= $first_month AND month <= $last_month
  AND {tag_column} = $value
  AND hour >= $start AND hour < $end
GROUP BY hour, accelerator
""",
)

#: :data:`DEMAND_FROM_BILLING` for the ``team`` tag, from ``billing_hourly``.
DEMAND_FROM_BILLING_HOURLY = Query(
    "demand_from_billing_hourly",
    ("billing_hourly",),
    """
SELECT hour AS "timestamp", x_AcceleratorType AS accelerator,
       sum(consumed_gpu_hours) AS gpu_hours,
       max(observed_until) AS observed_until
FROM billing_hourly
WHERE billing_period >= $first_period
  AND hour >= $start AND hour < $end
  AND consumed_gpu_hours IS NOT NULL
  AND team = $value
GROUP BY hour, x_AcceleratorType
""",
)

#: ``finops costs``: billed and amortised cost, GPU-hours and lines per group × currency; ``{groups}`` and
#: ``{conditions}`` are built by :func:`finops_cli.store.cost_query.cost_groups` from allow-listed columns.
COST_GROUPS = Query(
    "cost_groups",
    ("billing",),
    f"""
SELECT {{groups}}BillingCurrency AS currency,
       sum(COALESCE(BilledCost, 0.0)) AS billed_cost,
       sum(COALESCE(EffectiveCost, 0.0)) AS effective_cost,
       sum(COALESCE(x_GpuHours, 0.0)) AS gpu_hours,
       count(*) AS lines,
       sum(CASE WHEN {GPU_LINE_SQL} THEN COALESCE(BilledCost, 0.0) ELSE 0.0 END) AS gpu_billed_cost,
       sum(CASE WHEN {GPU_LINE_SQL} THEN COALESCE(EffectiveCost, 0.0) ELSE 0.0 END) AS gpu_effective_cost
FROM billing
WHERE {{conditions}}
GROUP BY ALL
""",
)

#: Busy and device GPU-hours per value of utilisation column ``{column}`` over ``{months}``: chargeback's use.
USAGE_GROUPS = Query(
    "usage_groups",
    ("utilization",),
    """
SELECT COALESCE(CAST({column} AS VARCHAR), '(none)') AS {column},
       sum(COALESCE(utilization, 0.0) * interval_s) / 3600.0 AS busy_hours,
       sum(interval_s) / 3600.0 AS device_hours
FROM utilization
WHERE month IN ({months})
GROUP BY ALL
""",
)

#: aggregate dataset -> (the detail dataset it summarises, the query that builds one file's aggregate)
AGGREGATES: dict[str, tuple[str, Query]] = {
    "billing_hourly": ("billing", BILLING_HOURLY),
    "utilization_hourly": ("utilization", UTILIZATION_HOURLY),
    "utilization_devices": ("utilization", UTILIZATION_DEVICES),
    "utilization_histogram": ("utilization", UTILIZATION_HISTOGRAM),
}


def aggregates_of(detail: str) -> list[str]:
    """The aggregate datasets built from each file of ``detail`` (none for datasets without aggregates)."""
    return [name for name, (source, _) in AGGREGATES.items() if source == detail]


#: The latest billing period with GPU-hours (what every command's default month rests on).
LATEST_BILLED_GPU_MONTH = Query(
    "latest_billed_gpu_month",
    ("billing",),
    """
SELECT max(billing_period) AS month
FROM billing
WHERE x_GpuHours > 0
""",
)

#: :data:`LATEST_BILLED_GPU_MONTH` from ``billing_hourly``.
LATEST_BILLED_GPU_MONTH_HOURLY = Query(
    "latest_billed_gpu_month_hourly",
    ("billing_hourly",),
    """
SELECT max(billing_period) AS month
FROM billing_hourly
WHERE gpu_hours > 0
""",
)

# ------------------------------------------------------------------------------ estate draft
# DuckDB only for now (``median``, ``date_diff``, ``isnan``, ``json_valid`` are not checked on Spark), so not in
# :data:`QUERIES`. ``finops estate draft`` aggregates one billing period's GPU lines of one currency.
_DRAFT_GPU_LINES = f"""
FROM billing
WHERE billing_period = $month AND {GPU_LINE_SQL}"""

#: The currencies of the period's GPU lines (a fleet has one: the draft asks for ``--currency`` if several).
DRAFT_CURRENCIES = Query(
    "draft_currencies",
    ("billing",),
    "SELECT BillingCurrency AS currency, count(*) AS lines, max(COALESCE(x_GpuHours, 0.0)) AS max_gpu_hours"
    + _DRAFT_GPU_LINES
    + "\nGROUP BY BillingCurrency\n",
)

_DRAFT_KEY = "provider, BillingAccountId, RegionId, x_InstanceType, PricingCategory"
#: a draft line's workload and team tags (NULL where empty or the tags are not JSON)
_DRAFT_TAGS = """NULLIF(CASE WHEN json_valid(Tags) THEN json_extract_string(Tags, '$.workload') END, '') AS workload,
         NULLIF(CASE WHEN json_valid(Tags) THEN json_extract_string(Tags, '$.team') END, '') AS team"""

#: Per draft substrate with GPU-hours: GPU-hours, effective and billed cost, median GPUs per line, lines.
DRAFT_SUBSTRATES = Query(
    "draft_substrates",
    ("billing",),
    f"""
SELECT {_DRAFT_KEY},
       sum(COALESCE(x_GpuHours, 0.0)) AS gpu_hours,
       COALESCE(sum(EffectiveCost), 0.0) AS effective_cost,
       COALESCE(sum(BilledCost), 0.0) AS billed_cost,
       median(x_GpuCount) AS gpus_per_node,
       count(*) AS lines{_DRAFT_GPU_LINES} AND BillingCurrency = $currency
GROUP BY {_DRAFT_KEY}
HAVING sum(COALESCE(x_GpuHours, 0.0)) > 0
""",
)

#: Lines per draft substrate × accelerator (the substrate's accelerator is the most frequent one).
DRAFT_ACCELERATORS = Query(
    "draft_accelerators",
    ("billing",),
    f"""
SELECT {_DRAFT_KEY}, x_AcceleratorType AS accelerator, count(*) AS lines{_DRAFT_GPU_LINES}
  AND BillingCurrency = $currency AND x_AcceleratorType IS NOT NULL
GROUP BY {_DRAFT_KEY}, x_AcceleratorType
""",
)

#: GPUs starting (+) and ending (−) per draft substrate and instant (each line's GPU-hours spread over its
#: charge period): a running sum over time gives GPUs billed at once.
DRAFT_GPU_EVENTS = Query(
    "draft_gpu_events",
    ("billing",),
    f"""
WITH lines AS (
  SELECT {_DRAFT_KEY}, ChargePeriodStart AS s,
         CASE WHEN ChargePeriodEnd > ChargePeriodStart THEN ChargePeriodEnd
              ELSE ChargePeriodStart + INTERVAL 1 HOUR END AS e,
         COALESCE(x_GpuHours, 0.0) / CASE WHEN ChargePeriodEnd > ChargePeriodStart
                           THEN date_diff('microsecond', ChargePeriodStart, ChargePeriodEnd) / 3600000000.0
                           ELSE 1.0 END AS gpus{_DRAFT_GPU_LINES} AND BillingCurrency = $currency
)
SELECT {_DRAFT_KEY}, t, sum(d) AS d
FROM (SELECT {_DRAFT_KEY}, s AS t, gpus AS d FROM lines
      UNION ALL
      SELECT {_DRAFT_KEY}, e AS t, -gpus AS d FROM lines) AS events
GROUP BY {_DRAFT_KEY}, t
""",
)

#: Billed GPU-hours and lines per draft workload (``workload`` tag, else ``team``, else untagged) × team tag.
DRAFT_WORKLOAD_TEAMS = Query(
    "draft_workload_teams",
    ("billing",),
    f"""
WITH tagged AS (
  SELECT COALESCE(x_GpuHours, 0.0) AS x_GpuHours,
         {_DRAFT_TAGS}{_DRAFT_GPU_LINES}
    AND BillingCurrency = $currency
)
SELECT COALESCE(workload, team, $untagged) AS workload, team, sum(x_GpuHours) AS gpu_hours, count(*) AS lines
FROM tagged
GROUP BY COALESCE(workload, team, $untagged), team
""",
)

#: GPU-hours per draft workload and charge period (start, end; one hour when it has no later end): the draft's
#: hourly demand profile spreads each period's GPU-hours evenly over it (hourly lines keep the bill's shape).
DRAFT_WORKLOAD_PERIODS = Query(
    "draft_workload_periods",
    ("billing",),
    f"""
WITH tagged AS (
  SELECT COALESCE(x_GpuHours, 0.0) AS g, ChargePeriodStart AS s,
         CASE WHEN ChargePeriodEnd > ChargePeriodStart THEN ChargePeriodEnd
              ELSE ChargePeriodStart + INTERVAL 1 HOUR END AS e,
         {_DRAFT_TAGS}{_DRAFT_GPU_LINES}
    AND BillingCurrency = $currency AND COALESCE(x_GpuHours, 0.0) > 0
)
SELECT COALESCE(workload, team, $untagged) AS workload, s, e, sum(g) AS gpu_hours
FROM tagged
GROUP BY COALESCE(workload, team, $untagged), s, e
""",
)

#: Busy GPU-hours (utilisation clipped to [0, 1] × interval; NaN left out) per draft workload (the ``workload``
#: column, else ``team``, else untagged) and clock hour (a sample counts in the hour it starts): the hourly demand
#: profile where utilisation was ingested
DRAFT_BUSY_HOURLY = Query(
    "draft_busy_hourly",
    ("utilization",),
    """
SELECT COALESCE(CAST(workload AS VARCHAR), CAST(team AS VARCHAR), $untagged) AS workload,
       date_trunc('hour', "timestamp") AS hour,
       sum(LEAST(GREATEST(utilization, 0.0), 1.0) * interval_s) / 3600.0 AS busy_hours
FROM utilization
WHERE month = $month AND NOT isnan(utilization)
GROUP BY ALL
""",
)

#: Per billing period: the lines ``{conditions}`` selects (GPU lines, or every line), the distinct UTC days their
#: charge periods start on, and the first start and last end: ``costs --compare`` calls a month partial from these.
MONTH_COVERAGE = Query(
    "month_coverage",
    ("billing",),
    """
SELECT billing_period AS month,
       count(*) AS lines,
       count(DISTINCT CAST(ChargePeriodStart AS DATE)) AS days,
       min(ChargePeriodStart) AS first_start,
       max(ChargePeriodEnd) AS last_end
FROM billing
WHERE {conditions}
GROUP BY billing_period
""",
)

#: Per provider, billing period and currency: commitment purchases and the effective cost of commitment-covered
#: usage. Purchases or covered usage with no amortised cost on the usage means the period came from an actual-cost
#: export alone (Azure's "actual"): its EffectiveCost leaves the commitment out. ``{months}``: ``$mN`` parameters.
ACTUAL_COST_ONLY = Query(
    "actual_cost_only",
    ("billing",),
    """
SELECT provider, billing_period AS month, BillingCurrency AS currency,
       count(*) FILTER (WHERE ChargeCategory = 'Purchase'
                        AND (CommitmentDiscountId IS NOT NULL OR PricingCategory = 'Committed')) AS purchase_lines,
       COALESCE(sum(BilledCost) FILTER (WHERE ChargeCategory = 'Purchase'
                        AND (CommitmentDiscountId IS NOT NULL OR PricingCategory = 'Committed')), 0.0) AS purchases,
       count(*) FILTER (WHERE ChargeCategory = 'Usage' AND PricingCategory = 'Committed') AS covered_lines,
       COALESCE(sum(abs(EffectiveCost)) FILTER (WHERE ChargeCategory = 'Usage'
                                               AND PricingCategory = 'Committed'), 0.0) AS covered_effective
FROM billing
WHERE billing_period IN ({months})
GROUP BY ALL
HAVING (purchase_lines > 0 OR covered_lines > 0) AND covered_effective = 0
ORDER BY provider, month, currency
""",
)

QUERIES: dict[str, Query] = {
    q.name: q
    for q in (
        WASTE_DEVICE_USAGE,
        WASTE_HISTOGRAM,
        RESOURCE_COSTS,
        BILLED_BASELINE,
        DEMAND_FROM_UTILIZATION,
        DEMAND_FROM_BILLING,
        SPOT_FEED_LATEST,
        BILLING_HOURLY,
        UTILIZATION_HOURLY,
        UTILIZATION_DEVICES,
        UTILIZATION_HISTOGRAM,
        WASTE_DEVICE_USAGE_AGGREGATE,
        WASTE_HISTOGRAM_AGGREGATE,
        BILLED_BASELINE_HOURLY,
        DEMAND_FROM_UTILIZATION_HOURLY,
        DEMAND_FROM_BILLING_HOURLY,
        LATEST_BILLED_GPU_MONTH,
        LATEST_BILLED_GPU_MONTH_HOURLY,
        COST_GROUPS,
        USAGE_GROUPS,
    )
}
