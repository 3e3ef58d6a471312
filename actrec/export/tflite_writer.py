"""model.tflite of an export (actrec.export.tflite converts), checked against the in-process
model, and what actrec.json says of its inputs and outputs."""

from __future__ import annotations

from pathlib import Path

from actrec.atomic import write_bytes_atomic
from actrec.export.tflite import (
    FLOAT_TOLERANCE,
    TFLITE_FILE,
    clip_function,
    converted,
    probe_difference,
    streaming_function,
)


def _layout(stream) -> str:
    spec = stream.spec
    return (
        f"{spec.num_segments} frames sampled as the `centre` evaluation samples a clip "
        f"({spec.sampling} sampling), short side resized to {spec.eval_scale_size}, centre "
        f"{spec.crop_size} crop"
    )


def tflite_metadata(streams, quantize: str, state_shapes: dict | None) -> dict:
    """actrec.json's model, inputs and outputs entries of a TFLite export."""
    from actrec.export.serving import INPUT_OF_MODALITY
    from actrec.export.streaming_export import FRAME_INPUT, state_name

    entries = {"model": TFLITE_FILE, "quantize": quantize}
    if state_shapes is not None:
        crop = streams[0].spec.crop_size
        inputs = {
            FRAME_INPUT: {
                "dtype": "float32",
                "shape": [1, crop, crop, 3],
                "description": f"one RGB frame, 0-255, short side resized to "
                f"{streams[0].spec.eval_scale_size} and centre {crop} crop",
            }
        }
        for index, shape in enumerate(state_shapes.values()):
            inputs[state_name(index)] = {
                "dtype": "float32",
                "shape": [1, *shape],
                "description": "a shift's previous-frame fold (zeros to start; feed back the "
                "output of the same name)",
            }
        outputs = {"logits": "float32 [1, K]", "probabilities": "float32 [1, K]"}
        outputs.update({state_name(i): "the new state" for i in range(len(state_shapes))})
    else:
        inputs = {
            INPUT_OF_MODALITY[s.modality]: {
                "dtype": "float32",
                "shape": [
                    1,
                    s.spec.num_segments,
                    s.spec.crop_size,
                    s.spec.crop_size,
                    s.spec.channels,
                ],
                "description": f"{_layout(s)}; "
                + (
                    "RGB 0-255"
                    if s.modality == "rgb"
                    else "flow on the stored 0-255 scale "
                    "(127.5 = no motion), channels [x0, y0, x1, y1, ...]"
                ),
            }
            for s in streams
        }
        outputs = {"probabilities": "float32 [1, K]" + (" (fused)" if len(streams) == 2 else "")}
        if len(streams) == 1:
            outputs["logits"] = "float32 [1, K]"
    return {**entries, "inputs": inputs, "outputs": outputs}


def write_tflite(
    streams, models, folder: Path, quantize: str, streaming: bool, weights, average: str
) -> tuple[float, float | None, dict | None]:
    """Write folder/model.tflite; returns (max difference to the in-process model on random
    probes, the tolerance it must meet (None for quantised models, whose difference is
    reported only), the state shapes of a streaming model (else None))."""
    state_shapes = None
    if streaming:
        from actrec.models.streaming import streaming_state_shapes

        state_shapes = streaming_state_shapes(models[0])
        function, signature = streaming_function(streams[0], models[0], state_shapes)
    else:
        function, signature = clip_function(streams, models, weights, average)
    flatbuffer = converted(function, signature, models, quantize)
    write_bytes_atomic(folder / TFLITE_FILE, flatbuffer)
    difference = probe_difference(function, signature, flatbuffer)
    return difference, FLOAT_TOLERANCE if quantize == "none" else None, state_shapes
