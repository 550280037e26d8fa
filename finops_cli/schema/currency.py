"""ISO 4217 currencies (the SIX table A.1 as the ``iso4217`` package ships it): which codes exist, and how many
decimals (minor units) amounts in each are printed with (JPY 0, USD 2, KWD 3).
"""

from __future__ import annotations

from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

#: Decimals for a code with no minor unit in the standard (``N.A.``) or an unknown code.
DEFAULT_MINOR_UNITS = 2


@cache
def iso4217_minor_units() -> Mapping[str, int | None]:
    """Every current ISO 4217 alphabetic code → its minor units (``None`` where the standard says N.A.)."""
    import iso4217

    out: dict[str, int | None] = {}
    for code, entry in iso4217.raw_table.items():
        # The stub types every field as str | int | set[str]; CcyMnrUnts is the text "2", "0" or "N.A.".
        raw = str(entry.get("CcyMnrUnts") or "").strip()
        if not code or len(code) != 3:
            continue
        out[code] = int(raw) if raw.isdigit() else None
    return MappingProxyType(out)


def is_iso4217(code: str) -> bool:
    """True for a current ISO 4217 alphabetic code (upper case: ``USD``, not ``usd``)."""
    return isinstance(code, str) and code in iso4217_minor_units()


def minor_units(code: str) -> int:
    """Decimals of ``code``'s minor unit (JPY 0, USD 2, KWD 3); :data:`DEFAULT_MINOR_UNITS` when unknown or N.A."""
    units = iso4217_minor_units().get(code.upper()) if isinstance(code, str) else None
    return DEFAULT_MINOR_UNITS if units is None else units


def check_iso4217(code: object) -> str:
    """``code`` if it is a current ISO 4217 code, else ValueError: a currency printed next to amounts leaves
    nothing to inject."""
    if not is_iso4217(code):  # type: ignore[arg-type]
        shown = repr(code)[:40]
        raise ValueError(f"currency {shown} is not an ISO 4217 code (such as USD, EUR, JPY)")
    return code  # type: ignore[return-value]
