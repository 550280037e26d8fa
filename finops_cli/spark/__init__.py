"""The Spark engine: the same ingest code and store SQL, run by Apache Spark (``--engine spark``).

Nothing here re-implements a step. :mod:`finops_cli.spark.billing` runs the billing pipeline's own
per-file conversion and per-key writes as Spark tasks; :mod:`finops_cli.spark.sql` runs the SQL text of
:mod:`finops_cli.store.queries` on Spark SQL after sqlglot translates it from DuckDB's dialect. The store,
its transaction and its commit stay on the driver. ``pyspark`` is an optional extra
(``pip install 'gpu-fleet-finops[spark]'``); without it, or without Java, ``--engine spark`` says so in one
line (exit 2).
"""

from __future__ import annotations
