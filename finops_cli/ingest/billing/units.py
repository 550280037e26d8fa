"""Provider units in FOCUS Unit Format (``Hours``, ``GB-Months``, ``10000 Units``).

A block-priced unit (Azure ``10K``, ``100 Hours``) prices a block of units: the source's quantity counts blocks.
FOCUS's PricingUnit keeps the block (``10000 Units``: the spec's "unit quantity", as on the price list) with the
quantity as given, so ``ListUnitPrice × PricingQuantity = ListCost``; ConsumedUnit is the single unit with the
quantity × the block. The rules and a table of examples: docs/formats.md ("Units, descriptions and instance types").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.ingest.readers.values import map_unique


@dataclass(frozen=True)
class Unit:
    """A provider unit read: ``block`` source units per priced unit, ``name`` the single unit in FOCUS format."""

    block: int
    name: str

    @property
    def pricing(self) -> str:
        """The unit a price is quoted in: ``10000 Units`` for a block of 10,000, ``Hours`` without a block."""
        return self.name if self.block == 1 else f"{self.block} {self.name}"


#: FOCUS's data size abbreviations, by their lower-case spelling (providers vary the case; Azure's ``Gb`` is GB)
_DATA = {a.lower(): a for a in ("B", "KB", "MB", "GB", "TB", "PB", "EB", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")}
_DATA.update(
    {"byte": "B", "bytes": "B", "kilobyte": "KB", "megabyte": "MB", "gigabyte": "GB", "terabyte": "TB",
     "petabyte": "PB", "kibibyte": "KiB", "mebibyte": "MiB", "gibibyte": "GiB", "tebibyte": "TiB", "pebibyte": "PiB"}
)  # fmt: skip
#: time words → FOCUS's singular time unit (``Instance Hours``, ``Relay Hrs``: hours of a thing, still hours)
_TIME = {
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours", "hora", "horas", "小时"), "Hour"),
    **dict.fromkeys(("instance hour", "instance hours", "relay hours", "relay hrs", "content hours"), "Hour"),
    **dict.fromkeys(("min", "mins", "minute", "minutes", "minute(s)", "callingminutes"), "Minute"),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), "Second"),
    **dict.fromkeys(("d", "day", "days"), "Day"),
    **dict.fromkeys(("mo", "mon", "month", "months", "por mes", "mes", "月"), "Month"),
    **dict.fromkeys(("yr", "year", "years"), "Year"),
}
#: count words spelled as FOCUS recommends
_COUNT = {"api calls": "Request", "api call": "Request", "per call": "Call", "": "Unit", "unassigned": "Unit"}
_MULTIPLIER = {"": 1, "K": 1_000, "M": 1_000_000, "B": 1_000_000_000}
_LEADING = re.compile(r"^(\d+)([KMB]?)(?![A-Za-z])\s*(.*)$")  # "10K" (no space: "1 B" is a byte)
_WORDS = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}


def _plural(word: str) -> str:
    if word in _DATA.values():  # data sizes are the same in singular and plural
        return word
    if word.endswith("y") and not word.endswith(("ay", "ey", "oy", "uy")):
        return word[:-1] + "ies"
    return word if word.endswith("s") else word + "s"


def _singular(word: str) -> str:
    if word in _DATA.values():
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _base(text: str) -> tuple[str, str] | None:
    """One base unit → (kind, FOCUS singular name): kind ``data``, ``time`` or ``count``; None if unreadable."""
    low = " ".join(text.lower().split())
    if low in _DATA:
        return "data", _DATA[low]
    if low in _TIME:
        return "time", _TIME[low]
    if low in _COUNT:
        return "count", _COUNT[low]
    words = text.split()
    if not words or not all(re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", w) for w in words):
        return None
    # a capitalised noun (FOCUS: "capitalized nouns" for units outside its lists): "Transactions", "vCPU"
    name = "".join(w if any(c.isupper() for c in w) else w.capitalize() for w in words)
    return "count", _singular(name)


def _compound(head: str, period: str) -> str | None:
    """``GB`` + ``Hour`` → ``GB-Hours`` (FOCUS's ``<singular-base-unit>-<plural-base-unit>``); in a head of several
    words the data size wins (AWS ``Lambda-GB-Second`` → ``GB-Seconds``)."""
    time = _base(period)
    if time is None or time[0] != "time":
        return None
    words = [w for w in re.split(r"[-\s]+", head) if w]
    first = next((_DATA[w.lower()] for w in words if w.lower() in _DATA), None)
    if first is None:
        base = _base(" ".join(words)) if words else ("count", "Unit")  # "1/Month": a price per item per month
        if base is None:
            return None
        first = base[1]
    return f"{first}-{_plural(time[1])}"


@lru_cache(maxsize=4096)
def focus_unit(text: str | None) -> Unit | None:
    """A provider's unit in FOCUS Unit Format, or None when it cannot be read (the caller keeps the source's text).

    ``10K`` → 10000 Units; ``100 Hours`` → 100 Hours; ``1 GiB Hour`` → GiB-Hours; ``1 GB/Month`` (Azure: a price
    per GB per month; the quantity is GB-months) → GB-Months; ``Hrs`` → Hours; ``GB-Mo`` → GB-Months."""
    if text is None or not text.strip():
        return None
    rest, block = " ".join(text.split()), 1
    m = _LEADING.match(rest)
    if m:
        block, rest = int(m.group(1)) * _MULTIPLIER[m.group(2)], m.group(3)
    rest = re.sub(r"\s*\([^)]*\)", "", rest)  # "Minute(s)", "Database Units (DU)"
    first, _, after = rest.partition(" ")
    if first.lower() in _WORDS:  # OCI "Million Datapoints", Azure "1 Million"
        block, rest = block * _WORDS[first.lower()], after
    rest = re.sub(r"(?i)\s+per\s+", "/", rest)  # OCI "GPU Per Hour"
    if block <= 0:
        return None
    if "/" in rest:  # Azure writes a price per X per period: the quantity is X held over the period
        head, _, per = rest.partition("/")
        name = _compound(head.strip(), per.strip())
        return None if name is None else Unit(block, name)
    whole = _base(rest) if "-" not in rest else None
    if whole is not None and (whole[0] != "count" or " " not in rest):
        return Unit(block, _plural(whole[1]))
    words = [w for w in re.split(r"[-\s]+", rest) if w]
    if len(words) >= 2 and (last := _base(words[-1])) is not None and last[0] == "time":
        name = _compound(" ".join(words[:-1]), words[-1])
        return None if name is None else Unit(block, name)
    return None if whole is None else Unit(block, _plural(whole[1]))


def focus_units(units: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Per line: the block (1 where the unit cannot be read), the consumed unit and the pricing unit (the source's
    text where it cannot be read); each distinct unit is read once."""
    block = map_unique(units, lambda u: (r := focus_unit(u)) and r.block, pa.int64())
    consumed = map_unique(units, lambda u: (r := focus_unit(u)) and r.name, pa.string())
    pricing = map_unique(units, lambda u: (r := focus_unit(u)) and r.pricing, pa.string())
    text = pc.cast(units, pa.string())
    return pc.cast(pc.fill_null(block, 1), pa.float64()), pc.coalesce(consumed, text), pc.coalesce(pricing, text)
