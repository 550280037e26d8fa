"""The ``finops`` Typer application: wires the verb modules together and maps errors to exit codes.

Exit codes: 0 ok; 1 gate failed; 2 invalid input or usage; 3 infeasible; 70 internal error (a bug:
``EX_SOFTWARE`` of ``sysexits.h``). A user's mistake is a :class:`~finops_cli.errors.FinopsError` and
prints one clear message, never a traceback. Anything else is a bug in finops: one line naming the
exception and how to see the traceback (``--debug`` or ``FINOPS_DEBUG=1``), exit 70, so a CI job can
tell a crash from a failed gate. When stdout's reader leaves early (``finops … | head``) finops stops
quietly with 1, as rich and click do on their own writes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from finops_cli import __version__
from finops_cli.atomic import guard_inputs
from finops_cli.cli.helptext import example, reflow_help, typer_help
from finops_cli.cli.output import color_disabled, configure_logging, error_text, log, stderr_console
from finops_cli.errors import EXIT_BROKEN_PIPE, EXIT_INTERNAL_ERROR, FinopsError

#: Set by ``--debug`` (or ``FINOPS_DEBUG=1``): internal errors print their traceback.
_DEBUG_ENV = "FINOPS_DEBUG"


def _framework_exceptions() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """Exceptions the CLI framework turns into usage messages and exit codes itself, and those of them it draws
    with its rich help console (usage errors, aborts). typer vendors click in recent versions and re-exports it
    in older ones: accept both."""
    drawn: set[type[BaseException]] = {typer.Abort}
    if hasattr(typer, "TyperException"):
        drawn.add(typer.TyperException)
    exits: set[type[BaseException]] = {typer.Exit, KeyboardInterrupt}
    if not hasattr(typer, "_click"):  # click itself (~0.1 s to import) only where typer does not vendor it
        import click

        drawn |= {click.exceptions.ClickException, click.exceptions.Abort}
        exits.add(click.exceptions.Exit)
    return (*drawn, *exits), tuple(drawn)


_PASS_THROUGH, _DRAWN_BY_TYPER = _framework_exceptions()


def _typer_colors(*, load: bool) -> None:
    """Typer draws help, usage errors and aborts with its own rich console: no styles under NO_COLOR either.

    Its help module (and rich) is only imported to draw something (``load``), not to run a command: once loaded,
    its colour system follows ``NO_COLOR`` on every run (tests run the app many times in one process)."""
    if load or "typer.rich_utils" in sys.modules:
        typer_help().COLOR_SYSTEM = None if color_disabled() else "auto"


def debug_enabled() -> bool:
    return os.environ.get(_DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


class _ErrorMappingGroup(TyperGroup):
    """Turn domain errors into a one-line message and their exit code, at every nesting level; turn any
    other exception into exit 70 with one line (the traceback only with ``--debug``)."""

    def main(self, args: Sequence[str] | None = None, *rest: Any, **kwargs: Any) -> Any:
        # Typer's rich_utils module is only imported when it draws, and for help without what it never uses here.
        argv = sys.argv[1:] if args is None else list(args)
        _typer_colors(load="--help" in argv or len(argv) < 2)  # help, or a group's or a command's usage
        reflow_help(self)
        configure_logging()  # until the root callback applies -v/-q: errors before it still print
        return super().main(args, *rest, **kwargs)

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except _DRAWN_BY_TYPER:  # a usage error of this group's own options: typer draws it
            _typer_colors(load=True)
            raise

    # Typer always hands its groups a typer.Context (click's Context subclass, the type click declares here).
    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            with guard_inputs():
                return super().invoke(ctx)
        except FinopsError as exc:
            for line in error_text(exc).splitlines() or ["error"]:
                log.error(line)
            raise typer.Exit(exc.exit_code) from None
        except _PASS_THROUGH as exc:  # usage errors, --help, typer.Exit: the framework reports them
            if isinstance(exc, _DRAWN_BY_TYPER):
                _typer_colors(load=True)
            raise
        except Exception as exc:
            if ctx.parent is not None:  # let the outermost group report it, once
                raise
            if isinstance(exc, BrokenPipeError) and stdout_closed():
                quiet_stdout()  # the reader (`| head`) has what it wanted: nothing to report
                raise typer.Exit(EXIT_BROKEN_PIPE) from None
            if ctx.params.get("debug") or debug_enabled():
                import traceback

                from rich.markup import escape

                stderr_console().print(escape("".join(traceback.format_exception(exc)).rstrip()), soft_wrap=True)
            summary = " ".join(str(exc).split())[:300] or "(no message)"
            log.critical(
                f"{type(exc).__name__}: {summary} "
                f"(a bug in finops; run again with --debug or {_DEBUG_ENV}=1 to see the traceback)"
            )
            raise typer.Exit(EXIT_INTERNAL_ERROR) from None


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (``finops … | head``): the one broken pipe that is no bug
    (a socket's, to S3 or Spark, still reports as an internal error)."""
    import select

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's captured output)
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush of what is still buffered cannot fail
    ("Exception ignored … BrokenPipeError") after the exit code is chosen."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _new_app(*, add_completion: bool = False, cls: type[TyperGroup] = _ErrorMappingGroup, **kwargs: Any) -> typer.Typer:
    return typer.Typer(
        cls=cls,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=add_completion,
        rich_markup_mode="rich",
        **kwargs,
    )


def _version(value: bool) -> None:
    if value:
        typer.echo(f"finops {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
    debug: bool = typer.Option(
        False, "--debug", help=f"On an internal error (exit 70), print the traceback (or set {_DEBUG_ENV}=1)."
    ),
    verbose: int = typer.Option(
        0,
        "--verbose",
        "-v",
        count=True,
        show_default=False,
        help="Also print debug detail on stderr (what was chosen, timings).",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="Print errors only on stderr: no notes, warnings or progress display."
    ),
    store: str | None = typer.Option(
        None,
        "--store",
        help="Store directory or bucket URI for every command (a command's own --store wins; else $FINOPS_STORE, "
        "else .finops/).",
        show_default=False,
    ),
    pricebook: str | None = typer.Option(
        None,
        "--pricebook",
        envvar="FINOPS_PRICEBOOK",
        help="User pricebook directory overlaying the shipped one, for every command "
        "(default: $XDG_CONFIG_HOME/finops, i.e. ~/.config/finops).",
        show_default=False,
    ),
) -> None:
    """finops — point it at a month of billing exports, GPU traces and spot prices."""
    if verbose and quiet:
        raise typer.BadParameter("give -v/--verbose or -q/--quiet, not both")
    configure_logging(verbose, quiet)
    if pricebook or "finops_cli.catalog.pricebook" in sys.modules:  # else it starts with no override: not imported
        from finops_cli.catalog.pricebook import use_pricebook  # for a command that reads no price (gate)

        use_pricebook(pricebook or None)


#: Top-level commands: name → (module of finops_cli.cli whose ``register`` defines it, the line ``finops --help``
#: lists for it). The line is the first paragraph of the command's own help (a test keeps the two equal): the
#: root lists every command from here, without importing its module or building its options.
_COMMANDS: dict[str, tuple[str, str]] = {
    "prices": ("prices", "Spot-price statistics per provider × region/zone × instance type × product: changes, min, "
               "mean, p50, p90, max, latest and the mean per GPU-hour. Time-weighted: each price holds until the next "
               "change."),
    "waste": ("waste", "Idle GPU waste: device-hours, busy hours (Σ util × interval), idle hours and idle dollars."),
    "costs": ("costs", "GPU spend from the store by any dimension or tag; month over month; chargeback to teams."),
    "validate": ("estate", "Check fleet.yaml (and workloads.yaml) before any math: exit 0 if valid, 2 if not."),
    "stack": ("estate", "The merit-order supply curve: compliant substrates by cost per unit of usable output."),
    "netc": ("estate", "Net Expected Training Cost of interruptible work on each compliant spot substrate."),
    "plan": ("plan", "Plan the cheapest compliant substrate mix for the workloads' demand, with savings against the "
             "bill."),
    "report": ("report", "Leadership report: executive summary, idle waste, supply curve, the plan, spot/NETC, "
               "risks."),
    "gate": ("gate", "CI cost gate: compare a new plan with a baseline plan and a budget; exit 1 if any rule fails."),
    "savings": ("alerts", "Realised savings per run, team or workload: cost against the same usage at on-demand "
                "price, by lever."),
    "anomalies": ("alerts", "Cost anomalies: days whose spend departs from its expected value, with impact and top "
                  "contributors."),
    "notify": ("notify", "Send a result to Slack, PagerDuty, Microsoft Teams or a signed webhook (docs/alerts.md)."),
    "demo": ("demo", "Ingest the sample exports, traces and spot prices, then stack, plan and report (Kestrel AI, "
             "Oct 2026)."),
}  # fmt: skip

#: Command groups: name → (help, example command lines, registrars as ``module.function`` of finops_cli.cli).
_GROUPS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "ingest": ("Load billing exports, utilisation traces and spot prices into the store.",
               ("finops ingest billing exports/ && finops ingest utilization dcgm-scrapes/",),
               ("ingest.register", "ingest_traces.register")),
    "simulate": ("Request-level dispatch and continuous-renegotiation market simulators.",
                 ("finops simulate market --experiment contention --size full --out-dir market",),
                 ("simulate_dispatch.register", "simulate_market.register")),
    "store": ("See what is in the store, remove one source, check every file against the manifest.",
              ("finops store list", "finops store check"),
              ("store.register",)),
    "estate": ("Draft fleet.yaml and workloads.yaml from what the store has seen.",
               ("finops estate draft --out estate/",),
               ("estate.register_group",)),
    "budget": ("Budgets on any scope with thresholds on actual and forecast spend (budgets.yaml).",
               ("finops budget check --budgets budgets.yaml",),
               ("alerts.register_group",)),
    "pricebook": ("Keep list prices current: refresh them from the providers' price APIs, import a SkyPilot "
                  "catalog, show them.",
                  ("finops pricebook refresh", "finops pricebook import skypilot DIR", "finops pricebook show"),
                  ("pricebook.register_group",)),
}  # fmt: skip


def _registrar(spec: str) -> Any:
    """``register`` function named ``module.function`` under finops_cli.cli (importing the module)."""
    import importlib

    module, function = spec.split(".")
    return getattr(importlib.import_module(f"finops_cli.cli.{module}"), function)


def _build(name: str) -> Any:
    """The click command (or group) ``name``: its module imported and only its own options built."""
    import typer.main

    if name in _GROUPS:
        help_text, examples, registrars = _GROUPS[name]
        holder = _new_app(name=name, help=help_text, epilog=example(*examples))
        for spec in registrars:
            _registrar(spec)(holder)
        return typer.main.get_group(holder)
    holder = _new_app()
    _registrar(f"{_COMMANDS[name][0]}.register")(holder)
    holder.registered_commands = [info for info in holder.registered_commands if info.name == name]
    built = typer.main.get_command(holder)  # one command and no callback: typer returns the command itself
    return built.commands[name] if isinstance(built, TyperGroup) else built


class _RootGroup(_ErrorMappingGroup):
    """The ``finops`` group: a command's module is imported and its options built only when that command runs
    or shows its own help. ``finops --help`` (and ``finops`` alone) list every command from the tables above, so
    they import no command module: typer builds each option by evaluating its annotations, ~0.2 s for all."""

    _listing = False

    def list_commands(self, ctx: typer.Context) -> list[str]:  # type: ignore[override]
        return [*_COMMANDS, *_GROUPS]

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:  # type: ignore[override]
        if cmd_name in self.commands or cmd_name not in (*_COMMANDS, *_GROUPS):
            return self.commands.get(cmd_name)
        if self._listing:  # a stand-in that carries the listed line only
            summary = _COMMANDS[cmd_name][1] if cmd_name in _COMMANDS else _GROUPS[cmd_name][0]
            return TyperCommand(name=cmd_name, help=summary)
        command = _build(cmd_name)
        reflow_help(command)
        self.commands[cmd_name] = command
        return command

    def format_help(self, ctx: typer.Context, formatter: Any) -> None:  # type: ignore[override]
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = _new_app(
    cls=_RootGroup,
    add_completion=True,  # --install-completion / --show-completion on the root command only
    help="GPU-fleet FinOps: what you wasted, one merit-order supply curve, and the cheapest compliant plan.",
    epilog=example("finops demo", "finops validate --fleet fleet.yaml --workloads workloads.yaml"),
)
_root = app.callback()(_root)


def main() -> None:
    """Console-script entry point (named ``finops`` however it was started, so completion scripts match)."""
    app(prog_name="finops")
