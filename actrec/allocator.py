"""glibc's allocator told to keep the memory a training step frees, for the next step.

A training step allocates and frees the same tensors every step. glibc's malloc hands
blocks above its mmap threshold back to the kernel when they are freed and trims the top of
its heaps, so the next step's allocations fault the same pages in again: millions of page
faults a training (2.9 M in 160 steps of the synthetic flow TSN), a fifth of its CPU time in
the kernel. TensorFlow's CPU allocator is malloc, and the usual cure (preloading tcmalloc or
jemalloc) needs an environment variable set before Python starts; `mallopt`, called before
TensorFlow allocates, does the same job in the process: blocks up to 32 MiB (glibc's largest
mmap threshold) come from the heaps, and freed memory is kept up to 1 GiB per heap.
Measured with `python benchmarks/allocator.py` (docs/benchmarks.md, "Allocator").

A process's resident memory then stays near its peak instead of shrinking between steps.
ACTREC_MALLOC=default leaves glibc's defaults, and so do the user's own settings of these
thresholds (MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_, MALLOC_MMAP_THRESHOLD_,
MALLOC_MMAP_MAX_, or glibc.malloc.* in GLIBC_TUNABLES).
"""

from __future__ import annotations

import os

# mallopt parameters (glibc malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
_SETTINGS = (
    (_M_MMAP_THRESHOLD, 32 * 1024 * 1024),  # glibc's maximum on 64-bit: HEAP_MAX_SIZE / 2
    (_M_TRIM_THRESHOLD, 1024 * 1024 * 1024),
    (_M_TOP_PAD, 64 * 1024 * 1024),
)
OPT_OUT_VARIABLE = "ACTREC_MALLOC"
USER_SETTINGS = (
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_MMAP_MAX_",
)


def keep_freed_memory() -> bool:
    """Set glibc malloc's thresholds (above) unless the user chose otherwise; whether set.

    False where the C library is not glibc (macOS, Windows, musl), where ACTREC_MALLOC is
    "default", or where the environment already tunes these thresholds (USER_SETTINGS, or
    glibc.malloc.* in GLIBC_TUNABLES).
    """
    if os.environ.get(OPT_OUT_VARIABLE, "").lower() == "default":
        return False
    if any(name in os.environ for name in USER_SETTINGS):
        return False
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018  (AttributeError where the libc is not glibc)
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return all(mallopt(parameter, value) == 1 for parameter, value in _SETTINGS)
