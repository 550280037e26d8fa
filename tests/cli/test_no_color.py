"""NO_COLOR and pipes: no escape codes at all, checked through a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

pytestmark = pytest.mark.skipif(not hasattr(pty, "openpty"), reason="needs a POSIX pseudo-terminal")

ESC = b"\x1b"
VALIDATE = ["validate", "--fleet", str(SAMPLES / "fleet.yaml"), "--workloads", str(SAMPLES / "workloads.yaml")]
FAILING = ["waste", "--month", "oct"]  # an error: "error:" in bold red on a colour terminal
# usage errors drawn by typer in a red panel, of a command's options and of the root's: typer's help module is only
# imported then (not to run a command), and must follow NO_COLOR all the same
USAGE = ["validate", "--fleet", "fleet.yaml", "--no-such-option"]
ROOT_USAGE = ["--no-such-option", "validate"]
RUN = [sys.executable, "-c", "from finops_cli.cli.app import main; main()"]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "CLICOLOR")}
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="40", FINOPS_STORE=str(tmp_path / "store"), **extra)
    return env


def _in_pty(args: list[str], env: dict[str, str]) -> bytes:
    """Run the CLI with stdout and stderr on a pseudo-terminal; everything it wrote."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*RUN, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    proc.wait(timeout=120)
    return b"".join(chunks)


def _piped(args: list[str], env: dict[str, str]) -> bytes:
    done = subprocess.run([*RUN, *args], capture_output=True, env=env, timeout=120, check=False)
    return done.stdout + done.stderr


def test_a_terminal_gets_colour_without_no_color(tmp_path: Path) -> None:
    # the control: the pseudo-terminal really is seen as a colour terminal
    assert ESC in _in_pty(["--help"], _env(tmp_path))
    assert ESC in _in_pty(FAILING, _env(tmp_path))
    assert ESC in _in_pty(USAGE, _env(tmp_path))
    assert ESC in _in_pty(ROOT_USAGE, _env(tmp_path))


@pytest.mark.parametrize(
    "args", [["--help"], VALIDATE, FAILING, USAGE, ROOT_USAGE], ids=["help", "table", "error", "usage", "root-usage"]
)
def test_no_color_on_a_terminal_writes_no_escape_codes(tmp_path: Path, args: list[str]) -> None:
    out = _in_pty(args, _env(tmp_path, NO_COLOR="1"))
    assert out.strip(), "the command printed nothing"
    assert ESC not in out, out[:400]


@pytest.mark.parametrize("args", [["--help"], VALIDATE, FAILING], ids=["help", "table", "error"])
def test_a_pipe_gets_no_escape_codes(tmp_path: Path, args: list[str]) -> None:
    out = _piped(args, _env(tmp_path))
    assert out.strip()
    assert ESC not in out, out[:400]
