"""One SparkSession for a command: the active one (spark-submit, Databricks), else one started here.

Why these settings: the store's partition values (``billing_period=2026-10``, ``month=2026-10``) are text
in every engine, so partition type inference is off; hours are UTC hours, so the session time zone is
UTC whatever the machine's; Arrow carries batches between the JVM and the Python workers.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

from finops_cli.errors import InputError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: ``--spark-master`` when none is given and no session is active: every core of this machine
DEFAULT_MASTER = "local[*]"
MASTER_ENV = "FINOPS_SPARK_MASTER"
INSTALL_HINT = "pip install 'gpu-fleet-finops[spark]'"

#: settings every finops session needs (see the module docstring)
CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
}


def require_pyspark() -> Any:
    """The ``pyspark`` module, or one line saying how to install it (exit 2)."""
    try:
        import pyspark
    except ImportError:
        raise InputError(f"--engine spark needs pyspark, which is not installed: {INSTALL_HINT}") from None
    return pyspark


def _java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return True
    return shutil.which("java") is not None


def get_session(master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """The active SparkSession, else a new one on ``master`` (``$FINOPS_SPARK_MASTER``, else ``local[*]``).

    Under spark-submit or on Databricks the session (and its master) already exists and is used as it is.
    """
    require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if "PYSPARK_GATEWAY_PORT" not in os.environ and not _java_available():
        raise InputError("--engine spark needs Java 17 or later: set JAVA_HOME or put java on the PATH")
    master = master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER
    builder = SparkSession.builder.appName("finops")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit, whose master wins
        builder = builder.master(master)
    if master.startswith("local"):
        # local workers run this interpreter (the one with finops installed), not whatever python3 is on PATH
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    for key, value in {**CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    try:
        return builder.getOrCreate()
    except Exception as exc:  # the JVM did not start (no Java, bad master URL): one line, not a Java trace
        raise InputError(f"cannot start Spark on {master!r}: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def task_error(exc: BaseException) -> InputError | None:
    """The user's error a Spark task raised (an :class:`InputError` in a Python worker), else None.

    Spark reports it as the worker's traceback text; its last ``InputError:`` line is the message.
    """
    text = str(exc)
    marker = "finops_cli.errors.InputError: "
    at = text.rfind(marker)
    if at < 0:
        return None
    return InputError(text[at + len(marker) :].splitlines()[0].strip())
