"""actrec.allocator: a process that imports actrec reuses the memory a step frees instead of
faulting the same pages in again (measured in fresh processes: their page faults)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from actrec.allocator import OPT_OUT_VARIABLE, USER_SETTINGS, keep_freed_memory

# A training step's pattern, in a thread (TensorFlow's threads allocate from arenas of their
# own) and in the main thread: blocks of a few MiB allocated, written and freed together,
# 200 times. Prints {"faults": [thread, main], "pages": pages written per thread}.
CHURN = """
import ctypes, json, resource, threading
import actrec  # noqa: F401
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
SIZES = (3, 1, 6, 2, 5)  # MiB
def churn(faults):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(200):
        blocks = [libc.malloc(size << 20) for size in SIZES]
        for block, size in zip(blocks, SIZES):
            libc.memset(block, 1, size << 20)
        for block in blocks:
            libc.free(block)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
faults = []
thread = threading.Thread(target=churn, args=(faults,))
thread.start()
thread.join()
churn(faults)
print(json.dumps({"faults": faults, "pages": 200 * sum(SIZES) * 256}))
"""

glibc_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.confstr("CS_GNU_LIBC_VERSION") is None,
    reason="the thresholds are glibc's",
)


def _churn_faults(**environment: str) -> tuple[list[int], int]:
    env = {k: v for k, v in os.environ.items() if k != OPT_OUT_VARIABLE}
    result = subprocess.run(
        [sys.executable, "-c", CHURN],
        env={**env, **environment},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    measured = json.loads(result.stdout)
    return measured["faults"], measured["pages"]


@glibc_only
def test_memory_a_step_frees_is_reused_without_page_faults():
    kept, pages = _churn_faults()
    default, _ = _churn_faults(**{OPT_OUT_VARIABLE: "default"})
    print(f"page faults of {pages} pages written: actrec {kept}, glibc's defaults {default}")
    assert max(kept) < 0.02 * pages  # the first round's pages, then none
    assert min(default) > 10 * max(kept)  # glibc's defaults fault most pages in every round


@glibc_only
def test_the_user_s_own_malloc_settings_and_the_opt_out_are_left_alone(monkeypatch):
    for name in USER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    monkeypatch.delenv(OPT_OUT_VARIABLE, raising=False)
    assert keep_freed_memory() is True
    monkeypatch.setenv(OPT_OUT_VARIABLE, "default")
    assert keep_freed_memory() is False
    monkeypatch.delenv(OPT_OUT_VARIABLE)
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=0")
    assert keep_freed_memory() is False
    monkeypatch.delenv("GLIBC_TUNABLES")
    for name in USER_SETTINGS:
        monkeypatch.setenv(name, "1")
        assert keep_freed_memory() is False, name
        monkeypatch.delenv(name)
    # the user's own settings reach the fresh process: glibc's behaviour, not actrec's
    faults, pages = _churn_faults(MALLOC_TRIM_THRESHOLD_="0")
    assert min(faults) > 0.5 * pages
