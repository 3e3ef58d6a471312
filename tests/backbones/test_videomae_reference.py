"""actrec's Keras VideoMAE against transformers' own VideoMAEForVideoClassification: a tiny
random reference (every weight and bias drawn from a seed, query / value biases included)
saved as save_pretrained writes it (model.safetensors, pytorch_model.bin) and in the
authors' layout (fused qkv with q_bias / v_bias, MCG-NJU/VideoMAE's module names), read
back by actrec, converted and compared on fixed clips."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from videomae_reference import (  # noqa: E402
    authors_state_dict,
    clips,
    reference,
    reference_outputs,
)

from actrec.backbones.videomae.build import feature_model, videomae_classifier  # noqa: E402
from actrec.backbones.videomae.convert import assign_weights, source_weights  # noqa: E402
from actrec.errors import WeightsError  # noqa: E402
from actrec.published.videomae_files import read_videomae_file  # noqa: E402

TOLERANCE = 1e-5
ATTENTION = "videomae.encoder.layer.0.attention.attention."


def converted(path, num_frames: int, image_size: int, heads: int | None = None):
    """actrec's network for the file at `path`, as `actrec pretrained convert` builds it."""
    source = read_videomae_file(path)
    weights = source_weights(source.state_dict, path, source.config, heads)
    network = videomae_classifier(weights.spec, weights.num_classes, num_frames, (image_size,) * 2)
    assign_weights(network, weights)
    return network, weights


def assert_same_network(network, model, clip) -> None:
    """Logits, the difference between two clips' logits (a random network's logits barely
    depend on the clip) and the pooled features agree within TOLERANCE."""
    expected_logits, expected_features = reference_outputs(model, clip)
    logits = np.asarray(network(clip))
    features = np.asarray(feature_model(network)(clip))
    np.testing.assert_allclose(logits, expected_logits, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(
        logits[0] - logits[1], expected_logits[0] - expected_logits[1], atol=TOLERANCE, rtol=0
    )
    np.testing.assert_allclose(features, expected_features, atol=TOLERANCE, rtol=0)
    assert np.abs(expected_logits[0] - expected_logits[1]).max() > 100 * TOLERANCE


@pytest.mark.parametrize("safe_serialization", [True, False], ids=["safetensors", "bin"])
def test_a_huggingface_folder_converts_to_the_same_logits(tmp_path, safe_serialization):
    model = reference()
    model.save_pretrained(tmp_path, safe_serialization=safe_serialization)
    network, weights = converted(tmp_path, 4, 32)
    assert weights.layout == "huggingface" and weights.num_classes == 5
    assert (weights.spec.width, weights.spec.depth, weights.spec.heads) == (32, 2, 4)
    assert_same_network(network, model, clips(4, 32))


@pytest.mark.parametrize("num_frames, image_size", [(8, 48), (2, 16)])
def test_other_frame_counts_and_sizes_recompute_the_position_table(
    tmp_path, num_frames, image_size
):
    """transformers builds its table for the config's frames and size; actrec's network,
    built for the clip, has the same table (VideoMAE#58: 8 frames)."""
    model = reference(num_frames=num_frames, image_size=image_size)
    model.save_pretrained(tmp_path)
    network, _ = converted(tmp_path, num_frames, image_size)
    assert_same_network(network, model, clips(num_frames, image_size))


def test_the_authors_checkpoint_converts_to_the_same_logits(tmp_path):
    """A .pth as the authors' fine-tuning saves it ({"model": state dict, "epoch": ...}),
    LayerNorm epsilon 1e-6 throughout as in their code."""
    model = reference(layer_norm_eps=1e-6)
    model.fc_norm.eps = 1e-6
    path = tmp_path / "checkpoint-best.pth"
    torch.save({"model": authors_state_dict(model), "epoch": 29}, path)
    with pytest.raises(WeightsError, match="not a published VideoMAE size"):
        converted(path, 4, 32)  # no config.json: the heads of an unpublished size are unknown
    network, weights = converted(path, 4, 32, heads=4)
    assert weights.layout == "videomae"
    assert_same_network(network, model, clips(4, 32))


def test_the_query_and_value_biases_are_read_not_zeroed(tmp_path):
    """mteb#5094: a release loaded VideoMAE's query / value biases as zeros without an
    error. Zeroing them in the file changes actrec's logits (so they are read)."""
    model = reference()
    model.save_pretrained(tmp_path)
    network, _ = converted(tmp_path, 4, 32)
    clip = clips(4, 32)
    logits = np.asarray(network(clip))
    for part in ("query", "value"):
        layer = getattr(network.get_layer("block_0").attention, part)
        kernel, bias = layer.get_weights()
        assert np.abs(bias).min() > 0
        layer.set_weights([kernel, np.zeros_like(bias)])
    assert np.abs(np.asarray(network(clip)) - logits).max() > 1e-3


def test_a_non_finite_tensor_is_refused_by_its_name(tmp_path):
    """The file as read: safetensors' arrays pass actrec's value checks."""
    model = reference()
    with torch.no_grad():
        model.videomae.encoder.layer[1].output.dense.weight[0, 3] = float("nan")
    model.save_pretrained(tmp_path)
    with pytest.raises(WeightsError, match=r"layer\.1\.output\.dense\.weight"):
        read_videomae_file(tmp_path)


def test_a_tensor_that_does_not_fit_is_refused_by_its_name(tmp_path):
    state = {key: value.numpy() for key, value in reference().state_dict().items()}
    name = "videomae.encoder.layer.1.intermediate.dense.weight"
    state[name] = state[name][:, :16]
    weights = source_weights(state, tmp_path / "bad", reference().config.to_dict())
    network = videomae_classifier(weights.spec, weights.num_classes, 4, (32, 32))
    with pytest.raises(WeightsError, match=name.replace(".", r"\.")):
        assign_weights(network, weights)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: s.pop(f"{ATTENTION}value.weight"), "value.weight is missing"),
        (lambda s: s.update({"extra.weight": np.zeros(3, np.float32)}), "extra.weight"),
        (lambda s: [s.pop(k) for k in list(s) if "patch_embed" in k], "not a VideoMAE checkpoint"),
        (lambda s: s[f"{ATTENTION}query.bias"].fill(0), "query.bias is all zeros"),
    ],
    ids=["missing", "left-over", "another-network", "zero-query-bias"],
)  # fmt: skip
def test_a_file_of_another_shape_is_refused_with_a_named_tensor(tmp_path, change, message):
    state = {key: value.numpy() for key, value in reference().state_dict().items()}
    change(state)
    with pytest.raises(WeightsError, match=message):
        source_weights(state, tmp_path / "file", reference().config.to_dict())
