"""Canonical data shapes: pydantic models for the estate files and the plan document, column names for the store."""
