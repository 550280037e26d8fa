"""Where the pricebook's tables are: the shipped ``pricebooks/`` folder, overlaid by the user's own directory
(``--pricebook``, else ``$FINOPS_PRICEBOOK``, else ``$XDG_CONFIG_HOME/finops``); a user row wins over a shipped
row with the same key.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
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
    """The shipped tables: the wheel's copy (``setup.py`` copies ``pricebooks/`` in), else the checkout's own
    ``pricebooks/`` (an editable install reads the folder itself, so edits show at once)."""
    shipped = Path(str(resources.files("finops_cli") / "pricebooks"))
    if shipped.is_dir():
        return shipped
    return Path(__file__).resolve().parents[2] / "pricebooks"


def use_pricebook(path: str | os.PathLike[str] | None) -> None:
    """Make ``path`` the user pricebook for this process (``--pricebook``); None goes back to the default."""
    global _override
    _override = None if path is None else Path(path).expanduser()


@contextmanager
def pricebook_at(path: str | os.PathLike[str] | None) -> Iterator[None]:
    """``path`` as the user pricebook inside the block only (the Python API's ``pricebook=``: a call, even a
    failing one, must not change what later calls in the process read); None keeps the current one."""
    global _override
    previous = _override
    if path is not None:
        _override = Path(path).expanduser()
    try:
        yield
    finally:
        _override = previous


def user_pricebook_dir() -> Path:
    """The user pricebook: ``--pricebook``, else ``$FINOPS_PRICEBOOK``, else ``$XDG_CONFIG_HOME/finops`` (the
    XDG default ``~/.config/finops``)."""
    if _override is not None:
        return _override
    named = os.environ.get(PRICEBOOK_ENV, "").strip()
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(base).expanduser() if base else Path.home() / ".config") / "finops"


def _layers(name: str) -> tuple[tuple[str, str, int], ...]:
    """(path, origin, mtime_ns) of each layer of table ``name``: the shipped file, then the user's if it has one.
    A directory named with ``--pricebook``/``$FINOPS_PRICEBOOK`` must exist; the default one may be absent."""
    shipped = pricebook_dir() / name
    layers = [(str(shipped), SHIPPED, 0)]
    user = user_pricebook_dir()
    if not user.is_dir():
        if _override is not None or os.environ.get(PRICEBOOK_ENV, "").strip():  # a typo must not fall back
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
