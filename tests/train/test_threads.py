"""runtime.threads_per_op: TensorFlow's intra-op threads, set before its runtime starts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from repo_paths import REPO_ROOT

from actrec.errors import ConfigError
from actrec.train.threads import use_threads_per_op

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


@pytest.mark.parametrize("threads", [0, 100_000_000])
def test_threads_out_of_bounds_are_refused_before_tensorflow_makes_them(
    threads, cli_runner, tiny_synthetic_prepared, tmp_path
):
    """TensorFlow makes every thread it is asked for (10^8 hung `actrec train`): the recipe's
    bound refuses the value by name, before a run folder is made, and the library function
    refuses it too."""
    run_dir = tmp_path / "run"
    result = cli_runner(
        "train", "--recipe", "synthetic-flow", "--data", tiny_synthetic_prepared,
        "--workdir", run_dir, "--set", f"runtime.threads_per_op={threads}",
    )  # fmt: skip
    assert result.exit_code != 0
    assert f"runtime.threads_per_op={threads} is not valid; use 1 to 256 or null" in result.output
    assert not run_dir.exists()
    with pytest.raises(ConfigError, match="use 1 to 256 or null"):
        use_threads_per_op(threads)
