"""TFLite exports (`actrec export RUN --format tflite [--quantize ...]`): model.tflite for
phones and small devices, written and run.

    clip model       rgb clips  float32 [1, T, crop, crop, 3]    (0-255, sampled and
                     flow clips float32 [1, T, crop, crop, 2L]    centre-cropped as the
                                                                  `centre` evaluation does)
                     -> probabilities [1, K] (two-stream: the weighted fusion), logits
    streaming model  frame float32 [1, crop, crop, 3] + state_00 ... [1, h, w, fold]
                     -> logits, probabilities [1, K], state_00 ... (feed back)

The normalisation is inside; the sampling and the crop are outside, because a device's
camera pipeline resizes and crops anyway, and TFLite runs fixed shapes best (actrec.json
says the layout; `actrec predict` does both with actrec.export.serving's own functions).

Conversion goes through keras.export.ExportArchive and TFLiteConverter.from_saved_model, the
route Keras 3 documents (a tf.Module's SavedModel of a Keras 3 model converts without its
variables' values).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from actrec.errors import ConfigError

TFLITE_FILE = "model.tflite"
QUANTIZATIONS = ("none", "float16", "dynamic")
"""none: float32; float16: float16 weights; dynamic: int8 weights, float activations."""
FLOAT_TOLERANCE = 1e-4


def check_quantize(quantize: str) -> None:
    if quantize not in QUANTIZATIONS:
        raise ConfigError(
            f"--quantize {quantize!r} is not valid; choose one of: {', '.join(QUANTIZATIONS)} "
            "(float16 halves the file, dynamic quarters it with int8 weights)"
        )


def converted(function, input_signature: list, models: Sequence, quantize: str) -> bytes:
    """The TFLite flatbuffer of `function` (tensors by `input_signature` -> dict of
    tensors) over `models`' weights, quantised as asked."""
    import keras
    import tensorflow as tf

    check_quantize(quantize)
    with tempfile.TemporaryDirectory(prefix="actrec-tflite-") as folder:
        archive = keras.export.ExportArchive()
        for model in models:
            archive.track(model)
        archive.add_endpoint("serve", function, input_signature=input_signature)
        archive.write_out(folder, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(folder)
        converter.experimental_enable_resource_variables = True
        if quantize != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        return converter.convert()


def clip_function(streams, models: list, fusion_weights, fusion_average: str):
    """(function, input signature) of a clip model on ready clips, batch 1."""
    import tensorflow as tf

    from actrec.export.serving import INPUT_OF_MODALITY

    fusion = None
    if len(models) == 2:
        from actrec.models.fusion import WeightedScoreFusion

        fusion = WeightedScoreFusion(fusion_weights, fusion_average, dtype="float32")
    signature = [
        tf.TensorSpec(
            [1, s.spec.num_segments, s.spec.crop_size, s.spec.crop_size, s.spec.channels],
            tf.float32,
            name=INPUT_OF_MODALITY[s.modality],
        )
        for s in streams
    ]

    def serve(*clips):
        logits = [
            tf.cast(m(c, training=False), tf.float32) for m, c in zip(models, clips, strict=True)
        ]
        if fusion is None:
            return {"logits": logits[0], "probabilities": tf.nn.softmax(logits[0], axis=-1)}
        return {"probabilities": tf.cast(fusion(logits), tf.float32)}

    return serve, signature


def streaming_function(stream, model, state_shapes: dict):
    """(function, input signature) of the streaming step on a cropped frame, batch 1."""
    import tensorflow as tf

    from actrec.export.streaming_export import (
        FRAME_INPUT,
        state_signature,
        step_with_named_outputs,
    )

    crop = stream.spec.crop_size
    signature = [tf.TensorSpec([1, crop, crop, 3], tf.float32, name=FRAME_INPUT)]
    return step_with_named_outputs(model, state_shapes), signature + state_signature(
        state_shapes, 1
    )


class TfliteRunner:
    """A model.tflite (or its bytes), loaded: call it with its inputs by name (numpy arrays)
    for its outputs by name. num_threads: the interpreter's threads (None: its default)."""

    def __init__(
        self,
        path: Path | str | None = None,
        content: bytes | None = None,
        num_threads: int | None = None,
    ):
        import warnings

        import tensorflow as tf

        # tf.lite's interpreter, as TensorFlow ships it; its deprecation notice points to
        # LiteRT (pip install ai-edge-litert: ai_edge_litert.interpreter.Interpreter takes
        # the same arguments), which a phone runs and actrec does not need.
        Interpreter = tf.lite.Interpreter  # noqa: N806
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if content is not None:
                interpreter = Interpreter(model_content=content, num_threads=num_threads)
            else:
                interpreter = Interpreter(model_path=str(path), num_threads=num_threads)
        self._runner = interpreter.get_signature_runner()

    def __call__(self, **inputs) -> dict:
        return self._runner(**{name: np.asarray(value) for name, value in inputs.items()})


def probe_difference(function, signature, tflite: bytes, steps: int = 3) -> float:
    """Max |TFLite - in-process| of the first output over `steps` random probes (the
    states of a streaming model carried from step to step)."""
    import tensorflow as tf

    runner = TfliteRunner(content=tflite)
    rng = np.random.default_rng(0)
    names = [spec.name for spec in signature]
    states = {
        name: np.zeros(spec.shape, np.float32)
        for name, spec in zip(names, signature, strict=True)
        if name.startswith("state_")
    }
    difference = 0.0
    for _ in range(steps):
        inputs = {
            name: rng.uniform(0, 255, spec.shape).astype(np.float32)
            for name, spec in zip(names, signature, strict=True)
            if name not in states
        }
        expected = function(*[tf.constant({**inputs, **states}[name]) for name in names])
        reloaded = runner(**inputs, **states)
        key = "logits" if "logits" in reloaded else "probabilities"
        difference = max(difference, float(np.max(np.abs(expected[key].numpy() - reloaded[key]))))
        states = {name: expected[name].numpy() for name in states}
    return difference


def exported_clip_specs(model_dir: Path, metadata: dict) -> list:
    """The evaluation ClipSpec of each stream of an export, in stream order, from the
    recipes beside the model (what a TFLite model's inputs are sampled and cropped by)."""
    from actrec.config.files import load_recipe
    from actrec.data.input.clip_spec import clip_spec

    return [
        clip_spec(load_recipe(model_dir / stream["recipe_file"]), training=False)
        for stream in metadata["streams"]
    ]


class TfliteClipModel:
    """A clip model.tflite with its streams' specs: probabilities of whole decoded videos
    (the signature inputs of a SavedModel export, uint8 by name), one video at a time."""

    def __init__(self, model_dir: Path, metadata: dict):
        self.runner = TfliteRunner(model_dir / TFLITE_FILE)
        self.specs = exported_clip_specs(model_dir, metadata)

    def probabilities(self, inputs: dict) -> np.ndarray:
        """[N, K] of uint8 videos by name ("frames" [N, F, H, W, 3], "flow" [N, F-1, ...])."""
        import tensorflow as tf

        from actrec.export.serving import INPUT_OF_MODALITY, clips_from_flow, clips_from_frames

        rows = []
        count = len(next(iter(inputs.values())))
        for index in range(count):
            clips = {}
            for spec in self.specs:
                name = INPUT_OF_MODALITY[spec.modality]
                make = clips_from_frames if spec.modality == "rgb" else clips_from_flow
                clips[name] = make(tf.constant(inputs[name][index : index + 1]), spec).numpy()
            rows.append(self.runner(**clips)["probabilities"][0])
        return np.stack(rows)
