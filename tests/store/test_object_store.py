"""The store and ingest inputs in a bucket, against a real S3 server (moto's server mode on 127.0.0.1).

Everything goes over HTTP through pyarrow's S3 client and boto3, as against AWS: the sample estate ingested
into ``s3://…`` answers waste, costs and plan exactly as the same estate on disk; exports are read from
``s3://`` objects and prefixes; an ingest that dies before its commit PUT, or fails, leaves nothing a reader
can see; two writers racing for one generation cannot both commit; a bad URI, a missing bucket or absent
credentials is one line and exit 2. GCS is tested only where no network is needed (URI parsing, errors).
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.errors import InputError
from finops_cli.store import DATASETS, Store, open_store
from finops_cli.store import remote as remote_mod
from finops_cli.store.remote import ObjectStore
from finops_cli.uri import Location, as_uri, open_uri, split_uri
from tests.conftest import SAMPLES

CENT = 0.005


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """A moto S3 server on a free port of 127.0.0.1 for the whole session (about a second to start)."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _s3_env(mp: pytest.MonkeyPatch, endpoint: str) -> None:
    """Credentials and the endpoint in the environment; nothing from the developer's ~/.aws or AWS_*."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN"):
        mp.delenv(name, raising=False)
    mp.setenv("AWS_ACCESS_KEY_ID", "testing")
    mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
    mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
    mp.setenv("AWS_CONFIG_FILE", "/nonexistent/finops-test-aws-config")
    mp.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/finops-test-aws-credentials")
    mp.setenv("FINOPS_S3_ENDPOINT", endpoint)


def _new_bucket(endpoint: str) -> str:
    name = f"finops-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=name)
    return name


@pytest.fixture
def bucket(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket on the moto server, with credentials and the endpoint in the environment."""
    _s3_env(monkeypatch, s3_server)
    return _new_bucket(s3_server)


def _keys(bucket: str, prefix: str = "") -> list[str]:
    client = boto3.client("s3", endpoint_url=api_endpoint())
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def api_endpoint() -> str:
    import os

    return os.environ["FINOPS_S3_ENDPOINT"]


def _ingest_samples(store: Store | str) -> None:
    """The sample estate as ``finops demo`` ingests it: billing, utilisation, spot prices."""
    api.ingest_billing(sorted((SAMPLES / "billing").iterdir()), store=store)
    api.ingest_utilization(sorted((SAMPLES / "utilization").iterdir()), store=store)
    api.ingest_spot_prices(store=store, files=sorted((SAMPLES / "spot_prices").iterdir()))


@pytest.fixture(scope="module")
def local_samples(sample_ingested: Store, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The sample estate on disk as :func:`_ingest_samples` builds it: a copy of the session's billing and
    utilisation store (tests/store/conftest.py, built anyway for this module) plus the spot prices."""
    st = Store(tmp_path_factory.mktemp("local-samples") / ".finops")
    shutil.copytree(sample_ingested.root, st.root)
    api.ingest_spot_prices(store=st, files=sorted((SAMPLES / "spot_prices").iterdir()))
    return st


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=CENT)


#: keys that differ between two runs of one command whatever the store (clocks, where the store is)
_VARYING = {"generated_at", "created_at", "store"}


def _same(a: object, b: object, where: str = "") -> None:
    """``a`` equals ``b``, floats to the cent (and 1e-9 relative), ignoring :data:`_VARYING` keys."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            if k not in _VARYING and not k.endswith("seconds"):
                _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert _close(a, b) or (math.isnan(a) and math.isnan(b)), f"{where}: {a} != {b}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


@pytest.fixture(scope="module")
def s3_samples(s3_server: str) -> Iterator[ObjectStore]:
    """The sample estate ingested into a bucket once (read-only: tests that write use :func:`small`)."""
    with pytest.MonkeyPatch.context() as mp:
        _s3_env(mp, s3_server)
        st = open_store(f"s3://{_new_bucket(s3_server)}/finops")
        assert isinstance(st, ObjectStore)
        _ingest_samples(st)
        yield st


@pytest.fixture
def small(bucket: str) -> ObjectStore:
    """A bucket store holding one FOCUS export and the sample utilisation (fast to build, written by tests)."""
    st = open_store(f"s3://{bucket}/finops")
    assert isinstance(st, ObjectStore)
    api.ingest_billing([SAMPLES / "billing" / "focus-2026-10.csv"], store=st)
    api.ingest_utilization([SAMPLES / "utilization" / "gpu_util_hourly.csv.gz"], store=st)
    return st


def test_sample_estate_in_a_bucket_answers_like_on_disk(s3_samples: ObjectStore, local_samples: Store) -> None:
    local, s3 = local_samples, open_store(s3_samples.location)  # a fresh reader: only what was committed

    # the same sources, rows and money per currency
    def sources(st: Store) -> list[tuple]:
        keys = [e["source_key"] if e["dataset"] != "spot_prices" else "spot" for e in st.manifest()]
        return sorted(
            (k, e.get("rows"), json.dumps(e.get("billed_cost"))) for k, e in zip(keys, st.manifest(), strict=True)
        )

    assert sources(s3) == sources(local)
    assert [p.relative_to(s3.root) for p in s3.files("billing")] == [
        p.relative_to(local.root) for p in local.files("billing")
    ]
    assert s3.has_aggregate("billing") and s3.has_aggregate("utilization")

    for by in ("team", "instance_type"):
        _same(api.waste(store=local, by=by).to_dict(), api.waste(store=s3, by=by).to_dict())
    _same(api.costs(store=local, by=["team"]).as_json(), api.costs(store=s3, by=["team"]).as_json())
    est = api.estate(SAMPLES / "fleet.yaml", SAMPLES / "workloads.yaml")
    as_of = datetime(2026, 11, 1, tzinfo=UTC)  # the same instant for both: a plan records it
    plans = [api.plan(est, st, horizon="2026-10", as_of=as_of).document.model_dump(mode="json") for st in (local, s3)]
    _same(*plans)

    check = api.store_check(s3)
    assert check.ok, check.problems
    assert check.files == sum(len(local.files(d)) for d in DATASETS)


def test_inputs_read_from_s3_objects_and_prefixes(bucket: str, sample_ingested: Store, tmp_path: Path) -> None:
    client = boto3.client("s3", endpoint_url=api_endpoint())
    for f in sorted((SAMPLES / "billing").iterdir()):
        client.upload_file(str(f), bucket, f"exports/billing/{f.name}")
    for f in sorted((SAMPLES / "utilization").rglob("*")):
        if f.is_file():
            client.upload_file(str(f), bucket, f"exports/utilization/{f.relative_to(SAMPLES / 'utilization')}")

    # a prefix of exports into a local store; an object and a prefix into a bucket store
    local = Store(tmp_path / "store")
    summary = api.ingest_billing([f"s3://{bucket}/exports/billing"], store=local)
    assert all(f.path.startswith(f"s3://{bucket}/exports/billing/") for f in summary.files)
    util = api.ingest_utilization([f"s3://{bucket}/exports/utilization/"], store=local)
    assert {s.source.split("/exports/")[0] for s in util.sources} == {f"s3://{bucket}"}
    assert sorted(e["source_key"] for e in local.manifest()) == sorted(
        e["source_key"] for e in sample_ingested.manifest()
    )  # content keys: the same files from a bucket are the same sources
    recorded = [f for e in local.manifest() if e["dataset"] == "billing" for f in e["files"]]
    assert recorded and all(f.startswith(f"s3://{bucket}/exports/billing/") for f in recorded)
    assert not list(tmp_path.glob("finops-inputs-*"))

    _same(api.waste(store=local).to_dict(), api.waste(store=sample_ingested).to_dict())

    one = f"s3://{bucket}/exports/billing/focus-2026-10.csv"
    s3 = open_store(f"s3://{bucket}/store2")
    summary = api.ingest_billing([one], store=s3)
    assert [f.path for f in summary.files] == [one]
    assert open_store(f"s3://{bucket}/store2").manifest()[0]["files"] == [one]


def test_an_ingest_killed_before_its_commit_put_stays_invisible(
    small: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = small.loc.bucket  # type: ignore[union-attr]
    before_keys = _keys(bucket, "finops/_log/")
    uploads_before = set(_keys(bucket, "finops/_txn/"))
    before = open_store(small.location)
    files_before = {d: before.files(d) for d in ("billing", "utilization")}
    waste_before = api.waste(store=before).to_dict()

    # another process ingests and is SIGKILLed between its uploads and its commit PUT (no cleanup code runs)
    azure = SAMPLES / "billing-azure-actual" / "azure-actual-2026-10.csv"
    script = (
        "import os, signal\n"
        "from finops_cli import api\n"
        "from finops_cli.store import remote\n"
        "remote._put_if_absent = lambda *a: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"api.ingest_billing([{str(azure)!r}], store={small.location!r})\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

    orphans = set(_keys(bucket, "finops/_txn/")) - uploads_before
    assert any(k.endswith(".parquet") for k in orphans)  # its uploads are there ...
    after = open_store(small.location)  # ... and no reader sees them
    assert _keys(bucket, "finops/_log/") == before_keys
    assert {d: after.files(d) for d in ("billing", "utilization")} == files_before
    assert not any("azure-actual" in json.dumps(e) for e in after.manifest())
    _same(api.waste(store=after).to_dict(), waste_before)

    # a later commit tidies the dead writer's uploads once they are old enough
    monkeypatch.setattr(remote_mod, "ORPHAN_AGE", remote_mod.timedelta(seconds=-1))
    api.store_remove(after.manifest()[0]["source_key"], store=after)
    assert not orphans & set(_keys(bucket, "finops/_txn/"))


def test_a_failed_ingest_commits_nothing_and_leaves_no_uploads(small: ObjectStore, tmp_path: Path) -> None:
    bucket = small.loc.bucket  # type: ignore[union-attr]
    before = _keys(bucket)
    bad = tmp_path / "focus-bad.csv"
    text = (SAMPLES / "billing" / "focus-2026-10.csv").read_text(encoding="utf-8").splitlines()
    header = text[0].split(",")
    row = text[1].split(",")
    row[header.index("BilledCost")] = "twelve"
    bad.write_text("\n".join([text[0], row and ",".join(row)]) + "\n", encoding="utf-8")
    with pytest.raises(InputError):
        api.ingest_billing([SAMPLES / "billing" / "aws-cur-2026-10.csv.gz", bad], store=small)
    assert _keys(bucket) == before


def test_two_writers_cannot_both_commit_the_same_generation(small: ObjectStore) -> None:
    one, two = open_store(small.location), open_store(small.location)
    gen = one.state().generation
    focus = SAMPLES / "billing" / "focus-2026-10.csv"
    with pytest.raises(InputError, match="another writer committed generation"), one.transaction() as tx:
        tx.record({"dataset": "note", "source_key": "first-writer"})
        api.ingest_billing([focus], store=two)  # commits gen + 1 while ``one`` is open
    fresh = open_store(small.location)
    assert fresh.state().generation == gen + 1
    assert not any(e["source_key"] == "first-writer" for e in fresh.manifest())
    assert not [k for k in _keys(small.loc.bucket, "finops/_txn/") if tx.txid in k]  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------- error paths
def _cli(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("store", "expected"),
    [
        ("s3://Not_A_Bucket/x", "bucket name 'Not_A_Bucket' is not valid"),
        ("s3://finops-no-such-bucket/x", "bucket 'finops-no-such-bucket' does not exist"),
        ("s3://", "bucket name '' is not valid"),
        ("s3://ok-bucket/a/../b", "'..' segment"),
        ("ftp://host/x", "unsupported URI scheme ftp://"),
        ("gs://", "bucket name '' is not valid"),
    ],
)
def test_bad_store_uri_is_one_line_and_exit_2(bucket: str, store: str, expected: str) -> None:
    code, out = _cli(["ingest", "billing", str(SAMPLES / "billing" / "focus-2026-10.csv"), "--store", store])
    assert code == 2, out
    assert expected in out and "Traceback" not in out
    assert len(out.strip().splitlines()) == 1, out


def test_missing_input_object_and_no_credentials(bucket: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    code, out = _cli(["ingest", "billing", f"s3://{bucket}/no/such/export.csv", "--store", store])
    assert code == 2 and "no such object or prefix" in out and len(out.strip().splitlines()) == 1, out
    assert not Path(store).exists()

    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    code, out = _cli(["waste", "--store", f"s3://{bucket}/finops"])
    assert code == 2 and "no AWS credentials found" in out and len(out.strip().splitlines()) == 1, out


def test_uri_parsing_offline() -> None:
    """What can be checked of gs:// (and s3://) without a network: parsing and the typer Path spelling."""
    assert as_uri(Path("s3://bucket/prefix")) == "s3://bucket/prefix"  # typer turns the option into a Path
    assert as_uri("gs://bucket/a/b/") == "gs://bucket/a/b/"
    assert as_uri("relative/dir") is None and as_uri("/abs/dir") is None and as_uri("C:/x") is None
    assert as_uri(Path("s3://")) == "s3://" and as_uri("notes:today.txt") is None
    assert split_uri("gcs://my.bucket/exports/") == ("gs", "my.bucket", "exports")
    assert split_uri("s3://bkt") == ("s3", "bkt", "")
    with pytest.raises(InputError, match=r"'\.\.' segment"):
        split_uri("gs://bkt/a/../b")
    loc = open_uri("gs://finops-offline-bucket/store", must_exist=False)  # constructing the client is offline
    assert type(loc.fs).__name__ == "GcsFileSystem" and loc.path == "finops-offline-bucket/store"


def test_the_protocol_without_conditional_puts(tmp_path: Path) -> None:
    """The path a ``gs://`` store takes (no precondition API: exists-then-PUT), on a local pyarrow file system."""
    from pathlib import PurePosixPath

    from pyarrow import fs

    root = tmp_path / "bucket" / "store"
    loc = Location(uri="gs://offline-bucket/store", fs=fs.LocalFileSystem(), path=str(root), bucket="b", scheme="gs")
    st = ObjectStore(root=PurePosixPath(loc.path), loc=loc)  # type: ignore[arg-type]
    focus = SAMPLES / "billing" / "focus-2026-10.csv"
    api.ingest_billing([focus], store=st)
    assert sorted(p.name for p in (root / "_log").iterdir()) == [f"{1:020d}.json"]
    reader = ObjectStore(root=PurePosixPath(loc.path), loc=loc)  # type: ignore[arg-type]
    assert [e["source_key"] for e in reader.manifest()] == [e["source_key"] for e in st.manifest()]
    assert api.store_check(reader).ok

    other = ObjectStore(root=PurePosixPath(loc.path), loc=loc)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="another writer committed generation 2"), other.transaction() as tx:
        tx.record({"dataset": "note", "source_key": "late"})
        api.ingest_billing([focus], store=st)  # generation 2 lands first
    assert not (root / "_txn" / tx.txid).exists()


def test_a_directory_store_synced_to_a_bucket_is_named_not_read_as_empty(bucket: str) -> None:
    client = boto3.client("s3", endpoint_url=api_endpoint())
    client.put_object(Bucket=bucket, Key="synced/manifest.json", Body=b"[]")
    with pytest.raises(InputError, match="holds a store copied from disk"):
        open_store(f"s3://{bucket}/synced").manifest()


def test_credentials_from_a_named_profile(bucket: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """AWS_PROFILE and a shared credentials file, as on a laptop: no key in the environment."""
    creds = tmp_path / "credentials"
    creds.write_text("[finops-test]\naws_access_key_id = fromprofile\naws_secret_access_key = fromprofile\n")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_PROFILE", "finops-test")
    st = open_store(f"s3://{bucket}/profiled")
    api.ingest_billing([SAMPLES / "billing" / "focus-2026-10.csv"], store=st)
    assert len(open_store(f"s3://{bucket}/profiled").manifest()) == 2  # two billing accounts in the FOCUS sample

    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    code, out = _cli(["waste", "--store", f"s3://{bucket}/profiled"])
    assert code == 2 and "no-such-profile" in out and len(out.strip().splitlines()) == 1, out
