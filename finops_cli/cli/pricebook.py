"""``finops pricebook refresh`` / ``import`` / ``show``: parse → api → render."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from finops_cli.cli.options import FormatOpt, OutOpt, OutputFormat, output_format
from finops_cli.cli.output import emit_json, emit_text, stderr_console, stdout_console

PricebookOpt = Annotated[
    Path | None,
    typer.Option(
        "--pricebook",
        envvar="FINOPS_PRICEBOOK",
        help="User pricebook directory, overlaying the shipped one (default: $XDG_CONFIG_HOME/finops, "
        "i.e. ~/.config/finops).",
        show_default=False,
    ),
]


from finops_cli.cli.helptext import example  # noqa: E402


def register_group(app: typer.Typer) -> None:
    @app.command("refresh", epilog=example("finops pricebook refresh --provider aws"))
    def _refresh(
        provider: Annotated[
            list[str] | None,
            typer.Option("--provider", help="aws, gcp or azure (repeatable; default: all three)."),
        ] = None,
        aws_region: Annotated[list[str] | None, typer.Option("--aws-region", help="AWS regions (repeatable).")] = None,
        gcp_region: Annotated[list[str] | None, typer.Option("--gcp-region", help="GCP regions (repeatable).")] = None,
        azure_region: Annotated[
            list[str] | None, typer.Option("--azure-region", help="Azure regions, e.g. eastus (repeatable).")
        ] = None,
        instance_type: Annotated[
            list[str] | None,
            typer.Option("--instance-type", help="Also price this type (repeatable), e.g. p3.2xlarge, g4dn.xlarge."),
        ] = None,
        aws_profile: Annotated[str | None, typer.Option("--aws-profile", help="Named AWS profile.")] = None,
        aws_source: Annotated[
            str,
            typer.Option(
                "--aws-source",
                help="api: the Price List API (AWS credentials); offers: the public bulk offer files (no "
                "credentials; large, read as a stream).",
            ),
        ] = "api",
        pricebook: PricebookOpt = None,
    ) -> None:
        """Fetch list prices of GPU instance types into the user pricebook: AWS Price List API (GetProducts,
        boto3 credentials; or --aws-source offers: the public offer files), GCP Cloud Billing Catalog (list_skus,
        Application Default Credentials), Azure Retail Prices API (public). Default regions: those the pricebook
        already prices. Every row keeps its source and fetch time; nothing is written unless every provider
        answered."""
        from finops_cli import api

        regions = {k: v for k, v in (("aws", aws_region), ("gcp", gcp_region), ("azure", azure_region)) if v}
        result = api.pricebook_refresh(
            providers=provider,
            regions=regions,
            instance_types=instance_type,
            pricebook=pricebook,
            aws_profile=aws_profile,
            aws_source=aws_source.strip().lower(),
        )
        counts = ", ".join(f"{p} {n}" for p, n in result.rows.items())
        console = stderr_console()
        console.print(
            f"wrote {result.path}: {counts} rows fetched ({result.replaced} replaced, {result.kept} kept)",
            soft_wrap=True,
            markup=False,
        )
        for note in result.notes:
            console.print(f"note: {note}", soft_wrap=True, markup=False)

    @app.command("import", epilog=example("finops pricebook import skypilot ~/.sky/catalogs/v8"))
    def _import(
        kind: Annotated[str, typer.Argument(help="The catalog's layout: skypilot.", show_default=False)],
        directory: Annotated[
            Path, typer.Argument(help="A folder with vms.csv, or with <cloud>/vms.csv folders.", show_default=False)
        ],
        pricebook: PricebookOpt = None,
    ) -> None:
        """Import an external catalog into the user pricebook. skypilot: SkyPilot's vms.csv (InstanceType,
        AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, Price, SpotPrice, Region): GPU types become
        instance_types.csv rows, Price/SpotPrice become on-demand/spot reference prices (median over zones)."""
        from finops_cli import api
        from finops_cli.errors import InputError

        if kind.strip().lower() != "skypilot":
            raise InputError(f"{kind!r}: expected skypilot", param="kind")
        result = api.pricebook_import_skypilot(directory, pricebook=pricebook)
        skipped = ", ".join(f"{n} {why}" for why, n in result.skipped.items())
        stderr_console().print(
            f"imported {len(result.files)} vms.csv: {sum(result.instance_types.values())} GPU instance types, "
            f"{sum(result.prices.values())} prices"
            + (f" ({', '.join(f'{p} {n}' for p, n in result.instance_types.items())})" if result.instance_types else "")
            + (f"; skipped rows: {skipped}" if skipped else ""),
            soft_wrap=True,
            markup=False,
        )

    @app.command("show", epilog=example("finops pricebook show --provider aws --format json"))
    def _show(
        provider: Annotated[str | None, typer.Option("--provider", help="Only this provider.")] = None,
        fmt: FormatOpt = None,
        out: OutOpt = None,
        pricebook: PricebookOpt = None,
    ) -> None:
        """The reference prices every command uses (`price_ref`): the shipped table overlaid by the user
        pricebook, each row with its origin, source and date."""
        from finops_cli import api
        from finops_cli.cli.render import Col, money_table, table_text

        fmt = output_format(fmt, out)
        table = api.pricebook_table(pricebook=pricebook, provider=provider)
        cols = [
            "ref",
            "region",
            "usd_per_gpu_hour",
            "unit",
            "usd_per_unit",
            "read_on",
            "fetched_at",
            "origin",
            "source",
        ]
        if fmt is OutputFormat.json:
            emit_json({"rows": table[cols].to_dict(orient="records")}, out)
            return
        if fmt is OutputFormat.markdown:
            from finops_cli.report.escape import md_table

            emit_text(md_table(cols, table[cols].astype(str).values.tolist()), out)
            return
        rows = [[r.ref, r.region or "—", _price(r), (r.fetched_at or r.read_on)[:10], _origin(r.origin)]
                for r in table.itertuples(index=False)]  # fmt: skip
        cols_ = [Col("ref"), Col("region"), Col("price"), Col("date"), Col("origin")]
        t = money_table("Pricebook (price_ref: provider/offering/term)", cols_, rows)
        if out is None:
            stdout_console().print(t)
        else:
            emit_text(table_text(t, width=200), out)


def _price(row: Any) -> str:
    from finops_cli.report.format import unit_price

    per_gpu, per_unit = row.usd_per_gpu_hour, row.usd_per_unit
    if per_gpu:
        return f"{unit_price(float(per_gpu), 'USD')}/GPU-h"
    return f"{unit_price(float(per_unit), 'USD')}/{row.unit or 'unit'}"


def _origin(origin: str) -> str:
    return "shipped" if origin == "shipped" else "user"
