"""Averaging variables across workers: kavg's averaging rounds (Zhou & Cong 2018) and its
initial broadcast, and the BatchNorm statistics `synchronize` averages under allreduce.

Each is one collective inside `strategy.run`: the variables' values are all-reduced and
assigned back on every replica.
"""

from __future__ import annotations

from actrec.config import choices


def inner_optimizer(optimizer):
    """The optimizer inside a loss-scale wrapper (or the optimizer itself)."""
    return getattr(optimizer, "inner_optimizer", optimizer)


def is_float(variable) -> bool:
    import tensorflow as tf

    return tf.as_dtype(variable.dtype).is_floating


def moment_variables(optimizer) -> list:
    """The optimizer's float state per model variable (Adam's moments), not its rate."""
    inner = inner_optimizer(optimizer)
    rate = inner.learning_rate
    return [variable for variable in inner.variables if is_float(variable) and variable is not rate]


def model_float_variables(model) -> list:
    """Trainable weights and BatchNorm moving statistics (not seed-generator state)."""
    return [
        variable
        for variable in model.variables
        if is_float(variable) and "seed_generator" not in variable.path
    ]


def variables_to_average(model, optimizer, train, local_updates: bool) -> list:
    """The variables an averaging round averages (train: the recipe's TrainConfig).

    kavg (local_updates): every float model variable, and Adam's moments when
    train.adam_state is "average". allreduce: the trainable weights stay
    identical; each replica updates its own copy of the non-trainable statistics
    (BatchNorm moving mean / variance, aggregation "none"), which synchronize() averages.
    """
    if not local_updates:
        trainable = {id(variable) for variable in model.trainable_variables}
        return [
            variable for variable in model_float_variables(model) if id(variable) not in trainable
        ]
    variables = model_float_variables(model)
    if train.optimizer in choices.ADAM_OPTIMIZERS and train.adam_state == "average":
        variables += moment_variables(optimizer)
    return variables


def variable_tensor(variable):
    """The current value of a Keras (or tf) variable as a tensor."""
    import tensorflow as tf

    return tf.identity(getattr(variable, "value", variable))


def broadcast_from_first_worker(strategy, variables: list) -> None:
    """Every replica's `variables` <- replica 0's values (one collective)."""
    import tensorflow as tf

    def broadcast():
        context = tf.distribute.get_replica_context()
        is_first = tf.equal(context.replica_id_in_sync_group, 0)
        values = [variable_tensor(variable) for variable in variables]
        shares = [tf.where(is_first, value, tf.zeros_like(value)) for value in values]
        for variable, value in zip(variables, context.all_reduce("SUM", shares), strict=True):
            variable.assign(value)

    tf.function(lambda: strategy.run(broadcast), autograph=False)()


def average_round(strategy, variables: list, optimizer, reset_adam: bool) -> None:
    """One averaging round: every replica's `variables` <- their mean over replicas;
    reset_adam: then zero the optimizer's moments and its iteration count."""
    import tensorflow as tf

    def average():
        context = tf.distribute.get_replica_context()
        values = [variable_tensor(variable) for variable in variables]
        for variable, mean in zip(variables, context.all_reduce("MEAN", values), strict=True):
            variable.assign(mean)
        if reset_adam:
            for moment in moment_variables(optimizer):
                moment.assign(tf.zeros(moment.shape, moment.dtype))
            inner_optimizer(optimizer).iterations.assign(0)

    strategy.run(average)
