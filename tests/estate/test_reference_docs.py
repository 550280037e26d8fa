"""docs/estate.md is generated from the models: every field documented, and the file up to date."""

from __future__ import annotations

from finops_cli.estate.reference import estate_reference_markdown, missing_docs
from tests.conftest import REPO


def test_every_model_field_has_a_unit_and_meaning() -> None:
    assert missing_docs() == []


def test_docs_estate_md_is_current() -> None:
    text = (REPO / "docs" / "estate.md").read_text(encoding="utf-8")
    assert text.strip() == estate_reference_markdown().strip(), (
        "run: python -m finops_cli.estate.reference > docs/estate.md"
    )
    assert "| `interruptions_per_hour` | `float \\| None` |" in text
