"""Cloud endpoints that misbehave, and credentials that must never be echoed (issue 12).

A real local HTTP server stands in for EC2 and answers garbage (not XML): boto3 really sends the
request and botocore really fails to parse the answer. The endpoint URL carries userinfo, which
botocore puts in its messages; finops must not print it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli.adapters.aws import redact
from finops_cli.cli.app import app

SECRET = "hunter2-do-not-print"


class _Garbage(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # EC2 query API is POST
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b"<<< this is not XML at all \x00\xff"
        self.send_response(200)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def garbage_endpoint() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Garbage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://admin:{SECRET}@127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def _env(endpoint: str) -> dict[str, str]:
    return {
        "NO_COLOR": "1",
        "COLUMNS": "200",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "example",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_MAX_ATTEMPTS": "1",
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    }


def test_an_endpoint_answering_non_xml_is_one_line_without_its_credentials(
    garbage_endpoint: str, tmp_path: Path
) -> None:
    args = ["ingest", "spot-prices", "--aws-region", "us-east-1", "--instance-type", "p5.48xlarge"]
    result = CliRunner().invoke(app, [*args, "--store", str(tmp_path / "s")], env=_env(garbage_endpoint))
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "aws:us-east-1" in result.stderr
    assert SECRET not in result.output + result.stderr


def test_an_invalid_endpoint_url_is_named_without_credentials(tmp_path: Path) -> None:
    args = ["ingest", "spot-prices", "--aws-region", "us-east-1", "--instance-type", "p5.48xlarge"]
    env = _env(f"ht tp://admin:{SECRET}@bad host:99999")
    result = CliRunner().invoke(app, [*args, "--store", str(tmp_path / "s")], env=env)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert SECRET not in result.output + result.stderr


def test_redact_removes_userinfo_from_every_url() -> None:
    text = f"Could not connect to the endpoint URL: https://u:{SECRET}@ec2.example/ and ftp://x@y"
    assert redact(text) == "Could not connect to the endpoint URL: https://***@ec2.example/ and ftp://***@y"


@pytest.mark.parametrize("content", [None, b"{not json", b'{"type": "nonsense"}'])
def test_google_application_credentials_that_are_wrong_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes | None
) -> None:
    from finops_cli.adapters.gcp import catalog_client
    from finops_cli.errors import InputError

    path = tmp_path / "sa.json"
    if content is not None:
        path.write_bytes(content)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    with pytest.raises(InputError) as err:
        catalog_client()
    message = str(err.value)
    assert str(path) in message and "GOOGLE_APPLICATION_CREDENTIALS" in message
    assert ("does not exist" if content is None else "not a valid credentials JSON") in message
