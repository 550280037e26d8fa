"""One registry per kind of input format: names, aliases and header sniffers (``--format auto``) in one place."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from finops_cli.errors import InputError

T = TypeVar("T")

#: A sniffer sees the set of a file's column names and returns a score: False/0 = not this format,
#: True/1 = plausible, higher = more specific (ties between the best are an error: pass ``--format``).
Sniffer = Callable[[frozenset[str]], float | bool]

AUTO = "auto"


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered format: its canonical name, aliases, header sniffer and the parser object."""

    name: str
    obj: T
    aliases: tuple[str, ...] = ()
    sniff: Sniffer | None = None


@dataclass
class Registry(Generic[T]):
    """Formats of one kind (billing, utilisation, spot prices) keyed by lower-case name."""

    kind: str
    _entries: dict[str, Entry[T]] = field(default_factory=dict)
    _aliases: dict[str, str] = field(default_factory=dict)

    def register(
        self,
        name: str,
        *,
        aliases: Collection[str] = (),
        sniff: Sniffer | None = None,
    ) -> Callable[[Any], Any]:
        """Decorator: register a parser (class, instance or function) under ``name`` and ``aliases``.

        A decorated class is instantiated once with no arguments; functions and instances are stored as is.
        """
        key = name.lower()

        def deco(obj: Any) -> Any:
            target = obj() if isinstance(obj, type) else obj
            if key in self._entries or key in self._aliases:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._entries[key] = Entry(key, target, tuple(a.lower() for a in aliases), sniff)
            for alias in aliases:
                self._aliases[alias.lower()] = key
            return obj

        return deco

    def names(self) -> list[str]:
        """Canonical names in registration order."""
        return list(self._entries)

    def from_str(self, name: str) -> Entry[T]:
        """The entry for ``name`` or an alias (case-insensitive); an unknown name lists the valid ones."""
        key = name.strip().lower()
        key = self._aliases.get(key, key)
        entry = self._entries.get(key)
        if entry is None:
            valid = ", ".join([AUTO, *self.names()])
            raise InputError(f"unknown {self.kind} {name!r}; expected one of: {valid}")
        return entry

    def sniff(self, columns: Collection[str], path: object = None) -> Entry[T]:
        """Run every sniffer over ``columns``; return the single best-scoring entry.

        Raises :class:`InputError` naming ``path`` when no sniffer matches or the best ones tie.
        """
        cols = frozenset(c.strip().lstrip("\ufeff") for c in columns)
        scored: list[tuple[float, Entry[T]]] = []
        for entry in self._entries.values():
            if entry.sniff is None:
                continue
            score = float(entry.sniff(cols))
            if score > 0:
                scored.append((score, entry))
        if not scored:
            shown = ", ".join(sorted(cols)[:8]) + (", …" if len(cols) > 8 else "")
            raise InputError(
                f"header matches no known {self.kind} (columns: {shown}); expected one of: {', '.join(self.names())}",
                path=path,
            )
        scored.sort(key=lambda se: -se[0])
        best = [e for s, e in scored if s == scored[0][0]]
        if len(best) > 1:
            raise InputError(
                f"header fits several {self.kind}s ({', '.join(e.name for e in best)}); pass `fmt`",
                path=path,
                mentions=("fmt",),
            )
        return best[0]

    def resolve(self, name: str, columns: Collection[str], path: object = None) -> tuple[Entry[T], bool]:
        """``name`` (or ``auto``) → (entry, was_sniffed)."""
        if name.strip().lower() == AUTO:
            return self.sniff(columns, path), True
        return self.from_str(name), False
