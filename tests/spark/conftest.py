"""One local Spark session for every Spark test (starting a JVM costs seconds; the suite pays it once).

The tests of this directory share an xdist group (``pytestmark`` in each module, read by the scheduler in
tests/conftest.py), so under ``pytest -n 2`` they run in one worker and that worker starts one session:
``local[2]``, two shuffle partitions, no UI.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
def spark() -> Iterator[object]:
    from finops_cli.spark.session import get_session

    session = get_session("local[2]", conf=SPARK_CONF)
    yield session
    session.stop()
