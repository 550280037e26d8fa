"""The Python API: the CLI's verbs as functions returning typed results (no printing, no exit codes).

The CLI only parses arguments, calls these and renders what they return. Imports are local to each
function so ``import finops_cli.api`` stays cheap.
"""

from __future__ import annotations

from pathlib import Path

from finops_cli.estate import Estate, load_estate
from finops_cli.store import Store, resolve_store_root


def open_store(root: str | Path | None = None) -> Store:
    """The store at ``root`` (``--store``), else ``$FINOPS_STORE``, else ``.finops/``."""
    return Store(resolve_store_root(root))


def estate(fleet: str | Path, workloads: str | Path) -> Estate:
    """Load and validate ``fleet.yaml`` and ``workloads.yaml``."""
    return load_estate(fleet, workloads)


# --- ingest: billing -------------------------------------------------------------------------------

# --- ingest: utilisation, spot prices; prices; waste ----------------------------------------------

# --- estate: validate, stack, netc ----------------------------------------------------------------

# --- plan -----------------------------------------------------------------------------------------

# --- report, gate ---------------------------------------------------------------------------------

# --- simulate -------------------------------------------------------------------------------------
