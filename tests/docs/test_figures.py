"""One home per figure (issue 54): a measured figure lives once, in docs/benchmarks.md's
"Figures other pages quote" table, next to the section that measured it; every other page
quotes it as `<!-- figure:NAME -->VALUE<!-- /figure -->`. These tests fail when a quote
differs from its row, a row's figure is missing from its section, or the README states a
measured time or accuracy outside a quote."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
QUOTE = re.compile(r"<!-- figure:(?P<name>[a-z0-9-]+) -->(?P<value>.*?)<!-- /figure -->")
ROW = re.compile(
    r"^\| (?P<name>[a-z0-9-]+) \| (?P<value>[^|]+?) \| [^|]+ "
    r"\| \[[^\]]+\]\(#(?P<section>[a-z0-9-]+)\) \|$"
)
NUMBER = re.compile(r"\d+(?:\.\d+)?")
# A measured time or accuracy: "102.8 s", "24 min", "90.4 %" (whole-number percentages such
# as "100 %" and settings such as "2 s windows" are not measurements).
MEASURED = re.compile(r"\b\d+\.\d+ ?%|\b\d+(?:\.\d+)? ?(?:s|min)\b(?! window)")


def documentation_pages() -> list[Path]:
    """Every Markdown page a user reads, docs/benchmarks.md (the figures' home) aside."""
    pages = [
        ROOT / "README.md",
        ROOT / "pretrained" / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
    ]
    return [page for page in pages if page.exists() and page != BENCHMARKS]


def section_slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading's text."""
    slug = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return slug.replace(" ", "-")


def benchmark_sections() -> dict[str, str]:
    """docs/benchmarks.md's `## ` sections (their `###` subsections included) by anchor."""
    sections: dict[str, str] = {}
    current = None
    for line in BENCHMARKS.read_text().splitlines():
        if line.startswith("## "):
            current = section_slug(line[3:])
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    return sections


def quoted_figures() -> dict[str, tuple[str, str]]:
    """name -> (figure, section anchor) of docs/benchmarks.md's table of quoted figures."""
    table = benchmark_sections()["figures-other-pages-quote"]
    rows = {}
    for line in table.splitlines():
        if match := ROW.match(line):
            assert match["name"] not in rows, f"figure {match['name']} has two rows"
            rows[match["name"]] = (match["value"].strip(), match["section"])
    return rows


def prose(text: str) -> str:
    """`text` without its fenced code blocks and its figure quotes."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return QUOTE.sub("", text)


def test_every_quoted_figure_is_in_the_section_that_measured_it():
    rows = quoted_figures()
    sections = benchmark_sections()
    assert len(rows) >= 10
    for name, (figure, anchor) in rows.items():
        assert anchor in sections, f"{name}: no section #{anchor} in docs/benchmarks.md"
        for number in NUMBER.findall(figure):
            assert number in sections[anchor], f"{name}: {number} is not in #{anchor}"


def test_every_quote_on_every_page_equals_its_home():
    rows = quoted_figures()
    quotes = 0
    for page in documentation_pages():
        for match in QUOTE.finditer(page.read_text()):
            name = match["name"]
            assert name in rows, f"{page.name} quotes figure {name}, which has no row"
            assert match["value"] == rows[name][0], (
                f"{page.name} quotes {name} as {match['value']!r}; docs/benchmarks.md says "
                f"{rows[name][0]!r}"
            )
            quotes += 1
    assert quotes >= 10


def test_the_readme_states_one_time_and_no_figure_outside_a_quote():
    text = (ROOT / "README.md").read_text()
    unquoted = MEASURED.findall(prose(text))
    assert not unquoted, f"README.md states {unquoted} outside a figure quote"
    times = [m for m in QUOTE.finditer(text) if re.search(r"\b(?:s|min)$", m["value"])]
    assert [m["name"] for m in times] == ["quickstart-time"]


@pytest.mark.parametrize("page", ["training.md", "data.md", "development.md", "model-zoo.md"])
def test_measured_here_is_said_through_quotes(page):
    """A line that says a figure was measured here quotes it (published figures, the
    sources' own, are stated in their own words)."""
    for line in (ROOT / "docs" / page).read_text().splitlines():
        if re.search(r"measured here|measured on|measured:", line):
            unquoted = MEASURED.findall(prose(line))
            assert not unquoted, f"docs/{page}: {unquoted} outside a quote in {line[:120]!r}"


def test_one_name_per_thing_across_pages():
    """One path per prepared set, one way to prepare each dataset and one protocol for the
    UCF101 fine-tuning target, on every page that shows them (issue 54)."""
    commands: dict[str, set[str]] = {}
    for page in documentation_pages():
        text = page.read_text()
        for line in text.splitlines():
            line = line.strip().strip("`")
            for dataset in ("ucf101", "kinetics"):
                if line.startswith(f"actrec prepare {dataset} "):
                    options = re.sub(r"--(root|out|address|executor) \S+", "", line)
                    commands.setdefault(dataset, set()).add(" ".join(options.split()))
        for path in re.findall(r"(?<![\w/])(?:datasets/)?prepared/ucf101[\w-]*", text):
            assert path in (
                "datasets/prepared/ucf101-split1",
                "datasets/prepared/ucf101-split1-v2",
            ), f"{page.name} names the prepared UCF101 {path}"
        for line in text.splitlines():
            if "actrec eval runs/ucf101-tsm" in line:
                assert "--protocol tsm-8x3" in line, f"{page.name}: {line.strip()}"
    assert commands["kinetics"] == {"actrec prepare kinetics --flow none --size 331"}
    assert commands["ucf101"] == {"actrec prepare ucf101 --split 1 --size 340x256"}
