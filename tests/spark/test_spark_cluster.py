"""``--engine spark`` on a real standalone cluster (a master and two 1-core workers on 127.0.0.1, the session
fixture ``cluster``) into a bucket store on moto's S3 server: the executors, in their own processes and work
directories, stage on their own disks and upload under the transaction's ``_txn/<txid>/_tasks/<attempt>/``;
the driver checks what they uploaded and commits. The bucket then holds what the local engine puts there.

Each cluster ingest runs the CLI in its own process (the driver), as a user runs it: one process can hold only
one SparkContext, and the local-master tests of this directory hold theirs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from finops_cli import api
from finops_cli.store import open_store
from finops_cli.store.remote import ObjectStore
from tests.spark.cluster import StandaloneCluster, cluster_env
from tests.spark.cur_parts import write_parts
from tests.spark.test_spark_bucket import _contents, _manifest
from tests.spark.test_spark_utilization import write_traces
from tests.store.test_object_store import _keys, bucket, s3_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.xdist_group("spark-cluster")

#: a driver's whole run on a loaded 2-core machine (JVM start, executors' Python workers, the job)
DRIVER_TIMEOUT = 600


def finops(args: list[str], cluster: StandaloneCluster) -> subprocess.CompletedProcess[str]:
    """The CLI in its own process, as the Spark driver of ``cluster`` (small executors: the workers have 1 GB)."""
    env = cluster_env({k: v for k, v in os.environ.items() if k.startswith(("AWS_", "FINOPS_"))})
    code = "from finops_cli.cli.app import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args, "--engine", "spark", "--spark-master", cluster.master_url],
        env=env,
        capture_output=True,
        text=True,
        timeout=DRIVER_TIMEOUT,
    )


def test_a_cluster_ingests_into_a_bucket_store_as_the_local_engine_does(
    cluster: StandaloneCluster,
    bucket: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    parts = write_parts(tmp_path / "cur", rows_per_part=300, parts_per_export=2)
    traces = write_traces(tmp_path / "traces", sources=2, samples=40)
    api.ingest_billing(parts, "aws-cur", f"s3://{bucket}/local", engine="local")
    api.ingest_utilization(traces, store=f"s3://{bucket}/local", engine="local")

    uri = f"s3://{bucket}/cluster"
    for args in (
        ["ingest", "billing", str(tmp_path / "cur"), "--format", "aws-cur", "--store", uri],
        ["ingest", "utilization", *map(str, traces), "--store", uri],
    ):
        run = finops(args, cluster)
        assert run.returncode == 0, run.stderr[-3000:]

    local, on_cluster = open_store(f"s3://{bucket}/local"), open_store(uri)
    assert isinstance(on_cluster, ObjectStore) and on_cluster.state().generation == 2  # one commit per ingest
    for dataset in ("billing", "utilization", "billing_hourly", "utilization_hourly", "utilization_devices"):
        a, b = _contents(local, dataset), _contents(on_cluster, dataset)  # type: ignore[arg-type]
        assert a and list(a) == list(b), dataset
        for rel in a:
            assert a[rel].equals(b[rel]), (dataset, rel)  # type: ignore[attr-defined]
    assert _manifest(local) == _manifest(on_cluster)  # type: ignore[arg-type]
    # the money per currency, as the store's own report adds it up
    mine, theirs = api.costs(store=uri), api.costs(store=f"s3://{bucket}/local")
    assert mine.totals and mine.totals == theirs.totals and mine.rows == theirs.rows
    # nothing left but the log and the files it names: the attempts' uploads went after the commit
    named = {on_cluster.physical(rel, txid) for rel, txid in on_cluster.state().files.items()}
    left = {f"{bucket}/{k}" for k in _keys(bucket, "cluster/_txn/")}
    assert left == named
    # the tasks ran in the workers' executors (their own processes and work directories), not in the driver
    assert any(any(w.work_dir.glob("app-*/*/stderr")) for w in cluster.workers)
