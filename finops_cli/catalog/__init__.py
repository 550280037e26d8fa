"""The catalog: list prices and GPU facts read at run time from the pricebook, and the fetchers that refresh it.

Ingest, the estate and the reports read from here; resolving a fleet's prices is the estate's."""
