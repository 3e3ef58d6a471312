"""The optimizer of a run: SGD, Adam or AdamW with weight decay and per-parameter learning
rates as the TSN / TSM and VideoMAE sources apply them.

One update, for every trainable variable w with multipliers (lr_mult, decay_mult) from
actrec.train.loop.param_groups, from the loss gradient g (already averaged over replicas and
micro-batches by the loop, unscaled from float16 loss scaling by Keras):

    g <- clip_by_global_norm(g, clip_norm)          over all variables, on the loss gradient
    g <- g + weight_decay * decay_mult * w          coupled L2 ("coupled")
    SGD:  m <- momentum * m - lr * lr_mult * g;  w <- w + m        (Keras SGD)
    Adam: Keras Adam with the rate lr * lr_mult
    AdamW: w <- w * (1 - lr * lr_mult * weight_decay * decay_mult), then Adam as above

each as TensorFlow's fused kernel of Keras' formula (sgd_update, adam_update).

This is the order of both sources: PyTorch `clip_grad_norm` on the loss gradient, then
`optimizer.step()`, whose SGD adds weight_decay * w per parameter group (yjxiong/tsn-pytorch
main.py lines 179-186, 111-114, 274-281; temporal-shift-module main.py lines 254-259);
Caffe `SGDSolver::ApplyUpdate` clips first, then regularises (local_decay = weight_decay *
decay_mult) and computes the update with local_rate = rate * lr_mult, history = local_rate *
diff + momentum * history (yjxiong/caffe src/caffe/solver.cpp lines 637-649, 678-684,
740-750). Keras SGD's momentum form is Caffe's (the rate inside the momentum); PyTorch keeps
the rate outside, which gives the same steps while the rate is constant.

"decoupled" keeps Keras' own `weight_decay` instead: every step w -= lr * weight_decay * w
(at the base rate) on the variables with decay_mult 1, which at momentum 0.9 is about 10x
weaker than the same number as coupled L2. "adamw" decays decoupled as PyTorch's AdamW does
(torch.optim.AdamW: p *= 1 - group lr * group weight_decay, before the moments' step), at
each variable's own rate lr * lr_mult, so under layer-wise rate decay a lower block also
decays more slowly (MCG-NJU/VideoMAE engine_for_finetuning.py sets each group's lr to the
scheduled rate x its lr_scale; its epsilon 1e-8, `--opt_eps`, is AdamW's here too).

The multipliers act where Keras applies one variable's update (`update_step`), so they are
the same for the all-reduce and the K-step-averaging loop, with gradient accumulation and
under mixed precision.
"""

from __future__ import annotations

import functools

from actrec.config.recipe import TrainConfig
from actrec.errors import ConfigError
from actrec.train.loop.param_groups import parameter_groups
from actrec.train.loop.step import decayed_gradient_and_rate

ADAMW_EPSILON = 1e-8
"""AdamW's epsilon: PyTorch's default and VideoMAE's `--opt_eps` (Keras' Adam: 1e-7)."""


class VariableRates:
    """(lr_mult, coupled decay) per variable, looked up by the optimizer's variable key, and
    the parameter groups they come from.

    A plain object: a dict or list attribute of the optimizer would be wrapped by Keras' and
    TensorFlow's tracking (and end up in checkpoints)."""

    def __init__(self, rates: dict, groups: list, decoupled: dict | None = None):
        self._rates = rates
        self._decoupled = decoupled or {}  # AdamW: key -> weight_decay * decay_mult
        self.groups = groups
        self.step_rates: dict | None = None  # Adam's per-step rates while an update is built

    def of(self, key) -> tuple[float, float]:
        try:
            return self._rates[key]
        except KeyError:
            raise ConfigError(
                "the optimizer was asked to update a variable it was not built for; build "
                "it with build_optimizer(train, model) for the model it trains"
            ) from None

    def decoupled_decay(self, key) -> float:
        """AdamW's weight_decay * decay_mult of a variable (0 for the other optimizers)."""
        return self._decoupled.get(key, 0.0)


def decoupled_decay_update(variable, learning_rate, lr_mult: float, decay: float) -> None:
    """AdamW's decay of one variable before its Adam step: w <- w - lr * lr_mult * decay * w
    (decay = weight_decay * decay_mult)."""
    from keras import ops

    factor = ops.cast(ops.multiply(learning_rate, lr_mult * decay), variable.dtype)
    variable.assign_sub(ops.multiply(variable, factor))


def _resource(variable):
    """The resource handle of a Keras or TensorFlow variable (in a strategy's update call:
    this replica's copy)."""
    import keras

    return (variable.value if isinstance(variable, keras.Variable) else variable).handle


def adam_update(optimizer, gradient, variable, learning_rate, lr_mult: float) -> None:
    """Keras 3.15's `Adam.update_step` (amsgrad off) as TensorFlow's fused kernel,
    ResourceApplyAdam, the op tf.keras's Adam ran: one op per variable where Keras 3 builds
    ten, and the step's scalars (rate lr * lr_mult, beta powers) built once per update for
    each (lr_mult, dtype), not once per variable. Keras builds the same formula from
    separate ops, so a training builds far fewer: a one-step training on MobileNetV2 takes
    4.8 s against 7.6 s with Keras' own update (`python benchmarks/optimizer_trace.py`),
    on the test network 1.4 s against 2.3 s with actrec's update before. The kernel
    computes 1 - beta in float32 where Keras computes it in Python, so the weights equal
    Keras' own Adam's within float32 rounding (tests/train/test_optimizer.py)."""
    import tensorflow as tf

    dtype = variable.dtype
    key = (lr_mult, dtype)
    shared = optimizer.actrec_rates.step_rates
    scalars = None if shared is None else shared.get(key)
    if scalars is None:
        rate = learning_rate if lr_mult == 1.0 else tf.multiply(learning_rate, lr_mult)
        local_step = tf.cast(optimizer.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(optimizer.beta_1, dtype), tf.cast(optimizer.beta_2, dtype)
        scalars = {
            "lr": tf.cast(rate, dtype),
            "beta1_power": tf.pow(beta_1, local_step),
            "beta2_power": tf.pow(beta_2, local_step),
            "beta1": beta_1,
            "beta2": beta_2,
            "epsilon": tf.cast(optimizer.epsilon, dtype),
        }
        if shared is not None:
            shared[key] = scalars
    index = optimizer._get_variable_index(variable)
    tf.raw_ops.ResourceApplyAdam(
        var=_resource(variable),
        m=_resource(optimizer._momentums[index]),
        v=_resource(optimizer._velocities[index]),
        grad=tf.cast(tf.convert_to_tensor(gradient), dtype),
        **scalars,
    )


def sgd_update(optimizer, gradient, variable, learning_rate) -> None:
    """Keras 3.15's `SGD.update_step` as TensorFlow's fused kernels, the ops tf.keras's SGD
    ran: ResourceApplyKerasMomentum (m <- momentum * m - lr * g; w <- w + m, or with
    Nesterov w <- w + momentum * m - lr * g: Keras' formula) or, without momentum,
    ResourceApplyGradientDescent (w <- w - lr * g). One op per variable where Keras builds
    four to six."""
    import tensorflow as tf

    dtype = variable.dtype
    rate = tf.cast(learning_rate, dtype)
    gradient = tf.cast(tf.convert_to_tensor(gradient), dtype)
    if not optimizer.momentum:
        tf.raw_ops.ResourceApplyGradientDescent(var=_resource(variable), alpha=rate, delta=gradient)
        return
    tf.raw_ops.ResourceApplyKerasMomentum(
        var=_resource(variable),
        accum=_resource(optimizer.momentums[optimizer._get_variable_index(variable)]),
        lr=rate,
        grad=gradient,
        momentum=tf.cast(optimizer.momentum, dtype),
        use_nesterov=bool(optimizer.nesterov),
    )


@functools.cache
def _actrec_optimizer_class(base: type) -> type:
    """`base` (a Keras optimizer class) that (1) takes gradients the loop has all-reduced
    and (2) applies coupled L2 and learning-rate multipliers per variable.

    (1) Keras' TF optimizer all-reduces (SUM) gradients itself when `apply` runs in a
    replica context, after clipping; the loop reduces first (so clipping and the loss-scale
    check see the averaged gradient, and one collective carries the step), so that second
    reduction is turned off. (2) `update_step(gradient, variable, learning_rate)` is where
    Keras updates one variable, after its global-norm clipping: the gradient gains
    weight_decay * decay_mult * w and the rate becomes lr * lr_mult
    (actrec.train.loop.step.decayed_gradient_and_rate, step 6 of the training step).
    """
    for hook in ("_all_reduce_sum_gradients", "update_step", "_var_key", "_backend_update_step"):
        if not hasattr(base, hook):
            raise ConfigError(
                f"this Keras version's {base.__name__} has no {hook}; actrec's loop needs "
                "Keras 3 with the TensorFlow backend (tested with Keras 3.15)"
            )

    def _all_reduce_sum_gradients(self, grads_and_vars):
        return list(grads_and_vars)

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        self.actrec_rates.step_rates = {}
        try:
            return base._backend_update_step(self, grads, trainable_variables, learning_rate)
        finally:
            self.actrec_rates.step_rates = None

    def update_step(self, gradient, variable, learning_rate):
        key = self._var_key(variable)
        lr_mult, decay = self.actrec_rates.of(key)
        decoupled = self.actrec_rates.decoupled_decay(key)
        if decoupled:  # AdamW: the decay first, at the variable's rate
            decoupled_decay_update(variable, learning_rate, lr_mult, decoupled)
        if base.__name__ == "Adam" and not self.amsgrad:
            gradient, _ = decayed_gradient_and_rate(gradient, variable, learning_rate, 1.0, decay)
            return adam_update(self, gradient, variable, learning_rate, lr_mult)
        gradient, learning_rate = decayed_gradient_and_rate(
            gradient, variable, learning_rate, lr_mult, decay
        )
        if base.__name__ == "SGD":
            return sgd_update(self, gradient, variable, learning_rate)
        return base.update_step(self, gradient, variable, learning_rate)

    return type(
        base.__name__,
        (base,),
        {
            "_all_reduce_sum_gradients": _all_reduce_sum_gradients,
            "_backend_update_step": _backend_update_step,
            "update_step": update_step,
            "__doc__": f"{base.__name__} over all-reduced gradients, with per-variable rates.",
        },
    )


def build_optimizer(train: TrainConfig, model):
    """A built Keras optimizer for `model`'s trainable variables (a LossScaleOptimizer
    around it under float16), as a recipe's train section (validated by actrec.config)
    asks: train.optimizer with its momentum / nesterov (SGD), weight_decay in its
    weight_decay_mode (either way only variables with decay_mult 1 decay; adamw's at each
    variable's rate), clip_norm, the *_lr_mult multipliers, layer_decay and
    mixed_precision. `actrec_rates.groups` of the Keras optimizer lists the parameter
    groups."""
    import keras

    groups = parameter_groups(model, train)
    adamw = train.optimizer == "adamw"
    decoupled = train.weight_decay_mode == "decoupled" and train.weight_decay > 0 and not adamw
    arguments = {
        "learning_rate": 0.0,  # set before every step
        "weight_decay": train.weight_decay if decoupled else None,
        "global_clipnorm": train.clip_norm,
    }
    if train.optimizer == "sgd":
        base = keras.optimizers.SGD
        arguments.update(momentum=train.momentum, nesterov=train.nesterov)
    else:
        base = keras.optimizers.Adam
        if adamw:
            arguments.update(epsilon=ADAMW_EPSILON)
    optimizer = _actrec_optimizer_class(base)(**arguments)
    if decoupled:
        optimizer.exclude_from_weight_decay(
            var_list=[v for group in groups if not group.decay_mult for v in group.variables]
        )
    coupled = 0.0 if decoupled or adamw else train.weight_decay
    keyed = [(optimizer._var_key(v), group) for group in groups for v in group.variables]
    optimizer.actrec_rates = VariableRates(
        {key: (group.lr_mult, coupled * group.decay_mult) for key, group in keyed},
        groups,
        {key: train.weight_decay * group.decay_mult for key, group in keyed} if adamw else None,
    )
    if train.mixed_precision == "float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    optimizer.build(model.trainable_variables)
    return optimizer
