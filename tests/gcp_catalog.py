"""A fake Cloud Billing Catalog behind google-cloud-billing's own transport seam (``CloudCatalogTransport``):
the real ``CloudCatalogClient`` and its pager run; only the wire is replaced by pages held in memory."""

from __future__ import annotations

from datetime import UTC, datetime

from google.auth.credentials import AnonymousCredentials
from google.cloud.billing_v1.services.cloud_catalog.transports.base import CloudCatalogTransport
from google.cloud.billing_v1.types import cloud_catalog
from google.type import money_pb2


def gcp_sku(
    sku_id: str,
    description: str,
    usage_type: str,
    regions: list[str],
    units: int,
    nanos: int,
    *,
    group: str = "GPU",
    usage_unit: str = "h",
    currency: str = "USD",
) -> cloud_catalog.Sku:
    """A Compute Engine SKU as the Catalog API returns it: base tier ``units + nanos·1e-9`` per ``usage_unit``."""
    return cloud_catalog.Sku(
        name=f"services/6F81-5844-456A/skus/{sku_id}",
        sku_id=sku_id,
        description=description,
        category=cloud_catalog.Category(
            service_display_name="Compute Engine",
            resource_family="Compute",
            resource_group=group,
            usage_type=usage_type,
        ),
        service_regions=regions,
        pricing_info=[
            cloud_catalog.PricingInfo(
                pricing_expression=cloud_catalog.PricingExpression(
                    usage_unit=usage_unit,
                    tiered_rates=[
                        cloud_catalog.PricingExpression.TierRate(
                            start_usage_amount=0,
                            unit_price=money_pb2.Money(currency_code=currency, units=units, nanos=nanos),
                        )
                    ],
                ),
                effective_time=datetime(2026, 10, 5, tzinfo=UTC),
            )
        ],
    )


class FakeCatalogTransport(CloudCatalogTransport):
    """The library's transport seam: answers ``list_skus`` from pages in memory, like the service."""

    def __init__(self, pages: list[list[cloud_catalog.Sku]], fail_with: Exception | None = None) -> None:
        super().__init__(credentials=AnonymousCredentials())
        self.pages = pages
        self.fail_with = fail_with
        self.requests: list[cloud_catalog.ListSkusRequest] = []
        self._prep_wrapped_messages(None)

    def _list_skus(self, request: cloud_catalog.ListSkusRequest, **_: object) -> cloud_catalog.ListSkusResponse:
        self.requests.append(request)
        if self.fail_with is not None:
            raise self.fail_with
        i = int(request.page_token or 0)
        token = str(i + 1) if i + 1 < len(self.pages) else ""
        return cloud_catalog.ListSkusResponse(skus=self.pages[i], next_page_token=token)

    def _list_services(self, request: object, **_: object) -> cloud_catalog.ListServicesResponse:
        return cloud_catalog.ListServicesResponse(services=[])

    @property
    def list_skus(self):
        return self._list_skus

    @property
    def list_services(self):
        return self._list_services

    def close(self) -> None:
        pass
