"""Streaming readers shared by every ingest: CSV / CSV.gz, Parquet and JSON Lines, in record batches.

Why streaming with an explicit schema: whole-file readers grow ~1 GB per million CUR rows, and type
inference on the first block turns 12-digit account ids into integers (and breaks later blocks whose
values do not fit the guess). So every column is read as a string unless the caller names its type
(costs, quantities), and only the columns the caller asks for are decoded.

Every failure a user can cause (missing file, empty file, truncated gzip, bad encoding, a value that is
not a number, a malformed row) becomes one :class:`~finops_cli.errors.InputError` naming the file and
the row and/or column.

One module per role: :mod:`.common` (file names, discovery, batch type, limits), :mod:`.stream` (the
header and batch entry points, which pick the format), :mod:`.csv`, :mod:`.parquet`, :mod:`.jsonl` (one
per format) and :mod:`.values` (timestamp and number parsing shared by the format parsers).
"""
