"""keras.applications' DenseNet-121:
spec.py (its registry entries) and build.py (the network). This package re-exports
nothing."""
