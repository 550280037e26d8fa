"""The Parquet store: Hive-partitioned datasets under one root, written atomically.

This is the only package that knows paths inside the store.
"""

from finops_cli.store.store import DATASETS, Store, open_store, resolve_store_root, store_exists

__all__ = ["DATASETS", "Store", "open_store", "resolve_store_root", "store_exists"]
