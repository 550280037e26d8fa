"""One local Spark session for every Spark test (starting a JVM costs seconds; the suite pays it once).

The tests of this directory share an xdist group (``pytestmark`` in each module, read by the scheduler in
tests/conftest.py), so under ``pytest -n 2`` they run in one worker and that worker starts one session:
``local[2]``, two shuffle partitions, no UI.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.store import Store, open_store
from finops_cli.store.layout import new_txid
from tests.spark.analyses import ANALYSES, ingest_samples, timeless
from tests.spark.cluster import StandaloneCluster, cluster_env
from tests.store.test_object_store import _new_bucket, _s3_env, s3_server  # noqa: F401  (a fixture)

SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
    "spark.sql.adaptive.enabled": "false",
    # test data is tiny: compiling generated code and the JVM's optimising JIT cost more than they save
    "spark.sql.codegen.wholeStage": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


@pytest.fixture(scope="session")
def spark(s3_server: str) -> Iterator[object]:  # noqa: F811
    """``local[2]``; its Python workers take the moto server's endpoint and test credentials from the session's
    ``spark.executorEnv.*`` (a bucket store's views are read there), as a cluster's executors from their own."""
    from finops_cli.spark.session import get_session

    executor_env = {f"spark.executorEnv.{k}": v for k, v in s3_env(s3_server).items()}
    session = get_session("local[2]", conf={**SPARK_CONF, **executor_env})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory, s3_server: str) -> Iterator[StandaloneCluster]:  # noqa: F811
    """A standalone master and two 1-core workers on 127.0.0.1 for every cluster test (stopped even when a test
    fails). The workers' environment, inherited by their executors, holds the moto server's endpoint and
    credentials: tasks find them there, never in what the driver ships."""
    running = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), cluster_env(s3_env(s3_server)))
    try:
        yield running.start()
    finally:
        running.stop()


def s3_env(endpoint: str) -> dict[str, str]:
    """The moto server's endpoint and test credentials, for processes the tests start (nothing from ~/.aws)."""
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/nonexistent/finops-test-aws-config",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/finops-test-aws-credentials",
        "FINOPS_S3_ENDPOINT": endpoint,
    }


@pytest.fixture(scope="session")
def sample_bucket(s3_server: str) -> str:  # noqa: F811
    """The samples in a bucket store, ingested once by the local engine, with an upload no commit names (a running
    or killed writer's copy of a committed billing file, under ``_txn/``: a reader that listed the prefix would
    count it twice); its URI. Tests read it through :func:`bucket_samples`."""
    with pytest.MonkeyPatch.context() as mp:
        _s3_env(mp, s3_server)
        uri = f"s3://{_new_bucket(s3_server)}/samples"
        ingest_samples(uri)
        store = open_store(uri)
        committed = next(p for p in store.files("billing") if "provider=aws" in str(p))
        txid = store.state().files[str(committed.relative_to(store.root))]
        store.filesystem.copy_file(store.locate(committed), store.locate(committed).replace(txid, new_txid()))
    return uri


@pytest.fixture
def bucket_samples(sample_bucket: str, s3_server: str, monkeypatch: pytest.MonkeyPatch) -> Store:  # noqa: F811
    """:func:`sample_bucket` opened, the S3 server's endpoint and test credentials in the environment."""
    _s3_env(monkeypatch, s3_server)
    return open_store(sample_bucket)


@pytest.fixture(scope="session")
def analyses_on_duckdb(sample_bucket: str, s3_server: str) -> dict[str, object]:  # noqa: F811
    """Each of :data:`~tests.spark.analyses.ANALYSES` over :func:`sample_bucket` on the local engine (DuckDB), as
    JSON without timings: what Spark must answer, on ``local[2]`` and on the cluster."""
    answers = {}
    with pytest.MonkeyPatch.context() as mp:
        _s3_env(mp, s3_server)
        for name, args in ANALYSES.items():
            result = CliRunner().invoke(app, [*args, "--store", sample_bucket])
            assert result.exit_code == 0, result.output
            answers[name] = timeless(json.loads(result.stdout))
    return answers
