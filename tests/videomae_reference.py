"""transformers' own VideoMAEForVideoClassification as the reference of actrec's VideoMAE
conversion (tests/backbones/test_videomae_reference.py: the network;
tests/backbones/test_videomae_convert.py: `actrec pretrained convert`): a tiny random model,
fixed clips, its outputs, and its weights under the authors' module names."""

from __future__ import annotations

import numpy as np
import torch
import transformers


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
