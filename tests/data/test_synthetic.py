"""The synthetic motion dataset (actrec.data.synthetic.dataset)."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from actrec.data.format.flow import create_flow_estimator, grey
from actrec.data.format.video import probe_video, read_video_frames
from actrec.data.synthetic import dataset as synthetic
from actrec.data.synthetic.config import SYNTHETIC_CLASSES, SyntheticConfig
from actrec.data.synthetic.dataset import (
    check_synthetic_version,
    generate_synthetic_dataset,
    is_synthetic_dataset,
)
from actrec.data.synthetic.render import clip_motion, render_clip, render_translation_clip
from actrec.data.synthetic.video_writer import write_video
from actrec.errors import ActrecError, ConfigError, DatasetError, OutputError

SMALL = SyntheticConfig(videos_per_class=3, num_frames=6, width=64, height=48, seed=5)


class RecordingProgress:
    """actrec.progress.Progress that records its calls."""

    def __init__(self):
        self.calls: list[tuple] = []

    def start(self, description, total):
        self.calls.append(("start", description, total))

    def advance(self, amount=1, **counters):
        self.calls.append(("advance", amount))

    def message(self, text):
        self.calls.append(("message", text))

    def finish(self):
        self.calls.append(("finish",))


def tree_bytes(root: Path) -> dict[str, bytes]:
    """{relative path: content} of every file under `root`."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def small_set(tmp_path_factory) -> Path:
    return generate_synthetic_dataset(tmp_path_factory.mktemp("synthetic") / "small", SMALL)


@pytest.fixture(scope="module")
def default_set(tmp_path_factory) -> Path:
    """The default configuration: 8 classes x 12 clips of 24 frames, 128x96."""
    return generate_synthetic_dataset(tmp_path_factory.mktemp("synthetic") / "default")


# ----------------------------------------------------------------------------- layout


def test_layout_follows_ucf101(small_set):
    files = set(tree_bytes(small_set))
    videos = {
        f"{name}/v_{name}_g{group:02d}_c01.avi" for name in SYNTHETIC_CLASSES for group in (1, 2, 3)
    }
    splits = {f"splits/{name}" for name in ("classInd.txt", "trainlist01.txt", "testlist01.txt")}
    assert files == videos | splits | {"synthetic.json"}


def test_videos_are_readable_with_the_configured_size_length_and_rate(small_set):
    path = small_set / "ZoomIn" / "v_ZoomIn_g02_c01.avi"
    info = probe_video(path)
    assert (info.width, info.height, info.fps, info.frame_count) == (64, 48, 25.0, 6)
    assert read_video_frames(path).shape == (6, 48, 64, 3)


def test_split_files_have_crlf_lines_like_ucf101(small_set):
    splits = small_set / "splits"
    class_lines = (splits / "classInd.txt").read_bytes().split(b"\r\n")
    assert class_lines[-1] == b"" and all(b"\n" not in line for line in class_lines)
    assert class_lines[:-1] == [
        f"{index} {name}".encode() for index, name in enumerate(SYNTHETIC_CLASSES, start=1)
    ]
    train = (splits / "trainlist01.txt").read_bytes()
    test = (splits / "testlist01.txt").read_bytes()
    assert train.endswith(b"\r\n") and test.endswith(b"\r\n")
    assert train.count(b"\n") == train.count(b"\r\n")
    assert test.count(b"\n") == test.count(b"\r\n")


def test_train_and_test_lists_cover_every_video_once(small_set):
    splits = small_set / "splits"
    train = (splits / "trainlist01.txt").read_text().splitlines()
    test = (splits / "testlist01.txt").read_text().splitlines()
    assert len(train) == 16 and len(test) == 8  # 3 per class: 1 test (30 %), 2 train
    for line in train:
        relative, label = line.split(" ")
        class_name = relative.split("/")[0]
        assert int(label) == SYNTHETIC_CLASSES.index(class_name) + 1
        assert (small_set / relative).is_file()
    for line in test:
        assert " " not in line and (small_set / line).is_file()
        assert "_g01_" in line  # the lowest groups are the test groups, as in UCF101
    train_paths = {line.split(" ")[0] for line in train}
    assert not train_paths & set(test)


def test_split_is_about_seventy_thirty_per_class():
    texts = synthetic._split_texts(SyntheticConfig())
    test_lines = texts["testlist01.txt"].splitlines()
    for name in SYNTHETIC_CLASSES:
        in_test = [line for line in test_lines if line.startswith(f"{name}/")]
        assert len(in_test) == 7  # of 24: 29 %
        assert [line.split("_g")[1][:2] for line in in_test] == [f"{g:02d}" for g in range(1, 8)]


def test_description_records_the_config(small_set):
    recorded = json.loads((small_set / "synthetic.json").read_text())
    assert recorded["config"] == SMALL.to_json_dict()
    assert recorded["classes"] == list(SYNTHETIC_CLASSES)
    assert is_synthetic_dataset(small_set)


def test_is_synthetic_dataset_is_false_elsewhere(tmp_path):
    assert not is_synthetic_dataset(tmp_path)
    assert not is_synthetic_dataset(tmp_path / "absent")
    (tmp_path / "synthetic.json").write_text("{not json")
    assert not is_synthetic_dataset(tmp_path)


# ----------------------------------------------------------------------------- generation


def test_generation_is_deterministic(small_set, tmp_path):
    again = generate_synthetic_dataset(tmp_path / "again", SMALL)
    assert tree_bytes(again) == tree_bytes(small_set)
    other_seed = SyntheticConfig(**{**SMALL.__dict__, "seed": SMALL.seed + 1})
    other = tree_bytes(generate_synthetic_dataset(tmp_path / "other", other_seed))
    first = tree_bytes(small_set)
    videos = [name for name in first if name.endswith(".avi")]
    assert all(other[name] != first[name] for name in videos)
    assert other["splits/trainlist01.txt"] == first["splits/trainlist01.txt"]


def test_rerun_with_the_same_config_does_nothing(small_set):
    before = {path: path.stat().st_mtime_ns for path in small_set.rglob("*")}
    progress = RecordingProgress()
    assert generate_synthetic_dataset(small_set, SMALL, progress) == small_set
    assert {path: path.stat().st_mtime_ns for path in small_set.rglob("*")} == before
    assert progress.calls == []


def test_rerun_with_another_config_is_an_error(small_set):
    before = tree_bytes(small_set)
    changed = SyntheticConfig(**{**SMALL.__dict__, "num_frames": 8})
    with pytest.raises(DatasetError) as raised:
        generate_synthetic_dataset(small_set, changed)
    message = str(raised.value)
    assert str(small_set) in message and "num_frames=6" in message
    assert "another folder" in message and "delete" in message
    assert tree_bytes(small_set) == before


def test_a_set_drawn_by_another_version_is_refused_with_the_fix(small_set, tmp_path):
    older = tmp_path / "older"
    shutil.copytree(small_set, older)
    description = json.loads((older / "synthetic.json").read_text())
    (older / "synthetic.json").write_text(json.dumps({**description, "version": 1}))
    before = tree_bytes(older)
    for attempt in (
        lambda: generate_synthetic_dataset(older, SMALL),
        lambda: check_synthetic_version(older),
    ):
        with pytest.raises(DatasetError) as raised:
            attempt()
        message = str(raised.value)
        assert str(older) in message and "format 1" in message and "Delete" in message
    assert tree_bytes(older) == before
    check_synthetic_version(small_set)  # this version's: no error


def test_a_folder_with_other_files_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="other files"):
        generate_synthetic_dataset(tmp_path, SMALL)
    assert [path.name for path in tmp_path.iterdir()] == ["notes.txt"]


def test_progress_counts_every_video(tmp_path):
    progress = RecordingProgress()
    generate_synthetic_dataset(tmp_path / "set", SMALL, progress)
    assert progress.calls[0] == ("start", "generating synthetic videos", 24)
    assert progress.calls[1:-1] == [("advance", 1)] * 24
    assert progress.calls[-1] == ("finish",)


def test_an_interrupted_run_is_resumed_to_the_same_files(small_set, tmp_path, monkeypatch):
    root = tmp_path / "interrupted"
    written = []

    def failing_write(path, frames, fps):
        if len(written) == 5:
            raise KeyboardInterrupt
        written.append(path)
        write_video(path, frames, fps)

    monkeypatch.setattr(synthetic, "write_video", failing_write)
    with pytest.raises(KeyboardInterrupt):
        generate_synthetic_dataset(root, SMALL)
    assert not is_synthetic_dataset(root)
    monkeypatch.setattr(synthetic, "write_video", write_video)
    with pytest.raises(DatasetError, match="incomplete"):
        generate_synthetic_dataset(root, SyntheticConfig(**{**SMALL.__dict__, "seed": 9}))
    generate_synthetic_dataset(root, SMALL)
    assert tree_bytes(root) == tree_bytes(small_set)


@pytest.mark.parametrize(
    "changes",
    [
        {"videos_per_class": 1},
        {"num_frames": 1},
        {"width": 16},
        {"fps": 0.0},
        {"test_fraction": 1.0},
        {"translation_speed": (3.0, 2.0)},
        {"translation_speed": (1.0, 25.0)},
    ],
)
def test_invalid_configs_are_refused(changes):
    with pytest.raises(ConfigError):
        SyntheticConfig(**changes)


# ----------------------------------------------------------------------------- rendering


def test_render_clip_shape_and_unknown_class():
    config = SyntheticConfig(num_frames=5, width=64, height=48)
    clip = render_clip("MoveUp", np.random.default_rng(0), config)
    assert clip.dtype == np.uint8 and clip.shape == (5, 48, 64, 3)
    with pytest.raises(ConfigError, match="MoveSideways"):
        render_clip("MoveSideways", np.random.default_rng(0), config)


def test_translation_clip_moves_by_the_requested_shift():
    clip = render_translation_clip(3.0, -2.0, 3, 64, 48, seed=4)
    assert clip.shape == (3, 48, 64, 3)
    # frame t (x, y) = frame 0 (x - 3t, y + 2t): compare the overlapping part exactly
    assert np.abs(clip[1, :-2, 3:].astype(int) - clip[0, 2:, :-3]).max() <= 1
    assert np.abs(clip[2, :-4, 6:].astype(int) - clip[0, 4:, :-6]).max() <= 1


def test_write_video_is_atomic_and_checks_its_input(tmp_path):
    frames = render_translation_clip(1.0, 0.0, 4, 64, 48)
    write_video(tmp_path / "clip.mp4", frames, fps=12.0)
    assert read_video_frames(tmp_path / "clip.mp4").shape == (4, 48, 64, 3)
    with pytest.raises(ActrecError, match="extension"):
        write_video(tmp_path / "clip.gif", frames, fps=12.0)
    with pytest.raises(ActrecError, match="could not open"):
        write_video(tmp_path / "absent-folder" / "clip.avi", frames, fps=12.0)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["clip.mp4"]


# ----------------------------------------------------------------------------- classes


def motion_signature(frames: np.ndarray, estimate) -> np.ndarray:
    """Mean over frame pairs of (dx, dy, rotation, divergence) of frames [T, H, W, 3].

    Per pair, an affine motion is fitted to the DIS flow of the moving pixels
    (|flow| > 0.3 px): flow = t + A (x - centroid). Rotation (A10 - A01) / 2 (positive
    = clockwise on screen, y down) and divergence (A00 + A11) / 2 are multiplied by the
    RMS radius of those pixels, so all four are in px / frame.
    """
    signatures = []
    for previous, following in itertools.pairwise(frames):
        flow = estimate(grey(previous), grey(following)).astype(np.float64)
        moving = np.hypot(flow[..., 0], flow[..., 1]) > 0.3
        rows, columns = np.nonzero(moving)
        if len(rows) < 20:
            signatures.append(np.zeros(4))
            continue
        points = np.stack([columns - columns.mean(), rows - rows.mean()], axis=1)
        design = np.hstack([np.ones((len(rows), 1)), points])
        coefficients, *_ = np.linalg.lstsq(design, flow[moving], rcond=None)
        translation, jacobian = coefficients[0], coefficients[1:].T  # jacobian[i, j] = dv_i/dx_j
        radius = np.sqrt((points**2).sum(axis=1).mean())
        rotation = (jacobian[1, 0] - jacobian[0, 1]) / 2 * radius
        divergence = (jacobian[0, 0] + jacobian[1, 1]) / 2 * radius
        signatures.append([translation[0], translation[1], rotation, divergence])
    return np.mean(signatures, axis=0)


# class -> (signature component, sign) that identifies it
EXPECTED_SIGNATURE = {
    "MoveLeft": (0, -1),
    "MoveRight": (0, 1),
    "MoveUp": (1, -1),
    "MoveDown": (1, 1),
    "RotateClockwise": (2, 1),
    "RotateCounterclockwise": (2, -1),
    "ZoomIn": (3, 1),
    "ZoomOut": (3, -1),
}


def class_of_signature(signature: np.ndarray) -> str:
    component = int(np.argmax(np.abs(signature)))
    sign = 1 if signature[component] > 0 else -1
    return next(name for name, key in EXPECTED_SIGNATURE.items() if key == (component, sign))


def clips_by_class(root: Path) -> dict[str, list[np.ndarray]]:
    return {
        name: [read_video_frames(path) for path in sorted((root / name).glob("*.avi"))]
        for name in SYNTHETIC_CLASSES
    }


@pytest.mark.slow
def test_dis_flow_identifies_the_class_of_each_clip(default_set):
    estimate = create_flow_estimator("dis")
    clips = clips_by_class(default_set)
    outcomes = [
        class_of_signature(motion_signature(frames, estimate)) == name
        for name, class_clips in clips.items()
        for frames in class_clips
    ]
    assert len(outcomes) == 8 * SyntheticConfig().videos_per_class
    assert np.mean(outcomes) >= 0.95


OPPOSITES = (
    ("MoveLeft", "MoveRight"),
    ("MoveUp", "MoveDown"),
    ("RotateClockwise", "RotateCounterclockwise"),
    ("ZoomIn", "ZoomOut"),
)


@pytest.mark.slow
def test_the_frames_of_a_clip_as_a_set_do_not_tell_a_class_from_its_opposite(default_set):
    """A TSN averages per-frame scores: what it sees of a clip is the set of its frames, which
    for a class is distributed as for its time reversal. (Frame 0 alone does differ: a
    zooming-in object starts small.)"""
    clips = clips_by_class(default_set)
    for first, second in OPPOSITES:
        # per clip: the frames' mean intensity and intensity spread, averaged over the clip
        features = {
            name: np.array(
                [
                    [np.mean([f.mean() for f in clip]), np.mean([f.std() for f in clip])]
                    for clip in clips[name]
                ]
            )
            for name in (first, second)
        }
        assert nearest_centroid_accuracy(features) < 0.75, (first, second)  # chance: 1 / 2


@pytest.mark.slow
def test_a_single_frame_does_not_tell_the_classes_apart(default_set):
    clips = clips_by_class(default_set)
    for frame_index in (11, 12):  # the middle of 24 frames: every class draws it alike
        # per clip: (mean intensity, intensity standard deviation) of one frame
        features = {
            name: np.array([[clip[frame_index].mean(), clip[frame_index].std()] for clip in group])
            for name, group in clips.items()
        }
        for first in SYNTHETIC_CLASSES:  # every pair of classes overlaps in both features
            for second in SYNTHETIC_CLASSES:
                low = np.maximum(features[first].min(0), features[second].min(0))
                high = np.minimum(features[first].max(0), features[second].max(0))
                assert np.all(low < high), (frame_index, first, second)
        assert nearest_centroid_accuracy(features) < 0.4  # chance: 1 / 8


def single_frame_poses(config: SyntheticConfig, clips_per_class: int, seed: int):
    """(features [N, 3], labels [N]): (centre x, centre y, log scale) of the object in one
    frame drawn at random from each of `clips_per_class` clips of every class."""
    rng = np.random.default_rng(seed)
    middle = (config.num_frames - 1) / 2
    features, labels = [], []
    for label, name in enumerate(SYNTHETIC_CLASSES):
        for _ in range(clips_per_class):
            motion = clip_motion(name, rng, config)
            x, y, _, scale = motion.pose_at(rng.integers(config.num_frames) - middle)
            features.append([x, y, np.log(scale)])
            labels.append(label)
    return np.array(features), np.array(labels)


def test_a_single_frames_object_pose_does_not_tell_the_kind_of_motion():
    """Every class draws its object's pose in a single frame alike: the quantities a class
    does not move are held where a sweep would have put them. A classifier trained on 8,000
    frames' true poses scores near chance; before the held offsets it scored 0.32 (a far
    off-centre object moved sideways, a large or small one zoomed)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    config = SyntheticConfig()
    train_features, train_labels = single_frame_poses(config, 1000, seed=0)
    test_features, test_labels = single_frame_poses(config, 300, seed=1)
    classifier = HistGradientBoostingClassifier(random_state=0)
    classifier.fit(train_features, train_labels)
    accuracy = np.mean(classifier.predict(test_features) == test_labels)
    assert accuracy < 0.17  # chance: 1 / 8
    # and the classes still move: a Move clip's object crosses 35-58 px, a Zoom clip's
    # changes size 2.4-3.9 times
    rng = np.random.default_rng(2)
    ends = (-(config.num_frames - 1) / 2, (config.num_frames - 1) / 2)
    right_motion, zoom_motion = (clip_motion(name, rng, config) for name in ("MoveRight", "ZoomIn"))
    right = [right_motion.pose_at(end) for end in ends]
    assert 34 <= right[1][0] - right[0][0] <= 58 and right[1][1] == right[0][1]
    zoom = [zoom_motion.pose_at(end) for end in ends]
    assert 2.4 <= zoom[1][3] / zoom[0][3] <= 3.9


def nearest_centroid_accuracy(features: dict[str, np.ndarray]) -> float:
    """Leave-one-out accuracy of a nearest class-centroid classifier on standardised features."""
    names = list(features)
    values = np.concatenate([features[name] for name in names])
    labels = np.concatenate([[index] * len(features[name]) for index, name in enumerate(names)])
    values = (values - values.mean(0)) / values.std(0)
    correct = 0
    for held_out in range(len(values)):
        keep = np.arange(len(values)) != held_out
        centroids = np.array(
            [values[keep & (labels == label)].mean(0) for label in range(len(names))]
        )
        distances = np.linalg.norm(centroids - values[held_out], axis=1)
        correct += int(np.argmin(distances) == labels[held_out])
    return correct / len(values)
