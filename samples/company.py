"""Kestrel AI, the fictional company behind ``samples/``: one source of truth for every generator.

Billing (``generate_billing.py``), utilisation traces and spot prices (``generate_traces.py``) and the
estate files (``fleet.yaml``, ``workloads.yaml``) all describe these resources, so ingesting the
samples and planning with the sample estate line up: a billing line's provider, region, instance type
and pricing category identify the substrate; its ResourceId identifies the device in the traces.

The sample month is October 2026 (744 hours, UTC).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

MONTH = "2026-10"
MONTH_START = datetime(2026, 10, 1, tzinfo=UTC)
MONTH_HOURS = 744
COMPANY = "Kestrel AI"


@dataclass(frozen=True)
class Resource:
    """One billed machine (an instance, a node, a reserved node) and who used it."""

    resource_id: str
    substrate: str  # id in samples/fleet.yaml
    provider: str  # store partition value: aws | gcp | azure | coreweave | onprem
    pricing: str  # FOCUS PricingCategory: Standard | Dynamic | Committed | Other
    instance_type: str
    region: str
    gpus: int
    accelerator: str
    usd_per_instance_hour: float  # what the bill charges (effective) per instance-hour
    team: str
    workload: str
    first_hour: int  # running from this hour of the month ...
    last_hour: int  # ... to this one (exclusive)
    mean_utilization: float  # 0-1 GPU busy fraction the traces should show


def _r(*args: object) -> Resource:
    return Resource(*args)  # type: ignore[arg-type]


H = MONTH_HOURS
RESOURCES: list[Resource] = [
    # on-prem HGX H100 nodes (owned; a FOCUS chargeback file prices power + ops)
    *[
        _r(
            f"onprem-hgx-{i:02d}",
            "onprem-h100",
            "onprem",
            "Other",
            "hgx-h100-8",
            "us-east",
            8,
            "H100",
            2.8,
            "research",
            "pretrain-70b",
            0,
            H,
            0.62 if i < 6 else 0.18,
        )
        for i in range(8)
    ],
    *[
        _r(
            f"onprem-dgx-a100-{i:02d}",
            "onprem-a100-eu",
            "onprem",
            "Other",
            "dgx-a100-8",
            "eu-west",
            8,
            "A100",
            2.4,
            "applied-eu",
            "finetune-eu",
            0,
            H,
            0.41,
        )
        for i in range(4)
    ],
    # CoreWeave-style reserved block: 8 nodes x 8 H100, paid whether used or not
    *[
        _r(
            f"cw-node-{i:02d}",
            "cw-reserved-h100",
            "coreweave",
            "Committed",
            "gd-8xh100ib-i128",
            "us-east-04",
            8,
            "H100",
            16.8,
            "research" if i < 5 else "platform",
            "eval-sweeps" if i >= 5 else "pretrain-70b",
            0,
            H,
            0.71 if i < 5 else 0.22,
        )
        for i in range(8)
    ],
    # AWS p5 on-demand (us-east-1), p5 spot, p4d on-demand and spot (us-west-2), g6 for serving
    _r(
        "i-0a1b2c3d4e5f60001",
        "aws-p5-od-use1",
        "aws",
        "Standard",
        "p5.48xlarge",
        "us-east-1",
        8,
        "H100",
        55.04,
        "product",
        "chat-serving",
        0,
        H,
        0.47,
    ),
    _r(
        "i-0a1b2c3d4e5f60002",
        "aws-p5-od-use1",
        "aws",
        "Standard",
        "p5.48xlarge",
        "us-east-1",
        8,
        "H100",
        55.04,
        "product",
        "chat-serving",
        240,
        H,
        0.33,
    ),
    *[
        _r(
            f"i-0b1b2c3d4e5f6{i:04d}",
            "aws-p5-spot-use1",
            "aws",
            "Dynamic",
            "p5.48xlarge",
            "us-east-1",
            8,
            "H100",
            31.2,
            "research",
            "pretrain-70b",
            24 * i,
            H - 24 * i,
            0.83,
        )
        for i in range(4)
    ],
    *[
        _r(
            f"i-0c1b2c3d4e5f6{i:04d}",
            "aws-p4d-od-usw2",
            "aws",
            "Standard",
            "p4d.24xlarge",
            "us-west-2",
            8,
            "A100",
            21.96,
            "data",
            "batch-embeddings",
            0,
            H,
            0.29,
        )
        for i in range(2)
    ],
    *[
        _r(
            f"i-0d1b2c3d4e5f6{i:04d}",
            "aws-p4d-spot-usw2",
            "aws",
            "Dynamic",
            "p4d.24xlarge",
            "us-west-2",
            8,
            "A100",
            9.2,
            "research",
            "eval-sweeps",
            100 * i,
            H,
            0.66,
        )
        for i in range(2)
    ],
    *[
        _r(
            f"i-0e1b2c3d4e5f6{i:04d}",
            "aws-g6-od-use1",
            "aws",
            "Standard",
            "g6.12xlarge",
            "us-east-1",
            4,
            "L4",
            4.6016,
            "product",
            "image-gen",
            0,
            H,
            0.38,
        )
        for i in range(2)
    ],
    # GCP a3 spot and on-demand in europe-west4 (EU residency)
    *[
        _r(
            f"projects/kestrel-eu/zones/europe-west4-b/instances/a3-spot-{i}",
            "gcp-a3-spot-euw4",
            "gcp",
            "Dynamic",
            "a3-highgpu-8g",
            "europe-west4",
            8,
            "H100",
            28.4,
            "applied-eu",
            "finetune-eu",
            48 * i,
            H,
            0.74,
        )
        for i in range(2)
    ],
    _r(
        "projects/kestrel-eu/zones/europe-west4-b/instances/a3-od-0",
        "gcp-a3-od-euw4",
        "gcp",
        "Standard",
        "a3-highgpu-8g",
        "europe-west4",
        8,
        "H100",
        88.25,
        "applied-eu",
        "rag-serving-eu",
        0,
        H,
        0.36,
    ),
    # Azure ND H100 v5 (eastus), on-demand
    _r(
        "/subscriptions/5f1c0e2a-0000-4b1e-9c55-0d6a6f1e2b01/resourceGroups/ml/providers/Microsoft.Compute/"
        "virtualMachines/nd-h100-0",
        "azure-nd-h100-eus",
        "azure",
        "Standard",
        "Standard_ND96isr_H100_v5",
        "eastus",
        8,
        "H100",
        98.32,
        "platform",
        "research-notebooks",
        0,
        H,
        0.12,
    ),
]
