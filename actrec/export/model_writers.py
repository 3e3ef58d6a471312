"""The model of an export, written and reloaded: a SavedModel with the serving graph
(actrec.export.serving) or a Keras model file, and how far the reloaded model's
probabilities are from the in-process model's on a random probe input."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from actrec.export.fresh_process import outputs_in_fresh_process
from actrec.export.parity import scaled_difference
from actrec.export.saved_variables import export_module
from actrec.export.streams import ExportedStream

SIGNATURE_NAME = "serving_default"
KERAS_MODEL_FILE = "model.keras"

PROBE_VIDEOS = 2


def _probe_inputs(streams: Sequence[ExportedStream]) -> dict:
    """Random uint8 signature inputs of a size unlike the training frames: name -> array."""
    import numpy as np

    rng = np.random.default_rng(0)
    frames = 2 * max(s.spec.num_segments * s.spec.new_length for s in streams) + 3
    height = max(s.spec.eval_scale_size for s in streams) + 5
    width = height * 4 // 3 + 1
    inputs = {}
    for stream in streams:
        if stream.modality == "rgb":
            shape = (PROBE_VIDEOS, frames, height, width, 3)
            inputs["frames"] = rng.integers(0, 256, shape, dtype=np.uint8)
        else:
            shape = (PROBE_VIDEOS, frames - 1, height, width, 2)
            inputs["flow"] = rng.integers(0, 256, shape, dtype=np.uint8)
    return inputs


def max_difference(expected, reloaded) -> float:
    """actrec.export.parity.scaled_difference: the reload check's measure."""
    return scaled_difference(expected, reloaded)


def write_savedmodel(
    streams: Sequence[ExportedStream],
    classes,
    top_k,
    weights,
    folder: Path,
    average: str = "logits",
) -> float:
    """Write the SavedModel into `folder`; returns the reload difference.

    A tf.Module holding the models and the serving tf.function (keras.export.ExportArchive
    works too, but writes twice the bytes in twice the time for the same graph).
    """
    import tensorflow as tf

    # Keras, OpenCV: lazily, the CLI reads the format registry before TensorFlow
    from actrec.export.serving import build_serving_function, input_signature

    module = export_module("actrec_export", [stream.model for stream in streams])
    module.serve = tf.function(
        build_serving_function(streams, classes, top_k, weights, average),
        input_signature=input_signature(streams),
        autograph=False,  # its branches are on Python values: nothing to convert
    )
    tf.saved_model.save(module, str(folder), signatures={SIGNATURE_NAME: module.serve})

    probe = _probe_inputs(streams)
    expected = module.serve(*[tf.constant(probe[s.input_name]) for s in streams])
    loaded = tf.saved_model.load(str(folder))
    reloaded = loaded.signatures[SIGNATURE_NAME](**{k: tf.constant(v) for k, v in probe.items()})
    return max_difference(expected["probabilities"], reloaded["probabilities"])


def write_keras(
    streams: Sequence[ExportedStream],
    weights,
    folder: Path,
    average: str = "logits",
    card_code: str | None = None,
    card_texts: dict[str, str] | None = None,
) -> float:
    """Write OUT/model.keras; returns the reload difference (on softmax scores).

    card_code: the model card's Python code (its model read from `folder`, its inputs the
    clips by the names actrec.json gives: "frames" for one stream, "rgb" and "flow" for
    two), run in a fresh Python process (actrec.export.fresh_process) for the reloaded
    outputs; None reloads in this process.
    card_texts: text variables the card code reads ({"model_path": the model file}), given
    to the fresh process as arguments.
    """
    import numpy as np
    from keras import ops

    # Keras: lazily, the CLI reads the format registry before TensorFlow
    from actrec.models.keras_file import load_segment_model

    rng = np.random.default_rng(0)
    clips = {
        stream.modality: rng.uniform(
            0,
            255,
            (PROBE_VIDEOS, s.num_segments, s.crop_size, s.crop_size, s.channels),
        ).astype("float32")
        for stream in streams
        for s in [stream.spec]
    }
    if len(streams) == 2:
        # Keras: lazily, the CLI reads the format registry before TensorFlow
        from actrec.models.fusion import build_two_stream_model

        model = build_two_stream_model(streams[0].model, streams[1].model, weights, average=average)
        card_inputs = clips

        def scores(outputs):
            return ops.convert_to_numpy(outputs)
    else:
        model = streams[0].model
        card_inputs = {"frames": clips[streams[0].modality]}

        def scores(outputs):
            return ops.convert_to_numpy(ops.softmax(outputs, axis=-1))

    def outputs_of(network):
        return network(clips if len(streams) == 2 else clips[streams[0].modality], training=False)

    path = folder / KERAS_MODEL_FILE
    model.save(str(path))
    if card_code is None:
        reloaded = outputs_of(load_segment_model(path))
    else:
        reloaded = outputs_in_fresh_process(card_code, card_inputs, card_texts)["outputs"]
    return max_difference(scores(outputs_of(model)), scores(reloaded))
