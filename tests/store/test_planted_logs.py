"""A planted store log or manifest (issue #27 items 1, 5, 6) is refused in one line, exit 2, before any name in
it becomes a path or an object key: nothing outside the store is read or deleted.

Bucket stores run against moto's S3 server on 127.0.0.1 (the fixtures of test_object_store).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.errors import InputError
from finops_cli.store import open_store
from finops_cli.store.layout import MAX_DOCUMENT_BYTES
from finops_cli.store.remote import ObjectStore
from tests.conftest import SAMPLES
from tests.store.test_object_store import _keys, _new_bucket, bucket, s3_server  # noqa: F401
from tests.store_files import edit_log, newest_log, to_legacy

FOCUS = SAMPLES / "billing" / "focus-2026-10.csv"


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def _client() -> Any:
    return boto3.client("s3", endpoint_url=os.environ["FINOPS_S3_ENDPOINT"])


def _plant(store: ObjectStore, change: Callable[[dict[str, Any]], None]) -> str:
    """Publish a forged next generation: the newest one with ``change`` applied. Its key."""
    bucket_name, _, prefix = str(store.root).partition("/")
    gen = store.state().generation
    client = _client()
    doc = json.loads(client.get_object(Bucket=bucket_name, Key=f"{prefix}/_log/{gen:020d}.json")["Body"].read())
    doc["generation"] = gen + 1
    change(doc)
    key = f"{prefix}/_log/{gen + 1:020d}.json"
    client.put_object(Bucket=bucket_name, Key=key, Body=json.dumps(doc).encode())
    return key


def _first(doc: dict[str, Any], prefix: str = "billing/") -> str:
    return next(r for r in doc["files"] if r.startswith(prefix))


def _txid(value: str) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["files"][_first(doc)] = value

    return change


def _rel(value: str) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["files"][value] = doc["files"].pop(_first(doc))

    return change


PLANTED = {
    "txid into another bucket": _txid("../../../other/secret"),
    "txid beside the store": _txid("../../victim"),
    "txid absolute": _txid("/etc"),
    "txid empty": _txid(""),
    "txid not a string": _txid(7),  # type: ignore[arg-type]
    "path with ..": _rel("billing/provider=aws/billing_period=2026-10/../../../../victim/x.parquet"),
    "path with a wrong partition column": _rel("billing/region=aws/billing_period=2026-10/k.parquet"),
    "path with a hidden key": _rel("billing/provider=aws/billing_period=2026-10/.k.parquet"),
    "path in no dataset": _rel("secrets/provider=aws/billing_period=2026-10/k.parquet"),
    "generation that is not its name": lambda doc: doc.update(generation=10**6),
    "files not a mapping": lambda doc: doc.update(files=[1]),
}


@pytest.mark.parametrize("field", PLANTED)
def test_a_planted_bucket_log_reads_and_deletes_nothing_outside(bucket: str, s3_server: str, field: str) -> None:  # noqa: F811
    """Issue #27 item 1: clean-up after the next commit once deleted ``s3://other/secret/<rel>``."""
    uri = f"s3://{bucket}/st"
    api.ingest_billing([FOCUS], store=uri)
    store = open_store(uri)
    assert isinstance(store, ObjectStore)
    rel = _first({"files": store.state().files})
    other = _new_bucket(s3_server)
    victims = [(other, f"secret/{rel}"), (bucket, f"victim/{rel}"), (bucket, "victim/x.parquet")]
    for b, k in victims:
        _client().put_object(Bucket=b, Key=k, Body=b"not yours")
    # the forged txid points "../../../other" from <bucket>/st/_txn/ : the other bucket
    PLANTED["txid into another bucket"] = _txid(f"../../../{other}/secret")
    planted = _plant(store, PLANTED[field])
    for args in (("store", "list"), ("costs",), ("ingest", "billing", str(FOCUS))):
        code, out = _cli(*args, "--store", uri)
        assert code == 2, (args, out)
        assert planted.rsplit("/", 1)[-1] in out and "Traceback" not in out, out
        assert len(out.strip().splitlines()) == 1, out
    for b, k in victims:
        assert _keys(b, k) == [k], f"{b}/{k} was deleted"


@pytest.mark.parametrize(
    ("field", "value"),
    [("rows", "NaN"), ("billed_cost", [1, 2]), ("billed_cost", {"USD": "1e999"}), ("providers", ["../../x"])],
)
def test_a_manifest_entry_of_the_wrong_type_is_named(tmp_path: Path, bucket: str, field: str, value: object) -> None:  # noqa: F811
    """Issue #27 item 5: ``store list``/``check``/``list --format json`` crashed (exit 70) on both stores."""
    local = tmp_path / "st"
    api.ingest_billing([FOCUS], store=local)
    edit_log(local, lambda doc: doc["manifest"][0].update({field: value}))
    legacy = tmp_path / "legacy"
    api.ingest_billing([FOCUS], store=legacy)
    to_legacy(legacy)  # a store written before the log: its manifest.json
    manifest = json.loads((legacy / "manifest.json").read_text())
    manifest[0][field] = value
    (legacy / "manifest.json").write_text(json.dumps(manifest))
    uri = f"s3://{bucket}/st"
    api.ingest_billing([FOCUS], store=uri)
    store = open_store(uri)
    assert isinstance(store, ObjectStore)
    _plant(store, lambda doc: doc["manifest"][0].update({field: value}))
    for where in (str(local), str(legacy), uri):
        for args in (("store", "list"), ("store", "check"), ("store", "list", "--format", "json")):
            code, out = _cli(*args, "--store", where)
            assert code == 2, (where, args, out)
            assert "manifest" in out and "Traceback" not in out, out
            assert len(out.strip().splitlines()) == 1, out


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def test_store_documents_are_bounded_in_depth_and_size(tmp_path: Path, bucket: str) -> None:  # noqa: F811
    """Issue #27 item 6: a 200k-deep manifest or log was a RecursionError; /dev/zero or 120 MB exhausted memory."""
    local, legacy = tmp_path / "st", tmp_path / "legacy"
    api.ingest_billing([FOCUS], store=local)
    api.ingest_billing([FOCUS], store=legacy)
    to_legacy(legacy)
    for document in (newest_log(local), legacy / "manifest.json"):
        for planted in ("deep", "zero", "large"):
            document.unlink()
            if planted == "deep":
                document.write_bytes(_nested(200_000))
            elif planted == "zero":
                document.symlink_to("/dev/zero")
            else:
                with open(document, "wb") as fh:
                    fh.truncate(MAX_DOCUMENT_BYTES + 1)
            for args in (("store", "list"), ("store", "check")):
                code, out = _cli(*args, "--store", str(document.parent.parent if "_log" in str(document) else legacy))
                assert code == 2 and document.name in out and "Traceback" not in out, (planted, args, out)
    uri = f"s3://{bucket}/st"
    api.ingest_billing([FOCUS], store=uri)
    store = open_store(uri)
    assert isinstance(store, ObjectStore)
    gen = store.state().generation + 1
    _client().put_object(Bucket=bucket, Key=f"st/_log/{gen:020d}.json", Body=_nested(200_000))
    code, out = _cli("store", "list", "--store", uri)
    assert code == 2 and "nested more than" in out and "Traceback" not in out, out


@pytest.mark.parametrize("dataset", ["billing", "billing_hourly"])
def test_a_store_file_of_the_wrong_schema_is_named(tmp_path: Path, dataset: str) -> None:
    """Issue #27 item 7: a valid Parquet file of another schema made ``costs`` exit 70 and ``store check`` say ok."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from finops_cli.store import Store

    root = tmp_path / "st"
    api.ingest_billing([FOCUS], store=root)
    path = Store(root).files(dataset)[0]
    table = pq.read_table(path)
    column = "BilledCost" if dataset == "billing" else table.schema.names[-1]
    i = table.schema.get_field_index(column)
    table = table.set_column(i, column, pa.array([f"${v}" for v in table[column].to_pylist()]))
    pq.write_table(table, path)
    with pytest.raises(InputError, match=f"{path.name}: column {column} is string"):
        Store(root).checked_files(dataset)  # what every query reads the store through
    for args in (("costs",), ("store", "check")) if dataset == "billing" else (("store", "check"),):
        code, out = _cli(*args, "--store", str(root))
        assert code == 2, (args, out)
        assert path.name in out and f"column {column} is string" in out and "Traceback" not in out, out


def test_a_staged_symlink_is_never_moved_into_a_dataset(tmp_path: Path) -> None:
    """Issue #27 item 14: a planted journal (of a store written before the log) moved a staged symlink pointing
    outside into a dataset; converting that store refuses it."""
    root = tmp_path / "st"
    api.ingest_billing([FOCUS], store=root)
    to_legacy(root)
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(b"PAR1")
    staged = root / ".staging" / "tx1"
    staged.mkdir(parents=True)
    (staged / "k.parquet").symlink_to(outside)
    part = "billing/provider=aws/billing_period=2026-10"
    plan = {"deletes": [], "moves": [[".staging/tx1/k.parquet", f"{part}/k.parquet"]], "staging": ".staging/tx1"}
    (root / ".journal-tx1.json").write_text(json.dumps(plan))
    code, out = _cli("ingest", "billing", str(FOCUS), "--store", str(root))
    assert code == 2 and "symlink" in out and "Traceback" not in out, out
    assert not (root / part / "k.parquet").is_symlink()


def test_a_symlinked_partition_is_refused_by_readers_and_remove(tmp_path: Path) -> None:
    """Issue #27 item 15: readers skipped it ($23,808 missing from costs); store remove dropped its entry."""
    from finops_cli.store import Store

    root = tmp_path / "st"
    api.ingest_billing([FOCUS], store=root)
    store = Store(root)
    key = store.manifest()[0]["source_key"]
    part = Path(store.locate(store.source_files("billing", key)[0])).parent
    moved = tmp_path / "elsewhere"
    part.rename(moved)
    part.symlink_to(moved, target_is_directory=True)
    before = newest_log(root).read_bytes()
    for args in (("costs",), ("store", "check"), ("store", "remove", key)):
        code, out = _cli(*args, "--store", str(root))
        assert code == 2, (args, out)
        assert part.name in out and "symlink" in out and "Traceback" not in out, out
    assert newest_log(root).read_bytes() == before
