"""docs/fine-tuning.md's probe on the built-in synthetic set, run as written in an empty
folder: the synthetic set, its preparation, a probe, a second probe on the first's feature
cache, eval, export and predict (the page's own words; nothing appended)."""

from __future__ import annotations

import json

from doc_commands import bash_blocks, shell_commands
from repo_paths import REPO_ROOT

from actrec.data.synthetic.config import SYNTHETIC_CLASSES

SECTION = "## The fastest road for a small folder: a probe on frozen features"


def _probe_blocks() -> list[list[list[str]]]:
    """The commands of each bash block of the probe's section."""
    page = (REPO_ROOT / "docs" / "fine-tuning.md").read_text(encoding="utf-8")
    section = page[page.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    return [shell_commands(block) for block in bash_blocks(section)]


def test_the_probe_walkthrough_runs_as_written(cli_runner, tmp_path, monkeypatch):
    commands = _probe_blocks()[-1]
    assert [words[:2] for words in commands] == [
        ["actrec", "synthetic"],
        ["actrec", "prepare"],
        ["actrec", "train"],
        ["actrec", "train"],
        ["actrec", "eval"],
        ["actrec", "export"],
        ["actrec", "predict"],
    ]
    monkeypatch.chdir(tmp_path)
    said = []
    for words in commands:
        result = cli_runner(*words[1:])
        assert result.exit_code == 0, f"{' '.join(words)}:\n{result.output}"
        said.append(" ".join(result.output.split()))
    first, second = said[2], said[3]
    assert "warning: probe: model.weights is none" in first
    assert "probe: the train features are cached in runs/tiny-probe/feature_cache/" in first
    assert "probe: the train features are reused from runs/tiny-probe/feature_cache/" in second
    records = [
        json.loads((tmp_path / run / "run.json").read_text())
        for run in ("runs/tiny-probe", "runs/tiny-probe-2")
    ]
    assert [record["probe"]["features"] for record in records] == [
        {"train": "computed"},
        {"train": "reused"},
    ]
    assert records[1]["status"] == "finished"
    assert not (tmp_path / "runs/tiny-probe-2/feature_cache").exists()
    assert any(name in said[-1] for name in SYNTHETIC_CLASSES)
    assert (tmp_path / "models/tiny-probe/actrec.json").is_file()
