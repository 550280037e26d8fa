"""One fetcher per provider (SkyPilot's ``data_fetchers``): each turns its price API's answer into pricebook rows
(the columns of :data:`~finops_cli.catalog.pricebook.REF_COLUMNS` plus ``fetched_at``) through
:func:`~finops_cli.catalog.fetchers.common._row`; the SDKs themselves are reached only through
:mod:`finops_cli.adapters`. :mod:`finops_cli.catalog.refresh` runs them and writes the user pricebook."""
