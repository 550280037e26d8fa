"""Ingest: streaming readers, one registry per kind of format, and the parsers that normalise exports for the store.

``readers`` (CSV / CSV.gz / Parquet / JSON Lines in record batches, file discovery, clean errors) and
``registry`` (names, aliases, header sniffers) are shared by billing, utilisation and spot-price ingest.
"""
