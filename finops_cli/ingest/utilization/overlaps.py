"""No sample counted twice: a new source may not cover a device's time that another source covers (see
:mod:`.pipeline`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from finops_cli.errors import InputError
from finops_cli.ingest.utilization.sources import DATASET
from finops_cli.store import Store
from finops_cli.store.store import Transaction


def _stored_spans(store: Store, months: list[str], skip: set[str]) -> pd.DataFrame:
    """Per (stored source key, device): the time it covers, from the store's files for ``months``.

    The month before the first one is read too: its last samples' intervals may reach into it.
    """
    empty = pd.DataFrame({"key": [], "device": [], "start_us": [], "end_us": []})
    if not months or not store.has(DATASET):
        return empty
    first = np.datetime64(min(months), "M") - 1
    wanted = {*months, str(first)}
    frames = []
    for path in store.files(DATASET):
        if path.stem in skip or path.parent.name.partition("=")[2] not in wanted:
            continue
        t = pq.read_table(
            store.locate(path), columns=["device_id", "timestamp", "interval_s"], filesystem=store.filesystem
        )
        start = pc.cast(t["timestamp"], pa.int64())
        end = pc.add(start, pc.cast(pc.round(pc.multiply(t["interval_s"], 1e6)), pa.int64()))
        g = (
            pa.table({"device": pc.cast(t["device_id"], pa.string()), "start_us": start, "end_us": end})
            .group_by("device")
            .aggregate([("start_us", "min"), ("end_us", "max")])
            .to_pandas()
            .rename(columns={"start_us_min": "start_us", "end_us_max": "end_us"})
        )
        frames.append(g.assign(key=path.stem))
    if not frames:
        return empty
    return pd.concat(frames).groupby(["key", "device"], as_index=False).agg({"start_us": "min", "end_us": "max"})


def _overlapping(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Pairs of (a, b) spans of the same device that share time (half-open: touching is fine)."""
    m = a.merge(b, on="device", suffixes=("", "_other"))
    return m[(m["start_us"] < m["end_us_other"]) & (m["start_us_other"] < m["end_us"])]


def _when(us: int) -> str:
    return str(np.datetime64(int(us), "us").astype("datetime64[s]")).replace("T", " ")


def check_overlaps(store: Store, tx: Transaction, new: pd.DataFrame, *, replace: bool) -> list[dict[str, Any]]:
    """Refuse (or with ``replace``, remove) stored sources covering the same device at the same time.

    Sources of one command may not overlap each other either. Returns the stored sources removed.
    """
    keys = sorted(set(new["key"]))
    for i, k in enumerate(keys):  # within this command
        mine = new[new["key"] == k]
        for other in keys[i + 1 :]:
            clash = _overlapping(mine, new[new["key"] == other])
            if len(clash):
                row = clash.iloc[0]
                raise InputError(
                    f"overlaps {row['source_other']} on {len(clash)} device(s) (e.g. {row['device']} at "
                    f"{_when(max(row['start_us'], row['start_us_other']))} UTC): the same GPU time would be counted "
                    "twice; ingest one of them",
                    path=Path(row["source"]),
                )
    months = sorted({str(np.datetime64(int(us), "us").astype("datetime64[M]")) for us in new["start_us"]})
    months += sorted({str(np.datetime64(int(us) - 1, "us").astype("datetime64[M]")) for us in new["end_us"]})
    stored = _stored_spans(store, sorted(set(months)), skip=set(keys))
    clash = _overlapping(new, stored.rename(columns={"key": "stored_key"}))
    if clash.empty:
        return []
    sources = {e.get("source_key"): e.get("source", "?") for e in store.manifest() if e.get("dataset") == DATASET}
    replaced = []
    for stored_key, rows in clash.groupby("stored_key"):
        row = rows.iloc[0]
        what = f"source {stored_key} ({sources.get(stored_key, '?')})"
        if not replace:
            raise InputError(
                f"overlaps {what}, already in the store, on {rows['device'].nunique()} device(s) (e.g. {row['device']} "
                f"at {_when(max(row['start_us'], row['start_us_other']))} UTC): the same samples would be counted "
                f"twice. Pass `replace` to replace it, or remove it first: finops store remove {stored_key}",
                path=Path(row["source"]),
                mentions=("replace",),
            )
        tx.remove_source(DATASET, str(stored_key))
        devices = int(rows["device"].nunique())
        replaced.append({"key": stored_key, "source": sources.get(stored_key), "devices": devices})
    return replaced
