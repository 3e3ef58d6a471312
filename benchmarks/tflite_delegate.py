"""Which ops of a .tflite file LiteRT runs outside its XNNPACK delegate, and how long one call
takes on one thread: the helpers of benchmarks/movinet_tflite_ops.py and
benchmarks/int8_hard_swish.py."""

from __future__ import annotations

import collections
import statistics
import time
from pathlib import Path


def ops_outside_delegate(path: Path) -> tuple[int, int, collections.Counter]:
    """(ops, delegate partitions, {op type: count} of the ops left outside the delegate)
    of a .tflite file under LiteRT's default XNNPACK delegate."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), num_threads=1)
    interpreter.allocate_tensors()
    details = interpreter._get_ops_details()  # the graph's ops, then the delegate's nodes
    ops = [op for op in details if op["op_name"] != "DELEGATE"]
    partitions = [op for op in details if op["op_name"] == "DELEGATE"]
    producer = {tensor: op["index"] for op in ops for tensor in op["outputs"]}
    delegated: set[int] = set()
    for partition in partitions:
        boundary = set(partition["inputs"])
        pending = [producer[t] for t in partition["outputs"] if t in producer]
        while pending:
            index = pending.pop()
            if index in delegated:
                continue
            delegated.add(index)
            pending += [
                producer[t]
                for t in details[index]["inputs"]
                if t >= 0 and t not in boundary and t in producer
            ]
    outside = collections.Counter(op["op_name"] for op in ops if op["index"] not in delegated)
    return len(ops), len(partitions), outside


def median_call_ms(path: Path, repeats: int) -> float:
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), num_threads=1)
    interpreter.allocate_tensors()
    rng = np.random.default_rng(0)
    for detail in interpreter.get_input_details():
        value = rng.normal(0, 1, detail["shape"]).astype(detail["dtype"])
        interpreter.set_tensor(detail["index"], value)
    for _ in range(5):
        interpreter.invoke()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        interpreter.invoke()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def describe(label: str, path: Path) -> None:
    count, partitions, outside = ops_outside_delegate(path)
    listed = ", ".join(f"{n} {name}" for name, n in outside.most_common()) or "none"
    print(f"{label}: {count} ops, {partitions} XNNPACK partitions; outside it: {listed}")
