"""Files actrec writes, safely.

    atomic.py        atomic writes: a temporary name in the same folder, fsync, rename
    output_paths.py  an output path: refused through a file, its parents created and removed

Import names from these modules; this package re-exports nothing.
"""
