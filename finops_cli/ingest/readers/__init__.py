"""Streaming readers shared by every ingest: CSV / CSV.gz, Parquet and JSON Lines, in record batches.

Streaming with an explicit schema: whole-file readers grow ~1 GB per million CUR rows, and type inference turns
12-digit account ids into integers. Every failure a user can cause is one InputError naming file and row.
"""
