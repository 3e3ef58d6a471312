"""keras.applications' EfficientNet (v1, B0-B3):
spec.py (its registry entries) and build.py (the network). This package re-exports
nothing."""
