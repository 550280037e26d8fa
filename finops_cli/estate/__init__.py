"""The estate: fleet and workloads loaded from YAML into typed models, validated before any math runs.

The names below are imported on first use (PEP 562): a submodule such as :mod:`finops_cli.estate.prices` must
not pull in YAML and the pydantic estate models with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from finops_cli.estate.load import Estate, load_estate, load_fleet, load_workloads

__all__ = ["Estate", "load_estate", "load_fleet", "load_workloads"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from finops_cli.estate import load

        return getattr(load, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
