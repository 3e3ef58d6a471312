"""`actrec quickstart` as a library: the whole pipeline on the built-in synthetic set.

    WORKDIR/raw/                  the synthetic videos (8 classes that differ only in motion)
    WORKDIR/prepared/             shards with RGB frames and DIS optical flow
    WORKDIR/runs/rgb              RGB TSN (synthetic-rgb): near chance, a frame has no motion
    WORKDIR/runs/flow             flow TSN (synthetic-flow)
    WORKDIR/runs/tsm              RGB TSM (synthetic-tsm-mars): learns the motion from frames,
                                  distilled from runs/flow (fewer steps than synthetic-tsm)
    WORKDIR/runs/*/eval/test-centre, runs/tsm/eval/fused-tsm-flow   evaluations
    WORKDIR/export/               the two-stream SavedModel, RGB TSM + flow TSN (uint8 frames
                                  + flow in; it fuses as the evaluation does)
    WORKDIR/predict/              a freshly generated video of a known class

Every stage keeps what it finished: re-running continues (the data is resumable, training
resumes from its checkpoints, a finished run is kept as it is).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.data.sources import list_videos
from actrec.data.synthetic.config import SYNTHETIC_CLASSES, SyntheticConfig
from actrec.errors import ConfigError
from actrec.evaluation.evaluate import fuse_evaluations
from actrec.evaluation.protocols import resolve_protocol
from actrec.predict.video_files import predict_videos
from actrec.progress import NullProgress, Progress
from actrec.quickstart.reuse import evaluated, exported
from actrec.runs.folder import FINAL_WEIGHTS_FILE
from actrec.train.threads import use_threads_per_op

STAGES = (
    ("generate", "generate the synthetic videos"),
    ("prepare", "prepare RGB + optical flow"),
    ("train-rgb", "train the RGB TSN"),
    ("train-flow", "train the flow TSN"),
    ("train-tsm", "train the RGB TSM, distilled from the flow TSN"),
    ("evaluate", "evaluate the three streams and the TSM + flow fusion"),
    ("export", "export the two-stream SavedModel (TSM + flow)"),
    ("predict", "predict a freshly generated video"),
)
STREAMS = {"rgb": "synthetic-rgb", "flow": "synthetic-flow", "tsm": "synthetic-tsm-mars"}
"""Each stream's recipe, in training order (a teacher before its student)."""
TEACHERS = {"tsm": "flow"}
"""The stream each distilled stream learns from (its train.distill_from)."""
FUSED_STREAMS = ("tsm", "flow")
PREDICT_SEED = 20261121  # a video the training set does not contain


@dataclass(frozen=True)
class QuickstartSize:
    """How big the quickstart is: the synthetic set, recipe overrides per stream (a key of
    STREAMS -> settings), and the fused accuracy it is expected to reach."""

    synthetic: SyntheticConfig
    overrides: dict[str, tuple[str, ...]] = field(default_factory=dict)
    expected_fused_accuracy: float = 0.9


_NO_VALIDATION = "runtime.validate_every_epochs=0"
SIZES = {
    # The README's quickstart: the default synthetic set and recipes, shortened to fit a few
    # minutes: the RGB TSN (near chance by design: a frame cannot tell the classes apart)
    # trains 1 of its 16 epochs, the flow TSN 6 of its 10 (91.1 / 92.9 % in two seeds;
    # 96-98 % in 10), then the RGB TSM distilled from it 10 of its 16 epochs: 85.7 / 89.3 %
    # test top-1 (seeds 0 and 1) where the plain synthetic-tsm's 16 scored 85.7 / 82.1 %
    # (78.6-85.7 % in five seeds; docs/benchmarks.md, "Distillation from flow"). Timings:
    # docs/benchmarks.md, "The quickstart on CPUs without AVX-512".
    "full": QuickstartSize(
        SyntheticConfig(),
        {
            "rgb": ("train.epochs=1",),
            "flow": ("train.epochs=6",),
            "tsm": ("train.epochs=10",),
        },
    ),
    # CI's reduced run: fewer, smaller videos and shorter training (the TSM does not learn
    # in 2 steps: the fusion's accuracy comes from the flow stream). Rotation is faster than
    # by default: at 64x48 the flow TSN learns 6-9 degrees / frame too slowly for 5 epochs
    # (no rotating video right in one run: 67 % fused; 10-14 degrees: 79 %).
    "small": QuickstartSize(
        SyntheticConfig(
            videos_per_class=10, num_frames=16, width=64, height=48, rotation_speed=(10.0, 14.0)
        ),
        {
            "rgb": ("train.epochs=1", "runtime.steps_per_epoch=2", _NO_VALIDATION),
            "tsm": ("train.epochs=1", "runtime.steps_per_epoch=2", _NO_VALIDATION),
            "flow": ("train.epochs=6", "runtime.steps_per_epoch=24", _NO_VALIDATION),
        },
        expected_fused_accuracy=0.7,
    ),
}


@dataclass
class QuickstartResult:
    """What a quickstart did: seconds per stage, accuracies (rgb, tsm, flow, fused), where
    each artefact is, and the prediction on the new video."""

    workdir: Path
    seconds: dict[str, float] = field(default_factory=dict)
    accuracies: dict[str, float] = field(default_factory=dict)
    artefacts: dict[str, Path] = field(default_factory=dict)
    prediction: dict = field(default_factory=dict)
    expected_fused_accuracy: float = 0.9

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())

    @property
    def reached_expected_accuracy(self) -> bool:
        return self.accuracies.get("fused", 0.0) >= self.expected_fused_accuracy


class StageProgress:
    """Prefixes every stage's progress with "[k/N]" so the stages read as one sequence."""

    def __init__(self, inner: Progress, index: int, total: int):
        self.inner, self.prefix = inner, f"[{index}/{total}]"

    def start(self, description: str, total: int | None) -> None:
        self.inner.start(f"{self.prefix} {description}", total)

    def advance(self, amount: int = 1, **counters: float) -> None:
        self.inner.advance(amount, **counters)

    def show(self, **values: object) -> None:
        self.inner.show(**values)

    def message(self, text: str) -> None:
        self.inner.message(text)

    def finish(self) -> None:
        self.inner.finish()


def _check_size(size: str) -> QuickstartSize:
    if size not in SIZES:
        raise ConfigError(f"quickstart size {size!r} is not valid; use one of {', '.join(SIZES)}")
    return SIZES[size]


def _trained(recipe_name: str, overrides, prepared: Path, run_dir: Path, progress) -> Path:
    if (run_dir / FINAL_WEIGHTS_FILE).is_file():
        progress.message(f"{run_dir} is already trained; kept")
        return run_dir
    # inside: run.py imports TensorFlow, and the CLI imports this module before its checks
    from actrec.train.run import train

    recipe = apply_overrides(load_recipe(recipe_name), list(overrides))
    train(recipe, prepared, run_dir, resume="latest", progress=progress)
    return run_dir


def quickstart_threads_per_op() -> int | None:
    """The runtime.threads_per_op the quickstart's recipes set (None unless they agree)."""
    values = {load_recipe(name).runtime.threads_per_op for name in STREAMS.values()}
    return values.pop() if len(values) == 1 else None


def _new_video(folder: Path, synthetic: SyntheticConfig) -> tuple[Path, str]:
    """A synthetic video of a class drawn with PREDICT_SEED: (path, its class)."""
    # inside: both load OpenCV, and the CLI imports this module before its checks
    from actrec.data.synthetic.render import render_clip
    from actrec.data.synthetic.video_writer import write_video

    rng = np.random.default_rng(PREDICT_SEED)
    class_name = SYNTHETIC_CLASSES[int(rng.integers(len(SYNTHETIC_CLASSES)))]
    path = folder / f"new_{class_name}.avi"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        clip = render_clip(class_name, rng, replace(synthetic, seed=PREDICT_SEED))
        write_video(path, clip, synthetic.fps)
    return path, class_name


def run_quickstart(
    workdir: Path | str,
    size: str = "full",
    progress: Progress | None = None,
    on_stage: Callable[[str, float], None] | None = None,
) -> QuickstartResult:
    """Run every stage of STAGES in `workdir`; on_stage(name, seconds) after each."""
    # inside: these load OpenCV, and the CLI imports this module before its checks
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    settings = _check_size(size)
    # before generating and preparing, which start TensorFlow's runtime: it keeps its threads
    use_threads_per_op(quickstart_threads_per_op())
    progress = progress or NullProgress()
    workdir = Path(workdir)
    result = QuickstartResult(workdir, expected_fused_accuracy=settings.expected_fused_accuracy)
    raw, prepared = workdir / "raw", workdir / "prepared"
    runs = {stream: workdir / "runs" / stream for stream in STREAMS}
    export_dir = workdir / "export"
    stage_progress = {
        name: StageProgress(progress, index, len(STAGES))
        for index, (name, _) in enumerate(STAGES, start=1)
    }

    def stage(name: str, work: Callable[[Progress], object]):
        started = time.monotonic()
        value = work(stage_progress[name])
        result.seconds[name] = time.monotonic() - started
        if on_stage is not None:
            on_stage(name, result.seconds[name])
        return value

    stage("generate", lambda p: generate_synthetic_dataset(raw, settings.synthetic, progress=p))
    stage(
        "prepare",
        lambda p: prepare_dataset(
            list_videos("synthetic", raw),
            prepared,
            PrepareSettings(frame_size="original"),
            progress=p,
        ),
    )
    for stream, recipe_name in STREAMS.items():
        overrides = settings.overrides.get(stream, ())
        if stream in TEACHERS:
            overrides = (*overrides, f"train.distill_from={runs[TEACHERS[stream]]}")
        stage(
            f"train-{stream}",
            lambda p, s=stream, r=recipe_name, o=overrides: _trained(r, o, prepared, runs[s], p),
        )

    def evaluate(p):
        protocol = resolve_protocol("centre")
        streams = {s: evaluated(runs[s], protocol, p) for s in STREAMS}
        return {**streams, "fused": fuse_evaluations([streams[s] for s in FUSED_STREAMS])}

    evaluations = stage("evaluate", evaluate)
    for name, evaluation in evaluations.items():
        result.accuracies[name] = evaluation.metrics.top1
        result.artefacts[f"evaluation ({name})"] = evaluation.out_dir

    stage("export", lambda p: exported([runs[s] for s in FUSED_STREAMS], export_dir, p))
    video, true_class = _new_video(workdir / "predict", settings.synthetic)

    def predict(p):
        return predict_videos([video], export_dir, top_k=3, progress=p)[0]

    prediction = stage("predict", predict)
    result.prediction = {"video": video, "true_class": true_class, "result": prediction}
    result.artefacts.update(
        {
            "synthetic videos": raw,
            "prepared data": prepared,
            "RGB TSN run": runs["rgb"],
            "flow TSN run": runs["flow"],
            "RGB TSM run (distilled from the flow TSN)": runs["tsm"],
            "two-stream SavedModel": export_dir,
            "new video": video,
        }
    )
    return result
