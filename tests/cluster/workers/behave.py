"""A stand-in worker for the launcher tests: prints what it was given, then behaves.

    python tests/cluster/workers/behave.py [--fail WORKER CODE] [--sleep SECONDS]
        [--sleep-worker WORKER SECONDS] [--ignore-sigterm] [--lines N]

Prints "pid PID", "tf_config JSON" and "cuda CUDA_VISIBLE_DEVICES", then N numbered
lines, sleeps (--sleep, or --sleep-worker for one worker), and exits with CODE when it
is worker WORKER of --fail (else 0).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail", nargs=2, type=int, metavar=("WORKER", "CODE"))
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--sleep-worker", nargs=2, type=float, action="append", default=[])
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--lines", type=int, default=0)
    args = parser.parse_args()
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    tf_config = json.loads(os.environ["TF_CONFIG"])
    index = tf_config["task"]["index"]
    print(f"pid {os.getpid()}", flush=True)
    print(f"tf_config {json.dumps(tf_config)}", flush=True)
    print(f"cuda {os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}", flush=True)
    for line in range(args.lines):
        print(f"line {line}", flush=True)
    sleep = dict((int(worker), seconds) for worker, seconds in args.sleep_worker)
    time.sleep(sleep.get(index, args.sleep))
    if args.fail and args.fail[0] == index:
        print("failing on purpose", file=sys.stderr, flush=True)
        return args.fail[1]
    return 0


if __name__ == "__main__":
    sys.exit(main())
