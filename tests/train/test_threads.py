"""runtime.threads_per_op: TensorFlow's intra-op threads, set before its runtime starts."""

from __future__ import annotations

import os
import subprocess
import sys

from repo_paths import REPO_ROOT

PROBE = """
import tensorflow as tf
from actrec_cli.console import import_tensorflow_quietly
from actrec.quickstart.stages import quickstart_threads_per_op
from actrec.train.threads import use_threads_per_op

import_tensorflow_quietly(threads_per_op=quickstart_threads_per_op())  # the quickstart's start
print(
    tf.config.threading.get_intra_op_parallelism_threads(),
    use_threads_per_op(2),  # the runtime has started with 1: kept
    tf.config.threading.get_intra_op_parallelism_threads(),
    use_threads_per_op(1),
    use_threads_per_op(None),
)
"""


def test_the_quickstart_starts_tensorflow_with_its_recipes_threads_and_keeps_them():
    """The quickstart's recipes ask for 1 thread an op; the CLI sets it before the first op
    starts the runtime (TensorFlow's default here: one a core), and a later request for
    another number is refused (False) while the runtime keeps its 1."""
    environment = {**os.environ}
    environment.pop("TF_NUM_INTRAOP_THREADS", None)  # the suite's own setting
    output = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    ).stdout.split()
    assert output == ["1", "False", "1", "True", "True"]
