"""Estate YAML: duplicate keys refused with their lines, validation messages carry line and column, and the
published JSON Schemas equal the models (editors validate with them)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from finops_cli import files
from finops_cli.cli.app import app
from finops_cli.errors import InputError
from finops_cli.estate.load import load_fleet, load_workloads
from finops_cli.schema.estate import JSON_SCHEMAS, json_schema_text
from tests.conftest import REPO, SAMPLES

FLEET = """\
version: 1
currency: USD
substrates:
  - id: onprem-h100
    provider: onprem
    kind: owned
    accelerator: H100
    jurisdiction: US
    gpus: 64
    price_per_gpu_hour: 1.2
    gpus: 8
"""


@pytest.fixture(params=["libyaml", "pure-python"])
def yaml_loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type:
    """Both parsers ``read_yaml_positions`` may use: libyaml's when PyYAML has it, else the pure-Python one."""
    if request.param == "libyaml":
        if not hasattr(yaml, "CSafeLoader"):
            pytest.skip("PyYAML built without libyaml")
        loader = yaml.CSafeLoader
    else:
        loader = yaml.SafeLoader
    monkeypatch.setattr(files, "_yaml_loader", lambda: loader)
    return loader


def test_libyaml_is_used_when_pyyaml_has_it() -> None:
    assert files._yaml_loader() is getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def test_a_duplicate_key_is_exit_2_with_both_lines(tmp_path: Path, yaml_loader: type) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    with pytest.raises(InputError) as err:
        load_fleet(fleet)
    assert str(err.value) == (
        f"{fleet}: line 11, column 5: duplicate key 'gpus' (first at line 9); each key may appear once in a mapping"
    )
    workloads = tmp_path / "w.yaml"
    text = SAMPLES.joinpath("workloads.yaml").read_text()
    line = text.splitlines().index("version: 1") + 1
    workloads.write_text(text.replace("version: 1", "version: 1\nversion: 1", 1))
    args = ["validate", "--fleet", str(SAMPLES / "fleet.yaml"), "--workloads", str(workloads)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert f"line {line + 1}, column 1: duplicate key 'version' (first at line {line})" in result.output


def test_merge_keys_and_overrides_are_not_duplicates(tmp_path: Path, yaml_loader: type) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "version: 1\n"
        "x-base: &base {provider: onprem, kind: owned, accelerator: H100, jurisdiction: US, gpus: 8}\n"
        "substrates:\n"
        "  - <<: *base\n"
        "    id: a\n"
        "    gpus: 16\n"
        "    price_per_gpu_hour: 1.0\n"
    )
    with pytest.raises(InputError, match=r"line 2, column 9: x-base: unknown key"):
        load_fleet(fleet)  # the anchor holder itself is an unknown key, reported where it is …
    fleet.write_text(fleet.read_text().replace("x-base: &base", "substrates_base_unused: &base"))
    with pytest.raises(InputError, match="substrates_base_unused: unknown key"):
        load_fleet(fleet)  # … and the merged mapping with its override raised no duplicate-key error


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("    gpus: 64\n", "    gpus: -3\n", "line 9, column 11: substrates[0].gpus: must be >= 0"),
        ("    kind: owned\n", "    kind: rented\n", "line 6, column 11: substrates[0].kind: must be one of"),
        ("    gpus: 64\n", "    gpus: 64\n    gpu: 8\n", "line 10, column 10: substrates[0].gpu: unknown key"),
        ("    jurisdiction: US\n", "", "line 4, column 5: substrates[0].jurisdiction: required"),
        ("currency: USD\n", "currency: USD\ncongestion: [{up_to: 2, multiplier: 1}]\n",
         "line 3, column 22: congestion[0].up_to: must be <= 1"),
    ],
)  # fmt: skip
def test_validation_errors_carry_line_and_column(tmp_path: Path, old: str, new: str, where: str) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET.replace("    gpus: 8\n", "").replace(old, new))
    with pytest.raises(InputError) as err:
        load_fleet(fleet)
    assert f"{fleet}: {where}" in str(err.value)


def test_workloads_errors_carry_line_and_column(tmp_path: Path) -> None:
    w = tmp_path / "workloads.yaml"
    w.write_text(
        "version: 1\nworkloads:\n  - id: a\n    unit: tokens\n    demand: {total: 10}\n"
        "  - id: b\n    unit: tokens\n    demand: {total: -1}\n"
    )
    with pytest.raises(InputError, match=r"line 8, column 21: workloads\[1\]\.demand\.total: must be >= 0"):
        load_workloads(w)


@pytest.mark.parametrize("name", sorted(JSON_SCHEMAS))
def test_published_json_schema_equals_the_models(name: str) -> None:
    path = REPO / "docs" / f"{name}.schema.json"
    assert path.read_text(encoding="utf-8") == json_schema_text(name), (
        f"regenerate: python -m finops_cli.schema.estate {name} > docs/{name}.schema.json"
    )


@pytest.mark.parametrize("name", sorted(JSON_SCHEMAS))
def test_json_schema_accepts_the_samples_and_rejects_typos(name: str) -> None:
    schema = json.loads((REPO / "docs" / f"{name}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    sample = yaml.safe_load((SAMPLES / f"{name}.yaml").read_text(encoding="utf-8"))
    jsonschema.validate(sample, schema)
    key = "substrates" if name == "fleet" else "workloads"
    sample[key][0]["gpu"] = 8  # a typo an editor must flag
    with pytest.raises(jsonschema.ValidationError, match="gpu"):
        jsonschema.validate(sample, schema)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("a: " + "[" * 2000 + "]" * 2000 + "\n", "nested more than"),
        (
            "a: &a [x]\n"
            + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 40)}]\n" for p, c in zip("abcde", "bcdef", strict=True)),
            "expands to more than",
        ),
        ("a: 1\nb: &x [*x]\n", "alias"),
        ("a: 'nul \x00 here'\n", "invalid YAML"),
        ("a: [1, 2\n", "invalid YAML"),
    ],
    ids=["deep", "billion-laughs", "undefined-alias", "control-char", "syntax"],
)
def test_both_parsers_refuse_hostile_yaml_with_one_message(
    tmp_path: Path, yaml_loader: type, text: str, says: str
) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=says):
        files.read_yaml_positions(path)
