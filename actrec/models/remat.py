"""Rematerialisation (gradient checkpointing) of a backbone's blocks.

Training keeps every activation of the forward pass for the backward pass; for a ResNet
that is most of the memory a step needs (Guo et al. 2019). Rematerialisation keeps only
the activations at block boundaries and recomputes each block's inside during the backward
pass, one block at a time (Chen et al. 2016): less activation memory for one more forward
pass of the backbone.

`rematerialise(network)` makes a functional network run its graph in segments, each under
`tf.recompute_grad`. The network keeps its layers, weight variables, name and class, so
checkpoints, `final.weights.h5` and .keras files are the same as without remat and load
into a model built either way:

- Segments end at cut points: places in the graph's topological order where exactly one
  tensor is alive (the output of a residual block, of a dense block's concatenation, of a
  stem layer). Every layer of a segment therefore reads only the segment's input or its own
  tensors.
- Which cut points end a segment is chosen from the activation sizes (Chen et al.'s
  greedy rule): with segments S_1..S_k the step keeps the k boundary tensors plus, while
  one segment is recomputed, that segment's activations; the threshold that minimises
  sum(boundaries) + max(segment) is taken. For ResNet50 this gives about ten segments.
- A segment holding a stochastic layer (Dropout, stochastic depth: any layer with a Keras
  seed generator) runs without recomputation, because a recomputation would draw new
  random numbers and give a different gradient.
- Layers that update state in training (BatchNormalization's moving mean and variance)
  would update it twice, once in the forward pass and again in the recomputation; the
  recomputation restores the values the forward pass left, so the moving statistics equal
  those of a run without remat.

Why not `keras.RematScope`: it marks layers built inside it for per-layer remat, which
(1) keeps every layer's input anyway, so a chain of single-op layers saves nothing, and
(2) on the TensorFlow backend fails inside `tf.function` for a functional model called with
`training=` ("The custom_gradient decorator currently supports keywords arguments only
when eager execution is enabled", Keras 3.15 + TF 2.21, checked). Segment-wise
`tf.recompute_grad`, with positional arguments only, has neither problem.

This uses Keras' functional graph internals (`_nodes_by_depth`, `Node.arguments`,
`Functional._run_through_graph`, replaced on the instance), pinned by tests/memory/test_memory.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import keras
import numpy as np
from keras.src.models.functional import Functional

from actrec.errors import ConfigError

THRESHOLD_CANDIDATES = 200
"""Segment-size thresholds tried when planning (geometrically spaced)."""


def _tensor_size(tensor) -> int:
    """Elements of one example of a symbolic tensor (the batch axis left out)."""
    return int(np.prod([dimension or 1 for dimension in tensor.shape[1:]]))


def _graph_nodes(model) -> list:
    """The model's call nodes (no input nodes) in a topological order."""
    nodes = []
    for depth in sorted(model._nodes_by_depth, reverse=True):
        for node in model._nodes_by_depth[depth]:
            if node.operation is not None and not node.is_input:
                nodes.append(node)
    return nodes


def _cut_points(model, nodes: list) -> dict[int, object]:
    """{index: tensor} for every position after nodes[index] where exactly one tensor
    (that tensor) is produced before and used after."""
    last_use = {}
    for index, node in enumerate(nodes):
        for tensor in node.input_tensors:
            last_use[id(tensor)] = index
    for tensor in model.outputs:
        last_use[id(tensor)] = len(nodes)
    for tensor in model.inputs:
        last_use.setdefault(id(tensor), -1)
    alive = {id(tensor): tensor for tensor in model.inputs if last_use[id(tensor)] >= 0}
    cuts = {}
    for index, node in enumerate(nodes):
        for tensor in node.outputs:
            if last_use.get(id(tensor), -1) > index:
                alive[id(tensor)] = tensor
        for key in [key for key in alive if last_use[key] <= index]:
            del alive[key]
        if len(alive) == 1 and index < len(nodes) - 1:
            cuts[index] = next(iter(alive.values()))
    return cuts


def _greedy_ends(nodes, cuts, sizes, threshold: float) -> list[int]:
    """Segment end indices: a segment ends at the first cut point where it holds at least
    `threshold` activation elements; the last segment ends at the last node."""
    ends, held = [], 0
    for index in range(len(nodes)):
        held += sizes[index]
        if index in cuts and held >= threshold:
            ends.append(index)
            held = 0
    if not ends or ends[-1] != len(nodes) - 1:
        ends.append(len(nodes) - 1)
    return ends


def _estimated_peak(cuts, sizes, ends: list[int]) -> int:
    """Kept boundary activations + the largest segment's activations (elements/example)."""
    boundaries = sum(_tensor_size(cuts[end]) for end in ends[:-1])
    starts = [0] + [end + 1 for end in ends[:-1]]
    largest = max(sum(sizes[start : end + 1]) for start, end in zip(starts, ends, strict=True))
    return boundaries + largest


def _is_stochastic(layer) -> bool:
    return any("seed_generator" in variable.path for variable in layer.variables)


def _state_variables(layer) -> list:
    """Variables a trainable layer may assign in its call (BatchNorm moving statistics)."""
    if not getattr(layer, "trainable", False):
        return []
    return [
        variable
        for variable in layer.non_trainable_variables
        if "seed_generator" not in variable.path
    ]


@dataclass(frozen=True)
class Segment:
    """A run of graph nodes from one cut-point tensor to the next.

    recompute: whether it runs under tf.recompute_grad (False for stochastic segments).
    activation_elements: activation elements per example inside the segment.
    """

    nodes: tuple
    input_tensor: keras.KerasTensor  # a symbolic tensor of the functional model
    output_tensor: keras.KerasTensor
    recompute: bool
    activation_elements: int

    def state_variables(self) -> list:
        """The variables its layers update in training (read when a step is traced, so a
        later freezing or unfreezing of BatchNorm layers is respected)."""
        return [
            variable
            for node in self.nodes
            if hasattr(node.operation, "non_trainable_variables")
            for variable in _state_variables(node.operation)
        ]


@dataclass(frozen=True)
class RematPlan:
    """How a network is split; `estimated_fraction`: kept activations / all activations."""

    segments: tuple[Segment, ...]
    total_activation_elements: int
    estimated_activation_elements: int

    @property
    def estimated_fraction(self) -> float:
        return self.estimated_activation_elements / max(1, self.total_activation_elements)


def plan_segments(model) -> RematPlan:
    """The segmentation `rematerialised` uses for functional `model` (one input and one
    output). A graph without cut points gives one segment run without recomputation."""
    if len(model.inputs) != 1 or len(model.outputs) != 1:
        raise ConfigError(
            f"remat needs a network with one input and one output; {model.name!r} has "
            f"{len(model.inputs)} and {len(model.outputs)}"
        )
    nodes = _graph_nodes(model)
    cuts = _cut_points(model, nodes)
    sizes = [sum(_tensor_size(tensor) for tensor in node.outputs) for node in nodes]
    total = sum(sizes)
    best_ends, best_cost = [len(nodes) - 1], total
    if cuts:
        for threshold in np.geomspace(1, max(2, total), THRESHOLD_CANDIDATES):
            ends = _greedy_ends(nodes, cuts, sizes, float(threshold))
            cost = _estimated_peak(cuts, sizes, ends)
            if cost < best_cost:
                best_ends, best_cost = ends, cost
    segments, start = [], 0
    worthwhile = len(best_ends) > 1
    for end in best_ends:
        members = tuple(nodes[start : end + 1])
        layers = [node.operation for node in members]
        stochastic = any(_is_stochastic(layer) for layer in layers if hasattr(layer, "variables"))
        segments.append(
            Segment(
                nodes=members,
                input_tensor=model.inputs[0] if start == 0 else cuts[start - 1],
                output_tensor=model.outputs[0] if end == len(nodes) - 1 else cuts[end],
                recompute=worthwhile and not stochastic,
                activation_elements=sum(sizes[start : end + 1]),
            )
        )
        start = end + 1
    return RematPlan(tuple(segments), total, best_cost)


class SegmentedExecution:
    """Runs a functional network's graph segment by segment, recomputing in the backward
    pass; installed as the network's `_run_through_graph` (see `rematerialise`).

    Not Keras state: neither Keras' saving nor TensorFlow's checkpoints see it, and the
    network keeps its class, so weight files and checkpoints have the same layout as
    without remat (Keras names a nested model's weights after its class), and a saved
    .keras model is a plain functional model.
    """

    def __init__(self, network):
        self.network = network
        self._plan: RematPlan | None = None

    @property
    def plan(self) -> RematPlan:
        if self._plan is None:
            self._plan = plan_segments(self.network)
        return self._plan

    def __call__(self, inputs, operation_fn=lambda op: op, call_fn=None):
        flat = keras.tree.flatten(inputs)
        symbolic = any(isinstance(value, keras.KerasTensor) for value in flat)
        if call_fn is not None or symbolic or len(flat) != 1:  # shapes, not values
            return Functional._run_through_graph(self.network, inputs, operation_fn, call_fn)
        value = flat[0]
        for segment in self.plan.segments:
            if segment.recompute:
                value = _recomputed(segment, operation_fn)(value)
            else:
                value = _run_segment(segment, value, operation_fn)
        return keras.tree.pack_sequence_as(self.network._outputs_struct, [value])


def _run_segment(segment: Segment, value, operation_fn):
    """Run the segment's nodes on `value` (the segment's input); its output tensor."""
    tensors = {id(segment.input_tensor): value}
    for node in segment.nodes:
        arguments, keyword_arguments = node.arguments.fill_in(tensors)
        outputs = operation_fn(node.operation)(*arguments, **keyword_arguments)
        for symbolic, computed in zip(node.outputs, keras.tree.flatten(outputs), strict=True):
            tensors[id(symbolic)] = computed
    return tensors[id(segment.output_tensor)]


def _recomputed(segment: Segment, operation_fn):
    """The segment as a function of its input tensor under tf.recompute_grad.

    tf.recompute_grad calls the function once in the forward pass and again in the
    backward pass; the second call restores the state variables (BatchNorm moving
    statistics) to the values the first call left. Inside tf.function, automatic control
    dependencies order the read, the layers' own assignments and the restore (they touch
    the same resources), as eager execution does.
    """
    import tensorflow as tf

    calls = [0]

    def forward(value):
        calls[0] += 1
        state = segment.state_variables() if calls[0] > 1 else []
        if not state:
            return _run_segment(segment, value, operation_fn)
        saved = [tf.identity(variable.value) for variable in state]
        output = _run_segment(segment, value, operation_fn)
        for variable, kept in zip(state, saved, strict=True):
            variable.assign(kept)
        return output

    return tf.recompute_grad(forward)


def rematerialise(network):
    """Make `network` (a functional keras.Model with one input and one output) run with
    segment-wise rematerialisation; returns it. Its layers, weights, name, class and
    weight layout stay as they are; its values and gradients are those without remat."""
    if not isinstance(network, Functional):
        raise ConfigError(
            f"remat needs a functional network; {network.name!r} is a {type(network).__name__}"
        )
    if execution(network) is None:
        runner = SegmentedExecution(network)
        runner.plan  # noqa: B018  (plan now: errors surface when the model is built)
        # Functional.call runs self._run_through_graph(inputs, operation_fn): an instance
        # attribute takes precedence over the class's method.
        object.__setattr__(network, "_run_through_graph", runner)
    return network


def execution(network) -> SegmentedExecution | None:
    """The network's SegmentedExecution, or None when it runs without remat."""
    runner = vars(network).get("_run_through_graph")
    return runner if isinstance(runner, SegmentedExecution) else None


def segment_count(network) -> int:
    """Segments a network recomputes (0 for a network without remat)."""
    runner = execution(network)
    if runner is None:
        return 0
    return sum(1 for segment in runner.plan.segments if segment.recompute)


def describe_plan(network) -> str:
    """One line: segments recomputed and the estimated activation memory kept."""
    runner = execution(network)
    if runner is None:
        return f"{network.name}: no remat"
    plan = runner.plan
    recomputed = sum(1 for segment in plan.segments if segment.recompute)
    return (
        f"{network.name}: {len(plan.segments)} segments, {recomputed} recomputed; "
        f"activations kept ~{100 * plan.estimated_fraction:.0f}% "
        f"({math.ceil(plan.estimated_activation_elements):,} of "
        f"{plan.total_activation_elements:,} elements per example)"
    )
