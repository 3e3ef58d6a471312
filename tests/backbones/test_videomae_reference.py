"""actrec's Keras VideoMAE against transformers' own VideoMAEForVideoClassification: a tiny
random reference (every weight and bias drawn from a seed, query / value biases included)
saved as save_pretrained writes it (model.safetensors, pytorch_model.bin) and in the
authors' layout (fused qkv with q_bias / v_bias, MCG-NJU/VideoMAE's module names), read
back by actrec, converted and compared on fixed clips."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from actrec.backbones.videomae.build import feature_model, videomae_classifier  # noqa: E402
from actrec.backbones.videomae.convert import assign_weights, source_weights  # noqa: E402
from actrec.errors import WeightsError  # noqa: E402
from actrec.published.videomae_files import read_videomae_file  # noqa: E402

TOLERANCE = 1e-5
ATTENTION = "videomae.encoder.layer.0.attention.attention."


def reference(num_frames: int = 4, image_size: int = 32, seed: int = 0, **config):
    """A random VideoMAEForVideoClassification (eval mode): 2 blocks of width 32, 4 heads,
    5 classes; every parameter normal(0, 0.3) so biases and norms are not their zeros/ones."""
    torch.manual_seed(seed)
    settings = dict(
        image_size=image_size, patch_size=16, num_frames=num_frames, tubelet_size=2,
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        num_labels=5,
    )  # fmt: skip
    model = transformers.VideoMAEForVideoClassification(
        transformers.VideoMAEConfig(**{**settings, **config})
    ).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.3)
    return model


def clips(num_frames: int, image_size: int, count: int = 2) -> np.ndarray:
    """Fixed clips [count, T, H, W, 3] float32."""
    rng = np.random.default_rng(1)
    return rng.normal(size=(count, num_frames, image_size, image_size, 3)).astype(np.float32)


def reference_outputs(model, clip: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(logits [B, K], pooled features [B, D]) of the transformers model on channels-last
    clips (it takes [B, T, C, H, W])."""
    pixels = torch.from_numpy(clip.transpose(0, 1, 4, 2, 3).copy())
    with torch.no_grad():
        tokens = model.videomae(pixel_values=pixels).last_hidden_state
        features = model.fc_norm(tokens.mean(1))
        return model.classifier(features).numpy(), features.numpy()


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


def authors_state_dict(model) -> dict:
    """The reference's weights under the authors' module names (MCG-NJU/VideoMAE's
    VisionTransformer: qkv.weight stacks the query's, key's and value's rows; the query and
    value biases are parameters of their own)."""
    source = {key: value.clone() for key, value in model.state_dict().items()}
    state = {
        "patch_embed.proj.weight": source["videomae.embeddings.patch_embeddings.projection.weight"],
        "patch_embed.proj.bias": source["videomae.embeddings.patch_embeddings.projection.bias"],
        "fc_norm.weight": source["fc_norm.weight"],
        "fc_norm.bias": source["fc_norm.bias"],
        "head.weight": source["classifier.weight"],
        "head.bias": source["classifier.bias"],
    }
    for index in range(model.config.num_hidden_layers):
        hf, ours = f"videomae.encoder.layer.{index}.", f"blocks.{index}."
        attention = hf + "attention.attention."
        state[ours + "attn.qkv.weight"] = torch.cat(
            [source[attention + part + ".weight"] for part in ("query", "key", "value")]
        )
        state[ours + "attn.q_bias"] = source[attention + "query.bias"]
        state[ours + "attn.v_bias"] = source[attention + "value.bias"]
        for theirs, mine in (
            ("attention.output.dense", "attn.proj"),
            ("layernorm_before", "norm1"),
            ("layernorm_after", "norm2"),
            ("intermediate.dense", "mlp.fc1"),
            ("output.dense", "mlp.fc2"),
        ):
            for kind in ("weight", "bias"):
                state[f"{ours}{mine}.{kind}"] = source[f"{hf}{theirs}.{kind}"]
    return state


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
