"""Backbone input preprocessing, in keras.ops, for RGB frames and stacked optical flow.

Inputs are in [0, 255]: RGB frames as decoded; flow as quantised in the prepared data
(docs/architecture.md §2: 128 means no motion). The RGB transforms are keras.applications' own
(`preprocess_input` modes, see actrec.backbones.spec.PREPROCESSING_MODES). Flow is
centred on 128 and scaled like the RGB input of the same backbone, so the
cross-modality-initialised first convolution sees values of the range it was trained on.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from actrec.backbones.spec import PREPROCESSING_MODES, SOURCE_NORMALISATIONS
from actrec.config.choices import MODALITIES
from actrec.errors import ConfigError

IMAGENET_MEAN_BGR_CAFFE = (103.939, 116.779, 123.68)
IMAGENET_MEAN_RGB = (0.485, 0.456, 0.406)
IMAGENET_STD_RGB = (0.229, 0.224, 0.225)
FLOW_ZERO = 128.0


def channel_normalisation(mode: str, modality: str) -> tuple[bool, object, object]:
    """Returns (reverse_channels, mean, std) such that the backbone input is
    (y - mean) / std, y = x[..., ::-1] if reverse_channels else x, for frames x in [0, 255].

    mean and std are floats or per-channel 3-tuples (RGB only).
    """
    if mode not in PREPROCESSING_MODES:
        raise ConfigError(
            f"unknown preprocessing mode {mode!r}; choose one of: {', '.join(PREPROCESSING_MODES)}"
        )
    if modality not in MODALITIES:
        raise ConfigError(f"unknown modality {modality!r}; choose one of: {', '.join(MODALITIES)}")
    if mode in SOURCE_NORMALISATIONS:  # a published source's: TSM's, mmaction2's
        source = SOURCE_NORMALISATIONS[mode]
        if modality == "flow":
            std = source.flow_std or channel_normalisation(source.rgb_as, "flow")[2]
            return False, source.flow_mean, std
        mode = source.rgb_as
    if modality == "rgb":
        if mode == "caffe":
            return True, IMAGENET_MEAN_BGR_CAFFE, 1.0
        if mode == "tf":
            return False, 127.5, 127.5
        if mode == "torch":
            return (
                False,
                tuple(255.0 * mean for mean in IMAGENET_MEAN_RGB),
                tuple(255.0 * std for std in IMAGENET_STD_RGB),
            )
        return False, 0.0, 1.0
    # Flow: centred on 128 ("no motion"), scaled like the RGB input.
    if mode == "caffe":
        return False, FLOW_ZERO, 1.0
    if mode == "tf":
        return False, FLOW_ZERO, 127.5
    if mode == "torch":
        return False, FLOW_ZERO, 255.0 * sum(IMAGENET_STD_RGB) / 3
    return False, 0.0, 1.0


def channel_affine_map(reverse_channels: bool, mean, std, channels: int):
    """(kernel [C, C], bias [C]) with x @ kernel + bias = (y - mean) / std for frames x
    [..., C], y = x[..., ::-1] if reverse_channels else x (channel_normalisation's terms)."""
    mean = np.broadcast_to(np.asarray(mean, np.float64), channels)
    std = np.broadcast_to(np.asarray(std, np.float64), channels)
    source = np.arange(channels)[::-1] if reverse_channels else np.arange(channels)
    kernel = np.zeros((channels, channels))
    kernel[source, np.arange(channels)] = 1.0 / std  # output c reads input source[c]
    return kernel.astype(np.float32), (-mean / std).astype(np.float32)


@keras.saving.register_keras_serializable(package="actrec")
class FramePreprocessing(keras.layers.Layer):
    """Maps frames in [0, 255] to the backbone's input; any shape [..., C], no weights.

    A per-channel map (a mean or std per channel, or the channels reversed) runs as one
    [C, C] matrix product on the channel axis plus a bias, the same affine map: LiteRT's CPU
    kernels (XNNPACK) broadcast a [C] constant over a frame a few elements a call, so the
    subtraction and division added 1.4 ms to a 224-px int8 frame (0.7 ms in float32), a
    quarter of a MobileNetV2 step, and the product 0.23 ms (0.10 ms):
    benchmarks/frame_normalisation.py. A single mean and std stay elementwise (a scalar's
    broadcast is fast)."""

    def __init__(self, mode: str, modality: str = "rgb", **kwargs):
        super().__init__(**kwargs)
        self.mode = mode
        self.modality = modality
        self.reverse_channels, self.mean, self.std = channel_normalisation(mode, modality)

    def call(self, inputs):
        frames = ops.cast(inputs, self.compute_dtype)
        per_channel = isinstance(self.mean, tuple) or isinstance(self.std, tuple)
        if not (per_channel or self.reverse_channels):
            return (frames - self.mean) / self.std
        kernel, bias = channel_affine_map(
            self.reverse_channels, self.mean, self.std, int(frames.shape[-1])
        )
        kernel = ops.convert_to_tensor(kernel, dtype=self.compute_dtype)
        bias = ops.convert_to_tensor(bias, dtype=self.compute_dtype)
        channels = kernel.shape[0]
        # [..., C] as [N, C] rows: a 2-D product (MatMul; LiteRT's FULLY_CONNECTED)
        rows = ops.matmul(ops.reshape(frames, (-1, channels)), kernel) + bias
        return ops.reshape(rows, ops.shape(frames))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(mode=self.mode, modality=self.modality)
        return config
