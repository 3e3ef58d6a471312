"""The README's and the docs' commands: every `actrec` command in a bash block of README.md
or docs/*.md parses against the real CLI, the README's first command is the quickstart, the
fast ones run as written on the synthetic set, and every relative link points at a file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from doc_commands import bash_blocks, shell_commands
from file_contents import weight_file_arrays
from repo_paths import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
# Commands the test runs as written, in README order and then the docs pages' (prefixes of
# their words); the others (downloads, real datasets, minutes of training) are only parsed.
FAST_COMMANDS = (
    ("actrec", "recipes"),
    ("actrec", "pretrained", "list"),
    ("actrec", "inspect", "datasets/prepared/synthetic"),
    ("actrec", "eval", "runs/synthetic-flow"),
    ("actrec", "eval", "--fuse", "runs/synthetic-tsm"),
    ("actrec", "export", "runs/synthetic-tsm"),
    ("actrec", "export", "runs/synthetic-tsm-online"),
    ("actrec", "predict"),
)
# Pages whose commands need a folder of their own, run command by command by their test
# (docs/fine-tuning.md: tests/train/test_finetune.py, on a folder of "your own videos";
# docs/deploy.md: tests/docs/test_deploy_journey.py, in an empty folder).
PAGES_RUN_BY_THEIR_TEST = ("fine-tuning.md", "deploy.md")
# Pages that the README or the docs link to and that another change writes: a link to one
# may point nowhere until it lands (then it is checked like any other).


def doc_pages() -> list[Path]:
    """docs/*.md, in name order (the order their fast commands run in)."""
    return sorted(DOCS.glob("*.md"))


def actrec_commands(page: Path) -> list[list[str]]:
    """The `actrec` commands of a page's bash blocks (a `srun actrec ...` as its actrec part)."""
    commands = []
    for block in bash_blocks(page.read_text(encoding="utf-8")):
        commands += [c for c in shell_commands(block) if c[0] in ("actrec", "srun")]
    return [c[c.index("actrec") :] for c in commands if "actrec" in c]


def readme_actrec_commands() -> list[list[str]]:
    return actrec_commands(README)


def docs_actrec_commands() -> list[tuple[str, list[str]]]:
    """(page name, command) of every `actrec` command in docs/*.md, in page order."""
    return [(page.name, words) for page in doc_pages() for words in actrec_commands(page)]


def walkthrough_commands() -> list[list[str]]:
    """The README's commands, then the docs pages' (the order the fast ones run in), but
    those of the pages whose walkthrough a test of its own runs (PAGES_RUN_BY_THEIR_TEST)."""
    docs = [words for page, words in docs_actrec_commands() if page not in PAGES_RUN_BY_THEIR_TEST]
    return readme_actrec_commands() + docs


def parse_command(words: list[str]) -> None:
    """Parse `words` (actrec ...) with the real click commands, without running them:
    unknown commands, options or bad choices raise click.UsageError."""
    from actrec_cli.main import main

    command: click.Command = main
    context = command.make_context("actrec", list(words[1:]), resilient_parsing=False)
    while isinstance(command, click.Group):
        arguments = [*context._protected_args, *context.args]
        name, command, rest = command.resolve_command(context, arguments)
        context = command.make_context(name, rest, parent=context)
    if words[1] == "launch":  # the worker command after "--" must parse too
        parse_command(words[words.index("--") + 1 :])


def test_the_first_command_installs_and_runs_the_quickstart():
    first = shell_commands(bash_blocks(README.read_text(encoding="utf-8"))[0])
    assert first == [["pip", "install", "-e", "."], ["actrec", "quickstart"]]


def assert_parses(words: list[str], where: str) -> None:
    if "--help" in words or "-h" in words:
        return
    try:
        parse_command(words)
    except click.UsageError as error:
        pytest.fail(f"{where} command {' '.join(words)!r} does not parse: {error}")


def test_every_readme_command_parses_against_the_cli():
    commands = readme_actrec_commands()
    assert len(commands) >= 30
    for words in commands:
        assert_parses(words, "README")


DOCS_COMMANDS = docs_actrec_commands()


def test_the_docs_pages_hold_commands():
    """The docs' commands are found (a page moved or a block fence changed would lose them)."""
    pages = {page for page, _ in DOCS_COMMANDS}
    assert {"data.md", "training.md", "cluster.md", "evaluation-and-export.md"} <= pages
    assert len(DOCS_COMMANDS) >= 25


@pytest.mark.parametrize(
    ("page", "words"),
    DOCS_COMMANDS,
    ids=[f"{page}:{index}" for index, (page, _) in enumerate(DOCS_COMMANDS)],
)
def test_every_docs_command_parses_against_the_cli(page, words):
    assert_parses(words, f"docs/{page}")


def markdown_links(text: str) -> list[str]:
    """The targets of a page's inline links (code blocks left out)."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", text)


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings (lower case, punctuation dropped, spaces
    as hyphens)."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    anchors = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*$", text, flags=re.MULTILINE):
        anchors.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize(
    "page", [README, *doc_pages()], ids=lambda page: str(page.relative_to(REPO_ROOT))
)
def test_every_relative_link_points_at_a_file(page):
    """Every relative link of the README and docs/*.md names an existing file, and an
    anchor (`page.md#heading`) names a heading of that page."""
    broken = []
    for link in markdown_links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", link):  # https:, mailto:
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and anchor not in heading_anchors(target.read_text(encoding="utf-8")):
            broken.append(f"{link}: no heading #{anchor} in {target.name}")
    assert not broken, f"{page.name}: {broken}"


def _is_fast(words: list[str]) -> bool:
    return any(tuple(words[: len(prefix)]) == prefix for prefix in FAST_COMMANDS)


@pytest.mark.slow
def test_the_fast_readme_commands_run_as_written(
    cli_runner,
    tmp_path,
    monkeypatch,
    synthetic_prepared,
    synthetic_flow_run,
    synthetic_tsm_run,
    synthetic_tsm_online_run,
):
    """In a folder laid out as the README's synthetic walkthrough leaves it (the session's
    prepared set and trained runs linked in), every fast command of the README and then of
    the docs pages succeeds as written."""
    links = {
        "datasets/raw/synthetic": synthetic_prepared.parent / "raw",
        "datasets/prepared/synthetic": synthetic_prepared,
        "runs/synthetic-flow": synthetic_flow_run[1],
        "runs/synthetic-tsm": synthetic_tsm_run[1],
        "runs/synthetic-tsm-online": synthetic_tsm_online_run[1],
    }
    for name, target in links.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).symlink_to(target)
    monkeypatch.chdir(tmp_path)
    ran, shown = [], {}
    for words in walkthrough_commands():
        # A docs page repeating the README's command (with --overwrite, so that the page
        # also works on its own) makes the same files again: it is not run twice.
        if not _is_fast(words) or [w for w in words if w != "--overwrite"] in ran:
            continue
        result = cli_runner(*words[1:])
        assert result.exit_code == 0, f"{' '.join(words)}:\n{result.output}"
        ran.append(words)
        if words[1] == "predict" and not {"--timeline", "--stream"} & set(words):
            shown.update(_shown_predictions(cli_runner, words, result))
    assert {"recipes", "inspect", "eval", "export", "predict"} <= {w[1] for w in ran}, ran
    # Every prediction the README and the docs show is right: the video's class is its
    # folder's name.
    assert len(shown) >= 4
    assert {video: Path(video).parent.name for video in shown} == shown
    # The docs' dynamic-range TFLite of the online TSM (MobileNetV2): about a byte a weight,
    # a quarter of float32's four (the tiny TFLite tests' network is too small to show it).
    int8 = Path("models/synthetic-online-tflite/model.tflite").stat().st_size
    weights = weight_file_arrays(Path("runs/synthetic-tsm-online/final.weights.h5"))
    assert int8 < 0.35 * 4 * sum(array.size for array in weights)
    # The gate passed the documented int8 exports (they exited 0) and says on what: their
    # clips, changed clips and bounds; the same file with a layer's scales wrong is refused.
    for folder in ("models/synthetic-tsm-int8", "models/synthetic-online-phone"):
        gate = json.loads(Path(folder, "actrec.json").read_text())["quantization"]["gate"]
        assert gate["verdict"] in ("passed", "undecided") and gate["clips"] == 56, gate
        assert f"{gate['changed']} clips changed their top class" in Path(
            folder, "MODEL_CARD.md"
        ).read_text(encoding="utf-8")
    _assert_a_broken_int8_file_is_refused(
        Path("models/synthetic-tsm-int8/model.tflite"), synthetic_tsm_run[1], synthetic_prepared
    )


def _assert_a_broken_int8_file_is_refused(path: Path, run_dir: Path, prepared: Path) -> None:
    """The gate, on the float model and `path` with its first convolution's weight scales
    4 times too large (as a wrong calibration of that layer makes them), refuses it."""
    from tensorflow.lite.tools import flatbuffer_utils

    from actrec.data.input.clip_spec import clip_spec
    from actrec.export.quantization.accuracy_gate import measured_gate
    from actrec.export.quantization.calibration import HELD_OUT_SPLITS, clip_set
    from actrec.export.streams import ExportedStream
    from actrec.export.tflite_flatbuffers import TfliteRunner
    from actrec.runs.trained import build_trained_model, load_trained_run

    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(path.read_bytes()))
    graph = model.subgraphs[0]
    first_convolution = next(
        op for op in graph.operators
        if flatbuffer_utils.opcode_to_name(model, op.opcodeIndex) == "CONV_2D"
    )  # fmt: skip
    for index in first_convolution.inputs[1:]:  # its weights' and bias's scales
        quantization = graph.tensors[index].quantization
        quantization.scale = [4 * scale for scale in quantization.scale]
    broken = TfliteRunner(content=bytes(flatbuffer_utils.convert_object_to_bytearray(model)))

    run = load_trained_run(run_dir, "final")
    stream = ExportedStream(clip_spec(run.recipe, training=False), run=run)
    network = build_trained_model(run)
    clips = clip_set(prepared, HELD_OUT_SPLITS, [stream], run.classes, 64)

    def float_run(inputs: dict) -> dict:
        return {"logits": network(inputs[stream.input_name], training=False).numpy()}

    gate = measured_gate(float_run, broken.run, clips, max_drop=2.0)
    assert gate.verdict == "refused" and gate.drop > 20, gate.summary("int8")


def _shown_predictions(cli_runner, words: list[str], result) -> dict[str, str]:
    """{video: predicted class} of a README or docs `actrec predict` command, as it printed
    them: its JSON with --json, else the first row of the table under each video's name."""
    if "--json" in words:
        predictions = json.loads(result.stdout)
        return {item["video"]: item["top_k"][0]["class"] for item in predictions}
    videos = [word for word in words[2:] if Path(word).is_file()]  # the VIDEO arguments
    shown, video = {}, None
    for line in result.stdout.splitlines():
        if line.strip() in videos:
            video = line.strip()
        elif video and (row := re.match(r"\s*[│|]\s*1\s*[│|]\s*(\S+)\s*[│|]", line)):
            shown[video], video = row.group(1), None
    assert sorted(shown) == sorted(videos), result.stdout
    return shown


def test_the_first_screen_holds_at_most_one_measured_time():
    """What a newcomer reads before the test command: what actrec is and the commands, with
    one measured time at most (the quickstart's); the tables live in docs/benchmarks.md."""
    first_screen = README.read_text(encoding="utf-8").split("<!-- test-command -->")[0]
    times = re.findall(r"\b\d+(?:\.\d+)?\s?(?:s|min|minutes|seconds|ms)\b", first_screen)
    assert len(times) <= 1, times


def test_read_more_lists_every_docs_page():
    section = README.read_text(encoding="utf-8").split("## Read more", 1)[1].split("\n## ", 1)[0]
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)\)", section))
    assert linked == {page.name for page in doc_pages()}
