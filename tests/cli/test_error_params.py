"""Errors speak the caller's language: the Python API names its parameters, the CLI the same error's options."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.cli.output import error_text
from finops_cli.errors import InputError

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
