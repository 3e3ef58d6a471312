"""keras.applications' InceptionV3:
spec.py (its registry entries) and build.py (the network). This package re-exports
nothing."""
