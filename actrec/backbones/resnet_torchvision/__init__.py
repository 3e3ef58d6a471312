"""torchvision's ResNet (ResNet-50, -101) in Keras with PyTorch's layout: spec.py (its
registry entries: torchvision's ImageNet files), build.py (the network) and layout.py
(torchvision's module names -> Keras layers, for converting its published files). TSM
shifts it as keras.applications' ResNet (its shift family "resnet"). This package
re-exports nothing."""
