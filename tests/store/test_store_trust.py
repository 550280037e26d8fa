"""A store is untrusted input (restored from buckets and CI caches): its journals never act outside it.

Opening a store as a reader writes nothing and replays nothing; a writer replays a journal only when
every path in it stays inside the store and has the shape the writer gives it. Random journals and
manifests (hypothesis) never write, move or delete a file outside the store.

Blast radius: these tests feed hostile journals to the code under test, so a regression would execute
them. Every path they generate is confined to the test's own sandbox: the store sits 8 directories
below it, relative paths climb at most 6 levels, and absolute paths only ever name the sandbox's
``outside`` directory (never ``/`` or a path of the host).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from finops_cli.errors import InputError
from finops_cli.store import Store
from tests.store_files import to_legacy

PART = "billing/provider=aws/billing_period=2026-11"


def _table(costs: list[float]) -> pa.Table:
    n = len(costs)
    return pa.table({"provider": ["aws"] * n, "billing_period": ["2026-11"] * n, "BilledCost": costs})


def _snapshot(root: Path, skip: Path | None = None) -> dict[str, str]:
    """Every entry under ``root`` (not following symlinks, not below ``skip``): hashes, link targets, dirs."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if Path(dirpath, d) != skip]
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


#: the store sits this deep in the sandbox, deeper than any generated path can climb with ".."
_DEPTH = 8


def _setup(base: Path) -> tuple[Path, Path]:
    """A store written before the log with one committed file and staged debris, and an ``outside``
    directory of victims."""
    outside = base / "outside"
    root = base.joinpath(*[f"d{i}" for i in range(_DEPTH)], "store")
    outside.mkdir()
    (outside / "victim.parquet").write_bytes(b"precious")
    (outside / "manifest.json").write_text("[]", encoding="utf-8")
    (outside / "sub").mkdir()
    (outside / "sub" / "x.parquet").write_bytes(b"also precious")
    s = Store(root)
    with s.transaction() as tx:
        tx.write_partitioned("billing", _table([1.0]), "k1")
    to_legacy(root)  # journals exist only in stores written before the log: the next writer converts them
    staged = root / ".staging" / "tx1" / PART
    staged.mkdir(parents=True)
    pq.write_table(pa.table({"BilledCost": [2.0]}), staged / "k2.parquet")
    return root, outside


def _journal(root: Path, plan: object) -> Path:
    path = root / ".journal-tx1.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "plan, says",
    [
        ({"deletes": ["/OUT/victim.parquet"], "moves": [], "staging": ".staging/tx1"}, "outside"),
        ({"deletes": [f"{PART}/../../../../outside/victim.parquet"], "moves": [], "staging": ".staging/tx1"}, ""),
        ({"deletes": [], "moves": [[".staging/tx1/x", "/OUT/victim.parquet"]], "staging": ".staging/tx1"}, ""),
        ({"deletes": [], "moves": [["/OUT/victim.parquet", f"{PART}/x.parquet"]], "staging": ".staging/tx1"}, ""),
        ({"deletes": [], "moves": [], "staging": "/OUT"}, "staging"),
        ({"deletes": [], "moves": [], "staging": ".staging/../../outside"}, "staging"),
        ({"deletes": [], "moves": [], "staging": ".staging"}, "staging"),
        ({"deletes": [], "moves": [], "staging": "."}, "staging"),  # no path parts at all (found by hypothesis)
        ({"deletes": ["."], "moves": [], "staging": ".staging/tx1"}, "deleted file"),
        ({"deletes": ["manifest.json"], "moves": [], "staging": ".staging/tx1"}, "manifest.json"),
        ({"deletes": ["billing/x.txt"], "moves": [], "staging": ".staging/tx1"}, "data file"),
        ({"deletes": [], "moves": [[".staging/tx2/x.parquet", f"{PART}/x.parquet"]], "staging": ".staging/tx1"}, ""),
        ({"deletes": [], "moves": [], "staging": ".staging/tx1", "run": "rm -rf /"}, "journal"),
        ([1, 2], "journal"),
    ],
)
def test_a_journal_that_leads_outside_is_refused_before_anything_is_touched(
    tmp_path: Path, plan: object, says: str
) -> None:
    root, outside = _setup(tmp_path)
    text = json.dumps(plan).replace("/OUT", str(outside))
    _journal(root, json.loads(text))
    before_out, before_store = _snapshot(tmp_path, skip=root), _snapshot(root)
    with pytest.raises(InputError, match="nothing was changed") as err, Store(root).transaction():
        pass
    assert ".journal-tx1.json" in str(err.value) and says in str(err.value)
    assert _snapshot(tmp_path, skip=root) == before_out
    assert _snapshot(root) == before_store  # not even the staging debris was swept


def test_a_dataset_directory_symlinked_outside_is_not_written_through(tmp_path: Path) -> None:
    root, outside = _setup(tmp_path)
    (root / "utilization").symlink_to(outside / "sub", target_is_directory=True)
    j = {"deletes": ["utilization/x.parquet"], "moves": [], "staging": ".staging/tx1"}
    _journal(root, j)
    before = _snapshot(outside)
    with pytest.raises(InputError, match="outside"), Store(root).transaction():
        pass
    (root / ".journal-tx1.json").unlink()
    with pytest.raises(InputError, match="symlink"), Store(root).transaction():  # nor converted through it
        pass
    (root / "utilization").unlink()
    with Store(root).transaction():  # converted
        pass
    # the hard-linked view of a converted store: a planted symlink there is removed, never written through
    (root / "utilization").symlink_to(outside / "sub", target_is_directory=True)
    with Store(root).transaction() as tx:
        tx.write("utilization", {"month": "2026-11"}, "k", pa.table({"x": [1]}))
    assert _snapshot(outside) == before
    assert not (root / "utilization").is_symlink() and (root / "utilization" / "month=2026-11" / "k.parquet").is_file()


def test_the_log_and_transaction_directories_must_be_real(tmp_path: Path) -> None:
    """A symlinked ``_txn/`` would stage outside the store; a symlinked ``_log/`` or generation is refused."""
    root, outside = tmp_path / "store", tmp_path / "outside"
    outside.mkdir()
    with Store(root).transaction() as tx:
        tx.write_partitioned("billing", _table([1.0]), "k1")
    import shutil

    for name in ("_txn", "_log"):
        moved = tmp_path / name
        (root / name).rename(moved)
        (root / name).symlink_to(outside if name == "_txn" else moved, target_is_directory=True)
        with pytest.raises(InputError, match=name), Store(root).transaction():
            pass
        (root / name).unlink()
        shutil.move(moved, root / name)
    generation = max((root / "_log").iterdir())
    generation.rename(tmp_path / "gen.json")
    generation.symlink_to(tmp_path / "gen.json")
    with pytest.raises(InputError, match="regular file"):
        Store(root).read("billing")
    assert not any(outside.iterdir())


def test_staging_symlinked_outside_is_refused(tmp_path: Path) -> None:
    root, outside = _setup(tmp_path)
    import shutil

    shutil.rmtree(root / ".staging")
    (root / ".staging").symlink_to(outside, target_is_directory=True)
    before = _snapshot(outside)
    with pytest.raises(InputError, match=r"\.staging"), Store(root).transaction():
        pass
    assert _snapshot(outside) == before


def test_a_valid_journal_is_still_rolled_forward_by_the_next_writer(tmp_path: Path) -> None:
    root, _ = _setup(tmp_path)
    _journal(
        root,
        {
            "deletes": [],
            "moves": [[f".staging/tx1/{PART}/k2.parquet", f"{PART}/k2.parquet"]],
            "staging": ".staging/tx1",
        },
    )
    with Store(root).transaction():
        pass
    assert sorted(Store(root).read("billing")["BilledCost"].to_pylist()) == [1.0, 2.0]
    assert not (root / ".staging").exists() and not list(root.glob(".journal-*"))


def test_readers_never_replay_a_journal(tmp_path: Path) -> None:
    """``waste``/``prices``/``report`` open the store read-only: a pending journal is named, not executed."""
    root, _ = _setup(tmp_path)
    _journal(
        root,
        {
            "deletes": [],
            "moves": [[f".staging/tx1/{PART}/k2.parquet", f"{PART}/k2.parquet"]],
            "staging": ".staging/tx1",
        },
    )
    before = _snapshot(root)
    with pytest.raises(InputError, match="interrupted while committing"):
        Store(root).read("billing")
    assert _snapshot(root) == before


def test_a_read_only_store_can_be_read(tmp_path: Path) -> None:
    """Readers open no file for writing (the lock, the staging): a store on a read-only mount is readable."""
    if os.geteuid() == 0:
        pytest.skip("root ignores file permissions")
    root = tmp_path / "store"
    s = Store(root)
    with s.transaction() as tx:
        tx.write_partitioned("billing", _table([1.0, 2.0]), "k1")
    modes = {}
    for p in [root, *root.rglob("*")]:
        modes[p] = p.stat().st_mode
        p.chmod(stat.S_IMODE(p.stat().st_mode) & ~0o222)
    try:
        assert Store(root).read("billing").num_rows == 2
        with pytest.raises(InputError, match="cannot write the store"), Store(root).transaction():
            pass
        with pytest.raises(InputError, match="cannot write the store"), Store(root / "new").transaction():
            pass
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def test_a_lock_that_is_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    root = tmp_path / "store"
    (root / ".lock").mkdir(parents=True)
    with pytest.raises(InputError, match=r"\.lock"), Store(root).transaction():
        pass


# --- random journals and manifests ----------------------------------------------------------------

_pieces = st.sampled_from(  # no "" piece: a leading one would make an absolute path of the host
    [
        "..",
        ".",
        "billing",
        "utilization",
        "spot_prices",
        ".staging",
        "tx1",
        "tx2",
        "provider=aws",
        "billing_period=2026-11",
        "k2.parquet",
        "x.parquet",
        "manifest.json",
        "/OUT",
        "/OUT/victim.parquet",
        "/OUT/sub",
        "link",
        "victim.parquet",
        "\x00",
        "a\\b",
    ]
)
_paths = st.lists(_pieces, min_size=0, max_size=_DEPTH - 2).map(lambda ps: "/".join(ps))
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6) | _paths,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
_journals = st.one_of(
    st.fixed_dictionaries(
        {
            "deletes": st.lists(_paths, max_size=3),
            "moves": st.lists(st.lists(_paths, min_size=2, max_size=2), max_size=3),
            "staging": _paths,
        }
    ),
    _json,
)
_manifests = st.one_of(
    st.none(), _json, st.lists(st.dictionaries(st.sampled_from(["source_key", "path", "files"]), _json))
)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(journal=_journals, manifest=_manifests, link=st.booleans())
def test_random_journals_and_manifests_never_write_outside_the_store(
    journal: object, manifest: object, link: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root, outside = _setup(Path(tmp))
        if link:  # a symlink inside the store that leads out, for journals to aim through
            (root / "billing" / "link").symlink_to(outside, target_is_directory=True)
        text = json.dumps(journal).replace("/OUT", str(outside))
        (root / ".journal-tx1.json").write_text(text, encoding="utf-8")
        if manifest is not None:
            (root / "manifest.json").write_text(json.dumps(manifest).replace("/OUT", str(outside)), encoding="utf-8")
        sandbox = Path(tmp)
        before = _snapshot(sandbox, skip=root)
        for action in (
            lambda: Store(root).read("billing"),
            lambda: Store(root).manifest(),
            lambda: _ingest_one(Store(root)),
            lambda: Store(root).read("billing"),
        ):
            with contextlib.suppress(InputError):
                action()
        assert _snapshot(sandbox, skip=root) == before


def _ingest_one(store: Store) -> None:
    with store.transaction() as tx:
        tx.write_partitioned("billing", _table([3.0]), "k3")
        tx.record({"source_key": "k3"})
