"""Untrusted strings must render on GitHub as their literal text: no HTML, links, emphasis, table breaks."""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from markdown_it import MarkdownIt

from finops_cli.report.escape import md_table, md_text, plot_label
from finops_cli.text import one_line

# CommonMark with raw HTML enabled (so an injection would show) plus the GFM table and strikethrough rules.
_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])

HOSTILE = [
    "team|with|pipes",
    "`rm -rf /`",
    "<script>alert('x')</script>",
    '<img src=x onerror="alert(1)">',
    "line one\nline two\r\n| --- |",
    "[click me](https://evil.example/login)",
    "![pixel](https://evil.example/t.png)",
    "**bold** _it_ ~~gone~~ $x^2$ and $y$",
    "@org/security-team please approve",
    "<!-- finops-gate -->",
    "&lt;already&gt; &amp; entities",
    "trailing backslash \\",
    "bidi \u202eexe.live",
    "x" * 5000,
]


class _Cells(HTMLParser):
    """Collect the tags seen and the text of each table cell."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:  # type: ignore[override]
        self.tags.append(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_comment(self, data: str) -> None:
        self.tags.append("!--")


def _render(markdown: str) -> _Cells:
    parser = _Cells()
    parser.feed(_MD.render(markdown))
    return parser


def _visible(text: str) -> str:
    return text.replace("\u200b", "")  # the parser already decoded entities


def test_hostile_strings_render_as_literal_text_in_a_table() -> None:
    table = md_table(["resource", "team", "cost"], [[s, s, "$1.00"] for s in HOSTILE], ["left", "left", "right"])
    parsed = _render(table)
    assert set(parsed.tags) <= {"table", "thead", "tbody", "tr", "th", "td"}
    assert len(parsed.rows) == len(HOSTILE) + 1
    for source, row in zip(HOSTILE, parsed.rows[1:], strict=True):
        assert len(row) == 3
        assert _visible(row[0]) == one_line(source)
        assert row[2] == "$1.00"


def test_hostile_strings_are_inert_in_prose() -> None:
    for source in HOSTILE:
        parsed = _render(f"Team {md_text(source)} wasted $5.")
        assert set(parsed.tags) == {"p"}, source


def test_mentions_and_urls_are_defused() -> None:
    assert "@&#8203;org" in md_text("@org/security-team")
    assert "https:&#8203;//" in md_text("https://evil.example")
    assert "www&#8203;." in md_text("see www.evil.example")


def test_long_ids_are_shortened_in_the_middle_and_stay_distinct() -> None:
    a = "arn:aws:ec2:us-east-1:123456789012:instance/" + "a" * 200 + "-0001"
    b = a[:-1] + "2"
    assert len(one_line(a)) == 80
    assert one_line(a) != one_line(b)
    assert one_line(a).endswith("-0001")
    assert one_line("short") == "short"


def test_plot_labels_cannot_start_mathtext() -> None:
    assert plot_label("cost $5 $6") == r"cost \$5 \$6"
    assert "\n" not in plot_label("a\nb")


def test_trusted_columns_keep_their_markdown_but_not_pipes() -> None:
    table = md_table(["a", "b"], [["x", "**$1**|"]], trusted=[False, True])
    assert "**$1**\\|" in table
    assert len(_render(table).rows[1]) == 2


@settings(max_examples=examples(200), deadline=None)
@given(st.text(max_size=120))
def test_any_text_is_one_literal_cell(value: str) -> None:
    parsed = _render(md_table(["k", "v"], [[value, "1"]]))
    assert set(parsed.tags) <= {"table", "thead", "tbody", "tr", "th", "td"}
    assert len(parsed.rows[1]) == 2
    assert _visible(parsed.rows[1][0]) == one_line(value)
