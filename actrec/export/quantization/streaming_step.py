"""The online TSM's streaming step quantised: calibrated on real recurrent states and gated
on whole clips.

Calibration: each calibration clip's T frames (the frames a stream samples, cropped) are fed
one by one to the float step from zero states; every (frame, states) the step sees is one
calibration sample, so the states' ranges are those of a running stream, not of zeros or
noise. The gate: a clip's top class is that of the step's logits averaged over its T
frames (what `actrec predict --stream` shows at the clip's end; a MoViNet stream's last
step's logits, already the clip's), the float and the quantised step alike.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from actrec.export.quantization.calibration import ClipSet
from actrec.export.streaming_export import FRAME_INPUT, LOGITS

CLIP_INPUT = "frames"


def _zero_states(signature) -> dict:
    """Zero states by name, batch 1: float32 [1, h, w, fold] each."""
    return {
        spec.name: np.zeros([1, *spec.shape[1:]], np.float32)
        for spec in signature
        if spec.name != FRAME_INPUT
    }


def float_step_run(function, signature) -> Callable[[dict], dict]:
    """The in-process step as a run: inputs by name (numpy) -> outputs by name (numpy),
    traced once (a Keras model called eagerly takes about 0.25 s a frame: the calibration
    and the gate call it for every frame of every clip)."""
    import tensorflow as tf

    traced = tf.function(function, input_signature=list(signature))

    def run(inputs: dict) -> dict:
        outputs = traced(*[tf.constant(inputs[spec.name]) for spec in signature])
        return {name: value.numpy() for name, value in outputs.items()}

    return run


def stepped_calibration(clips: ClipSet, function, signature) -> ClipSet:
    """Calibration samples of the step (see the module): `clips`' "frames" [N, T, crop, crop,
    3] -> a ClipSet of N * T samples, FRAME_INPUT [N*T, crop, crop, 3] and each state
    [N*T, h, w, fold] as the float step (`function` over `signature`) met them."""
    run = float_step_run(function, signature)
    samples: dict[str, list] = {spec.name: [] for spec in signature}
    for index in range(clips.count):
        states = _zero_states(signature)
        for frame in clips.inputs[CLIP_INPUT][index]:
            inputs = {FRAME_INPUT: frame[None], **states}
            for name, value in inputs.items():
                samples[name].append(value[0])
            outputs = run(inputs)
            states = {name: outputs[name] for name in states}
    inputs = {name: np.stack(values).astype(np.float32) for name, values in samples.items()}
    count = len(inputs[FRAME_INPUT])
    return ClipSet(inputs, np.full(count, -1), clips.data_dir, clips.split, False)


def clip_run_of_step(
    step: Callable[[dict], dict],
    signature,
    state_outputs: dict | None = None,
    clip_logits: bool = False,
):
    """A clip run of a streaming `step` run: {"frames": float32 [1, T, crop, crop, 3]} ->
    {"logits": [1, K], the step's logits averaged over the T frames fed one by one from
    zero states (clip_logits: the last step's, a MoViNet stream's, whose logits are the
    clip's on every frame so far)}. state_outputs: each state input's output name (ONNX:
    next_state_00; None: the input's own name, as the in-process step and TFLite name
    them)."""
    names = [spec.name for spec in signature if spec.name != FRAME_INPUT]
    state_outputs = state_outputs or {name: name for name in names}

    def run(inputs: dict) -> dict:
        states = _zero_states(signature)
        logits = []
        for frame in inputs[CLIP_INPUT][0]:
            outputs = step({FRAME_INPUT: frame[None], **states})
            logits.append(np.asarray(outputs[LOGITS], np.float32))
            states = {name: np.asarray(outputs[state_outputs[name]]) for name in states}
        return {LOGITS: logits[-1] if clip_logits else np.mean(logits, axis=0)}

    return run


def state_outputs_of(metadata: dict) -> dict:
    """{state input name: its output name} from a format's actrec.json entries."""
    return {
        state["input"]: state.get("output", state["input"])
        for state in metadata["streaming"]["states"]
    }
