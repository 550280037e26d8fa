"""The catalog: list prices and GPU facts, read at run time from the pricebook, and the fetchers that refresh it.

* :mod:`~finops_cli.catalog.pricebook` — where the tables are (the shipped ``pricebooks/``, the user's overlay);
* :mod:`~finops_cli.catalog.prices` — list prices (``reference_prices.csv``);
* :mod:`~finops_cli.catalog.gpus` — GPUs and accelerator per instance type and GCP GPU SKU;
* :mod:`~finops_cli.catalog.fetchers` and :mod:`~finops_cli.catalog.refresh` — ``finops pricebook refresh``.

Ingest, the estate and the reports read from here; resolving a fleet's prices is the estate's
(:mod:`finops_cli.estate.prices`). The catalog imports only the package's utilities, the schema and the adapters.
"""
