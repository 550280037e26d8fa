"""The estate: fleet and workloads loaded from YAML into typed models, validated before any math runs."""

from finops_cli.estate.load import Estate, load_estate, load_fleet, load_workloads

__all__ = ["Estate", "load_estate", "load_fleet", "load_workloads"]
