"""One SparkSession for a command (the active one under spark-submit or Databricks, else one started here), and
Spark tasks that run finops's own Python steps.
"""

from __future__ import annotations

import functools
import os
import pickle
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from finops_cli.errors import InputError
from finops_cli.store.remote import ObjectStore

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

T = TypeVar("T")
R = TypeVar("R")

#: ``--spark-master`` when none is given and no session is active: every core of this machine
DEFAULT_MASTER = "local[*]"
MASTER_ENV = "FINOPS_SPARK_MASTER"
#: a Spark Connect server (``sc://host:port``), as pyspark itself reads it; ``--spark-remote`` wins
REMOTE_ENV = "SPARK_REMOTE"
INSTALL_HINT = "pip install 'gpu-fleet-finops[spark]'"

#: partition values are text in every engine, hours are UTC hours, Arrow carries batches to the Python workers
CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    # a session finops starts ends with the command: nobody opens its web UI, and starting it costs seconds
    "spark.ui.enabled": "false",
}


def _java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return True
    return shutil.which("java") is not None


def get_session(master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """The active SparkSession, else a new one on ``master`` (``$FINOPS_SPARK_MASTER``, else ``local[*]``), or a
    Spark Connect session when ``master`` is ``sc://…`` (``--spark-remote``, or ``$SPARK_REMOTE`` without a master).

    Under spark-submit or on Databricks the session (and its master) already exists and is used as it is.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise InputError(f"spark needs pyspark, which is not installed: {INSTALL_HINT}", param="engine") from None

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    remote = master if master and master.startswith("sc://") else None if master else os.environ.get(REMOTE_ENV)
    if remote:
        return _connect(remote, conf)
    if "PYSPARK_GATEWAY_PORT" not in os.environ and not _java_available():
        raise InputError("spark needs Java 17 or later: set JAVA_HOME or put java on the PATH", param="engine")
    master = master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER
    builder = SparkSession.builder.appName("finops")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit, whose master wins
        builder = builder.master(master)
    if master.startswith("local"):
        # local workers run this interpreter (the one with finops installed), not whatever python3 is on PATH
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # pyspark warns about pandas 3 on every import; finops passes Arrow, not pandas, between the engines
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    for key, value in {**CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    try:
        return builder.getOrCreate()
    except Exception as exc:  # the JVM did not start (no Java, bad master URL): one line, not a Java trace
        raise InputError(f"cannot start Spark on {master!r}: {_first_line(exc)}") from None


def _connect(remote: str, conf: dict[str, str] | None) -> SparkSession:
    """A Spark Connect session on ``remote`` (``sc://host:port``; Databricks Connect speaks the same protocol):
    no JVM here; the tasks run in the server's executors, which need finops installed as on any cluster."""
    from pyspark.sql import SparkSession

    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    try:
        spark = SparkSession.builder.remote(remote).getOrCreate()
        for key, value in {**CONF, **(conf or {})}.items():
            if key.startswith("spark.sql."):  # the server's static settings (UI, memory) are the server's
                spark.conf.set(key, value)
    except ImportError as exc:  # grpcio, zstandard…: pyspark's connect extra
        raise InputError(
            f"spark connect needs {exc.name or exc}: pip install 'pyspark[connect]'", param="engine"
        ) from None
    except Exception as exc:
        raise InputError(f"cannot reach Spark Connect at {remote!r}: {_first_line(exc)}", param="engine") from None
    return spark


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def task_error(exc: BaseException) -> InputError | None:
    """The user's error a Spark task raised, else None: the last ``InputError:`` line of the worker's traceback."""
    text = str(exc)
    marker = "finops_cli.errors.InputError: "
    at = text.rfind(marker)
    if at < 0:
        return None
    return InputError(text[at + len(marker) :].splitlines()[0].strip())


def run_tasks(spark: SparkSession, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(item) for item in items]``, one Spark task per item; a user's error in a task is re-raised as its line.

    Items and results (small: file names, tallies) travel pickled through ``spark.range(…).mapInArrow``: no RDD
    API, so it also runs where only the DataFrame API is allowed (Spark Connect, shared Databricks clusters).
    """
    if not items:
        return []
    n = len(items)
    df = spark.range(0, n, 1, n).mapInArrow(functools.partial(_task, fn, list(items)), "id long, payload binary")
    try:
        rows = df.collect()
    except Exception as exc:
        err = task_error(exc)
        if err is None:
            raise
        raise err from None
    return [pickle.loads(r["payload"]) for r in sorted(rows, key=lambda r: r["id"])]


def _task(fn: Callable[[Any], Any], items: list[Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """On an executor: the items this partition names (one, by construction), each result pickled."""
    import pyarrow as pa

    for batch in batches:
        ids = batch.column(0).to_pylist()
        out = [pickle.dumps(fn(items[i])) for i in ids]
        yield pa.RecordBatch.from_arrays([pa.array(ids, pa.int64()), pa.array(out, pa.binary())], ["id", "payload"])


def shares_disk(spark: SparkSession) -> bool:
    """Whether the tasks run on this machine, beside the driver (a local master, not through Spark Connect)."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return False
    return str(spark.conf.get("spark.master", "")).startswith("local")


def writes_bucket(spark: SparkSession, tx: Any) -> bool:
    """Whether the tasks upload into the bucket store themselves (:mod:`finops_cli.spark.bucket`): a bucket store
    whose transaction stages on this machine's disk, which a cluster's executors cannot write."""
    return isinstance(tx.store, ObjectStore) and not shares_disk(spark)
