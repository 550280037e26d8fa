"""The Spark engine (``--engine spark``): the same ingest steps as Spark tasks and the same store SQL on Spark SQL;
the store, its transaction and its commit stay on the driver. ``pyspark`` is an optional extra.
"""

from __future__ import annotations
