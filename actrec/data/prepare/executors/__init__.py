"""Where `actrec prepare` encodes videos: registry.py (the registry every caller reads) and
one module per executor (local: this machine's processes; ray: Ray tasks), each defining
EXECUTOR. This package re-exports nothing."""
