"""finops store list | remove | check | aggregate: what went into the store, undoing one source, verifying it all,
building the hourly aggregates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from finops_cli.cli.helptext import example
from finops_cli.cli.options import Engine, EngineOpt, FormatOpt, OutputFormat, SparkMasterOpt, StoreOpt
from finops_cli.cli.output import emit_json, log, stdout_console
from finops_cli.cli.render import Col, money, money_table

if TYPE_CHECKING:
    from finops_cli.store.sources import SourceInfo


def _money(info: SourceInfo) -> str:
    return "; ".join(money(v, c) for c, v in sorted(info.money.items())) or "-"


def _files(info: SourceInfo) -> str:
    from pathlib import Path

    names = [Path(f).name for f in info.files]
    return ", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else "")


def _rows(infos: list[SourceInfo]) -> list[list[object]]:
    return [
        [
            i.dataset,
            i.key,
            _files(i),
            (i.fingerprint or "-")[:12],
            i.rows,
            ", ".join(i.period),
            _money(i),
            (i.ingested_at or "-")[:19].replace("T", " "),
        ]
        for i in infos
    ]


_COLUMNS = [
    Col("dataset"),
    Col("source"),
    Col("file"),
    Col("fingerprint"),
    Col("rows", "number"),
    Col("period"),
    Col("BilledCost"),
    Col("ingested at (UTC)"),
]


def register(app: typer.Typer) -> None:
    @app.command("list", epilog=example("finops store list --format json"))
    def _list(store: StoreOpt = None, fmt: FormatOpt = OutputFormat.table) -> None:
        """Every source in the store: dataset, file, content fingerprint, rows, period, money per currency, when.

        The source key is what `finops store remove` takes.
        """
        from finops_cli import api

        infos = api.store_sources(store)
        if fmt == OutputFormat.json:
            emit_json([i.to_dict() for i in infos])
            return
        console = stdout_console()
        if not console.is_terminal:
            console.width = max(console.width, 160)  # piped: keep keys whole
        console.print(money_table(f"Sources ({len(infos)})", _COLUMNS, _rows(infos)))

    @app.command("remove", epilog=example("finops store remove SOURCE   (a source as finops store list names it)"))
    def _remove(
        source: Annotated[str, typer.Argument(help="Source key (or a unique prefix, or the file it came from).")],
        store: StoreOpt = None,
        fmt: FormatOpt = OutputFormat.table,
    ) -> None:
        """Remove one source's data and manifest entry, atomically (all of it or, on any failure, none).

        Billing and utilisation sources can be removed; spot-price ingests are merged per provider and month.
        """
        from finops_cli import api

        result = api.store_remove(source, store)
        if fmt == OutputFormat.json:
            emit_json(result.to_dict())
            return
        stdout_console().print(money_table("Removed", _COLUMNS, _rows(result.sources)))
        log.info(f"{len(result.files_removed)} file(s) removed")

    @app.command("check", epilog=example("finops store check --store .finops"))
    def _check(store: StoreOpt = None, fmt: FormatOpt = OutputFormat.table) -> None:
        """Re-read every file; verify the manifest (files, rows) and billing money per currency. Exit 2 if damaged."""
        from finops_cli import api

        result = api.store_check(store)
        if fmt == OutputFormat.json:
            emit_json(result.to_dict())
        else:
            verdict = "ok" if result.ok else f"{len(result.problems)} problem(s)"
            stdout_console().print(
                f"store {escape(result.store)}: {result.sources} source(s), {result.files} file(s), "
                f"{result.rows:,} rows re-read: {verdict}",
                soft_wrap=True,
            )
        if not result.ok:
            for p in result.problems:
                log.error(str(p))
            raise typer.Exit(2)

    @app.command("aggregate", epilog=example("finops store aggregate --engine local"))
    def _aggregate(
        rebuild: Annotated[
            bool, typer.Option("--rebuild", help="Rebuild every aggregate, not only the missing ones.")
        ] = False,
        store: StoreOpt = None,
        engine: EngineOpt = Engine.local,
        spark_master: SparkMasterOpt = None,
        fmt: FormatOpt = OutputFormat.table,
    ) -> None:
        """Build the ingest aggregates (billing_hourly, utilization_hourly/_devices/_histogram) files lack, atomically.

        Ingest writes them at commit; this builds them for stores written before, or rebuilds them
        (--rebuild), on this machine or on Spark (--engine spark) from the same SQL.
        """
        from finops_cli import api

        result = api.store_aggregate(store, rebuild=rebuild, engine=engine.value, spark_master=spark_master)
        if fmt == OutputFormat.json:
            emit_json(result.to_dict())
            return
        built = ", ".join(f"{n} {name} file(s)" for name, n in result.built.items())
        stdout_console().print(f"aggregates built on {result.engine} for {built}", soft_wrap=True, markup=False)
