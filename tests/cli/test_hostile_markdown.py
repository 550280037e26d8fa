"""Every command's markdown stays inert when the estate's ids are hostile (issue 12 item 10).

Workload and substrate ids come from YAML that anyone with a pull request can edit, and the markdown
lands in PR comments and leadership reports. The sample estate is renamed with ids carrying raw HTML
(``<img onerror>``), ``@mentions``, external images and links, newlines that start a heading, backticks,
table pipes, maths and the gate's own marker. Each command's markdown must contain none of them live.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.report.gate import MARKER

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
ENV = {"NO_COLOR": "1", "COLUMNS": "200", "FINOPS_STORE": ""}

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "@octocat please",
    "![x](https://evil.example/p.png)",
    "a\n# injected heading",
    "`code` | pipe",
    MARKER,
    "[click](https://evil.example)",
    "$x$ *em* _u_ ~~s~~",
    "\x1b]0;title\x07\x1b[2J",
]
#: our own markup: the gate's <sub> context line, the report's local chart images
OWN_TAGS = re.compile(r"</?(sub|details|summary|br)>")


def _rename(node: object, names: dict[str, str]) -> object:
    if isinstance(node, dict):
        return {k: _rename(v, names) for k, v in node.items()}
    if isinstance(node, list):
        return [_rename(v, names) for v in node]
    return names.get(node, node) if isinstance(node, str) else node


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    shutil.copytree(SAMPLES / "demand", d / "demand")
    fleet = yaml.safe_load((SAMPLES / "fleet.yaml").read_text(encoding="utf-8"))
    workloads = yaml.safe_load((SAMPLES / "workloads.yaml").read_text(encoding="utf-8"))
    names = {s["id"]: f"{HOSTILE[i % len(HOSTILE)]} s{i}" for i, s in enumerate(fleet["substrates"])}
    names |= {w["id"]: f"{HOSTILE[(i + 3) % len(HOSTILE)]} w{i}" for i, w in enumerate(workloads["workloads"])}
    (d / "fleet.yaml").write_text(yaml.safe_dump(_rename(fleet, names)), encoding="utf-8")
    (d / "workloads.yaml").write_text(yaml.safe_dump(_rename(workloads, names)), encoding="utf-8")
    api.ingest_spot_prices(store=d / "store", files=[SAMPLES / "spot_prices" / "aws-spot-history-2026-10.json"])
    argv = ["plan", *_fw(d), "--store", str(d / "store"), "--out", str(d / "plan.json"), "--format", "json"]
    result = CliRunner().invoke(app, argv, env=ENV)
    assert result.exit_code == 0, result.stderr
    return d


def _fw(d: Path) -> list[str]:
    return ["--fleet", str(d / "fleet.yaml"), "--workloads", str(d / "workloads.yaml")]


def assert_inert(md: str, *, marker: bool = False) -> None:
    """No live HTML, mention, image, link, heading injection, terminal escape or broken table."""
    if marker:
        assert md.count(MARKER) == 1 and md.rstrip().endswith(MARKER), "the gate's marker must be its own, once, last"
        md = md.replace(MARKER, "")
    body = OWN_TAGS.sub("", md)
    assert not re.search(r"(?<!\\)<", body), re.search(r".{0,30}(?<!\\)<.{0,30}", body)
    assert not re.search(r"@(?!&#8203;)", body), "a live @mention"
    for m in re.finditer(r"(?<!\\)!\[[^\]]*\]\(([^)]*)\)", body):
        assert "://" not in m.group(1), f"external image {m.group(0)}"
    assert not re.search(r"(?<!\\)\[[^\]]*\]\(\s*https?:", body), "a live link"
    assert not re.search(r"^\W*#+ injected", body, re.M), "a newline in an id started a heading"
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", body), "a control character"
    block: list[str] = []
    for line in [*body.splitlines(), ""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if block:
            widths = {len(re.findall(r"(?<!\\)\|", row)) for row in block}
            assert len(widths) == 1, f"broken table: {block}"
        block = []


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "{FW}", "--store", "{D}/store", "--format", "markdown"],
        ["stack", "{FW}", "--store", "{D}/store", "--format", "markdown"],
        ["netc", "{FW}", "--store", "{D}/store", "--format", "markdown"],
        ["report", "--plan", "{D}/plan.json", "{FW}", "--store", "{D}/store"],
        [
            "simulate",
            "dispatch",
            "{FW}",
            "--store",
            "{D}/store",
            "--generate",
            "--requests",
            "200",
            "--format",
            "markdown",
        ],
    ],
    ids=["plan", "stack", "netc", "report", "dispatch"],
)
def test_markdown_of_every_command_is_inert(estate: Path, args: list[str]) -> None:
    argv: list[str] = []
    for a in args:
        argv += _fw(estate) if a == "{FW}" else [a.replace("{D}", str(estate))]
    result = CliRunner().invoke(app, argv, env=ENV)
    assert result.exit_code == 0, result.stderr
    assert "s0" in result.stdout or "w0" in result.stdout or "w1" in result.stdout  # the ids are really there
    assert_inert(result.stdout)


def test_gate_comment_is_inert_and_keeps_its_own_marker_last(estate: Path) -> None:
    result = CliRunner().invoke(
        app, ["gate", "--plan", str(estate / "plan.json"), "--budget", "1", "--format", "github"], env=ENV
    )
    assert result.exit_code == 1, result.stderr
    assert_inert(result.stdout, marker=True)


def test_plan_json_keeps_the_ids_verbatim(estate: Path) -> None:
    """Escaping is for rendering only: the plan document stores what the estate says."""
    doc = json.loads((estate / "plan.json").read_text(encoding="utf-8"))
    assert any(a["workload"].startswith(tuple(HOSTILE)) for a in doc["allocations"])
