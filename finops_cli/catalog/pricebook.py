"""Where the pricebook's tables are: the shipped ``pricebooks/`` folder, overlaid by the user's own directory.

Two layers, one loader (every command that reads a price or a GPU fact goes through here):

* the **shipped** tables (the repository's ``pricebooks/`` folder, copied into the wheel as package data),
  maintained by hand;
* the **user pricebook**, a directory with files of the same names and columns that overlays them:
  ``--pricebook DIR`` (``finops --pricebook DIR <command>``), else ``$FINOPS_PRICEBOOK``, else
  ``$XDG_CONFIG_HOME/finops`` (``~/.config/finops``). ``finops pricebook refresh`` writes its
  ``reference_prices.csv`` from the providers' price APIs; a user adds instance types the shipped table
  lacks (``p3.2xlarge``/V100, ``g4dn.xlarge``/T4) as rows of its ``instance_types.csv``. A user row wins
  over a shipped row with the same key.

Reference prices (``reference_prices.csv``): list on-demand, typical spot and API per-unit prices, each row
with its ``source`` and the date it was read (``read_on``; refreshed rows also carry ``fetched_at``). A
substrate may say ``price_ref: aws/p5.48xlarge/on_demand`` instead of a number (optionally pinned to a region,
``aws/p5.48xlarge/on_demand/us-west-2``); reports that used a reference price say how old it is
(:func:`~finops_cli.catalog.prices.reference_price_age_days`) and where it came from. The readers are
:mod:`finops_cli.catalog.prices` (list prices) and :mod:`finops_cli.catalog.gpus` (GPU facts per instance type).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from finops_cli.errors import InputError

REFERENCE_PRICES_FILE = "reference_prices.csv"
REF_COLUMNS = (
    "provider",
    "offering",
    "term",
    "accelerator",
    "gpus",
    "usd_per_instance_hour",
    "usd_per_gpu_hour",
    "unit",
    "usd_per_unit",
    "region",
    "source",
    "read_on",
)
#: written by ``finops pricebook refresh`` beside the columns above: when the row was fetched (ISO-8601 UTC)
FETCHED_AT = "fetched_at"
#: the environment variable naming the user pricebook directory (``--pricebook`` wins over it)
PRICEBOOK_ENV = "FINOPS_PRICEBOOK"
#: shown as a row's ``origin`` when it comes from the shipped tables
SHIPPED = "shipped"

_override: Path | None = None


def pricebook_dir() -> Path:
    """The shipped tables: the wheel's copy (``finops_cli/pricebooks``), else the source checkout's ``pricebooks/``.

    ``setup.py`` copies the repository's top-level ``pricebooks/`` into the wheel at build time; an editable
    install (``pip install -e .``) and a checkout on ``PYTHONPATH`` read the folder itself, so edits show at once.
    """
    shipped = Path(str(resources.files("finops_cli") / "pricebooks"))
    if shipped.is_dir():
        return shipped
    return Path(__file__).resolve().parents[2] / "pricebooks"


def use_pricebook(path: str | os.PathLike[str] | None) -> None:
    """Make ``path`` the user pricebook for this process (``--pricebook``); None goes back to the default."""
    global _override
    _override = None if path is None else Path(path).expanduser()


def user_pricebook_dir() -> Path:
    """The user pricebook directory: ``--pricebook``, else ``$FINOPS_PRICEBOOK``, else ``$XDG_CONFIG_HOME/finops``.

    ``$XDG_CONFIG_HOME`` defaults to ``~/.config`` (the XDG base-directory rule).
    """
    if _override is not None:
        return _override
    named = os.environ.get(PRICEBOOK_ENV, "").strip()
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(base).expanduser() if base else Path.home() / ".config") / "finops"


def _named_explicitly() -> bool:
    return _override is not None or bool(os.environ.get(PRICEBOOK_ENV, "").strip())


def _layers(name: str) -> tuple[tuple[str, str, int], ...]:
    """(path, origin, mtime_ns) of each layer of table ``name``: the shipped file, then the user's if it has one.

    A directory named with ``--pricebook``/``$FINOPS_PRICEBOOK`` must exist (a typo must not silently fall back
    to the shipped prices); the default ``~/.config/finops`` may be absent.
    """
    shipped = pricebook_dir() / name
    layers = [(str(shipped), SHIPPED, 0)]
    user = user_pricebook_dir()
    if not user.is_dir():
        if _named_explicitly():
            if user.exists():
                raise InputError("the pricebook is not a directory", path=user)
            raise InputError(
                "pricebook directory not found (create it, or fill it with 'finops pricebook refresh')", path=user
            )
        return tuple(layers)
    file = user / name
    if file.is_file():
        layers.append((str(file), str(file), file.stat().st_mtime_ns))
    return tuple(layers)
