"""The probe's feature cache (actrec.train.probe.feature_cache, cache_key): a file is used
only under its own key and bytes; anything else is a miss with a line naming the file."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

from actrec.train.probe.cache_key import CacheKey, backbone_digest
from actrec.train.probe.feature_cache import (
    SplitFeatures,
    read_split_features,
    split_files,
    write_split_features,
)

VIEW = {"num_segments": 16, "crop_size": 224, "num_clips": 1}
KEY = CacheKey("b" * 64, VIEW, "train", "d" * 64)
FEATURES = SplitFeatures(
    np.arange(24, dtype=np.float32).reshape(4, 2, 3), np.array([0, 1, 1, 0]), np.array(list("abcd"))
)


@pytest.fixture
def cached(tmp_path):
    folder = tmp_path / KEY.folder_name
    write_split_features(folder, KEY, FEATURES)
    return folder


def test_a_file_under_its_own_key_is_read_back_as_written(cached):
    lookup = read_split_features(cached, KEY)
    assert lookup.reason is None
    np.testing.assert_array_equal(lookup.features.features, FEATURES.features)
    np.testing.assert_array_equal(lookup.features.labels, FEATURES.labels)
    assert list(lookup.features.video_ids) == list("abcd")
    record = json.loads(split_files(cached, "train")[1].read_text())
    assert (record["videos"], record["views"], record["width"]) == (4, 2, 3)
    assert record["key"] == KEY.to_json()


def test_no_cache_yet_is_a_miss_without_a_line(tmp_path):
    lookup = read_split_features(tmp_path / KEY.folder_name, KEY)
    assert (lookup.features, lookup.reason) == (None, None)


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"data": "e" * 64}, "was computed from other prepared data: recomputing it"),
        (
            {"backbone": "c" * 64},
            "was computed with another backbone (other weights or network): recomputing it",
        ),
        ({"view": {**VIEW, "num_clips": 2}}, "was computed for another view: recomputing it"),
    ],
)
def test_a_file_of_another_key_is_recomputed_with_the_reason(cached, changed, said):
    key = CacheKey(**{**KEY.to_json(), **changed})
    lookup = read_split_features(cached, key)
    assert lookup.features is None
    assert lookup.reason == f"{split_files(cached, 'train')[0]} {said}"


def test_the_folder_is_named_by_the_backbone_and_the_view_not_the_data():
    names = {
        CacheKey(**{**KEY.to_json(), **changed}).folder_name
        for changed in ({}, {"data": "e" * 64}, {"split": "val"})
    }
    assert names == {KEY.folder_name}
    assert CacheKey(**{**KEY.to_json(), "backbone": "c" * 64}).folder_name != KEY.folder_name
    assert CacheKey(**{**KEY.to_json(), "view": {}}).folder_name != KEY.folder_name


def test_damaged_bytes_a_cut_record_and_a_missing_file_are_each_named(cached):
    arrays, record = split_files(cached, "train")
    payload = bytearray(arrays.read_bytes())
    payload[-30] ^= 0xFF
    arrays.write_bytes(bytes(payload))
    assert read_split_features(cached, KEY).reason.startswith(f"{arrays} is damaged (SHA-256 ")
    arrays.unlink()
    assert read_split_features(cached, KEY).reason == f"{arrays} is missing: recomputing it"
    record.write_text('{"key": ', encoding="utf-8")
    reason = read_split_features(cached, KEY).reason
    assert reason.startswith(f"{record} cannot be read (") and reason.endswith("recomputing it")


def test_a_rewrite_replaces_both_files(cached):
    other = SplitFeatures(FEATURES.features + 1, FEATURES.labels, FEATURES.video_ids)
    write_split_features(cached, KEY, other)
    np.testing.assert_array_equal(
        read_split_features(cached, KEY).features.features, other.features
    )
    assert sorted(path.name for path in cached.iterdir()) == ["train.json", "train.npz"]


def _network(seed: int) -> keras.Model:
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((4,))
    return keras.Model(inputs, keras.layers.Dense(3)(keras.layers.Dense(5)(inputs)))


def test_the_backbone_digest_follows_the_weights_and_settings_not_keras_names():
    first, again = _network(0), _network(0)  # the second's layers are numbered on
    settings = {"backbone": "test_videomae"}
    assert backbone_digest(first, settings) == backbone_digest(again, settings)
    assert backbone_digest(first, settings) != backbone_digest(first, {"backbone": "videomae_s"})
    kernel = again.layers[1].kernel
    kernel.assign(kernel.numpy() + np.eye(4, 5, dtype=np.float32) * 1e-3)
    assert backbone_digest(first, settings) != backbone_digest(again, settings)
