"""actrec.cluster.strategy: TF_CONFIG / Slurm parsing and strategy selection."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from actrec.cluster.strategy import (
    ClusterInfo,
    build_strategy,
    cluster_from_environment,
    is_chief,
    replica_count,
    worker_count,
    worker_index,
)
from actrec.errors import ConfigError

TWO_WORKERS = {"worker": ["localhost:12345", "localhost:12346"]}


def tf_config(cluster=None, task=None, **extra) -> dict[str, str]:
    config = {"cluster": cluster or TWO_WORKERS, "task": task or {"type": "worker", "index": 0}}
    config.update(extra)
    return {"TF_CONFIG": json.dumps(config)}


def test_no_cluster_variables_mean_one_local_worker():
    assert cluster_from_environment({}) == ClusterInfo(1, 0, True, "local")
    assert cluster_from_environment({"SLURM_NTASKS": "1", "SLURM_PROCID": "0"}).source == "local"


def test_tf_config_gives_the_worker_and_the_chief():
    second = cluster_from_environment(tf_config(task={"type": "worker", "index": 1}))
    assert second == ClusterInfo(2, 1, False, "tf_config")
    assert cluster_from_environment(tf_config()).is_chief
    assert is_chief(environ=tf_config(task={"type": "worker", "index": 1})) is False
    assert worker_index(environ=tf_config(task={"type": "worker", "index": 1})) == 1
    assert worker_count(environ=tf_config()) == 2


def test_a_chief_task_counts_as_worker_zero():
    cluster = {"chief": ["host0:1"], "worker": ["host1:1", "host2:1"]}
    assert cluster_from_environment(tf_config(cluster, {"type": "chief", "index": 0})) == (
        ClusterInfo(3, 0, True, "tf_config")
    )
    assert cluster_from_environment(tf_config(cluster, {"type": "worker", "index": 0})) == (
        ClusterInfo(3, 1, False, "tf_config")
    )


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"TF_CONFIG": "{cluster: }"}, "is not valid JSON"),
        ({"TF_CONFIG": "[1, 2]"}, "must be a JSON object"),
        ({"TF_CONFIG": json.dumps({"task": {"type": "worker", "index": 0}})}, 'no "cluster"'),
        ({"TF_CONFIG": json.dumps({"cluster": TWO_WORKERS})}, 'no "task"'),
        (
            tf_config(task={"type": "worker", "index": 2}),
            r'task index 2 is out of range: cluster "worker" has 2 task\(s\)',
        ),
        (tf_config(task={"type": "evaluator", "index": 0}), "task type 'evaluator' is not a job"),
        (tf_config(task={"type": "worker", "index": "1"}), "not a whole number"),
        (tf_config({"worker": ["a:1", "a:1"]}), r"address\(es\) \['a:1'\] more than once"),
        (tf_config({"worker": ["a:1"], "ps": ["b:1"]}), r"lists jobs \['ps'\]"),
        (tf_config({"worker": ["a"]}), 'not a "host:port"'),
        (
            tf_config({"chief": ["a:1", "b:1"], "worker": ["c:1"]}, {"type": "chief", "index": 0}),
            'has 2 "chief" tasks',
        ),
    ],
)
def test_malformed_tf_config_names_the_problem_and_shows_an_example(environ, expected):
    with pytest.raises(ConfigError, match=expected) as error:
        cluster_from_environment(environ)
    assert '{"cluster": {"worker": ["host1:12345", "host2:12345"]}' in str(error.value)


def test_slurm_variables_give_a_multi_worker_cluster():
    environ = {
        "SLURM_NTASKS": "2",
        "SLURM_PROCID": "1",
        "SLURM_STEP_NODELIST": "node[01-02]",
        "SLURM_STEP_TASKS_PER_NODE": "1(x2)",
    }
    assert cluster_from_environment(environ) == ClusterInfo(2, 1, False, "slurm")
    step = {"SLURM_STEP_NUM_TASKS": "4", "SLURM_NTASKS": "8", "SLURM_PROCID": "0"}
    assert cluster_from_environment(step) == ClusterInfo(4, 0, True, "slurm")
    # TF_CONFIG, when set, is the explicit choice.
    assert cluster_from_environment({**environ, **tf_config()}).source == "tf_config"


def test_slurm_cluster_resolves_on_cpu_nodes(monkeypatch):
    # TF's SlurmClusterResolver lists no task at all without GPUs; strategy.py works
    # around it (one placeholder slot per task, CUDA_VISIBLE_DEVICES left alone).
    from actrec.cluster.strategy import _slurm_resolver

    environ = {
        "SLURM_STEP_NUM_TASKS": "3",
        "SLURM_PROCID": "2",
        "CUDA_VISIBLE_DEVICES": "",
        "SLURM_STEP_NODELIST": "node[01-02]",
        "SLURM_STEP_TASKS_PER_NODE": "2,1",
    }
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    resolver = _slurm_resolver(environ, 3)
    assert resolver.cluster_spec().as_dict() == {
        "worker": ["node01:8888", "node01:8889", "node02:8888"]
    }
    assert (resolver.task_type, resolver.task_id) == ("worker", 2)


def test_slurm_problems_are_config_errors():
    with pytest.raises(ConfigError, match=r"SLURM_PROCID is not set.*srun"):
        cluster_from_environment({"SLURM_NTASKS": "2"})
    with pytest.raises(ConfigError, match="SLURM_PROCID=5 is out of range for 2"):
        cluster_from_environment({"SLURM_NTASKS": "2", "SLURM_PROCID": "5"})


def test_reading_the_cluster_does_not_import_tensorflow():
    code = (
        "import sys, json; from actrec.cluster.strategy import is_chief, cluster_from_environment;"
        "is_chief(); cluster_from_environment({'TF_CONFIG': json.dumps({'cluster': {'worker':"
        "['a:1']}, 'task': {'type': 'worker', 'index': 0}})});"
        "print('tensorflow' in sys.modules)"
    )
    imported = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert imported == "False"


def test_auto_picks_one_device_on_this_machine():
    import tensorflow as tf

    strategy = build_strategy("auto", environ={})
    assert isinstance(strategy, tf.distribute.OneDeviceStrategy)
    assert replica_count(strategy) == 1
    assert is_chief(strategy) and worker_index(strategy) == 0 and worker_count(strategy) == 1


def test_unknown_kind_or_communication_lists_the_valid_ones():
    with pytest.raises(
        ConfigError, match=r"strategy='tpu'.*auto, one-device, mirrored, multi-worker"
    ):
        build_strategy("tpu", environ={})
    with pytest.raises(ConfigError, match=r"communication='mpi'.*auto, ring, nccl"):
        build_strategy("auto", "mpi", environ={})


def test_a_one_process_strategy_refuses_a_multi_worker_environment():
    with pytest.raises(ConfigError, match="describes 2 workers"):
        build_strategy("one-device", environ=tf_config())
