"""What the suite trains, exports, evaluates and prepares, and how busy its two workers are:
the README's test command with actrec's four costly entry points logged at every call.

    python benchmarks/suite_calls.py [-k EXPRESSION] [--top 25]

benchmarks/suite_processes.py says which processes the suite's CPU goes to; this says what
the code does with it. A `sitecustomize` hook (imported by every Python process the suite
starts, PYTHONPATH being inherited) wraps `actrec.train.run.train`,
`actrec.export.writer.export_runs`, `actrec.evaluation.evaluate.evaluate_run` and
`actrec.data.prepare.dataset.prepare_dataset` as their modules load, in the pytest workers
and in every `actrec` command alike, and appends each call's wall and process CPU, the test
that made it (PYTEST_CURRENT_TEST) and, for a training, its recipe's size (backbone, crop,
segments, epochs x steps). A pytest plugin logs when each test starts and ends on its worker.
Prints each worker's span and the time between its tests (what a better schedule could
win), the calls per entry point, the trainings grouped by recipe size (a training made by
several tests is one they could share), and the share of the workers' time that the
trainings of 100 steps or more take (what the suite would save if they cost nothing). Long:
the whole suite (14-17 min on 2 cores); run it alone on the idle machine.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from versions import ROOT, hooked_environment

HOOK = """
import functools, importlib.abc, importlib.machinery, json, os, sys, time

ENTRY_POINTS = {
    "actrec.train.run": "train",
    "actrec.export.writer": "export_runs",
    "actrec.evaluation.evaluate": "evaluate_run",
    "actrec.data.prepare.dataset": "prepare_dataset",
}


def _training_size(recipe):
    size = {"recipe": getattr(recipe, "name", "?")}
    for section, keys in (
        ("model", ("architecture", "backbone")),
        ("data", ("crop_size", "num_segments")),
        ("train", ("epochs", "batch_size")),
        ("runtime", ("steps_per_epoch",)),
    ):
        for key in keys:
            size[key] = str(getattr(getattr(recipe, section, None), key, None))
    return size


def _logged(function, name):
    @functools.wraps(function)
    def logged(*args, **kwargs):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            record = {
                "call": name,
                "wall": time.perf_counter() - wall,
                "cpu": time.process_time() - cpu,
                "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0],
            }
            if name == "train" and args:
                record.update(_training_size(args[0]))
            try:
                with open(os.environ["ACTREC_CALL_LOG"], "a") as log:
                    log.write(json.dumps(record) + "\\n")
            except Exception:
                pass
    return logged


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, name):
        self.inner, self.name = inner, name

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        name = ENTRY_POINTS[self.name]
        setattr(module, name, _logged(getattr(module, name), name))


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname not in ENTRY_POINTS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None:
            spec.loader = _Loader(spec.loader, fullname)
        return spec


sys.meta_path.insert(0, _Finder())
"""

PLUGIN = """
import json, os, time


def _log(nodeid, event):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:  # the workers' view; the controller only relays it
        with open(os.environ["ACTREC_TEST_LOG"], "a") as log:
            log.write(json.dumps({"worker": worker, "test": nodeid, "event": event,
                                  "time": time.time()}) + "\\n")


def pytest_runtest_logstart(nodeid, location):
    _log(nodeid, "start")


def pytest_runtest_logfinish(nodeid, location):
    _log(nodeid, "end")
"""

SIZE_KEYS = ("recipe", "architecture", "backbone", "crop_size", "num_segments", "epochs")
SIZE_KEYS += ("steps_per_epoch",)
"""What groups the logged trainings: the same values, the same training."""
RECIPE_SCALE_STEPS = 100
"""A training of this many steps or more is one of the recipes' own (the synthetic recipes
train 320-640; the tests' tiny runs 1-60)."""


def logged_suite(folder: Path, select: str | None) -> tuple[float, str, list, list]:
    """(wall seconds, pytest's summary line, the call records, the test records) of the
    README's test command with the hook and the plugin."""
    calls, tests = folder / "calls.jsonl", folder / "tests.jsonl"
    environment = hooked_environment(
        folder,
        {"sitecustomize.py": HOOK, "actrec_test_times.py": PLUGIN},
        ACTREC_CALL_LOG=str(calls),
        ACTREC_TEST_LOG=str(tests),
    )
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "actrec_test_times"] + (["-k", select] if select else []),
        cwd=ROOT, env=environment, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    lines = result.stdout.splitlines()
    summary = [line for line in lines if " passed" in line or " failed" in line]

    def records(path: Path) -> list:
        text = path.read_text() if path.is_file() else ""
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    said = summary[-1] if summary else f"exit {result.returncode}"
    return wall, said, records(calls), records(tests)


def worker_spans(tests: list) -> dict[str, tuple[float, float, float, float]]:
    """{worker: (first start, last end, seconds inside tests, seconds between them)}, times
    from the earliest start."""
    origin = min(record["time"] for record in tests)
    spans = {}
    for worker in sorted({record["worker"] for record in tests}):
        events = sorted((r for r in tests if r["worker"] == worker), key=lambda r: r["time"])
        inside = between = 0.0
        started = ended = None
        for record in events:
            if record["event"] == "start":
                if ended is not None:
                    between += record["time"] - ended
                started = record["time"]
            elif started is not None:
                inside += record["time"] - started
                ended = record["time"]
        spans[worker] = (events[0]["time"] - origin, events[-1]["time"] - origin, inside, between)
    return spans


def test_seconds(tests: list) -> dict[str, float]:
    """{test node id: seconds from its start to its end on its worker, set-up included}."""
    started, seconds = {}, collections.Counter()
    for record in sorted(tests, key=lambda r: r["time"]):
        if record["event"] == "start":
            started[record["test"]] = record["time"]
        elif record["test"] in started:
            seconds[record["test"]] += record["time"] - started.pop(record["test"])
    return seconds


def steps_of(record: dict) -> int:
    """A logged training's steps (epochs x steps per epoch; 0 where the recipe derives it)."""
    try:
        return int(record["epochs"]) * int(record["steps_per_epoch"])
    except (KeyError, ValueError):
        return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="select", help="pytest's -k: only these tests")
    parser.add_argument("--top", type=int, default=25, help="training sizes listed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="actrec-calls-") as scratch:
        wall, summary, calls, tests = logged_suite(Path(scratch), args.select)
    print(f"wall {wall / 60:.1f} min ({summary})")
    spans = worker_spans(tests)
    busy = sum(inside for _, _, inside, _ in spans.values())
    for worker, (first, last, inside, between) in spans.items():
        print(f"{worker}: tests from {first:.0f} to {last:.0f} s, {inside:.0f} s inside tests, "
              f"{between:.1f} s between them")  # fmt: skip
    print("\n| entry point | calls | wall s | CPU s |\n|---|---|---|---|")
    for name in ("train", "export_runs", "evaluate_run", "prepare_dataset"):
        made = [record for record in calls if record["call"] == name]
        print(f"| {name} | {len(made)} | {sum(r['wall'] for r in made):.0f} | "
              f"{sum(r['cpu'] for r in made):.0f} |")  # fmt: skip
    sizes = collections.defaultdict(list)
    for record in (r for r in calls if r["call"] == "train"):
        key = tuple(record.get(k) for k in SIZE_KEYS)
        sizes[key].append(record)
    print("\n| training (recipe, architecture, backbone, crop, segments, epochs x steps) | "
          "calls | wall s | CPU s | tests |\n|---|---|---|---|---|")  # fmt: skip
    ranked = sorted(sizes.items(), key=lambda item: -sum(r["wall"] for r in item[1]))
    for key, made in ranked[: args.top]:
        modules = sorted({Path(r["test"].split("::")[0]).name for r in made if r["test"]})
        print(f"| {', '.join(map(str, key[:5]))}, {key[5]} x {key[6]} | {len(made)} | "
              f"{sum(r['wall'] for r in made):.1f} | {sum(r['cpu'] for r in made):.1f} | "
              f"{', '.join(modules[:3])} |")  # fmt: skip
    # A test's recipe-scale trainings, at most its own time (K-AVG's two workers train at
    # once), matched by node id without xdist's "@group" suffix (the hook logs
    # PYTEST_CURRENT_TEST less its " (phase)", the plugin the node id).
    recipe_scale = [r for r in calls if r["call"] == "train" and steps_of(r) >= RECIPE_SCALE_STEPS]
    per_test = collections.Counter()
    for record in recipe_scale:
        per_test[record["test"].split("@")[0]] += record["wall"]
    seconds = collections.Counter()
    for test, spent in test_seconds(tests).items():
        seconds[test.split("@")[0]] += spent
    scale_wall = sum(min(spent, seconds.get(test, spent)) for test, spent in per_test.items())
    print(f"\ntrainings of {RECIPE_SCALE_STEPS} steps or more: {len(recipe_scale)}, "
          f"{scale_wall:.0f} s of wall, {100 * scale_wall / busy:.0f} % of the workers' "
          f"{busy:.0f} s inside tests: the suite at {1 - scale_wall / busy:.2f} of its time "
          "if they cost nothing")  # fmt: skip


if __name__ == "__main__":
    main()
