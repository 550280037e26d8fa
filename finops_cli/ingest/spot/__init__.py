"""Spot-price feeds (AWS API and CLI JSON, CSV/TSV, the GCP catalog) → the ``spot_prices`` dataset."""

from finops_cli.ingest.spot.ingest import SpotIngest, ingest_spot_prices

__all__ = ["SpotIngest", "ingest_spot_prices"]
