"""The streaming export of an online TSM (`actrec export RUN --streaming`): one frame in, the
prediction and the shift state out, as a stateless SavedModel signature.

    frame    uint8 [N, H, W, 3]           one decoded RGB frame of N streams, any size
    state_00 ... state_NN float32 [N, h, w, fold]   each shift's previous-frame fold (zeros
                                           start a stream; shapes in actrec.json)
      -> short side to scale_size, centre crop (the `centre` evaluation's crop)
      -> the online TSM's backbone and classifier on this frame, each shift taking the fold
         of the frame before from its state
      -> logits, probabilities [N, K]; state_00 ... the new states (feed them back)

Fed the T frames the clip model samples from a video, one per call, step t's logits are the
clip model's segment-t logits; their mean is the clip model's logits (TSN's average
consensus). The function holds no state, so it is servable, batchable (N streams at once)
and convertible (TFLite).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from actrec.backbones.registry import clip_family, clip_network
from actrec.data.format.manifest import read_manifest
from actrec.errors import ConfigError
from actrec.export.model_writers import SIGNATURE_NAME
from actrec.export.parity import scaled_difference
from actrec.export.saved_variables import export_module

FRAME_INPUT = "frame"
LOGITS = "logits"


def state_name(index: int) -> str:
    """The signature name of the index-th shift's state (in graph order)."""
    return f"state_{index:02d}"


def _is_stream_network(model) -> bool:
    """Whether a recipe's model config names a clip network that streams (a causal MoViNet,
    `movinet_a0_stream`)."""
    family = clip_family(model.architecture)
    if family is None or not family.clip_stream:
        return False
    return bool(getattr(clip_network(model.architecture, model.backbone), "streams", False))


def check_streamable(runs: list) -> None:
    """ConfigError unless `runs` is one RGB online TSM run or one causal clip network's
    (MoViNet's `_stream` sizes)."""
    if len(runs) != 1:
        raise ConfigError(
            "--streaming exports one run (an online TSM or a MoViNet stream); it cannot fuse two"
        )
    run = runs[0]
    model = run.recipe.model
    if run.modality == "rgb" and _is_stream_network(model):
        return
    if clip_family(model.architecture) is not None:
        raise ConfigError(
            f"{run.run_dir} is a {model.architecture} {model.backbone} run, which does not run "
            "frame by frame: a streaming export runs a causal MoViNet (model.backbone "
            "movinet_a0_stream ... movinet_a5_stream) or an online TSM"
        )
    if run.modality != "rgb" or model.architecture != "tsm" or model.shift_direction != "online":
        kind = f"{run.modality} {model.architecture.upper()}"
        if model.architecture == "tsm":
            kind += f" with model.shift_direction={model.shift_direction}"
        raise ConfigError(
            f"{run.run_dir} is not an online TSM (it is an {kind}): a streaming export runs "
            "an RGB TSM trained with model.shift_direction=online, e.g. `actrec train "
            "--recipe synthetic-tsm-online` or `--set model.shift_direction=online` on a TSM "
            "recipe"
        )


def frames_per_step(run) -> int | None:
    """Source frames between two streamed frames that matches training: data.frame_interval
    with dense sampling (consecutive or strided frames: a MoViNet's clip), else the median
    training video's frames over num_segments (TSN sampling spreads the segments over the
    video); None when the prepared data is not there to say."""
    if run.recipe.data.sampling == "dense":
        return int(run.recipe.data.frame_interval)
    data_dir = run.data_dir
    if data_dir is None or not Path(data_dir).is_dir():
        return None
    try:
        videos = read_manifest(Path(data_dir))["videos"]
    except Exception:  # a moved or damaged folder only loses this hint
        return None
    frames = [v["frames"] for v in videos if v.get("split") == "train" and v.get("status") == "ok"]
    if not frames:
        return None
    return max(1, round(statistics.median(frames) / run.recipe.data.num_segments))


def step_with_named_outputs(model, state_shapes: dict):
    """The online TSM's stateless step as a signature body: (frames float32 [N, crop, crop,
    3], state tensors in state_shapes' order) -> {logits, probabilities, state_00, ...}."""
    import tensorflow as tf

    # Keras: lazily, the CLI reads the format registry before TensorFlow
    from actrec.models.streaming import streaming_step

    step = streaming_step(model)
    names = list(state_shapes)  # shift layer names, graph order

    def named_step(frames, *states):
        logits, new_states = step(frames, dict(zip(names, states, strict=True)))
        logits = tf.cast(logits, tf.float32)
        outputs = {LOGITS: logits, "probabilities": tf.nn.softmax(logits, axis=-1)}
        for index, name in enumerate(names):
            outputs[state_name(index)] = tf.cast(new_states[name], tf.float32)
        return outputs

    return named_step


def state_signature(state_shapes: dict, batch: int | None) -> list:
    """The states' TensorSpecs (state_00, ...), batch `batch` (None: any)."""
    import tensorflow as tf

    return [
        tf.TensorSpec([batch, *shape], tf.float32, name=state_name(index))
        for index, shape in enumerate(state_shapes.values())
    ]


def build_streaming_serving(model, spec, state_shapes: dict):
    """(serving function, input signature) of the stateless step (see the module)."""
    import tensorflow as tf

    # OpenCV: lazily, the CLI reads the format registry before TensorFlow
    from actrec.data.input.clips import evaluation_crop

    named_step = step_with_named_outputs(model, state_shapes)

    def serve(frame, *states):
        frame = tf.ensure_shape(frame, [None, None, None, 3])
        crops = evaluation_crop(tf.cast(frame, tf.float32), spec)  # [N, crop, crop, 3]
        return named_step(crops, *states)

    signature = [tf.TensorSpec([None, None, None, 3], tf.uint8, name=FRAME_INPUT)]
    return serve, signature + state_signature(state_shapes, None)


def write_streaming_savedmodel(stream, folder: Path) -> tuple[float, dict]:
    """Write the streaming SavedModel into `folder`; returns (the reload difference of the
    logits over 3 probe frames, the state shapes by shift name)."""
    import numpy as np
    import tensorflow as tf

    # Keras: lazily, the CLI reads the format registry before TensorFlow
    from actrec.models.streaming import streaming_state_shapes

    model = stream.model
    state_shapes = streaming_state_shapes(model)
    serve, signature = build_streaming_serving(model, stream.spec, state_shapes)
    module = export_module("actrec_streaming_export", [model])
    module.serve = tf.function(serve, input_signature=signature, autograph=False)
    tf.saved_model.save(module, str(folder), signatures={SIGNATURE_NAME: module.serve})

    loaded = tf.saved_model.load(str(folder)).signatures[SIGNATURE_NAME]
    rng = np.random.default_rng(0)
    size = stream.spec.eval_scale_size + 5
    frames = rng.integers(0, 256, (3, 2, size, size * 4 // 3 + 1, 3), dtype=np.uint8)
    states = [np.zeros((2, *shape), np.float32) for shape in state_shapes.values()]
    reloaded_states = list(states)
    difference = 0.0
    for frame in frames:  # three steps: the states carry over
        expected = module.serve(tf.constant(frame), *[tf.constant(s) for s in states])
        named = {state_name(i): tf.constant(s) for i, s in enumerate(reloaded_states)}
        reloaded = loaded(frame=tf.constant(frame), **named)
        difference = max(
            difference, scaled_difference(expected[LOGITS].numpy(), reloaded[LOGITS].numpy())
        )
        states = [expected[state_name(i)].numpy() for i in range(len(states))]
        reloaded_states = [reloaded[state_name(i)].numpy() for i in range(len(states))]
    return difference, state_shapes


def streaming_metadata(stream, state_shapes: dict, run) -> dict:
    """actrec.json's "streaming" entry, "inputs" and "outputs" of a streaming export.
    "logits": "segment" (an online TSM: average the last num_segments steps) or "clip" (a
    causal clip network: each step's logits are already the clip model's on every frame so
    far)."""
    spec = stream.spec
    kind = "clip" if _is_stream_network(run.recipe.model) else "segment"
    key = "shift" if kind == "segment" else "state"
    states = [
        {"input": state_name(i), key: name, "shape": ["N", *shape], "dtype": "float32"}
        for i, (name, shape) in enumerate(state_shapes.items())
    ]
    inputs = {
        FRAME_INPUT: {
            "dtype": "uint8",
            "shape": ["N", "H", "W", 3],
            "description": "one decoded RGB frame of each of N streams, any resolution "
            f"(short side resized to {spec.eval_scale_size}, centre {spec.crop_size} crop "
            "inside the model)",
        }
    }
    for state in states:
        what = (
            f"the previous frame's fold of shift {state['shift']}"
            if kind == "segment"
            else f"the network's state {state['state']} after the frames before"
        )
        inputs[state["input"]] = {
            "dtype": "float32",
            "shape": state["shape"],
            "description": f"{what} (zeros to start a stream; feed back the output of the "
            "same name)",
        }
    logits = (
        "float32 [N, K]: this frame's logits (the clip model's segment logits; their mean over "
        "the last num_segments frames is the clip model's)"
        if kind == "segment"
        else "float32 [N, K]: the clip model's logits on every frame since the stream started"
    )
    outputs = {
        LOGITS: logits,
        "probabilities": "float32 [N, K]: softmax of this frame's logits",
        **{state["input"]: "float32: the new state, for the next frame" for state in states},
    }
    entry = {
        "frame_input": FRAME_INPUT,
        "states": states,
        "num_segments": spec.num_segments,
        "frames_per_step": frames_per_step(run),
        "logits": kind,
    }
    return {"streaming": entry, "inputs": inputs, "outputs": outputs}
