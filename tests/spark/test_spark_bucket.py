"""``--engine spark`` into a bucket store (``s3://…``, moto's server mode on 127.0.0.1): with a local master the
tasks stage on this machine's disk, the driver uploads and commits by the store's conditional PUT; the
bucket then holds what the local engine puts there. With a cluster master the executors upload themselves
(tests/spark/test_spark_cluster.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops_cli import api
from finops_cli.errors import InputError
from finops_cli.spark import bucket as bucket_mod
from finops_cli.spark.session import writes_bucket
from finops_cli.store import open_store
from finops_cli.store.remote import ObjectStore
from finops_cli.uri import s3_client
from tests.spark.cur_parts import write_parts
from tests.spark.test_spark_utilization import write_traces
from tests.store.test_object_store import bucket, s3_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.xdist_group("spark")


def _contents(store: ObjectStore, dataset: str) -> dict[str, object]:
    out = {}
    for path in store.files(dataset):
        rel = str(Path(path).relative_to(store.root))
        out[rel] = pq.read_table(store.locate(path), filesystem=store.filesystem)
    return out


def _manifest(store: ObjectStore) -> list[dict]:
    drop = ("ingested_at", "txid", "billed_cost")
    return sorted(({k: v for k, v in e.items() if k not in drop} for e in store.manifest()), key=str)


def test_spark_ingest_into_a_bucket_store_gives_the_local_engines_store(
    spark: object,
    bucket: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    parts = write_parts(tmp_path / "cur", rows_per_part=100, parts_per_export=2)
    traces = write_traces(tmp_path / "traces", sources=2, samples=60)
    for engine in ("local", "spark"):
        uri = f"s3://{bucket}/{engine}"
        api.ingest_billing(parts, "aws-cur", uri, engine=engine)
        api.ingest_utilization(traces, store=uri, engine=engine)
    local, on_spark = open_store(f"s3://{bucket}/local"), open_store(f"s3://{bucket}/spark")
    assert isinstance(on_spark, ObjectStore) and on_spark.state().generation == 2  # one commit per ingest
    for dataset in ("billing", "utilization"):
        a, b = _contents(local, dataset), _contents(on_spark, dataset)  # type: ignore[arg-type]
        assert a and list(a) == list(b), dataset
        for rel in a:
            assert a[rel].equals(b[rel]), rel  # type: ignore[attr-defined]
    for dataset in ("billing_hourly", "utilization_hourly"):
        assert list(_contents(local, dataset)) == list(_contents(on_spark, dataset))  # type: ignore[arg-type]
    assert _manifest(local) == _manifest(on_spark)  # type: ignore[arg-type]


def test_a_bucket_store_is_written_by_the_tasks_only_where_they_cannot_share_the_drivers_disk(
    bucket: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    store = open_store(f"s3://{bucket}/cluster")
    cluster = SimpleNamespace(conf=SimpleNamespace(get=lambda key, default=None: "spark://head:7077"))
    local = SimpleNamespace(conf=SimpleNamespace(get=lambda key, default=None: "local[2]"))
    with store.transaction() as tx:
        assert writes_bucket(cluster, tx)  # type: ignore[arg-type]
        assert not writes_bucket(local, tx)  # type: ignore[arg-type]
    with open_store(tmp_path / "store").transaction() as tx:
        assert not writes_bucket(cluster, tx)  # type: ignore[arg-type]


def test_the_driver_takes_only_uploads_that_are_in_the_bucket_as_the_tasks_wrote_them(
    bucket: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    store = open_store(f"s3://{bucket}/checked")
    rel = "billing/provider=aws/billing_period=2026-10/k-file0.parquet"
    (tmp_path / rel).parent.mkdir(parents=True)
    pq.write_table(pa.table({"x": [1, 2, 3]}), tmp_path / rel)
    with store.transaction() as tx:
        up = bucket_mod.upload(store.location, tx.txid, tmp_path, [rel])
        assert "/_txn/" + tx.txid + "/_tasks/" in up.prefix
        assert bucket_mod.check_uploads(store, tx.txid, [up]) == {Path(rel): f"{up.prefix}/{rel}"}
        key = f"{up.prefix}/{rel}".split("/", 1)[1]
        s3_client().put_object(Bucket=bucket, Key=key, Body=b"not the task's bytes")
        with pytest.raises(InputError, match="not what the task wrote"):
            bucket_mod.check_uploads(store, tx.txid, [up])
        gone = bucket_mod.Uploaded(up.prefix, {rel.replace("k-file0", "other"): (1, "0" * 32)})
        with pytest.raises(InputError, match="missing in the bucket"):
            bucket_mod.check_uploads(store, tx.txid, [gone])
