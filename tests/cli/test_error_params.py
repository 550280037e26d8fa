"""Errors speak the caller's language: the Python API names its parameters, the CLI the same error's options."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.cli.output import cli_words, error_text
from finops_cli.errors import InfeasibleError, InputError

ENV = {"NO_COLOR": "1", "COLUMNS": "200", "FINOPS_STORE": ""}


def test_the_api_names_parameters_and_the_cli_spells_them_as_options(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with pytest.raises(InputError) as err:
        api.costs(store=store, chargeback="proportional", compare="2026-10")
    assert str(err.value) == "`chargeback` and `compare` answer different questions; give one"
    with pytest.raises(InputError) as err:
        api.market_experiment("spot", n_accelerators=2)
    assert str(err.value).startswith("n_accelerators 2: expected at least 5")

    r = CliRunner().invoke(
        app, ["costs", "--store", str(store), "--chargeback", "proportional", "--compare", "2026-10"], env=ENV
    )
    assert r.exit_code == 2
    assert "error: --chargeback and --compare answer different questions; give one" in r.output


def test_only_the_parameters_named_are_spelled() -> None:
    err = InputError(
        "has `penalty` (a YAML field), drop `horizon`", path="plan.json", param="as_of", mentions=("horizon",)
    )
    assert str(err) == "plan.json: as_of has `penalty` (a YAML field), drop `horizon`"
    assert error_text(err) == "plan.json: --as-of has `penalty` (a YAML field), drop --horizon"
    assert error_text(InputError(": expected a number", param="n_accelerators")) == "--accelerators: expected a number"


def test_errors_notes_and_warnings_below_the_cli_name_parameters() -> None:
    stopped = InfeasibleError("the solver stopped; raise `time_limit` or `gap`", mentions=("time_limit", "gap"))
    assert str(stopped) == "the solver stopped; raise `time_limit` or `gap`"
    assert error_text(stopped) == "the solver stopped; raise --time-limit or --gap"
    note = "whole nodes would add about 10.00 USD — plan with `integer_nodes` to provision whole nodes"
    assert cli_words(note).endswith("plan with --integer-nodes to provision whole nodes")
    assert (
        error_text(InputError("'x': expected one of slack", param="destination")) == "--to 'x': expected one of slack"
    )


PACKAGE = Path(__file__).resolve().parents[2] / "finops_cli"
_OPTION = re.compile(r"(?<![\w-])--[a-z][\w-]*")

#: modules below the CLI whose text still spells a CLI option, and why; a listed one that no longer does fails
KNOWN_OPTION_TEXT: dict[str, str] = {
    "estate/reference.py": "renders the fleet field reference of docs/estate.md, a page about the command line",
    "report/markdown.py": "the report's advice to plan with `--mode reliability` is in the demo's golden report",
}


def _option_texts(path: Path) -> list[str]:
    """String literals (docstrings aside) that spell an option outside a ``finops <command> …`` command line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef) and body and isinstance(body[0], ast.Expr):
            skip.add(id(body[0].value))
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        else:
            continue
        if any("finops " not in text[: m.start()] for m in _OPTION.finditer(text)):
            found.append(text)
    return found


def test_no_option_names_below_the_cli() -> None:
    """Messages from the library name parameters (in backticks) or concepts; the CLI spells them as options."""
    spelled = {
        str(path.relative_to(PACKAGE)): texts
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "cli" and (texts := _option_texts(path))
    }
    assert sorted(set(spelled) - set(KNOWN_OPTION_TEXT)) == [], spelled
    assert sorted(set(KNOWN_OPTION_TEXT) - set(spelled)) == [], "no longer spells an option: drop it from the list"
