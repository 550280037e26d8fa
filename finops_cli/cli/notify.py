"""``finops notify``: send a result (the ``--format json`` of savings, budget check, anomalies, gate or plan) to
Slack, PagerDuty, Microsoft Teams or a signed webhook. Exit 0 delivered (or a repeat skipped), 1 not delivered
after retries, 2 bad input or a payload the destination rejected. Secrets never come from the command line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from finops_cli.cli.helptext import example
from finops_cli.cli.output import emit_json, log


def register(app: typer.Typer) -> None:
    @app.command(
        "notify",
        epilog=example(
            "finops budget check --format json --out check.json; finops notify --to slack --result check.json",
            "finops anomalies --format json | finops notify --to pagerduty --result -",
            "finops notify --to teams --result check.json --dry-run",
        ),
    )
    def _notify(
        to: Annotated[str, typer.Option("--to", help="slack, pagerduty, teams or webhook.")],
        result: Annotated[
            str, typer.Option("--result", help="The result JSON file ('-': stdin), from --format json.")
        ] = "-",
        dry_run: Annotated[
            bool,
            typer.Option(
                "--dry-run", help="Print the exact payload(s) instead of sending (secrets shown as placeholders)."
            ),
        ] = False,
        secret_file: Annotated[
            Path | None,
            typer.Option(
                "--secret-file",
                help="Read the secret (webhook URL, routing key, bot token or signing "
                "key) from this file instead of its environment variable.",
            ),
        ] = None,
        channel: Annotated[
            str | None,
            typer.Option(
                "--channel",
                help="Slack: post with the Web API (FINOPS_SLACK_BOT_TOKEN) to this "
                "channel instead of the incoming webhook.",
            ),
        ] = None,
        url: Annotated[
            str | None, typer.Option("--url", help="webhook: the receiver's URL (else FINOPS_WEBHOOK_URL).")
        ] = None,
        link: Annotated[
            str | None, typer.Option("--link", help="A link back (CI run, dashboard) in the message.")
        ] = None,
        command: Annotated[
            str | None, typer.Option("--command", help="The command line the message says reproduces the result.")
        ] = None,
        timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for each attempt.")] = 10.0,
        retries: Annotated[int, typer.Option("--retries", help="Attempts after the first on 429, 5xx or timeout.")] = 3,
        force: Annotated[
            bool, typer.Option("--force", help="Send even if this exact payload was sent before.")
        ] = False,
        ledger: Annotated[
            Path | None,
            typer.Option(
                "--ledger",
                help="Where sent payloads are recorded (default $FINOPS_NOTIFY_LEDGER, else "
                "$XDG_STATE_HOME/finops/notify-sent.json).",
                show_default=False,
            ),
        ] = None,
    ) -> None:
        """Send a result to Slack, PagerDuty, Microsoft Teams or a signed webhook (docs/alerts.md)."""
        from finops_cli.alerts.notify import notify
        from finops_cli.alerts.notify.transport import Policy
        from finops_cli.errors import InputError
        from finops_cli.files import parse_json, read_text

        if timeout <= 0 or retries < 0:
            raise InputError("--timeout must be > 0 and --retries >= 0")
        if result == "-":
            text, source = sys.stdin.read(), Path("<stdin>")
        else:
            source = Path(result)
            text = read_text(source, kind="a finops result (JSON)")
        doc = parse_json(text, source)
        outcome = notify(
            doc,
            to.strip().lower(),
            dry_run=dry_run,
            command=command,
            link=link,
            channel=channel,
            url=url,
            secret_file=secret_file,
            policy=Policy(timeout=timeout, attempts=retries + 1),
            ledger=ledger,
            force=force,
        )
        if dry_run:
            emit_json(outcome.payloads[0] if len(outcome.payloads) == 1 else outcome.payloads)
            return
        note = f" ({outcome.repeats} already sent, skipped)" if outcome.repeats else ""
        log.info(f"{to}: sent {outcome.sent} of {len(outcome.payloads)} payloads{note}: {outcome.message.headline}")
