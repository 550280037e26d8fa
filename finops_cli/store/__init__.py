"""The Parquet store: Hive-partitioned datasets under one root, written atomically.

This is the only package that knows paths inside the store.
"""

from __future__ import annotations

import os

from finops_cli.store.layout import DATASETS
from finops_cli.store.store import Store, resolve_store_root, store_exists


def open_store(root: str | os.PathLike[str] | None = None) -> Store:
    """The store at ``root`` (as :func:`resolve_store_root` resolves it): a directory, or an ``s3://``/``gs://``
    prefix (:class:`~finops_cli.store.remote.ObjectStore`)."""
    from finops_cli.store.remote import ObjectStore
    from finops_cli.uri import as_uri

    uri = as_uri(root) if root else as_uri(os.environ.get("FINOPS_STORE") or None)
    if uri is not None:
        return ObjectStore.open(uri)
    return Store(resolve_store_root(root))


__all__ = ["DATASETS", "Store", "open_store", "resolve_store_root", "store_exists"]
