"""``--engine spark`` on a real standalone cluster (a master and two 1-core workers on 127.0.0.1, the session
fixture ``cluster``) into a bucket store on moto's S3 server: the executors, in their own processes and work
directories, stage on their own disks and upload under the transaction's ``_txn/<txid>/_tasks/<attempt>/``;
the driver checks what they uploaded and commits. The bucket then holds what the local engine puts there.

Each cluster ingest runs the CLI in its own process (the driver), as a user runs it: one process can hold only
one SparkContext, and the local-master tests of this directory hold theirs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from finops_cli import api
from finops_cli.store import Store, open_store
from finops_cli.store.layout import new_txid
from finops_cli.store.remote import ObjectStore
from tests.spark.analyses import ANALYSES, assert_same_json, timeless
from tests.spark.cluster import StandaloneCluster, Worker, cluster_env, start_connect_server
from tests.spark.conftest import s3_env
from tests.spark.cur_parts import EXPORTS, write_parts
from tests.spark.test_spark_bucket import _contents, _manifest
from tests.spark.test_spark_utilization import write_traces
from tests.store.test_object_store import _keys, _new_bucket, _s3_env, bucket, s3_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.xdist_group("spark-cluster")

#: a driver's whole run on a loaded 2-core machine (JVM start, executors' Python workers, the job)
DRIVER_TIMEOUT = 600


#: the CLI as a driver process
CLI = "from finops_cli.cli.app import main; main()"
#: several CLI commands in one driver process (one Spark application, its session started once): a JSON list
#: of argument lists in ``argv[1]``; the first that fails ends the process with its exit code
SEVERAL = """
import json, sys
from finops_cli.cli.app import app
for args in json.loads(sys.argv[1]):
    try:
        app(args, prog_name="finops")
    except SystemExit as exc:
        if exc.code:
            raise
"""


def driver(
    args: list[str], cluster: StandaloneCluster | str, log: Path, code: str = CLI, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``code`` (the CLI) in its own process group, as the Spark driver of ``cluster`` (or the client of a Spark
    Connect server, ``sc://…``) with ``args``; its output in ``log``."""
    env = cluster_env({**{k: v for k, v in os.environ.items() if k.startswith(("AWS_", "FINOPS_"))}, **(env or {})})
    spark = ["--engine", "spark", "--spark-remote" if isinstance(cluster, str) else "--spark-master"]
    spark.append(cluster if isinstance(cluster, str) else cluster.master_url)
    if code == SEVERAL:  # each command of the JSON list runs on the cluster
        args = [json.dumps([[*command, *spark] for command in json.loads(args[0])]), *args[1:]]
    else:
        args = [*args, *spark]
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-c", code, *args], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def finops(args: list[str], cluster: StandaloneCluster | str, log: Path, code: str = CLI) -> tuple[int, str]:
    """:func:`driver` run to its end: its exit code and output."""
    process = driver(args, cluster, log, code)
    try:
        code = process.wait(timeout=DRIVER_TIMEOUT)
    finally:
        _kill(process)
    return code, log.read_text(errors="replace")


def running_task(cluster: StandaloneCluster, app_logs: set[Path], timeout: float = DRIVER_TIMEOUT) -> Worker:
    """The first worker whose executor (of an application not in ``app_logs``) has started a task."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for worker in cluster.workers:
            for log in set(worker.work_dir.glob("app-*/*/stderr")) - app_logs:
                if "Running task" in log.read_text(errors="replace"):
                    return worker
        time.sleep(0.2)
    raise AssertionError(f"no executor started a task within {timeout:.0f} s")


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _app_logs(cluster: StandaloneCluster) -> set[Path]:
    return {log for w in cluster.workers for log in w.work_dir.glob("app-*/*/stderr")}


@dataclass(frozen=True)
class Month:
    """The generated multi-file CUR month, and the store the local engine makes of it (in a bucket of its own)."""

    directory: Path
    store: str


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory, s3_server: str) -> Month:  # noqa: F811
    """:class:`Month`, generated and ingested by the local engine once: every cluster ingest of the module is
    compared with it (two export parts per payer and period, so the parts' files are named as the local engine
    names them)."""
    directory = tmp_path_factory.mktemp("month") / "cur"
    parts = write_parts(directory, rows_per_part=100, parts_per_export=2)
    with pytest.MonkeyPatch.context() as mp:
        _s3_env(mp, s3_server)
        uri = f"s3://{_new_bucket(s3_server)}/local"
        api.ingest_billing(parts, "aws-cur", uri, engine="local")
    return Month(directory, uri)


def test_a_cluster_ingests_into_a_bucket_store_as_the_local_engine_does(
    cluster: StandaloneCluster,
    month: Month,
    bucket: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    traces = write_traces(tmp_path / "traces", sources=2, samples=40)
    api.ingest_utilization(traces, store=f"s3://{bucket}/local", engine="local")

    uri = f"s3://{bucket}/cluster"
    ingests = [
        ["ingest", "billing", str(month.directory), "--format", "aws-cur", "--store", uri],
        ["ingest", "utilization", *map(str, traces), "--store", uri],
    ]
    code, output = finops([json.dumps(ingests)], cluster, tmp_path / "driver.log", SEVERAL)  # one application
    assert code == 0, output[-3000:]

    billing, utilization = open_store(month.store), open_store(f"s3://{bucket}/local")
    on_cluster = open_store(uri)
    assert isinstance(on_cluster, ObjectStore) and on_cluster.state().generation == 2  # one commit per ingest
    for local, datasets in (
        (billing, ("billing", "billing_hourly")),
        (utilization, ("utilization", "utilization_hourly", "utilization_devices")),
    ):
        for dataset in datasets:
            a, b = _contents(local, dataset), _contents(on_cluster, dataset)  # type: ignore[arg-type]
            assert a and list(a) == list(b), dataset
            for rel in a:
                assert a[rel].equals(b[rel]), (dataset, rel)  # type: ignore[attr-defined]
    both = sorted(_manifest(billing) + _manifest(utilization), key=str)  # type: ignore[arg-type]
    assert both == _manifest(on_cluster)  # type: ignore[arg-type]
    # the money per currency, as the store's own report adds it up
    mine, theirs = api.costs(store=uri), api.costs(store=month.store)
    assert mine.totals and mine.totals == pytest.approx(theirs.totals, abs=0.005)  # to the cent per currency
    # nothing left but the log and the files it names: the attempts' uploads went after the commit
    named = {on_cluster.physical(rel, txid) for rel, txid in on_cluster.state().files.items()}
    left = {f"{bucket}/{k}" for k in _keys(bucket, "cluster/_txn/") if not k.endswith("/")}  # (empty markers)
    assert left == named
    # the tasks ran in the workers' executors (their own processes and work directories), not in the driver
    assert any(any(w.work_dir.glob("app-*/*/stderr")) for w in cluster.workers)


def _same_billing(store_uri: str, expected_uri: str) -> None:
    mine, theirs = open_store(store_uri), open_store(expected_uri)
    for dataset in ("billing", "billing_hourly"):
        a, b = _contents(theirs, dataset), _contents(mine, dataset)  # type: ignore[arg-type]
        assert a and list(a) == list(b) and all(a[rel].equals(b[rel]) for rel in a), dataset  # type: ignore[attr-defined]
    billing = [e for e in _manifest(mine) if e.get("dataset") == "billing"]  # type: ignore[arg-type]
    assert billing and billing == [e for e in _manifest(theirs) if e.get("dataset") == "billing"]  # type: ignore[arg-type]


def test_a_worker_killed_mid_ingest_leaves_the_store_as_a_clean_run(
    cluster: StandaloneCluster,
    month: Month,
    bucket: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    uri = f"s3://{bucket}/cluster"
    before = _app_logs(cluster)
    process = driver(["ingest", "billing", str(month.directory), "--store", uri], cluster, tmp_path / "driver.log")
    try:
        cluster.kill_worker(running_task(cluster, before))  # with its executor: Spark runs the task again elsewhere
        code = process.wait(timeout=DRIVER_TIMEOUT)
    finally:
        _kill(process)
        cluster.workers = [w for w in cluster.workers if w.process.poll() is None]
        cluster.start_worker()  # two workers again for the next test
    assert code == 0, (tmp_path / "driver.log").read_text(errors="replace")[-3000:]
    _same_billing(uri, month.store)
    assert open_store(uri).state().generation == 1
    assert all("/_tasks/" not in k for k in _keys(bucket, "cluster/_txn/"))  # the attempts' uploads went


def test_a_driver_killed_mid_ingest_leaves_the_store_as_it_was_and_the_next_ingest_recovers(
    cluster: StandaloneCluster,
    month: Month,
    bucket: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    traces = write_traces(tmp_path / "traces", sources=1, samples=40)
    uri = f"s3://{bucket}/cluster"
    api.ingest_utilization(traces, store=uri, engine="local")  # the before state
    before = open_store(uri).state()
    apps = _app_logs(cluster)
    process = driver(["ingest", "billing", str(month.directory), "--store", uri], cluster, tmp_path / "driver.log")
    try:
        running_task(cluster, apps)
    finally:
        _kill(process)  # the driver and its JVM, mid-job
    after = open_store(uri).state()
    assert (after.generation, after.files, after.manifest) == (before.generation, before.files, before.manifest)
    api.ingest_billing([month.directory], "aws-cur", uri, engine="local")  # the next ingest commits over the debris
    _same_billing(uri, month.store)
    assert open_store(uri).state().generation == before.generation + 1


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory, s3_server: str) -> Iterator[str]:  # noqa: F811
    """A Spark Connect server on 127.0.0.1 (its own ``local[2]``; its Python workers see the bucket's endpoint
    and credentials in its environment); its ``sc://`` URL."""
    server = start_connect_server(tmp_path_factory.mktemp("spark-connect"), cluster_env(s3_env(s3_server)))
    try:
        yield server.url
    finally:
        server.stop()


def test_spark_connect_ingests_into_a_bucket_store_as_the_local_engine_does(
    connect_server: str,
    month: Month,
    bucket: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    uri = f"s3://{bucket}/connect"
    args = ["ingest", "billing", str(month.directory), "--format", "aws-cur", "--store", uri]
    code, output = finops(args, connect_server, tmp_path / "client.log")
    assert code == 0, output[-3000:]
    _same_billing(uri, month.store)
    assert open_store(uri).state().generation == 1


def test_costs_waste_and_the_plans_baseline_on_the_cluster_answer_as_duckdb_over_the_bucket_store(
    cluster: StandaloneCluster,
    bucket_samples: Store,
    analyses_on_duckdb: dict[str, object],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The executors read the objects the store's log names, with their own credentials (the sample store holds
    an uncommitted upload too: see conftest.py)."""
    secret = "driver-secret-" + new_txid()  # this driver's; moto takes any
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    out = {name: tmp_path / f"{name}.json" for name in ANALYSES}
    commands = [[*args, "--store", bucket_samples.location, "--out", str(out[name])] for name, args in ANALYSES.items()]
    code, output = finops([json.dumps(commands)], cluster, tmp_path / "driver.log", SEVERAL)
    assert code == 0, output[-3000:]
    for name in ANALYSES:
        assert_same_json(analyses_on_duckdb[name], timeless(json.loads(out[name].read_text())), name)
    plan = json.loads(out["plan"].read_text())
    assert plan["totals"]["baseline_source"] == "billing" and plan["totals"]["baseline_cost"] > 0
    # the driver's credentials are in no log of the run (the executors have their own)
    logs = [tmp_path / "driver.log", *(p for w in cluster.workers for p in w.work_dir.rglob("std*"))]
    assert all(secret not in p.read_text(errors="replace") for p in logs)


#: the CLI as a driver that, at its commit, waits (at most five minutes) until every driver of the test is there:
#: two ingests then race for the same log generation, whatever their speeds (``argv[1]``: the meeting directory)
AT_THE_COMMIT = """
import os, sys, time
from pathlib import Path
from finops_cli.store.remote import ObjectStore
meeting, drivers, put = Path(sys.argv.pop(1)), int(sys.argv.pop(1)), ObjectStore._put_log
def _put_log(self, generation, body):
    (meeting / str(os.getpid())).touch()
    deadline = time.monotonic() + 300
    while len(list(meeting.iterdir())) < drivers and time.monotonic() < deadline:
        time.sleep(0.1)
    return put(self, generation, body)
ObjectStore._put_log = _put_log
from finops_cli.cli.app import main
main()
"""


def _money(paths: list[Path]) -> dict[str, float]:
    """The inputs' money per currency (Σ lineItem/UnblendedCost, the CUR's BilledCost)."""
    import pyarrow.csv as pacsv

    out: dict[str, float] = {}
    for path in paths:
        t = pacsv.read_csv(path).to_pydict()
        for currency, cost in zip(t["lineItem/CurrencyCode"], t["lineItem/UnblendedCost"], strict=True):
            out[currency] = out.get(currency, 0.0) + cost
    return out


def _manifest_money(uri: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for entry in open_store(uri).manifest():
        for currency, cost in entry.get("billed_cost", {}).items():
            out[currency] = out.get(currency, 0.0) + cost
    return out


def test_two_drivers_ingesting_into_one_bucket_store_one_commits_the_other_exits_2_and_nothing_is_lost(
    cluster: StandaloneCluster,
    bucket: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    parts = write_parts(tmp_path / "cur", rows_per_part=50, parts_per_export=1)
    inputs = {currency: [p for p in parts if payer in p.name] for payer, currency, _ in EXPORTS}
    uri = f"s3://{bucket}/race"
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    # one executor each (a worker apiece), so neither application waits for the other's cores
    env = {"PYSPARK_SUBMIT_ARGS": "--conf spark.cores.max=1 pyspark-shell"}
    processes = {
        name: driver(
            [str(meeting), "2", "ingest", "billing", *map(str, files), "--format", "aws-cur", "--store", uri],
            cluster,
            tmp_path / f"{name}.log",
            AT_THE_COMMIT,
            env,
        )
        for name, files in inputs.items()
    }
    try:
        codes = {name: p.wait(timeout=DRIVER_TIMEOUT) for name, p in processes.items()}
    finally:
        for p in processes.values():
            _kill(p)
    assert len(list(meeting.iterdir())) == 2  # both reached their commit: they raced
    assert sorted(codes.values()) == [0, 2], codes
    winner, loser = sorted(codes, key=codes.__getitem__)
    said = (tmp_path / f"{loser}.log").read_text(errors="replace")
    assert "another writer committed generation 1 while this one ran; nothing was committed" in said, said[-2000:]
    assert "Traceback" not in said
    # the store is the winner's ingest alone: its money per currency, and nothing of the loser's in the bucket
    store = open_store(uri)
    assert store.state().generation == 1
    assert _manifest_money(uri) == pytest.approx(_money(inputs[winner]), abs=0.005)
    named = {store.physical(rel, txid) for rel, txid in store.state().files.items()}
    assert {f"{bucket}/{k}" for k in _keys(bucket, "race/_txn/") if not k.endswith("/")} == named
    # the loser runs again and commits: both ingests are there, to the cent per currency
    api.ingest_billing(inputs[loser], "aws-cur", uri, engine="local")
    assert open_store(uri).state().generation == 2
    assert _manifest_money(uri) == pytest.approx(_money(parts), abs=0.005)
