"""The tf.distribute strategy of a training process, and the cluster it belongs to.

This is the one place where the library reads the environment for distribution:

- `TF_CONFIG` (JSON): `{"cluster": {"worker": ["host:port", ...]}, "task": {"type":
  "worker", "index": i}}`, optionally with one `"chief"` task, which counts as a worker
  (worker 0; the `"worker"` tasks follow it);
- Slurm: a job step of more than one task (`SLURM_STEP_NUM_TASKS` or `SLURM_NTASKS` > 1,
  with `SLURM_PROCID`), resolved by `tf.distribute.cluster_resolver.SlurmClusterResolver`;
- otherwise one local process.

Slurm workers listen on port ACTREC_SLURM_PORT (default 8888) + their index on the node.

One worker process per accelerator is the supported multi-worker launch (`actrec launch`
does it on one machine). Multi-worker collectives must be configured before TensorFlow
runs any op: call `build_strategy` first in a worker process.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from actrec.cluster.coordination import configure_peer_timeout
from actrec.config.checks import require_choice
from actrec.config.choices import COMMUNICATIONS
from actrec.config.choices import STRATEGIES as STRATEGY_KINDS
from actrec.errors import ConfigError

TF_CONFIG_EXAMPLE = (
    '{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
    '"task": {"type": "worker", "index": 0}}'
)
CLUSTER_JOBS = ("chief", "worker")
SLURM_DEFAULT_PORT = 8888


@dataclass(frozen=True)
class ClusterInfo:
    """Where this process stands in its training cluster.

    num_workers: worker processes in the cluster (a chief counts as one).
    task_index: this process's worker index in [0, num_workers): the chief is 0.
    is_chief: whether this process writes shared files (worker 0, or the "chief" task).
    source: "tf_config", "slurm" or "local".
    """

    num_workers: int
    task_index: int
    is_chief: bool
    source: str


def _environment(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def _tf_config_error(problem: str) -> ConfigError:
    return ConfigError(
        f"TF_CONFIG {problem}. A correct TF_CONFIG for worker 0 of two is: {TF_CONFIG_EXAMPLE} "
        "(`actrec launch -n N -- COMMAND` sets it for local workers)."
    )


def _parsed_tf_config(text: str) -> tuple[dict[str, list[str]], str, int]:
    """(cluster {job: [address, ...]}, task type, task index) of a validated TF_CONFIG."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise _tf_config_error(
            f"is not valid JSON ({error.msg} at character {error.pos}): {shown!r}"
        ) from None
    if not isinstance(config, dict):
        raise _tf_config_error(f"must be a JSON object, got {type(config).__name__}")
    cluster = config.get("cluster")
    if not isinstance(cluster, dict) or not cluster:
        raise _tf_config_error('has no "cluster" object listing the worker addresses')
    task = config.get("task")
    if not isinstance(task, dict):
        raise _tf_config_error('has no "task" object saying which worker this process is')
    unknown_jobs = sorted(set(cluster) - set(CLUSTER_JOBS))
    if unknown_jobs:
        raise _tf_config_error(
            f"lists jobs {unknown_jobs} in its cluster; actrec trains with "
            f"MultiWorkerMirroredStrategy, whose cluster has only {list(CLUSTER_JOBS)} jobs"
        )
    for job, addresses in cluster.items():
        if not isinstance(addresses, list) or not addresses:
            raise _tf_config_error(f'cluster "{job}" must be a non-empty list of "host:port"')
        for address in addresses:
            if not isinstance(address, str) or ":" not in address:
                raise _tf_config_error(f'cluster "{job}" has {address!r}, not a "host:port"')
    if len(cluster.get("chief", [])) > 1:
        raise _tf_config_error(f'has {len(cluster["chief"])} "chief" tasks; a cluster has one')
    all_addresses = [address for job in CLUSTER_JOBS for address in cluster.get(job, [])]
    duplicates = sorted({address for address in all_addresses if all_addresses.count(address) > 1})
    if duplicates:
        raise _tf_config_error(
            f"lists the address(es) {duplicates} more than once; every task needs its own host:port"
        )
    task_type, task_index = task.get("type"), task.get("index", 0)
    if task_type not in cluster:
        raise _tf_config_error(
            f"task type {task_type!r} is not a job of its cluster ({sorted(cluster)})"
        )
    if isinstance(task_index, bool) or not isinstance(task_index, int):
        raise _tf_config_error(f"task index {task_index!r} is not a whole number")
    if not 0 <= task_index < len(cluster[task_type]):
        raise _tf_config_error(
            f'task index {task_index} is out of range: cluster "{task_type}" has '
            f"{len(cluster[task_type])} task(s), so the index must be in "
            f"[0, {len(cluster[task_type]) - 1}]"
        )
    return {job: list(addresses) for job, addresses in cluster.items()}, task_type, task_index


def _cluster_from_tf_config(text: str) -> ClusterInfo:
    cluster, task_type, task_index = _parsed_tf_config(text)
    num_chiefs = len(cluster.get("chief", []))
    num_workers = num_chiefs + len(cluster.get("worker", []))
    # MultiWorkerMirroredStrategy's numbering (multi_worker_util.id_in_cluster): the chief
    # is 0, then the workers in order.
    index = 0 if task_type == "chief" else num_chiefs + task_index
    return ClusterInfo(num_workers, index, index == 0, "tf_config")


def _slurm_task_count(environ: Mapping[str, str]) -> int | None:
    text = environ.get("SLURM_STEP_NUM_TASKS") or environ.get("SLURM_NTASKS")
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise ConfigError(
            f"SLURM_NTASKS={text!r} is not a whole number; run under srun, which sets it"
        ) from None


def _cluster_from_slurm(environ: Mapping[str, str], num_tasks: int) -> ClusterInfo:
    text = environ.get("SLURM_PROCID")
    if text is None:
        raise ConfigError(
            f"Slurm reports {num_tasks} tasks but SLURM_PROCID is not set; start one training "
            "process per task with `srun actrec train ...` (inside sbatch, prefix the command "
            "with srun)"
        )
    try:
        rank = int(text)
    except ValueError:
        raise ConfigError(f"SLURM_PROCID={text!r} is not a whole number") from None
    if not 0 <= rank < num_tasks:
        raise ConfigError(
            f"SLURM_PROCID={rank} is out of range for {num_tasks} Slurm tasks "
            f"(expected 0 to {num_tasks - 1})"
        )
    return ClusterInfo(num_tasks, rank, rank == 0, "slurm")


def cluster_from_environment(environ: Mapping[str, str] | None = None) -> ClusterInfo:
    """This process's place in the cluster, from TF_CONFIG, then Slurm, else local.

    environ: the environment to read (default: os.environ). Pure Python: TensorFlow is
    not imported. Raises ConfigError naming what is wrong with TF_CONFIG / SLURM_*.
    """
    environ = _environment(environ)
    text = environ.get("TF_CONFIG", "").strip()
    if text:
        return _cluster_from_tf_config(text)
    num_tasks = _slurm_task_count(environ)
    if num_tasks is not None and num_tasks > 1:
        return _cluster_from_slurm(environ, num_tasks)
    return ClusterInfo(1, 0, True, "local")


def _communication_options(communication: str, timeout_seconds: float | None):
    import tensorflow as tf

    implementations = tf.distribute.experimental.CommunicationImplementation
    implementation = {
        "auto": implementations.AUTO,
        "ring": implementations.RING,
        "nccl": implementations.NCCL,
    }[communication]
    return tf.distribute.experimental.CommunicationOptions(
        implementation=implementation, timeout_seconds=timeout_seconds
    )


def _tf_config_resolver(environ: Mapping[str, str]):
    import tensorflow as tf

    cluster, task_type, task_index = _parsed_tf_config(environ["TF_CONFIG"])
    return tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_index, rpc_layer="grpc"
    )


def _slurm_gpus_per_node(environ: Mapping[str, str]) -> int | None:
    """GPUs per node for SlurmClusterResolver without initialising TensorFlow's GPUs.

    None lets the resolver ask nvidia-smi; 0 on machines without it (CPU nodes), where the
    resolver would otherwise fail.
    """
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([device for device in visible.split(",") if device.strip()])
    return None if shutil.which("nvidia-smi") else 0


def _slurm_resolver(environ: Mapping[str, str], num_tasks: int):
    import tensorflow as tf

    port_base = int(environ.get("ACTREC_SLURM_PORT", SLURM_DEFAULT_PORT))
    gpus_per_node = _slurm_gpus_per_node(environ)
    if gpus_per_node == 0:
        # SlurmClusterResolver pairs each task of a node with a GPU slot (TF 2.21:
        # zip(range(tasks), range(0, gpus_per_node, gpus_per_task))), so without GPUs it
        # lists no task at all. CPU nodes get one placeholder slot per task and no
        # CUDA_VISIBLE_DEVICES change.
        gpu_options = {"gpus_per_node": num_tasks, "gpus_per_task": 1, "auto_set_gpu": False}
    else:
        gpu_options = {"gpus_per_node": gpus_per_node}
    try:
        resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
            port_base=port_base, **gpu_options
        )
        # Resolving sets CUDA_VISIBLE_DEVICES per task: it must happen before TensorFlow
        # initialises its GPUs.
        resolver.cluster_spec()
    except (RuntimeError, KeyError, ValueError) as error:
        raise ConfigError(
            f"cannot resolve the Slurm cluster ({error}); run one process per task with srun "
            "(SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST and "
            "SLURM_STEP_TASKS_PER_NODE must be set; at most one task per GPU), or set TF_CONFIG"
        ) from None
    return resolver


def _multi_worker_strategy(
    cluster: ClusterInfo, environ, communication, timeout_seconds, peer_timeout
):
    import tensorflow as tf

    if cluster.source == "tf_config":
        resolver = _tf_config_resolver(environ)
    elif cluster.source == "slurm":
        resolver = _slurm_resolver(environ, cluster.num_workers)
    else:
        # A single local worker: MultiWorkerMirroredStrategy runs as one worker.
        resolver = None
    if resolver is not None and peer_timeout is not None:
        configure_peer_timeout(resolver, peer_timeout)
    try:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            cluster_resolver=resolver,
            communication_options=_communication_options(communication, timeout_seconds),
        )
    except RuntimeError as error:
        raise ConfigError(
            f"cannot start MultiWorkerMirroredStrategy ({error}); the strategy must be built "
            "before TensorFlow runs any op: call build_strategy first in the worker process"
        ) from None
    if communication == "nccl" and not _has_gpu_devices(strategy):
        raise ConfigError(
            "communication='nccl' needs GPUs and this worker has none; use 'ring' or 'auto'"
        )
    return strategy


def _has_gpu_devices(strategy) -> bool:
    return any("GPU" in device.upper() for device in strategy.extended.worker_devices)


def _local_gpu_names() -> list[str]:
    import tensorflow as tf

    return [device.name for device in tf.config.list_physical_devices("GPU")]


def _one_device_strategy():
    import tensorflow as tf

    device = "/gpu:0" if _local_gpu_names() else "/cpu:0"
    return tf.distribute.OneDeviceStrategy(device)


def build_strategy(
    kind: str = "auto",
    communication: str = "auto",
    environ: Mapping[str, str] | None = None,
    *,
    timeout_seconds: float | None = None,
    peer_timeout: float | None = None,
):
    """The tf.distribute.Strategy of this process.

    kind: "auto" (MultiWorkerMirroredStrategy when the cluster has more than one worker,
        MirroredStrategy when this machine has more than one GPU, else one device),
        "one-device" (OneDeviceStrategy on the first GPU, else the CPU), "mirrored"
        (MirroredStrategy over the local GPUs) or "multi-worker".
    communication: collective implementation of MultiWorkerMirroredStrategy: "auto",
        "ring" (gRPC, works on CPU) or "nccl" (GPUs).
    environ: the environment to read TF_CONFIG / SLURM_* from (default: os.environ;
        SlurmClusterResolver itself always reads os.environ).
    timeout_seconds: abort a collective that waits longer than this (default: never).
    peer_timeout: seconds without a peer's heartbeat before the run stops (multi-worker
        only; default: TensorFlow's, 10 s).
    Raises ConfigError for an unknown kind / communication or a malformed cluster.
    """
    require_choice("strategy", kind, STRATEGY_KINDS)
    require_choice("communication", communication, COMMUNICATIONS)
    environ = _environment(environ)
    cluster = cluster_from_environment(environ)
    if kind == "auto":
        if cluster.num_workers > 1:
            kind = "multi-worker"
        else:
            kind = "mirrored" if len(_local_gpu_names()) > 1 else "one-device"
    elif kind != "multi-worker" and cluster.num_workers > 1:
        raise ConfigError(
            f"strategy={kind!r} trains in one process, but the environment ({cluster.source}) "
            f"describes {cluster.num_workers} workers; use 'auto' or 'multi-worker'"
        )
    if kind == "multi-worker":
        return _multi_worker_strategy(
            cluster, environ, communication, timeout_seconds, peer_timeout
        )
    if kind == "mirrored":
        import tensorflow as tf

        return tf.distribute.MirroredStrategy()
    return _one_device_strategy()


def replica_count(strategy) -> int:
    """Replicas that train in sync across the whole cluster."""
    return int(strategy.num_replicas_in_sync)


def _strategy_cluster(strategy) -> ClusterInfo | None:
    """ClusterInfo of a MultiWorkerMirroredStrategy's resolver; None for one-process ones."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or resolver.task_type is None:
        return None
    cluster = resolver.cluster_spec().as_dict()
    if not cluster:
        return None
    num_chiefs = len(cluster.get("chief", []))
    num_workers = num_chiefs + len(cluster.get("worker", []))
    task_id = int(resolver.task_id or 0)
    index = 0 if resolver.task_type == "chief" else num_chiefs + task_id
    return ClusterInfo(num_workers, index, index == 0, "strategy")


def _cluster(strategy, environ) -> ClusterInfo:
    if strategy is None:
        return cluster_from_environment(environ)
    return _strategy_cluster(strategy) or ClusterInfo(1, 0, True, "local")


def is_chief(strategy=None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process writes shared files (worker 0 / the "chief" task).

    Without a strategy the environment decides, without touching TensorFlow (the CLI
    asks before training starts).
    """
    return _cluster(strategy, environ).is_chief


def worker_index(strategy=None, environ: Mapping[str, str] | None = None) -> int:
    """This process's worker index in [0, worker_count)."""
    return _cluster(strategy, environ).task_index


def worker_count(strategy=None, environ: Mapping[str, str] | None = None) -> int:
    """Worker processes in the cluster."""
    return _cluster(strategy, environ).num_workers
