"""Published VideoMAE weights as the Keras network's arrays, every tensor mapped by name
and its shape checked.

Two layouts (VideoMAE V2's ViTs use the authors' module, so the authors' layout):

    Hugging Face (transformers' VideoMAEForVideoClassification, config.json beside it)
        videomae.embeddings.patch_embeddings.projection.{weight,bias}
        videomae.encoder.layer.N.layernorm_before / layernorm_after
        videomae.encoder.layer.N.attention.attention.{query,key,value}  (no key bias)
        videomae.encoder.layer.N.attention.output.dense
        videomae.encoder.layer.N.intermediate.dense / output.dense
        fc_norm (or videomae.layernorm), classifier
    the authors' (MCG-NJU/VideoMAE, OpenGVLab/VideoMAEv2 modeling_finetune.py)
        patch_embed.proj, blocks.N.norm1 / norm2, blocks.N.attn.qkv.weight [3D, D] (query,
        key, value stacked) with blocks.N.attn.q_bias / v_bias, blocks.N.attn.proj,
        blocks.N.mlp.fc1 / fc2, blocks.N.gamma_1 / gamma_2 (layer scale), fc_norm (or norm),
        head; pre-training files name the encoder's tensors `encoder.*` (no head)

The result maps a Keras weight path ("block_3/attention/query") to its arrays in the
layer's order; `assign_weights` sets them, refusing any shape that does not fit by the
source tensor's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from actrec.backbones.spec import ClipConversion
from actrec.backbones.videomae.spec import VIDEOMAE_SPECS, VideoMAESpec
from actrec.errors import WeightsError

HUGGINGFACE, AUTHORS = "huggingface", "videomae"
_HF_BLOCK = "videomae.encoder.layer.{}."
_HF_PATCH = "videomae.embeddings.patch_embeddings.projection."
_AUTHORS_PREFIXES = ("module.", "encoder.")
PUBLISHED_SIZES = tuple(s for s in VIDEOMAE_SPECS.values() if not s.name.startswith("test_"))
"""The sizes a file's width and depth are matched against (not the test network's)."""


@dataclass(frozen=True)
class SourceWeights:
    """A published file's weights for the Keras network.

    spec: the encoder's shape, read from the tensors (and config.json's heads / epsilons
        where the source has one); num_classes: the head's classes (0 without a head);
    arrays: Keras weight path -> arrays in the layer's weight order (Dense [kernel [in, out],
        bias], LayerNormalization [gamma, beta], Conv3D [kernel [t, h, w, in, out], bias]);
    sources: Keras weight path -> the source tensor names they came from (for messages);
    layout: HUGGINGFACE or AUTHORS.
    """

    spec: VideoMAESpec
    num_classes: int
    arrays: dict[str, list[np.ndarray]]
    sources: dict[str, list[str]]
    layout: str


def source_layout(state_dict: dict[str, np.ndarray], path: Path | str) -> str:
    """Which layout a state dict is in; WeightsError naming the file when it is neither."""
    if _HF_PATCH + "weight" in state_dict:
        return HUGGINGFACE
    if any(_authors_key(key) == "patch_embed.proj.weight" for key in state_dict):
        return AUTHORS
    raise WeightsError(
        f"{path}: not a VideoMAE checkpoint: it has neither {_HF_PATCH}weight (Hugging Face) nor "
        "patch_embed.proj.weight (the authors' layout); give a VideoMAE or VideoMAE V2 file"
    )


def source_weights(
    state_dict: dict[str, np.ndarray],
    path: Path | str,
    config: dict | None = None,
    heads: int | None = None,
) -> SourceWeights:
    """The Keras arrays of a VideoMAE state dict (PyTorch layout, as read by
    actrec.published.torch_files or safetensors); `config` is Hugging Face's config.json;
    `heads` the attention heads of a file that is no published size and has no config.
    WeightsError naming the file and tensor when one is missing, has a shape that does not
    fit, or is left over."""
    layout = source_layout(state_dict, path)
    if layout == AUTHORS:
        state_dict = {_authors_key(key): value for key, value in state_dict.items()}
    names = _HF_NAMES if layout == HUGGINGFACE else _AUTHORS_NAMES
    spec = _spec_from_tensors(state_dict, names, path, config, heads)
    tensor = _Tensors(state_dict, path, spec.name)
    arrays, sources = _mapped_arrays(tensor, names, spec, layout)
    head = names["head"] + "weight"
    num_classes = int(state_dict[head].shape[0]) if head in state_dict else 0
    if num_classes:
        arrays["classifier"] = [tensor(head).T, tensor(names["head"] + "bias")]
        sources["classifier"] = [head, names["head"] + "bias"]
    left = sorted(set(state_dict) - tensor.taken - set(_IGNORED))
    left = [key for key in left if not key.startswith(_IGNORED_PREFIXES)]
    if left:
        raise WeightsError(
            f"{path}: {len(left)} tensors do not belong to a {spec.name} video classifier "
            f"({', '.join(left[:4])}{', ...' if len(left) > 4 else ''}); is it another network?"
        )
    return SourceWeights(spec, num_classes, arrays, sources, layout)


def recognises(state_dict: dict) -> bool:
    """Whether a state dict's keys are a VideoMAE's, in either layout."""
    return _HF_PATCH + "weight" in state_dict or any(
        _authors_key(key) == "patch_embed.proj.weight" for key in state_dict
    )


SHAPE_FIELDS = (
    "width", "depth", "heads", "mlp_width", "patch_size", "tubelet_size",
    "layer_norm_epsilon", "head_norm_epsilon", "query_value_bias", "mean_pooling",
    "layer_scale",
)  # fmt: skip
"""The fields of a size its weights decide (a recipe's model.network may set them)."""


def recipe_conversion(
    state_dict: dict, path, config: dict | None = None, heads: int | None = None
) -> ClipConversion:
    """What a recipe needs of a VideoMAE file (the registry's clip_converter contract,
    actrec.backbones.spec.ClipConversion): the registered size it is (the published size
    of its width and depth, else the nearest in width), the fields it differs in, its
    classes, and the function that sets a built network's weights."""
    weights = source_weights(state_dict, path, config, heads)
    spec = weights.spec
    base = next(
        (s for s in PUBLISHED_SIZES if (s.width, s.depth) == (spec.width, spec.depth)),
        min(PUBLISHED_SIZES, key=lambda s: abs(s.width - spec.width)),
    )
    settings = tuple(
        f"{name}={getattr(spec, name)}"
        for name in SHAPE_FIELDS
        if getattr(spec, name) != getattr(base, name)
    )
    frames = int(config.get("num_frames", base.default_num_frames)) if config else None
    size = int(config.get("image_size", base.default_input_size)) if config else None
    return ClipConversion(
        backbone=base.name,
        network=settings,
        num_classes=weights.num_classes,
        layout=weights.layout,
        num_frames=frames or base.default_num_frames,
        input_size=size or base.default_input_size,
        assign=lambda model: assign_weights(model, weights),
    )


def assign_weights(model, weights: SourceWeights) -> None:
    """Sets every layer's arrays from `weights` (a model of videomae_classifier with the same
    spec); WeightsError naming the source tensor when a shape does not fit."""
    for path, arrays in weights.arrays.items():
        layer = _keras_layer(model, path)
        expected = [tuple(variable.shape) for variable in layer.weights]
        if path.endswith("_scale"):
            expected = [tuple(layer.shape)]
        got = [tuple(array.shape) for array in arrays]
        if expected != got:
            names = ", ".join(weights.sources.get(path, [path]))
            raise WeightsError(
                f"{names}: shape {got} does not fit the network's {path} {expected}; "
                "the file is another size of VideoMAE than its tensors' count says"
            )
        if path.endswith("_scale"):
            layer.assign(arrays[0])
        else:
            layer.set_weights(arrays)


_HF_NAMES = {
    "patch": _HF_PATCH,
    "block": _HF_BLOCK,
    "norm_before": "layernorm_before.",
    "norm_after": "layernorm_after.",
    "mlp_in": "intermediate.dense.",
    "mlp_out": "output.dense.",
    "projection": "attention.output.dense.",
    "fc_norm": "fc_norm.",
    "norm": "videomae.layernorm.",
    "head": "classifier.",
}
_AUTHORS_NAMES = {
    "patch": "patch_embed.proj.",
    "block": "blocks.{}.",
    "norm_before": "norm1.",
    "norm_after": "norm2.",
    "mlp_in": "mlp.fc1.",
    "mlp_out": "mlp.fc2.",
    "projection": "attn.proj.",
    "fc_norm": "fc_norm.",
    "norm": "norm.",
    "head": "head.",
}
_IGNORED = ("videomae.embeddings.position_embeddings", "pos_embed")
"""Fixed sinusoid tables some files store: recomputed for the clip's size instead."""
_IGNORED_PREFIXES = ("decoder.", "encoder_to_decoder.", "mask_token")
"""A pre-training file's decoder: not part of the classifier."""


class _Tensors:
    """The state dict's tensors as float32, by name; remembers which were taken, so that
    what is left over can be named."""

    def __init__(self, state_dict: dict[str, np.ndarray], path, network: str):
        self.state_dict, self.path, self.network = state_dict, path, network
        self.taken: set[str] = set()

    def has(self, name: str) -> bool:
        return name in self.state_dict

    def __call__(self, name: str) -> np.ndarray:
        if name not in self.state_dict:
            raise WeightsError(
                f"{self.path}: tensor {name} is missing (a {self.network} file has it)"
            )
        self.taken.add(name)
        return np.asarray(self.state_dict[name], dtype=np.float32)

    def bias(self, name: str) -> np.ndarray:
        """A query / value bias, refused when all zeros: no trained VideoMAE has one, and a
        transformers release wrote such files from checkpoints whose biases it had dropped
        (mteb#5094), so a zero bias is a damaged file, not a network."""
        values = self(name)
        if values.size and not np.any(values):
            raise WeightsError(
                f"{self.path}: tensor {name} is all zeros, which no trained VideoMAE's is: the "
                "file was likely saved by a loader that dropped the query / value biases "
                "(transformers, mteb#5094); download the original file again"
            )
        return values


def _authors_key(key: str) -> str:
    for prefix in _AUTHORS_PREFIXES:
        if key.startswith(prefix):
            key = key[len(prefix) :]
    return key


def _spec_from_tensors(state, names, path, config, heads) -> VideoMAESpec:
    patch_name = names["patch"] + "weight"
    patch = state[patch_name]  # [D, 3, tubelet, patch, patch]; source_layout checked it is there
    if len(patch.shape) != 5 or patch.shape[3] != patch.shape[4]:
        raise WeightsError(
            f"{path}: tensor {patch_name} has shape {list(patch.shape)}, not a tubelet "
            "embedding [width, 3, tubelet, patch, patch]; is it an image ViT, not a VideoMAE?"
        )
    block = re.compile(re.escape(names["block"]).replace(r"\{\}", r"(\d+)"))
    depth = 1 + max((int(m.group(1)) for k in state if (m := block.match(k))), default=-1)
    mlp_name = names["block"].format(0) + names["mlp_in"] + "weight"
    if depth and mlp_name not in state:
        raise WeightsError(f"{path}: tensor {mlp_name} is missing (every VideoMAE block has it)")
    width = int(patch.shape[0])
    mlp_width = int(state[mlp_name].shape[0]) if depth else 0
    known = [s for s in PUBLISHED_SIZES if (s.width, s.depth) == (width, depth)]
    if heads is None and config:
        if not isinstance(config.get("num_attention_heads"), int):
            raise WeightsError(
                f"{path}: its config.json has no whole num_attention_heads (got "
                f"{config.get('num_attention_heads')!r}); download the model's config.json again"
            )
        heads = config["num_attention_heads"]
    if heads is None:
        heads = known[0].heads if known else 0
    if not heads:
        raise WeightsError(
            f"{path}: {depth} blocks of width {width} is not a published VideoMAE size "
            f"({', '.join(f'{s.name} {s.width}x{s.depth}' for s in PUBLISHED_SIZES)}); "
            "give its config.json (Hugging Face layout) or its number of attention heads (--heads)"
        )
    base = (
        known[0]
        if known
        else VideoMAESpec(f"videomae_{width}x{depth}", width, depth, heads, mlp_width)
    )
    if width % heads:
        raise WeightsError(
            f"{path}: width {width} ({patch_name}) is not a multiple of {heads} attention heads; "
            "give the file's own number of heads"
        )
    spec = replace(
        base,
        width=width,
        depth=depth,
        heads=heads,
        mlp_width=mlp_width,
        tubelet_size=int(patch.shape[2]),
        patch_size=int(patch.shape[3]),
        query_value_bias=_has_query_bias(state, names),
        mean_pooling=names["fc_norm"] + "weight" in state,
        layer_scale=1.0 if names["block"].format(0) + "gamma_1" in state else 0.0,
    )
    if config:  # Hugging Face: the blocks' epsilon from config.json, fc_norm's torch default
        spec = replace(
            spec,
            layer_norm_epsilon=float(config.get("layer_norm_eps", 1e-12)),
            head_norm_epsilon=1e-5,
        )
    return spec


def _has_query_bias(state, names) -> bool:
    first = names["block"].format(0)
    names = ("attention.attention.query.bias", "attention.attention.q_bias", "attn.q_bias")
    return any(first + name in state for name in names)


def _mapped_arrays(tensor, names, spec: VideoMAESpec, layout: str):
    arrays: dict[str, list[np.ndarray]] = {}
    sources: dict[str, list[str]] = {}

    def dense(keras_path: str, source: str, bias: bool = True) -> None:
        keys = [source + "weight"] + ([source + "bias"] if bias else [])
        values = [tensor(key) for key in keys]
        arrays[keras_path] = [values[0].T, *values[1:]]
        sources[keras_path] = keys

    def norm(keras_path: str, source: str) -> None:
        keys = [source + "weight", source + "bias"]
        arrays[keras_path], sources[keras_path] = [tensor(key) for key in keys], keys

    keys = [names["patch"] + "weight", names["patch"] + "bias"]
    arrays["patch_embedding"] = [tensor(keys[0]).transpose(2, 3, 4, 1, 0), tensor(keys[1])]
    sources["patch_embedding"] = keys
    for index in range(spec.depth):
        block, prefix = f"block_{index}", names["block"].format(index)
        norm(f"{block}/norm_before", prefix + names["norm_before"])
        norm(f"{block}/norm_after", prefix + names["norm_after"])
        if layout == HUGGINGFACE:
            _huggingface_attention(tensor, arrays, sources, block, prefix, spec)
        else:
            _split_authors_attention(tensor, arrays, sources, block, prefix, spec)
        dense(f"{block}/attention/projection", prefix + names["projection"])
        dense(f"{block}/mlp_in", prefix + names["mlp_in"])
        dense(f"{block}/mlp_out", prefix + names["mlp_out"])
        if spec.layer_scale:
            for keras_name, source in (("attention_scale", "gamma_1"), ("mlp_scale", "gamma_2")):
                arrays[f"{block}/{keras_name}"] = [tensor(prefix + source)]
                sources[f"{block}/{keras_name}"] = [prefix + source]
    if spec.mean_pooling:
        norm("fc_norm", names["fc_norm"])
    else:
        norm("norm", names["norm"])
    return arrays, sources


def _huggingface_attention(tensor, arrays, sources, block, prefix, spec) -> None:
    """Hugging Face's query, key and value projections. The files on the Hub (and what
    transformers 5 writes) keep the biases as attention.attention.q_bias / v_bias, the
    module's own names of transformers 4; transformers 5's module calls them query.bias /
    value.bias (mteb#5094: a release read the former as zeros). Either is taken, the file's
    own tensor, never a zero."""
    attention = prefix + "attention.attention."
    for part, legacy in (("query", "q_bias"), ("key", None), ("value", "v_bias")):
        keys = [f"{attention}{part}.weight"]
        if spec.query_value_bias and legacy:
            keys.append(
                f"{attention}{legacy}"
                if tensor.has(f"{attention}{legacy}")
                else f"{attention}{part}.bias"
            )
        values = [tensor(keys[0]).T] + [tensor.bias(key) for key in keys[1:]]
        arrays[f"{block}/attention/{part}"] = values
        sources[f"{block}/attention/{part}"] = keys


def _split_authors_attention(tensor, arrays, sources, block, prefix, spec) -> None:
    """The authors' fused projection qkv.weight [3D, D] as query, key and value: its rows
    are the query's, the key's, then the value's (their forward pass reshapes the product
    to [B, N, 3, heads, D / heads]), its bias torch.cat(q_bias, zeros, v_bias)."""
    fused = tensor(prefix + "attn.qkv.weight")
    if fused.shape != (3 * spec.width, spec.width):
        raise WeightsError(
            f"{prefix}attn.qkv.weight: shape {list(fused.shape)}, expected "
            f"[{3 * spec.width}, {spec.width}] (query, key and value of width {spec.width})"
        )
    query, key, value = np.split(fused, 3, axis=0)
    arrays[f"{block}/attention/key"] = [key.T]
    sources[f"{block}/attention/key"] = [prefix + "attn.qkv.weight"]
    for part, rows, bias in (("query", query, "q_bias"), ("value", value, "v_bias")):
        values = [rows.T] + (
            [tensor.bias(prefix + "attn." + bias)] if spec.query_value_bias else []
        )
        arrays[f"{block}/attention/{part}"] = values
        sources[f"{block}/attention/{part}"] = [prefix + "attn.qkv.weight", prefix + "attn." + bias]


def _keras_layer(model, path: str):
    """The layer (or, for a layer scale, the variable) a Keras weight path names."""
    parts = path.split("/")
    found = model.get_layer(parts[0])
    for part in parts[1:]:
        found = getattr(found, part)
    return found
