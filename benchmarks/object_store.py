"""Object-store benchmark: the sample estate ingested and read on local disk vs. an S3 server (moto, 127.0.0.1).

Usage::

    python benchmarks/object_store.py               # 3 interleaved rounds
    python benchmarks/object_store.py --rounds 5

Each round ingests the bundled billing exports and utilisation traces into a fresh local store and a fresh
``s3://`` store (moto's server mode: real HTTP through pyarrow's S3 client and boto3, no network latency),
then runs ``waste`` and ``costs --by team`` on each (and ingests the billing exports from ``s3://`` into a
local store), and prints the median wall seconds per step. moto
is an in-process server with no network latency, so the figures show finops' own overhead on a bucket
(uploads, the commit PUT, reading through pyarrow datasets), not a real bucket's latency. Quote them
with the machine's load (printed).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from results import add_json_option, write_json

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def _timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    add_json_option(ap)
    args = ap.parse_args()

    import boto3
    from moto.server import ThreadedMotoServer

    from finops_cli import api
    from finops_cli.store import Store, open_store

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
        FINOPS_S3_ENDPOINT=endpoint,
    )
    bucket = f"finops-bench-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
    billing = sorted((SAMPLES / "billing").iterdir())
    utilization = sorted((SAMPLES / "utilization").iterdir())
    client = boto3.client("s3", endpoint_url=endpoint)
    for f in billing:
        client.upload_file(str(f), bucket, f"exports/billing/{f.name}")
    times: dict[str, list[float]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                for where in ("local", "s3"):
                    st = Store(Path(tmp) / f"store-{r}") if where == "local" else open_store(f"s3://{bucket}/s{r}")
                    steps = {
                        "ingest billing": lambda st=st: api.ingest_billing(billing, store=st),
                        "ingest utilization": lambda st=st: api.ingest_utilization(utilization, store=st),
                        "waste": lambda st=st: api.waste(store=open_store(st.location)),
                        "costs --by team": lambda st=st: api.costs(store=open_store(st.location), by=["team"]),
                    }
                    for name, fn in steps.items():
                        times.setdefault(f"{name} [{where}]", []).append(_timed(fn))
                st = Store(Path(tmp) / f"from-s3-{r}")
                inputs = [f"s3://{bucket}/exports/billing/"]
                times.setdefault("ingest billing from s3:// [local]", []).append(
                    _timed(lambda st=st, inputs=inputs: api.ingest_billing(inputs, store=st))
                )
    finally:
        server.stop()
    print(f"sample estate, {args.rounds} interleaved rounds, median wall seconds (load: {os.getloadavg()[0]:.1f})")
    for name, values in times.items():
        print(f"  {name:32s} {statistics.median(values):7.2f}  (min {min(values):.2f}, max {max(values):.2f})")
    write_json(args.json, "object_store", [{"step": k, "median_s": statistics.median(v)} for k, v in times.items()])


if __name__ == "__main__":
    main()
