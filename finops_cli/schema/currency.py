"""ISO 4217 currencies: which codes exist and how many minor units (decimals) each has.

One table for the whole package, read from the ISO 4217 maintenance agency's list as shipped by the
``iso4217`` package (the SIX ``list-one.xml`` table): ``minor_units("JPY") == 0``, ``"USD"`` 2,
``"KWD"`` 3, ``"CLF"`` 4. Amounts are printed with exactly that many decimals, and a store or estate
file in a currency not in the table is refused by the callers that check :func:`is_iso4217`.

Codes whose minor unit the standard marks ``N.A.`` (``XAU`` gold, ``XDR`` …) are still ISO 4217 codes;
they are printed with :data:`DEFAULT_MINOR_UNITS` decimals.

References
----------
ISO 4217:2015 Codes for the representation of currencies, table A.1 (current currency & funds).
https://www.six-group.com/en/products-services/financial-information/data-standards.html
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
    """``code`` if it is a current ISO 4217 code, else ValueError (a pydantic validator and the ingest use it).

    Currencies are printed in reports, tables and PR comments next to amounts: restricting them to the
    standard's codes at every boundary (estate, plan JSON, store) leaves nothing to inject.
    """
    if not is_iso4217(code):  # type: ignore[arg-type]
        shown = repr(code)[:40]
        raise ValueError(f"currency {shown} is not an ISO 4217 code (such as USD, EUR, JPY)")
    return code  # type: ignore[return-value]
