"""How long a multi-worker run waits for a silent peer: TensorFlow's coordination-service
heartbeat timeout (`runtime.peer_timeout`), which MultiWorkerMirroredStrategy does not
expose."""

from __future__ import annotations

from actrec.errors import ConfigError


def configure_peer_timeout(resolver, seconds: float) -> None:
    """Starts the coordination service MultiWorkerMirroredStrategy starts, with a heartbeat
    timeout of `seconds`: the strategy configures the same service (leader, the chief and
    worker jobs) with TensorFlow's default timeout unless one is configured already (TF 2.21
    collective_all_reduce_strategy.py, `_initialize_multi_worker`), and offers no option
    for it."""
    try:
        from tensorflow.python.distribute import collective_all_reduce_strategy as strategy
        from tensorflow.python.eager import context

        # the message type from where the strategy takes it (its module moves between
        # TensorFlow versions)
        job_message = strategy.coordination_config_pb2.CoordinatedJob
        leader = strategy.multi_worker_util.coordination_leader
    except (ImportError, AttributeError):
        raise ConfigError(
            "runtime.peer_timeout cannot be set with this TensorFlow (its multi-worker "
            "strategy's coordination service moved); leave it unset for TensorFlow's 10 s"
        ) from None
    cluster_spec = resolver.cluster_spec()
    jobs = [
        job_message(name=job, num_tasks=cluster_spec.num_tasks(job))
        for job in ("chief", "worker")
        if job in cluster_spec.jobs
    ]
    context.context().configure_coordination_service(
        service_type="standalone",
        service_leader=leader(cluster_spec),
        coordinated_jobs=jobs,
        heartbeat_timeout_in_ms=round(seconds * 1000),
    )
