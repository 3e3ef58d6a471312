"""A causal MoViNet classifier as a stateless stream step: frames and states in, logits and
new states out, sharing every weight of the clip classifier.

    frames            [B, t, H, W, 3]  the next t frames (one, for a phone's stream)
    state_<layer>_stream_buffer  [B, kt - 1, h, w, c]  each buffered causal convolution's
                                    frames before (the stem's and every bottleneck's)
    state_<layer>_pool_buffer    [B, 1, 1, 1, c]  each squeeze-excitation's and the head's
                                    sum of the per-frame means so far
    state_frame_count            [B, 1]  frames seen so far
      -> logits [B, K]: the clip classifier's on every frame from the first

Zero states start a video (`initial_states`). Fed a clip's frames one by one (or in pieces),
the last step's logits are the causal clip classifier's on the clip, and step t's are its
logits on the clip's first t + 1 frames.
"""

from __future__ import annotations

from keras import ops

from actrec.backbones.movinet.blocks import MovinetBlock, MovinetHead
from actrec.backbones.movinet.build import INPUT_SCALE
from actrec.backbones.movinet.layers import MovinetConv
from actrec.errors import ConfigError

FRAME_COUNT = "state_frame_count"


def _backbone_layers(classifier) -> list:
    kinds = (MovinetConv, MovinetBlock, MovinetHead)
    found = [layer for layer in classifier.layers if isinstance(layer, kinds)]
    if not found or not getattr(found[0], "causal", False):
        raise ConfigError(
            f"model {classifier.name!r} is not a causal MoViNet: only a causal one (the stream "
            "settings, `causal=True`) runs frame by frame"
        )
    return found


def is_stream_network(model) -> bool:
    """Whether `model` is a causal MoViNet (the registry's clip_stream contract: a network
    this module streams)."""
    found = [layer for layer in model.layers if isinstance(layer, (MovinetConv, MovinetBlock))]
    return bool(found) and bool(getattr(found[0], "causal", False))


def stream_state_shapes(classifier) -> dict[str, tuple[int, ...]]:
    """Every state of the causal MoViNet `classifier`, in graph order: name -> its shape
    without the batch axis."""
    shapes: dict[str, tuple[int, ...]] = {}
    for layer in _backbone_layers(classifier):
        if isinstance(layer, MovinetConv) and layer.buffered:
            shapes[f"state_{layer.name}_stream_buffer"] = layer.buffer_shape
        elif isinstance(layer, MovinetBlock):
            if layer.feature.buffered:
                shapes[f"state_{layer.name}_stream_buffer"] = layer.feature.buffer_shape
            shapes[f"state_{layer.name}_pool_buffer"] = (1, 1, 1, layer.expand_filters)
        elif isinstance(layer, MovinetHead):
            shapes[f"state_{layer.name}_pool_buffer"] = (1, 1, 1, layer.project_filters)
    shapes[FRAME_COUNT] = (1,)
    return shapes


def initial_states(classifier, batch_size: int = 1) -> dict:
    """Zero states (the start of a video) as float32 tensors [batch_size, ...]."""
    return {
        name: ops.zeros((batch_size, *shape), "float32")
        for name, shape in stream_state_shapes(classifier).items()
    }


def stream_step(classifier):
    """The stateless step of the causal MoViNet `classifier`: step(frames [B, t, H, W, 3] in
    the classifier's input scale ([0, 255] for a recipe's network, [0, 1] for
    movinet_classifier's without preprocessing), states: name -> tensor) -> (logits [B, K],
    new states by name)."""
    backbone = _backbone_layers(classifier)
    names = set(stream_state_shapes(classifier))
    names_in_model = [layer.name for layer in classifier.layers]
    prepare = [
        classifier.get_layer(name)
        for name in ("preprocessing", INPUT_SCALE)
        if name in names_in_model
    ]
    hidden = classifier.get_layer("classifier_hidden")
    activation = classifier.get_layer("classifier_activation")
    output = classifier.get_layer("classifier")

    def step(frames, states: dict):
        missing = sorted(names - set(states))
        if missing:
            raise ConfigError(f"the MoViNet stream step needs every state; missing {missing[0]}")
        frames_before = ops.cast(states[FRAME_COUNT], frames.dtype)
        new_states = {}
        x = frames
        for layer in prepare:  # a recipe network's normalisation and scale to [0, 1]
            x = layer(x)
        for layer in backbone:
            prefix = f"state_{layer.name}_"
            if isinstance(layer, MovinetConv):
                x, buffer = layer.with_states(x, states.get(prefix + "stream_buffer"))
                if buffer is not None:
                    new_states[prefix + "stream_buffer"] = buffer
                continue
            layer_states = {
                key: states[prefix + key]
                for key in ("stream_buffer", "pool_buffer")
                if prefix + key in states
            }
            x, updated = layer.with_states(x, layer_states, frames_before)
            new_states.update({prefix + key: value for key, value in updated.items()})
        logits = output(activation(hidden(x)))
        new_states[FRAME_COUNT] = frames_before + frames.shape[1]
        return logits, {name: new_states[name] for name in stream_state_shapes(classifier)}

    return step
