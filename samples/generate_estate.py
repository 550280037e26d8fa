"""Write the hourly demand profiles of Kestrel AI's serving workloads (``samples/demand/*.csv``).

``fleet.yaml`` and ``workloads.yaml`` are hand-written (they carry comments); this script makes the
profiles they point to, sized from the October 2026 billing in ``company.py`` (busy GPU-hours ×
throughput) and shaped by time of day, weekday and a few events. Rerunnable:

    python samples/generate_estate.py --seed 7
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

try:
    from samples.company import MONTH_HOURS, MONTH_START, RESOURCES
except ImportError:  # run as a script from samples/
    from company import MONTH_HOURS, MONTH_START, RESOURCES  # type: ignore[no-redef]

OUT = Path(__file__).resolve().parent / "demand"


def busy_gpu_hours(workload: str) -> float:
    """Σ gpus × hours × mean utilisation of the resources billed to ``workload`` in October."""
    return sum(r.gpus * (r.last_hour - r.first_hour) * r.mean_utilization for r in RESOURCES if r.workload == workload)


def _shape(rng: np.random.Generator, peak_hour_utc: float, day_amp: float, weekend: float, noise: float) -> np.ndarray:
    ts = pd.date_range(MONTH_START, periods=MONTH_HOURS, freq="h")
    hour = ts.hour.to_numpy()
    diurnal = 1 + day_amp * np.cos(2 * np.pi * (hour - peak_hour_utc) / 24)
    weekday = np.where(ts.day_of_week.to_numpy() >= 5, weekend, 1.0)
    return np.clip(diurnal * weekday * rng.lognormal(0, noise, MONTH_HOURS), 0, None)


def profiles(seed: int) -> dict[str, np.ndarray]:
    """Units per hour for each profile workload (index = hour of October 2026)."""
    rng = np.random.default_rng(seed)
    ts = pd.date_range(MONTH_START, periods=MONTH_HOURS, freq="h")
    growth = np.linspace(0.93, 1.07, MONTH_HOURS)  # usage grows ~14 % over the month

    chat = _shape(rng, 18, 0.55, 0.8, 0.06) * growth
    chat *= busy_gpu_hours("chat-serving") * 40.0 / chat.sum()  # H100: 40 Mtokens per GPU-hour

    image = _shape(rng, 20, 0.7, 1.15, 0.12)
    launch = ((ts.day == 14) | (ts.day == 27)) & (ts.hour >= 15)
    image[launch] *= 2.6  # two product launches: evening spikes beyond the L4 pool
    image *= busy_gpu_hours("image-gen") * 0.6 / image.sum()  # L4: 0.6 kimages per GPU-hour

    business_eu = (ts.hour >= 7) & (ts.hour < 18) & (ts.day_of_week < 5)
    rag = np.where(business_eu, 2.4, 0.45) * rng.lognormal(0, 0.08, MONTH_HOURS)
    rag *= busy_gpu_hours("rag-serving-eu") * 30.0 / rag.sum()  # H100: 30 Mtokens per GPU-hour

    business_us = (ts.hour >= 14) & (ts.day_of_week < 5)
    notebooks = np.where(business_us, rng.integers(2, 9, MONTH_HOURS), rng.integers(0, 2, MONTH_HOURS)).astype(float)
    notebooks *= busy_gpu_hours("research-notebooks") / notebooks.sum()  # h100_hours

    return {"chat_serving": chat, "image_gen": image, "rag_serving_eu": rag, "research_notebooks": notebooks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ts = pd.date_range(MONTH_START, periods=MONTH_HOURS, freq="h").strftime("%Y-%m-%dT%H:%M:%SZ")
    for name, units in profiles(args.seed).items():
        frame = pd.DataFrame({"hour": ts, "units": np.round(units, 3)})
        frame.to_csv(args.out / f"{name}.csv", index=False)
        print(f"{name}: total {units.sum():,.0f}, mean {units.mean():,.2f}, peak {units.max():,.2f} units/hour")


if __name__ == "__main__":
    main()
