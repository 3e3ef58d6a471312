"""Where the suite's CPU goes: the README's test command with every Python process it
starts logged at its exit, then the CPU of the two pytest workers themselves against that
of the processes the tests start, per test module.

    python benchmarks/suite_processes.py [-k EXPRESSION] [--top 30]

A test's wall time (pytest's --durations) does not say whether its seconds are spent in
the worker or in the processes it starts and waits for (an `actrec` command, a launched
worker, a card's code in a fresh Python), nor how many of those import TensorFlow (about
5 s of CPU each on an AMD EPYC with AVX-512). Python's `sitecustomize` hook (a module of
that name on PYTHONPATH is imported by every interpreter at start-up, and the processes
the tests start inherit PYTHONPATH and PYTEST_CURRENT_TEST) registers, in every process,
an exit handler that appends its own CPU (os.times, children not included), its command
line, whether it imported TensorFlow, Keras, PyTorch or JAX, and the test that started it.
Not logged: processes killed by a signal (the suite kills workers on purpose), ones that
leave by os._exit, and ones whose test sets PYTHONPATH itself; the total beside them is
the command's own user + system time. The hook's folder goes first on PYTHONPATH, so an
environment's own sitecustomize (if it has one) is not imported during the run. Long: the
whole suite (15-17 min on 2 cores); run it alone on the idle machine.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from versions import ROOT, hooked_environment

HOOK = """
import atexit, json, os, sys

def _actrec_log_process():
    try:
        times = os.times()
        record = {
            "argv": sys.argv[:6],
            "cpu": times.user + times.system,
            "imported": [m for m in ("tensorflow", "keras", "torch", "jax") if m in sys.modules],
            "test": os.environ.get("PYTEST_CURRENT_TEST", ""),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
        }
        with open(os.environ["ACTREC_PROCESS_LOG"], "a") as log:
            log.write(json.dumps(record) + "\\n")
    except Exception:
        pass

atexit.register(_actrec_log_process)
"""


def logged_suite(folder: Path, select: str | None) -> tuple[float, float, str, str]:
    """(wall seconds, user + system CPU seconds of the command and all it waited for,
    pytest's output, the process log's text) of the README's test command with the hook."""
    log = folder / "processes.jsonl"
    environment = hooked_environment(
        folder, {"sitecustomize.py": HOOK}, ACTREC_PROCESS_LOG=str(log)
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0"]
        + (["-k", select] if select else []),
        cwd=ROOT, env=environment, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.stdout, log.read_text() if log.is_file() else ""


def module_of_test(test: str) -> str:
    """tests/x/test_y.py of a PYTEST_CURRENT_TEST value or a --durations line's node id."""
    return test.split("::")[0].split(" ")[0]


def module_seconds(pytest_output: str) -> collections.Counter:
    """{module: seconds of its tests' setup, call and teardown} from --durations=0."""
    seconds = collections.Counter()
    for line in pytest_output.splitlines():
        match = re.match(r"^(\d+\.\d+)s (?:call|setup|teardown)\s+(\S+)", line)
        if match:
            seconds[module_of_test(match.group(2))] += float(match.group(1))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="select", help="pytest's -k: only these tests")
    parser.add_argument("--top", type=int, default=30, help="modules listed, most time first")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="actrec-processes-") as scratch:
        wall, cpu, output, log = logged_suite(Path(scratch), args.select)
    summary = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    print(f"wall {wall / 60:.1f} min, CPU {cpu / 60:.1f} min ({summary[-1] if summary else ''})")
    records = [json.loads(line) for line in log.splitlines() if line.strip()]
    started = [record for record in records if record["test"]]
    own = [record for record in records if not record["test"]]  # pytest and its workers
    print(
        f"logged {len(records)} processes, {sum(r['cpu'] for r in records):.0f} CPU s: the "
        f"pytest processes {sum(r['cpu'] for r in own):.0f} s; {len(started)} started by "
        f"tests {sum(r['cpu'] for r in started):.0f} s, of which "
        f"{sum('tensorflow' in r['imported'] for r in started)} imported TensorFlow"
    )
    children = collections.defaultdict(lambda: [0, 0.0, 0])  # processes, CPU s, with TF
    for record in started:
        entry = children[module_of_test(record["test"])]
        entry[0] += 1
        entry[1] += record["cpu"]
        entry[2] += "tensorflow" in record["imported"]
    seconds = module_seconds(output)
    print("\n| module | wall s of its tests | CPU s of the processes it started | processes "
          "(TensorFlow) |\n|---|---|---|---|")  # fmt: skip
    for module, total in seconds.most_common(args.top):
        count, child_cpu, with_tf = children.get(module, (0, 0.0, 0))
        print(f"| {module} | {total:.1f} | {child_cpu:.1f} | {count} ({with_tf}) |")


if __name__ == "__main__":
    main()
