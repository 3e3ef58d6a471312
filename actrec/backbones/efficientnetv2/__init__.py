"""keras.applications' EfficientNetV2 (B0-B3, S):
spec.py (its registry entries) and build.py (the network). This package re-exports
nothing."""
