"""Every benchmark prints its table and, with ``--json FILE``, writes the same figures as JSON.

``{"benchmark": name, "python": "3.11.x", "cores": N, "results": [{...}, ...]}``: one object per row printed,
its keys the table's columns (seconds, rows per second, bytes), so two runs can be compared by a script.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path
from typing import Any


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the figures to FILE as JSON.")


def write_json(path: Path | None, benchmark: str, results: list[dict[str, Any]]) -> None:
    """Write ``results`` to ``path`` (nothing when it is None)."""
    if path is None:
        return
    doc = {"benchmark": benchmark, "python": platform.python_version(), "cores": os.cpu_count(), "results": results}
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"wrote {path}")
