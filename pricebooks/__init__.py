"""Maintained reference tables (GPU instance types and SKUs, reference list prices), shipped as package data.

Each CSV names its sources and the date they were read; the loaders live in ``finops_cli.estate.pricebook``.
"""

from pathlib import Path

DIR = Path(__file__).resolve().parent
