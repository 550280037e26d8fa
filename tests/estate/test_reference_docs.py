"""docs/estate.md is generated from the models: every field documented, and the file up to date."""

from __future__ import annotations

from finops_cli.estate.reference import FIELD_DOCS, SECTIONS, estate_reference_markdown
from tests.conftest import REPO


def test_every_model_field_has_a_unit_and_meaning() -> None:
    fields = [f"{model.__name__}.{name}" for model, _ in SECTIONS for name in model.model_fields]
    assert [f for f in fields if f not in FIELD_DOCS] == []


def test_docs_estate_md_is_current() -> None:
    text = (REPO / "docs" / "estate.md").read_text(encoding="utf-8")
    assert text.strip() == estate_reference_markdown().strip(), (
        "run: python -m finops_cli.estate.reference > docs/estate.md"
    )
    assert "| `interruptions_per_hour` | `float \\| None` |" in text
