"""keras.applications' MobileNetV3 (Small, Large):
spec.py (its registry entries) and build.py (the network). This package re-exports
nothing."""
