"""The ready-clip layout of the device formats (TFLite, ONNX): normalisation inside the model,
sampling and crop outside.

    clip model       rgb clips  float32 [B, T, crop, crop, 3]    (0-255, sampled and
                     flow clips float32 [B, T, crop, crop, 2L]    centre-cropped as the
                                                                  `centre` evaluation does)
                     -> probabilities [B, K] (two-stream: the weighted fusion), logits
    streaming model  frame float32 [B, crop, crop, 3] + state_00 ... [B, h, w, fold]
                     -> logits, probabilities [B, K], state_00 ... (feed back)

B is 1 for TFLite (fixed shapes run best there) and any for ONNX (None: a dynamic batch).
A device's camera pipeline resizes and crops anyway; actrec.json says the layout, and
`actrec predict` samples and crops with actrec.export.serving's own functions
(ReadyClipModel, ReadyFrameStep).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from actrec.export.metadata import load_export_recipe
from actrec.export.parity import scaled_difference
from actrec.export.streaming_export import (
    FRAME_INPUT,
    state_name,
    state_signature,
    step_with_named_outputs,
    streaming_metadata,
)
from actrec.export.streams import INPUT_OF_MODALITY, ExportedStream

PROBE_BATCH = 2
"""The batch of the random probes of a model whose batch is not fixed."""


def clip_function(streams: Sequence[ExportedStream], fusion_weights, fusion_average, batch):
    """(function, input signature) of the clip model on ready clips of batch `batch`."""
    import tensorflow as tf

    fusion = None
    if len(streams) == 2:
        # Keras: lazily, the CLI reads the format registry before TensorFlow
        from actrec.models.fusion import WeightedScoreFusion

        fusion = WeightedScoreFusion(fusion_weights, fusion_average, dtype="float32")
    signature = [
        tf.TensorSpec(
            [batch, s.spec.num_segments, s.spec.crop_size, s.spec.crop_size, s.spec.channels],
            tf.float32,
            name=s.input_name,
        )
        for s in streams
    ]
    models = [stream.model for stream in streams]

    def serve(*clips):
        logits = [
            tf.cast(m(c, training=False), tf.float32) for m, c in zip(models, clips, strict=True)
        ]
        if fusion is None:
            return {"logits": logits[0], "probabilities": tf.nn.softmax(logits[0], axis=-1)}
        return {"probabilities": tf.cast(fusion(logits), tf.float32)}

    return serve, signature


def streaming_function(stream: ExportedStream, state_shapes: dict, batch):
    """(function, input signature) of the online TSM's step on a cropped frame."""
    import tensorflow as tf

    crop = stream.spec.crop_size
    signature = [tf.TensorSpec([batch, crop, crop, 3], tf.float32, name=FRAME_INPUT)]
    step = step_with_named_outputs(stream.model, state_shapes)
    return step, signature + state_signature(state_shapes, batch)


def model_function(request, batch) -> tuple[Callable, list, dict | None]:
    """(function, signature, state shapes or None) of what `request` exports."""
    if request.streaming:
        # Keras: lazily, the CLI reads the format registry before TensorFlow
        from actrec.models.streaming import streaming_state_shapes

        state_shapes = streaming_state_shapes(request.streams[0].model)
        function, signature = streaming_function(request.streams[0], state_shapes, batch)
        return function, signature, state_shapes
    function, signature = clip_function(
        request.streams, request.fusion_weights, request.fusion_average, batch
    )
    return function, signature, None


def probe_difference(function, signature, run: Callable, output: str, steps: int = 3) -> float:
    """The largest scaled difference (actrec.export.parity) of `output` over `steps` random
    probes, `run`(inputs by name) -> outputs by name being the exported model (a streaming
    model's states carried from step to step)."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    names = [spec.name for spec in signature]
    shapes = {
        spec.name: [PROBE_BATCH if size is None else size for size in spec.shape]
        for spec in signature
    }
    states = {name: np.zeros(shapes[name], np.float32) for name in names if "state_" in name}
    difference = 0.0
    for _ in range(steps):
        inputs = {
            name: rng.uniform(0, 255, shapes[name]).astype(np.float32)
            for name in names
            if name not in states
        }
        expected = function(*[tf.constant({**inputs, **states}[name]) for name in names])
        reloaded = run({**inputs, **states})
        difference = max(difference, scaled_difference(expected[output].numpy(), reloaded[output]))
        states = {name: expected[name].numpy() for name in states}
    return difference


def _layout(stream: ExportedStream) -> str:
    spec = stream.spec
    return (
        f"{spec.num_segments} frames sampled as the `centre` evaluation samples a clip "
        f"({spec.sampling} sampling), short side resized to {spec.eval_scale_size}, centre "
        f"{spec.crop_size} crop"
    )


def ready_clip_metadata(streams: Sequence[ExportedStream], state_shapes, batch) -> dict:
    """actrec.json's "inputs" and "outputs" of a ready-clip model (batch `batch`, None: "N")."""
    size = "N" if batch is None else batch
    if state_shapes is not None:
        crop = streams[0].spec.crop_size
        inputs = {
            FRAME_INPUT: {
                "dtype": "float32",
                "shape": [size, crop, crop, 3],
                "description": f"one RGB frame, 0-255, short side resized to "
                f"{streams[0].spec.eval_scale_size} and centre {crop} crop",
            }
        }
        for index, shape in enumerate(state_shapes.values()):
            inputs[state_name(index)] = {
                "dtype": "float32",
                "shape": [size, *shape],
                "description": "a shift's previous-frame fold (zeros to start; feed back the "
                "output of the same name)",
            }
        outputs = {"logits": f"float32 [{size}, K]", "probabilities": f"float32 [{size}, K]"}
        outputs.update({state_name(i): "the new state" for i in range(len(state_shapes))})
        return {"inputs": inputs, "outputs": outputs}
    inputs = {
        s.input_name: {
            "dtype": "float32",
            "shape": [
                size,
                s.spec.num_segments,
                s.spec.crop_size,
                s.spec.crop_size,
                s.spec.channels,
            ],
            "description": f"{_layout(s)}; "
            + (
                "RGB 0-255"
                if s.modality == "rgb"
                else "flow on the stored 0-255 scale (127.5 = no motion), channels "
                "[x0, y0, x1, y1, ...]"
            ),
        }
        for s in streams
    }
    outputs = {"probabilities": f"float32 [{size}, K]" + (" (fused)" if len(streams) == 2 else "")}
    if len(streams) == 1:
        outputs["logits"] = f"float32 [{size}, K]"
    return {"inputs": inputs, "outputs": outputs}


def ready_clip_entries(request, state_shapes, batch) -> dict:
    """actrec.json's "inputs", "outputs" and (for the online TSM's step) "streaming" of a
    ready-clip model of batch `batch`."""
    entries = ready_clip_metadata(request.streams, state_shapes, batch)
    if request.streaming:
        stream = request.streams[0]
        entries["streaming"] = streaming_metadata(stream, state_shapes, stream.run)["streaming"]
    return entries


def exported_clip_specs(model_dir: Path, metadata: dict) -> list:
    """The evaluation ClipSpec of each stream of an export, in stream order, from the
    recipes beside the model (what a ready-clip model's inputs are sampled and cropped by)."""
    # OpenCV: lazily, the CLI reads the format registry before TensorFlow
    from actrec.data.input.clip_spec import clip_spec

    return [
        clip_spec(load_export_recipe(model_dir, stream["recipe_file"]), training=False)
        for stream in metadata["streams"]
    ]


class ReadyClipModel:
    """A ready-clip model with its streams' specs: probabilities of whole decoded videos
    (uint8 by input name, as a SavedModel export takes them), one video at a time.
    run: inputs by name (float32 [1, ...]) -> outputs by name."""

    def __init__(self, run: Callable[[dict], dict], model_dir: Path, metadata: dict):
        self.run = run
        self.specs = exported_clip_specs(model_dir, metadata)

    def probabilities(self, inputs: dict) -> np.ndarray:
        """[N, K] of uint8 videos by name ("frames" [N, F, H, W, 3], "flow" [N, F-1, ...])."""
        import tensorflow as tf

        # Keras, OpenCV: lazily, the CLI reads the format registry before TensorFlow
        from actrec.export.serving import clips_from_flow, clips_from_frames

        rows = []
        count = len(next(iter(inputs.values())))
        for index in range(count):
            clips = {}
            for spec in self.specs:
                name = INPUT_OF_MODALITY[spec.modality]
                make = clips_from_frames if spec.modality == "rgb" else clips_from_flow
                clips[name] = make(tf.constant(inputs[name][index : index + 1]), spec).numpy()
            rows.append(self.run(clips)["probabilities"][0])
        return np.stack(rows)


class ReadyFrameStep:
    """A ready-clip streaming model as `actrec predict --stream` steps it: the frame
    resized and cropped here, then `run`(frame, states by name) -> outputs by name."""

    def __init__(self, run: Callable[[dict], dict], model_dir: Path, metadata: dict):
        self.run = run
        self.spec = exported_clip_specs(model_dir, metadata)[0]

    def __call__(self, frame: np.ndarray, states: dict) -> dict:
        """frame uint8 [1, H, W, 3]; states float32 by name."""
        import tensorflow as tf

        # OpenCV: lazily, the CLI reads the format registry before TensorFlow
        from actrec.data.input.clips import evaluation_crop

        crop = evaluation_crop(tf.cast(frame, tf.float32), self.spec).numpy()
        return self.run({"frame": crop, **states})
