"""GCP list prices: the Cloud Billing Catalog's ``list_skus`` on Compute Engine. GPU SKUs become per-GPU rows
(``gcp/gpu-h100-80gb/on_demand``); a machine type with its ``vcpus``, ``memory_gb`` and ``gpu_sku`` in
``instance_types.csv`` is priced as GPUs × GPU SKU + vCPUs × family core SKU + GiB × family RAM SKU
(``A3 Instance Core running in Americas``…), for on-demand and spot."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from finops_cli.adapters.gcp import catalog_client, list_skus, rate_per_hour
from finops_cli.catalog.fetchers.common import _row
from finops_cli.catalog.gpus import gcp_gpu_sku_facts, instance_types
from finops_cli.errors import InputError


def gcp_skus_to_frame(skus: Iterable[Any], regions: list[str] | None = None) -> pd.DataFrame:
    """GCP GPU SKUs (spot/preemptible and on-demand) → one row per SKU × service region, each a one-GPU
    "instance" ``gpu-<model>``; commitment SKUs are skipped, non-USD catalogs refused."""
    rows = []
    wanted = set(regions or [])
    for sku in skus:
        cat = sku.category
        if cat.resource_group != "GPU" and " GPU" not in sku.description:
            continue
        facts = gcp_gpu_sku_facts(sku.description)
        if facts is None or facts.pricing_category == "Committed":
            continue
        if cat.usage_type not in ("OnDemand", "Preemptible", ""):
            continue
        rate = rate_per_hour(sku)
        if rate is None:
            continue
        usd, currency, effective = rate
        if currency != "USD":
            raise InputError(f"Cloud Billing Catalog returned {currency} prices; only USD is supported")
        kind = "spot" if facts.pricing_category == "Dynamic" or cat.usage_type == "Preemptible" else "on_demand"
        m = re.search(r"nvidia\s+(?:tesla\s+)?(.+?)\s+gpu\b", sku.description, re.IGNORECASE)
        model = (m.group(1) if m else facts.accelerator).lower().replace(" ", "-")
        when = pd.Timestamp(effective) if effective else pd.Timestamp(datetime.now(UTC))
        when = when.tz_localize(UTC) if when.tzinfo is None else when.tz_convert(UTC)
        for region in sku.service_regions:
            if wanted and region not in wanted:
                continue
            rows.append(
                {
                    "provider": "gcp",
                    "timestamp": when,
                    "region": region,
                    "zone": None,
                    "instance_type": f"gpu-{model}",
                    "product_description": sku.description,
                    "price_kind": kind,
                    "usd_per_instance_hour": usd,
                    "gpus": 1,
                    "accelerator": facts.accelerator,
                    "source": "gcp-catalog",
                    "sku_id": sku.sku_id,
                }
            )
    return pd.DataFrame(rows)


_FAMILY_SKU = re.compile(
    r"^(?P<spot>(?:spot )?preemptible )?(?P<family>[a-z]\d+[a-z]?) instance (?P<what>core|ram) running in ",
    re.IGNORECASE,
)


def gcp_rows(skus: Iterable[Any], regions: list[str], fetched: datetime) -> list[dict[str, str]]:
    """Catalog SKUs → per-GPU rows (``gpu-h100-80gb``) and whole machine types, on-demand and spot, per region.

    A machine type is priced only where its GPU SKU and its family's core and RAM SKUs all serve the region;
    ``instance_types.csv`` gives its ``vcpus``, ``memory_gb`` and ``gpu_sku`` (the GPU SKU's description stem).
    """
    skus = list(skus)
    gpu = gcp_skus_to_frame(skus, regions)
    rows: list[dict[str, str]] = []
    gpu_price: dict[tuple[str, str, str], tuple[float, str]] = {}  # (description stem, term, region) → (usd, sku)
    for r in gpu.itertuples(index=False) if len(gpu) else []:
        term = "spot" if r.price_kind == "spot" else "on_demand"
        source = f"GCP Cloud Billing Catalog list_skus (Compute Engine sku {r.sku_id}: {r.product_description})"
        rows.append(
            _row("gcp", r.instance_type, term, r.region, r.usd_per_instance_hour, 1, r.accelerator, source, fetched)
        )
        stem = re.split(r"\s+(?:attached to|running in)\s+", r.product_description, maxsplit=1)[0].lower()
        gpu_price[(stem, term, r.region)] = (r.usd_per_instance_hour, r.sku_id)
    family: dict[tuple[str, str, str, str], tuple[float, str]] = {}  # (family, core|ram, term, region) → (usd, sku)
    for sku in skus:
        m = _FAMILY_SKU.match(sku.description or "")
        if m is None:
            continue
        what = m.group("what").lower()
        rate = rate_per_hour(sku, memory=what == "ram")
        if rate is None or rate[1] != "USD":
            continue
        term = "spot" if m.group("spot") else "on_demand"
        for region in sku.service_regions:
            if region in regions:
                family[(m.group("family").lower(), what, term, region)] = (rate[0], sku.sku_id)
    table = instance_types()
    machines = table[(table["provider"] == "gcp") & (table["kind"] == "instance")]
    for m in machines.itertuples(index=False):
        vcpus, memory, stem = (getattr(m, c, "") for c in ("vcpus", "memory_gb", "gpu_sku"))
        if not (vcpus and memory and stem):
            continue
        fam = m.instance_type.split("-")[0].lower()
        for term in ("on_demand", "spot"):
            for region in regions:
                g = gpu_price.get((stem.lower(), term, region))
                core, ram = family.get((fam, "core", term, region)), family.get((fam, "ram", term, region))
                if g is None or core is None or ram is None:
                    continue
                price = int(m.gpus) * g[0] + float(vcpus) * core[0] + float(memory) * ram[0]
                source = (
                    f"GCP Cloud Billing Catalog list_skus (Compute Engine skus {g[1]} × {m.gpus} GPU + {core[1]} × "
                    f"{vcpus} vCPU + {ram[1]} × {memory} GiB)"
                )
                rows.append(
                    _row("gcp", m.instance_type, term, region, price, int(m.gpus), m.accelerator, source, fetched)
                )
    return rows


def fetch_gcp(regions: list[str], fetched: datetime, *, transport: Any = None) -> list[dict[str, str]]:
    """Compute Engine's SKUs through ``CloudCatalogClient.list_skus`` (``transport``: the library's seam)."""
    return gcp_rows(list_skus(catalog_client(transport=transport)), regions, fetched)
