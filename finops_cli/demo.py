"""``finops demo``: the main job end to end on the bundled samples (ingest → stack → plan → report) through
:mod:`finops_cli.api`, as a user's own run would go: it proves a fresh install works.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from finops_cli import api
from finops_cli.atomic import check_writable, write_text
from finops_cli.errors import InputError

_log = logging.getLogger(__name__)


def default_samples_dir() -> Path:
    """The sample estate: the copy a wheel ships (``finops_cli/_samples``), else the checkout's ``samples/``."""
    shipped = Path(str(resources.files("finops_cli") / "_samples"))
    if shipped.is_dir():
        return shipped
    return Path(__file__).resolve().parents[1] / "samples"


@dataclass
class DemoResult:
    """What the demo produced: the plan, the report files, and per-step counts for the log."""

    plan: Any  # PlanResult
    plan_path: Path
    report_path: Path
    charts: list[Path]
    steps: list[str] = field(default_factory=list)


def run_demo(
    out_dir: Path,
    samples: Path | None = None,
    store_dir: Path | None = None,
    log: Callable[[str], None] = lambda _msg: None,
    as_of: datetime | None = None,
    words: Callable[[str], str] = lambda text: text,
) -> DemoResult:
    """Ingest the samples into a fresh store (``store_dir``, else a temporary one), plan the sample estate as of
    ``as_of`` and write ``plan.json``, ``report.md`` and its charts into ``out_dir``. ``words`` rewrites the plan's
    notes (the CLI spells the parameters they name as its options)."""
    samples = Path(samples) if samples is not None else default_samples_dir()
    needed = [samples / "billing", samples / "utilization", samples / "spot_prices", samples / "fleet.yaml"]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        raise InputError(
            f"samples not found ({', '.join(missing)}); reinstall the package or pass `samples` DIR",
            mentions=("samples",),
        )
    check_writable(out_dir, directory=True)
    if store_dir is not None:
        store_dir = check_writable(store_dir, directory=True)
        # Only ever wipe a finops store: --keep-store pointed at a home or project directory must not delete it.
        if store_dir.exists() and any(store_dir.iterdir()) and not (store_dir / "manifest.json").is_file():
            raise InputError(
                "is not empty and not a finops store; `store_dir` needs a new or store directory",
                path=store_dir,
                mentions=("store_dir",),
            )
    tmp = None
    if store_dir is None:
        tmp = tempfile.mkdtemp(prefix="finops-demo-store-")
        store_dir = Path(tmp)
    elif store_dir.exists():
        shutil.rmtree(store_dir)
    try:
        store = api.open_store(store_dir)
        steps: list[str] = []
        clock = [time.perf_counter()]

        def done(step: str) -> None:
            """Log a finished step (``-v`` adds how long it took: what benchmarks/cli_latency.py's demo row sums)."""
            now = time.perf_counter()
            steps.append(step)
            log(step)
            _log.debug(f"demo: {step.split(':')[0]} took {now - clock[0]:.2f} s")
            clock[0] = now

        billing = api.ingest_billing([samples / "billing"], store=store)
        done(f"ingest billing: {billing.rows:,} lines from {len(billing.files)} files")
        util = api.ingest_utilization([samples / "utilization"], store=store)
        done(f"ingest utilization: {util.rows_written:,} samples")
        spot_files = sorted(p for p in (samples / "spot_prices").iterdir() if p.is_file())
        spot = api.ingest_spot_prices(store=store, files=spot_files)
        done(f"ingest spot-prices: {spot.rows_in:,} price points")

        fleet, workloads = samples / "fleet.yaml", samples / "workloads.yaml"
        priced = api.price(api.estate(fleet, workloads), store, as_of=as_of)  # once: stack, plan and report share it
        stacked = api.stack(priced)
        done(f"stack: merit order for {len(stacked.stacks)} workloads")

        result = api.plan(priced)
        result.document.notes = [words(n) for n in result.document.notes]
        out_dir.mkdir(parents=True, exist_ok=True)
        plan_path = out_dir / "plan.json"
        write_text(plan_path, result.document.model_dump_json(indent=2))
        done(f"plan: {result.document.solver.name} {result.document.solver.status} → {plan_path}")

        report = api.report(result.document, store, estate=priced, out_path=out_dir / "report.md")
        assert report.markdown_path is not None  # out_path was given
        done(f"report: {report.markdown_path} with {len(report.chart_paths)} charts")
        return DemoResult(result, plan_path, report.markdown_path, list(report.chart_paths), steps)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
