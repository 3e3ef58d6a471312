"""keras.applications' ResNet v1 (ResNet-50, -101, -152): spec.py (its registry entries),
build.py (the network) and shift.py (where TSM shifts its blocks, by Keras's layer names,
which the torchvision layout keeps too). This package re-exports nothing."""
