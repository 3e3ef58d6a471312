"""tf.data pipeline over a tiny prepared synthetic set: shapes, labels, determinism,
per-worker sharding and flow semantics."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from actrec.data.input import augment
from actrec.data.input.clip_spec import ClipSpec, dataset_info
from actrec.data.input.pipeline import build_dataset
from actrec.data.prepare.dataset import prepare_dataset
from actrec.data.prepare.encode_video import PrepareSettings
from actrec.data.sources import list_videos
from actrec.data.synthetic.config import SyntheticConfig
from actrec.data.synthetic.dataset import generate_synthetic_dataset
from actrec.errors import ConfigError, DatasetError

tf = pytest.importorskip("tensorflow")

TINY = SyntheticConfig(videos_per_class=2, num_frames=12, width=64, height=48)
RGB = ClipSpec("rgb", num_segments=3, crop_size=32)
FLOW = ClipSpec("flow", num_segments=2, new_length=5, crop_size=32, normalization="minus_one_one")


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """8 classes x 2 videos x 12 frames at 64x48 (8 train, 8 test), ~2 videos per shard."""
    root = tmp_path_factory.mktemp("pipeline")
    generate_synthetic_dataset(root / "raw", TINY)
    settings = PrepareSettings(frame_size="original", shard_size_mb=0.05)
    prepare_dataset(list_videos("synthetic", root / "raw"), root / "out", settings, workers=1)
    return root / "out"


@pytest.fixture(scope="module")
def manifest_labels(prepared):
    manifest = json.loads((prepared / "manifest.json").read_text())
    return {video["id"]: (video["split"], video["label"]) for video in manifest["videos"]}


def _examples(dataset) -> list[tuple[np.ndarray, int, str]]:
    """(clip, label, video id) of every element of a dataset built with_video_ids."""
    examples = []
    for clips, labels, video_ids in dataset.as_numpy_iterator():
        for clip, label, video_id in zip(clips, labels, video_ids, strict=True):
            examples.append((clip, int(label), video_id.decode()))
    return examples


def test_dataset_info_reads_the_manifest(prepared):
    info = dataset_info(prepared)
    assert info.classes[1] == "MoveRight" and info.num_classes == 8
    assert info.num_videos == {"train": 8, "test": 8}
    assert info.has_flow and info.flow_method == "dis" and info.frame_short_side == 48
    manifest = json.loads((prepared / "manifest.json").read_text())
    assert len(manifest["splits"]["train"]["shards"]) == 4  # by file for 2 pipelines, not 5


@pytest.mark.parametrize(("spec", "channels"), [(RGB, 3), (FLOW, 10)])
@pytest.mark.parametrize("training", [True, False])
def test_batches_have_the_clip_shape_and_the_manifest_labels(
    prepared, manifest_labels, spec, channels, training
):
    dataset = build_dataset(prepared, "train", spec, 3, training, seed=1, with_video_ids=True)
    clips, labels, _ = next(iter(dataset))
    assert clips.dtype == tf.float32 and labels.dtype == tf.int32
    assert tuple(clips.shape) == (3, spec.num_segments, 32, 32, channels)
    examples = _examples(dataset)
    assert len(examples) == (6 if training else 8)  # training drops the remainder
    for _, label, video_id in examples:
        assert manifest_labels[video_id] == ("train", label)
    if not training:
        assert sorted(video_id for _, _, video_id in examples) == sorted(
            video_id for video_id, (split, _) in manifest_labels.items() if split == "train"
        )
    values = np.stack([clip for clip, _, _ in examples])
    if spec.modality == "rgb":
        assert values.min() >= 0 and values.max() <= 255 and values.max() > 100
    else:
        assert values.min() >= -1 and values.max() <= 1 and np.abs(values).max() > 0.05


@pytest.mark.parametrize("spec", [RGB, FLOW, ClipSpec("rgb", 4, crop_size=32, sampling="dense")])
def test_a_seed_makes_training_deterministic(prepared, spec):
    def batches(seed):
        dataset = build_dataset(prepared, "train", spec, 4, True, seed=seed, repeat=True)
        return [(clips.numpy(), labels.numpy()) for clips, labels in dataset.take(3)]

    first, second, other = batches(7), batches(7), batches(8)
    for (clips_a, labels_a), (clips_b, labels_b) in zip(first, second, strict=True):
        assert np.array_equal(clips_a, clips_b) and np.array_equal(labels_a, labels_b)
    assert any(
        not np.array_equal(a[0], b[0]) or not np.array_equal(a[1], b[1])
        for a, b in zip(first, other, strict=True)
    )


@pytest.mark.parametrize("num_pipelines", [2, 5])  # 2: by file (4 files); 5: by record
def test_input_pipelines_see_disjoint_videos_covering_the_split(
    prepared, manifest_labels, num_pipelines
):
    seen = []
    for pipeline_id in range(num_pipelines):
        context = tf.distribute.InputContext(
            num_input_pipelines=num_pipelines, input_pipeline_id=pipeline_id
        )
        dataset = build_dataset(
            prepared,
            "train",
            RGB,
            2,
            True,
            seed=3,
            input_context=context,
            drop_remainder=False,
            with_video_ids=True,
        )
        seen.append({video_id for _, _, video_id in _examples(dataset)})
    train_ids = {video_id for video_id, (split, _) in manifest_labels.items() if split == "train"}
    assert set().union(*seen) == train_ids
    assert sum(len(ids) for ids in seen) == len(train_ids)  # disjoint
    assert all(seen)  # nobody is idle with 8 videos


def _move_right_mean_x(examples) -> list[float]:
    return [clip[..., 0::2].mean() for clip, _, video_id in examples if "MoveRight" in video_id]


def test_flow_is_normalised_and_a_flip_reverses_horizontal_motion(prepared):
    evaluation = _examples(build_dataset(prepared, "train", FLOW, 4, False, with_video_ids=True))
    assert all(mean > 0.01 for mean in _move_right_mean_x(evaluation))  # moves right

    def training(flip: bool):
        spec = ClipSpec(
            "flow",
            num_segments=2,
            new_length=5,
            crop_size=32,
            flip=flip,
            normalization="minus_one_one",
        )
        dataset = build_dataset(
            prepared, "train", spec, 4, True, seed=5, repeat=True, with_video_ids=True
        )
        return _examples(dataset.take(12))  # 6 epochs of 8 videos

    plain, maybe_flipped = training(False), training(True)
    flipped = 0
    for (clip, _, video_id), (other, _, other_id) in zip(plain, maybe_flipped, strict=True):
        assert video_id == other_id and np.abs(other).max() <= 1
        mirrored = augment.horizontal_flip(tf.constant(clip), is_flow=True).numpy()
        assert np.array_equal(other, clip) or np.array_equal(other, mirrored)
        if "MoveRight" in video_id:
            assert clip[..., 0::2].mean() > 0
            flipped += int(not np.array_equal(other, clip))
            assert (other[..., 0::2].mean() < 0) == (not np.array_equal(other, clip))
    assert 0 < flipped < len(_move_right_mean_x(plain))


def test_flow_without_normalization_is_on_the_stored_scale_the_models_expect(prepared):
    stored_spec = ClipSpec("flow", num_segments=2, new_length=5, crop_size=32)
    stored = _examples(build_dataset(prepared, "train", stored_spec, 4, False, with_video_ids=True))
    unit = _examples(build_dataset(prepared, "train", FLOW, 4, False, with_video_ids=True))
    for (clip, _, video_id), (unit_clip, _, unit_id) in zip(stored, unit, strict=True):
        assert video_id == unit_id
        assert clip.min() >= 0 and clip.max() <= 255
        np.testing.assert_allclose(clip, unit_clip * 127.5 + 127.5, atol=1e-3)
    mirrored = augment.horizontal_flip(tf.constant(unit[0][0]), is_flow=True).numpy()
    stored_mirror = np.flip(stored[0][0], axis=2).copy()
    stored_mirror[..., 0::2] = 255.0 - stored_mirror[..., 0::2]
    np.testing.assert_allclose(stored_mirror, mirrored * 127.5 + 127.5, atol=1e-3)


def test_flow_of_rgb_only_data_is_a_dataset_error(prepared, tmp_path):
    rgb_only = tmp_path / "rgb-only"
    shutil.copytree(prepared, rgb_only)
    manifest = json.loads((rgb_only / "manifest.json").read_text())
    manifest["settings"]["flow"] = "none"
    (rgb_only / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetError, match=r"rgb-only.*actrec prepare .*--flow dis"):
        build_dataset(rgb_only, "train", FLOW, 2, True)
    assert not dataset_info(rgb_only).has_flow
    build_dataset(rgb_only, "train", RGB, 2, True)  # RGB still works


def test_bad_requests_name_the_value_and_the_fix(prepared):
    with pytest.raises(DatasetError, match=r"crop_size=64 exceeds .*48 px"):
        build_dataset(prepared, "train", ClipSpec("rgb", 3, crop_size=64), 2, True)
    with pytest.raises(DatasetError, match="no 'val' split"):
        build_dataset(prepared, "val", RGB, 2, False)
    with pytest.raises(ConfigError, match="new_length=5 with modality 'rgb'"):
        ClipSpec("rgb", new_length=5)
    with pytest.raises(ConfigError, match="'imagenet' does not apply to flow"):
        ClipSpec("flow", new_length=5, normalization="imagenet")
    with pytest.raises(ConfigError, match="batch_size=0"):
        build_dataset(prepared, "train", RGB, 0, True)
