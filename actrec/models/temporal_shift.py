"""TemporalShift (TSM, Lin et al. 2019) and its insertion into residual branches.

On frames [N*T, H, W, C] viewed as [N, T, H, W, C], with fold = int(C * fold_fraction):

    out[:, t, ..., :fold]       = x[:, t + 1, ..., :fold]        (zero at t = T - 1)
    out[:, t, ..., fold:2*fold] = x[:, t - 1, ..., fold:2*fold]  (zero at t = 0)
    out[:, t, ..., 2*fold:]     = x[:, t, ..., 2*fold:]

The online (one-directional) variant, for streaming inference, only looks back:

    out[:, t, ..., :fold] = x[:, t - 1, ..., :fold]  (zero at t = 0); the rest unchanged.

The layer has no weights. `insert_temporal_shift` rebuilds a ResNet or a MobileNetV2 (any
backbone whose family says where TSM shifts it: actrec.backbones.<family>.shift) with a
shift before the first convolution of each residual branch ("blockres"; the identity path
stays unshifted) or on each block's input ("block"); a family may shift fewer blocks under
"blockres" (a deep ResNet: every other block, as the official code).
"""

from __future__ import annotations

import keras
from keras import ops

from actrec.backbones.graph_edit import (
    InputTransform,
    producing_layer_name,
    rebuild_with_input_transform,
)
from actrec.backbones.registry import shift_blocks
from actrec.backbones.spec import BackboneSpec, ShiftBlocks
from actrec.config.choices import SHIFT_PLACEMENTS
from actrec.errors import ConfigError

DEFAULT_FOLD_FRACTION = 1 / 8


@keras.saving.register_keras_serializable(package="actrec")
class TemporalShift(keras.layers.Layer):
    """Shifts a fraction of the channels one step along time; zero parameters.

    Input and output: [N*T, H, W, C] with T = num_segments (any rank >= 2 works: the
    channels are last, time is folded into the batch axis).
    """

    def __init__(
        self,
        num_segments: int,
        fold_fraction: float = DEFAULT_FOLD_FRACTION,
        online: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if int(num_segments) < 1:
            raise ConfigError(f"num_segments must be at least 1, got {num_segments}")
        if not 0 <= float(fold_fraction) <= 0.5:
            raise ConfigError(
                f"shift fold fraction must be in [0, 0.5] (two folds of C), got {fold_fraction}"
            )
        self.num_segments = int(num_segments)
        self.fold_fraction = float(fold_fraction)
        self.online = bool(online)

    def fold(self, channels: int) -> int:
        """Returns the number of channels shifted in each direction."""
        return int(channels * self.fold_fraction)

    def call(self, inputs):
        channels = inputs.shape[-1]
        fold = self.fold(channels)
        if fold == 0:
            return inputs
        if channels % fold == 0:
            return self._shift_channel_groups(inputs, fold)
        return self._shift_channel_slices(inputs, fold)

    def _source_time(self, time, group):
        """Returns the segment each (segment, channel group) output reads from; outside
        [0, T) means zero."""
        if self.online:
            return ops.where(group == 0, time - 1, time)
        return ops.where(group == 0, time + 1, ops.where(group == 1, time - 1, time))

    def _shift_channel_groups(self, inputs, fold):
        """The shift as one gather of `fold`-channel rows and one mask (C divisible by
        fold): about 1.5x faster on CPU than slicing and concatenating channels."""
        segments = self.num_segments
        groups = inputs.shape[-1] // fold
        shape = ops.shape(inputs)
        pixels = 1
        for size in shape[1:-1]:
            pixels = pixels * size
        rows = ops.reshape(inputs, (-1, fold))  # [N*T*H*W*G, fold]
        clips = ops.shape(rows)[0] // (segments * pixels * groups)
        time = ops.arange(segments)[None, :, None, None]  # [1, T, 1, 1]
        group = ops.arange(groups)[None, None, None, :]  # [1, 1, 1, G]
        source = self._source_time(time, group)  # [1, T, 1, G]
        inside = ops.logical_and(source >= 0, source < segments)
        source = ops.clip(source, 0, segments - 1)
        clip = ops.arange(clips)[:, None, None, None]  # [N, 1, 1, 1]
        pixel = ops.arange(pixels)[None, None, :, None]  # [1, 1, H*W, 1]
        index = ((clip * segments + source) * pixels + pixel) * groups + group  # [N, T, H*W, G]
        shifted = ops.take(rows, ops.reshape(index, (-1,)), axis=0)  # [N*T*H*W*G, fold]
        shifted = ops.reshape(shifted, (-1, segments, pixels, groups, fold))  # [N, T, HW, G, f]
        mask = ops.cast(ops.reshape(inside, (1, segments, 1, groups, 1)), shifted.dtype)
        return ops.reshape(shifted * mask, shape)  # [N*T, H, W, C]

    def _shift_channel_slices(self, inputs, fold):
        """The shift by slicing and concatenating channels (any fold)."""
        segments = self.num_segments
        frame_shape = tuple(ops.shape(inputs)[1:])
        clips = ops.reshape(inputs, (-1, segments, *frame_shape))  # [N, T, H, W, C]
        time_padding_back = [[0, 0], [0, 1]] + [[0, 0]] * len(frame_shape)
        time_padding_front = [[0, 0], [1, 0]] + [[0, 0]] * len(frame_shape)
        if self.online:
            from_previous = ops.pad(clips[:, :-1, ..., :fold], time_padding_front)
            shifted = ops.concatenate([from_previous, clips[..., fold:]], axis=-1)
        else:
            from_next = ops.pad(clips[:, 1:, ..., :fold], time_padding_back)
            from_previous = ops.pad(clips[:, :-1, ..., fold : 2 * fold], time_padding_front)
            shifted = ops.concatenate([from_next, from_previous, clips[..., 2 * fold :]], axis=-1)
        return ops.reshape(shifted, ops.shape(inputs))  # [N*T, H, W, C]

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            num_segments=self.num_segments,
            fold_fraction=self.fold_fraction,
            online=self.online,
        )
        return config


def _block_of(layer_name: str | None, places: ShiftBlocks) -> str | None:
    """Returns the residual block a layer belongs to ("conv3_block2", "block_5") or None."""
    if layer_name is None:
        return None
    match = places.block.match(layer_name)
    return match.group(1) if match else None


def _residual_blocks(model: keras.Model, places: ShiftBlocks) -> set[str]:
    """Returns the names of the blocks of `model` that have an identity or projection path
    (for MobileNetV2, only the inverted residual blocks whose output is added to their
    input)."""
    return {
        match.group(1) for layer in model.layers if (match := places.residual_add.match(layer.name))
    }


def insert_temporal_shift(
    backbone: keras.Model, spec: BackboneSpec, num_segments: int, **options
) -> keras.Model:
    """Returns `backbone` (the network of registry entry `spec`) rebuilt with TemporalShift
    layers where its family's ShiftBlocks say (actrec.backbones.<family>.shift), freshly
    initialised; weights and layer names are unchanged, so it loads the same weight files.
    options: `temporal_shift_transform`'s (fold_fraction, placement, online)."""
    transform = temporal_shift_transform(backbone, spec, num_segments, **options)
    return rebuild_with_input_transform(backbone, transform)


def temporal_shift_transform(
    backbone: keras.Model,
    spec: BackboneSpec,
    num_segments: int,
    fold_fraction: float = DEFAULT_FOLD_FRACTION,
    placement: str = "blockres",
    online: bool = False,
) -> InputTransform:
    """The InputTransform that rebuilds `backbone` with its shifts (`insert_temporal_shift`;
    actrec.backbones.build.build_backbone's `edit`: the shifts and the fused BatchNorm in
    one rebuild); ConfigError for a backbone TSM cannot shift or an unknown placement.

    placement "blockres": the shift feeds the first convolution of each residual branch
    (ResNet `convK_blockM_1_conv`, MobileNetV2 `block_M_expand` of blocks with an add),
    the identity / projection path sees the unshifted input (TSM's default).
    placement "block": the block's input is shifted for every path of the block.
    """
    places = shift_blocks(spec)  # ConfigError for a backbone TSM cannot shift
    if placement not in SHIFT_PLACEMENTS:
        raise ConfigError(
            f"unknown shift placement {placement!r}; choose one of: {', '.join(SHIFT_PLACEMENTS)}"
        )
    blocks = _residual_blocks(backbone, places)
    if places.blockres_blocks is not None and placement == "blockres":
        blocks = places.blockres_blocks(blocks)
    shifted_inputs: dict[int, object] = {}

    def shifted(tensor, block: str):
        """Returns the shift of `tensor` (one TemporalShift per block input)."""
        if id(tensor) not in shifted_inputs:
            shifted_inputs[id(tensor)] = TemporalShift(
                num_segments, fold_fraction, online, name=f"{block}_shift"
            )(tensor)
        return shifted_inputs[id(tensor)]

    def shift_block_inputs(layer, inputs):
        block = _block_of(layer.name, places)
        if block not in blocks:
            return inputs
        if placement == "blockres":
            if layer.name != f"{block}{places.first_branch_convolution}":
                return inputs
            return shifted(inputs, block)
        # placement == "block": every tensor entering the block from outside it.
        if isinstance(inputs, list | tuple):
            return [
                tensor
                if _block_of(producing_layer_name(tensor), places) == block
                else shifted(tensor, block)
                for tensor in inputs
            ]
        if _block_of(producing_layer_name(inputs), places) == block:
            return inputs
        return shifted(inputs, block)

    return shift_block_inputs
