"""Generate ``docs/estate.md`` (the fleet.yaml / workloads.yaml field reference) from the pydantic models: types,
defaults and constraints from the models, unit and meaning from :data:`FIELD_DOCS` (a test fails when a field has
none). Regenerate with ``python -m finops_cli.estate.reference > docs/estate.md``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from finops_cli.schema.estate import (
    Checkpoint,
    CongestionStep,
    Demand,
    Fleet,
    FromStore,
    Interruption,
    PriceFeed,
    Purchasable,
    Requires,
    Substrate,
    Workload,
    Workloads,
)

#: (model, YAML path prefix) in the order the reference lists them.
SECTIONS: list[tuple[type[BaseModel], str]] = [
    (Fleet, "fleet.yaml"),
    (Substrate, "fleet.yaml: substrates[]"),
    (PriceFeed, "fleet.yaml: substrates[].price_feed"),
    (Interruption, "fleet.yaml: substrates[].interruption"),
    (Purchasable, "fleet.yaml: substrates[].purchasable"),
    (CongestionStep, "fleet.yaml: congestion[]"),
    (Workloads, "workloads.yaml"),
    (Workload, "workloads.yaml: workloads[]"),
    (Demand, "workloads.yaml: workloads[].demand"),
    (FromStore, "workloads.yaml: workloads[].demand.from_store"),
    (Requires, "workloads.yaml: workloads[].requires"),
    (Checkpoint, "workloads.yaml: workloads[].checkpoint"),
]

#: ``Model.field | unit | meaning``, one row per field (an indented line continues the row above)
_FIELD_TABLE = """
Fleet.version | | Format version; must be 1.
Fleet.currency | ISO 4217 | Currency of every price in the file and of every amount printed. Feeds and reference
    prices are USD: a non-USD fleet that uses them needs `fx` (or `--fx`), else exit 2 naming the substrate and both
    currencies.
Fleet.substrates | | Every place work can run (see below). Ids must be unique.
Fleet.congestion | fraction, × | Convex congestion steps above each substrate's `comfortable_utilization`: up to
    `up_to` of capacity each GPU-hour costs `multiplier` × the base price. Must rise in `up_to`, end at 1.0,
    multipliers non-decreasing.
Fleet.reliability_penalty_per_gpu_hour | currency / GPU-hour | In `--mode reliability`, added to latency-critical,
    non-interruptible work on spot. Steers; not money.
Fleet.degraded_capacity_factor | fraction | Capacity kept by a `status: degraded` substrate (default).
Fleet.fx | TO per FROM | Exchange rates, `{"USD:CAD": 1.37}` = 1 USD is 1.37 CAD; TO must be `currency`. Applied to
    USD feed and reference prices, recorded in plan.json (`fx`, `prices[].fx_rate`); `--fx USD:CAD=1.37` overrides.
Substrate.id | | Unique id; billing lines and plans refer to it.
Substrate.provider | | Matched by workloads' provider allow-lists and by billing lines (aws, gcp, onprem…).
Substrate.kind | | Billing model: owned, reserved, on_demand, spot or api.
Substrate.accelerator | | Accelerator model (H100, A100, L4…); key into a workload's `throughput`.
Substrate.region | | Provider region; used to match billing lines.
Substrate.jurisdiction | | Data-residency zone (US, EU…) checked by the compliance gate.
Substrate.isolation | | dedicated or shared tenancy; a workload may require dedicated.
Substrate.gpus | GPUs | Capacity: GPU-hours per hour. Spot: what is obtainable; on_demand: optional quota (absent =
    unbounded).
Substrate.gpus_per_node | GPUs | GPUs per instance/node (integer node counts in the planner).
Substrate.price_per_gpu_hour | currency / GPU-hour | Marginal price of one GPU-hour actually used (owned: power +
    ops; reserved: ~0).
Substrate.price_feed | | Resolve the price from the spot-price store instead (see price_feed).
Substrate.price_ref | | Resolve the price from the pricebook (the shipped `reference_prices.csv` overlaid by the
    user pricebook, see `finops pricebook`), as `provider/offering/term` (the row in the substrate's region first)
    or `provider/offering/term/region`; api substrates: a per-unit row, or `{unit: ref}`. plan.json notes the row's
    source and fetch date; reports say its age.
Substrate.committed_per_gpu_hour | currency / GPU-hour | Prepaid, paid whether used or not (reserved); a sunk
    constant over the horizon.
Substrate.comfortable_utilization | fraction | Above this share of capacity the congestion steps apply.
Substrate.preference | × | Multiplier on cost: egress, draining, reputation (1 = neutral).
Substrate.status | | up, degraded (capacity × degraded factor) or down (excluded by the gate).
Substrate.degraded_capacity_factor | fraction | Overrides the fleet's factor for this substrate.
Substrate.interruptions_per_hour | preemptions / hour | λ per instance; spot needs it or `interruption`; feeds the
    NETC multiplier W and the fee term λ·W·F.
Substrate.interruption | | Measure λ from a preemption trace instead (see interruption).
Substrate.resume_minutes | minutes | R: provisioning + re-hydration after a preemption.
Substrate.resume_cost | currency | F: fixed cost per preemption, beyond the GPU time; priced everywhere as λ·W·F per
    useful GPU-hour.
Substrate.purchasable | | A commitment the planner may buy in whole blocks (reserved only).
Substrate.price_per_unit | currency / unit | API substrates: price per unit served, by unit name (e.g. `{Mtokens:
    15.0}`).
Substrate.instance_type | | Instance type for matching billing lines and spot prices.
Substrate.match | | Extra billing-line matchers, column → value (e.g. `{ResourceId: cw-…}`).
PriceFeed.provider | | Provider partition of the spot-price store.
PriceFeed.region | | Region (all zones pooled) or one zone.
PriceFeed.instance_type | | Instance type (GCP GPU SKUs: `gpu-<model>`).
PriceFeed.gpus_per_instance | GPUs | Divide the instance price by this (default: GPU count recorded at ingest).
PriceFeed.statistic | | Time-weighted mean, p50, p90 or the latest price.
PriceFeed.window_days | days | Window ending at the earlier of the horizon's end and the feed's newest price (one
    rule for every command).
PriceFeed.product | | Product description to price (`Linux/UNIX`, `Windows`, `Red Hat Enterprise Linux`…). Default:
    `Linux/UNIX` for AWS, else the only product stored; a statistic never spans several products.
Interruption.trace | path | Can't Be Late JSON (single- or multi-node) or preemption CSV, relative to fleet.yaml; λ̂
    is measured from it when the fleet is loaded, and plans note the events, hours and 95 % interval it rests on.
Interruption.nodes | nodes | Nodes a multi-node Can't Be Late trace watched (default: `metadata.nodes`, an
    `<N>-node` directory, else the largest count).
Purchasable.block_gpus | GPUs | GPUs per block bought.
Purchasable.price_per_gpu_hour | currency / GPU-hour | Committed price, paid for the whole horizon.
Purchasable.max_blocks | blocks | Most blocks the planner may buy.
CongestionStep.up_to | fraction of capacity | Upper end of this step.
CongestionStep.multiplier | × | Price multiplier inside the step (≥ 1).
Workloads.version | | Format version; must be 1.
Workloads.workloads | | Every workload (see below). Ids must be unique.
Workload.id | | Unique id.
Workload.team | | Owning team (reports group by it).
Workload.slo | | latency_critical, standard or offline; reliability mode penalises spot for latency_critical.
Workload.interruptible | | May be preempted and resumed from a checkpoint (NETC applies on spot).
Workload.unit | | Unit of usable output (h100_hours, Mtokens…); APIs serve it if they price it.
Workload.demand | units | How much output: exactly one of total, profile, from_store.
Workload.deferrable | | May run in any block of the horizon (the stack clears its mean hour, not its peak).
Workload.max_parallel_gpus | GPUs | Cap on GPUs used at once (bounds how fast deferrable work can run).
Workload.throughput | units / GPU-hour | By accelerator; a missing accelerator means the workload cannot run there.
Workload.requires | | Compliance constraints (absent = unconstrained).
Workload.checkpoint | | Checkpoint interval τ and write time δ (default for interruptible work: 30 min, 0).
Demand.total | units | Total over the horizon, spread evenly per hour.
Demand.profile | path | CSV `hour,units` relative to workloads.yaml; hour = integer offset (repeats) or ISO
    timestamp (hours it does not cover are 0; rows in one hour add up).
Demand.from_store | | GPU-hours observed in the store for a tag, × throughput (an accelerator without a
    throughput entry converts at the first entry's: the work will need doing again).
FromStore.tag | | Utilisation column (team, workload) or billing Tags key.
FromStore.value | | Value the tag must equal.
FromStore.quantity | GPU-hours | busy_gpu_hours (Σ utilisation × interval) or allocated_gpu_hours (GPUs held: Σ
    interval, or billed ConsumedQuantity × GPUs). Busy falls back to billed allocated hours, with a note, when no
    trace matches.
FromStore.extend | | When the observations cover less than the horizon: none refuses (exit 2), repeat tiles the
    observed hours over the horizon, zero plans no demand outside them.
Requires.jurisdictions | | Allowed jurisdictions.
Requires.providers | | Provider allow-list.
Requires.isolation | | `dedicated` excludes shared substrates.
Checkpoint.interval_minutes | minutes | τ: work between checkpoints.
Checkpoint.write_minutes | minutes | δ: time to write one checkpoint.
"""


def _field_docs(table: str) -> dict[str, tuple[str, str]]:
    rows: list[str] = []
    for line in table.strip().splitlines():
        if line.startswith(" "):
            rows[-1] += " " + line.strip()
        else:
            rows.append(line)
    parts = [[p.strip() for p in row.split("|", 2)] for row in rows]
    return {key: (unit, meaning) for key, unit, meaning in parts}


#: "Model.field" -> (unit, meaning)
FIELD_DOCS: dict[str, tuple[str, str]] = _field_docs(_FIELD_TABLE)


def _type_name(annotation: object) -> str:
    text = repr(annotation) if not isinstance(annotation, type) else annotation.__name__
    text = text.replace("typing.", "").replace("finops_cli.schema.estate.", "")
    text = re.sub(r"Annotated\[(\w+), [^\]]*\]", r"\1", text)
    text = re.sub(r"Optional\[(.*)\]$", r"\1 | None", text)
    return text.replace("NoneType", "None")


def _constraints(metadata: list[object]) -> str:
    out = []
    for m in metadata:
        for attr, sym in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤"), ("min_length", "len ≥")):
            v = getattr(m, attr, None)
            if v is not None:
                out.append(f"{sym} {v}")
    return ", ".join(out)


def _default(field: object) -> str:
    if getattr(field, "is_required")():  # noqa: B009
        return "**required**"
    default = getattr(field, "default", None)
    if default is PydanticUndefined:
        factory = getattr(field, "default_factory", None)
        default = factory() if factory else None
        if isinstance(default, list):
            default = [d.model_dump() if isinstance(d, BaseModel) else d for d in default]
        if isinstance(default, BaseModel):
            return "{}"
    return f"`{default}`"


def estate_reference_markdown() -> str:
    """The full ``docs/estate.md`` text."""
    lines = [
        "# Estate files: `fleet.yaml` and `workloads.yaml` (version 1)",
        "",
        "<!-- generated by `python -m finops_cli.estate.reference`; edit FIELD_DOCS there, not this file -->",
        "",
        "Both files are YAML. Unknown keys are errors, a key given twice in one mapping is an error (exit 2,",
        "naming both lines: YAML parsers otherwise keep the last one silently), and every error names the file,",
        "the line and column of the offending value and the field path",
        "(`fleet.yaml: line 12, column 11: substrates[3].gpus: must be >= 0`; a missing key points at the",
        "mapping that lacks it). `finops validate --fleet F --workloads W` runs the",
        "model checks plus the estate checks (accelerators no substrate has, reserved substrates with nothing",
        "to use or buy, demand profiles that are missing or malformed, unknown `price_ref`s, workloads with no",
        "compliant destination). A complete example is `samples/fleet.yaml` / `samples/workloads.yaml`;",
        "the economics are in [economics.md](economics.md).",
        "",
        "Rules across fields: an `api` substrate needs `price_per_unit` or `price_ref` and no accelerator;",
        "every other kind needs an `accelerator` and exactly one of `price_per_gpu_hour`, `price_feed`,",
        "`price_ref` (reserved may omit all three: marginal price 0); `spot` needs one of",
        "`interruptions_per_hour`, `interruption`; owned/reserved/spot need",
        "`gpus`; a `reserved` substrate needs `gpus > 0` or a `purchasable` block; `purchasable` is only for",
        "reserved.",
        "",
        "## Editor validation: JSON Schemas",
        "",
        "[`docs/fleet.schema.json`](fleet.schema.json) and [`docs/workloads.schema.json`](workloads.schema.json)",
        "are generated from the same pydantic models (`python -m finops_cli.schema.estate fleet >",
        "docs/fleet.schema.json`, likewise `workloads`); a test fails when they drift. Editors with the YAML",
        "language server (VS Code's Red Hat YAML extension, Neovim/Helix/Zed with `yaml-language-server`,",
        "JetBrains IDEs) then complete keys and flag typos, wrong types and out-of-range values as you type.",
        "Point a file at its schema with a first-line comment (path relative to the YAML file):",
        "",
        "```yaml",
        "# yaml-language-server: $schema=../docs/fleet.schema.json",
        "version: 1",
        "substrates: [...]",
        "```",
        "",
        "or once per workspace, in VS Code's `settings.json`:",
        "",
        "```json",
        '{"yaml.schemas": {"./docs/fleet.schema.json": ["fleet*.yaml", "**/fleet.yaml"],',
        '                  "./docs/workloads.schema.json": ["workloads*.yaml", "**/workloads.yaml"]}}',
        "```",
        "",
        "(JetBrains: Settings → Languages & Frameworks → Schemas and DTDs → JSON Schema Mappings.) The schema",
        "checks each field; rules across fields (one price source, `interruptions_per_hour` for spot, …) and",
        "the estate checks are `finops validate`'s.",
        "",
    ]
    for model, where in SECTIONS:
        doc = (model.__doc__ or "").strip().splitlines()
        lines += [f"## `{where}`", ""] + ([doc[0], ""] if doc and not doc[0].startswith("!!!") else [])
        lines += ["| field | type | default | constraint | unit | meaning |", "|---|---|---|---|---|---|"]
        for name, field in model.model_fields.items():
            unit, meaning = FIELD_DOCS.get(f"{model.__name__}.{name}", ("", ""))
            ann = _type_name(field.annotation).replace("|", "\\|")  # a bare | would split the table cell
            lines.append(
                f"| `{name}` | `{ann}` | {_default(field)} | {_constraints(field.metadata)} | {unit} | {meaning} |"
            )
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(estate_reference_markdown())
