"""Property: whatever a malformed export looks like, ingest either succeeds or raises InputError — nothing else,
and a failed ingest writes nothing."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from finops_cli.errors import InputError
from finops_cli.ingest.billing import ingest_billing
from finops_cli.store import Store

BILLING = Path(__file__).resolve().parents[2] / "samples" / "billing"
# A small valid CUR (header + 40 lines) and a small FOCUS file to mutate.
_CUR = gzip.decompress((BILLING / "aws-cur-2026-10.csv.gz").read_bytes()).split(b"\n")[:41]
_FOCUS = (BILLING / "focus-2026-10.csv").read_bytes().split(b"\n")[:41]
SEEDS = {"cur.csv": b"\n".join(_CUR) + b"\n", "focus.csv": b"\n".join(_FOCUS) + b"\n"}

_mutation = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.binary(min_size=1, max_size=12)),
    st.tuples(st.just("cell"), st.integers(1, 40), st.integers(0, 40), st.text(max_size=8)),
    st.tuples(st.just("drop_column"), st.integers(0, 40)),
)


def _mutate(data: bytes, mutation: tuple) -> bytes:
    kind = mutation[0]
    if kind == "truncate":
        return data[: int(len(data) * mutation[1])]
    if kind == "insert":
        at = int(len(data) * mutation[1])
        return data[:at] + mutation[2] + data[at:]
    lines = data.split(b"\n")
    if kind == "cell":
        _, row, column, text = mutation
        if row >= len(lines):
            return data
        cells = lines[row].split(b",")
        if cells and column < len(cells):
            cells[column] = text.encode()
            lines[row] = b",".join(cells)
        return b"\n".join(lines)
    header = lines[0].split(b",")
    keep = [i for i in range(len(header)) if i != mutation[1] % max(len(header), 1)]
    return b"\n".join(b",".join(c for i, c in enumerate(line.split(b",")) if i in keep) for line in lines)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(sorted(SEEDS)), mutations=st.lists(_mutation, min_size=1, max_size=3), gz=st.booleans())
def test_malformed_exports_only_ever_raise_input_error(
    tmp_path_factory: pytest.TempPathFactory, seed: str, mutations: list[tuple], gz: bool
) -> None:
    data = SEEDS[seed]
    for m in mutations:
        data = _mutate(data, m)
    tmp = tmp_path_factory.mktemp("fuzz")
    path = tmp / (seed + (".gz" if gz else ""))
    if gz:
        packed = gzip.compress(data)
        path.write_bytes(packed[: len(packed) - (len(packed) // 3 if mutations[0][0] == "truncate" else 0)])
    else:
        path.write_bytes(data)
    store = Store(tmp / "store")
    try:
        summary = ingest_billing([path], "auto", store)
    except InputError as err:
        assert str(err) and "\n" not in str(err)
        assert not store.has("billing")
    else:
        assert store.read("billing").num_rows == summary.rows
