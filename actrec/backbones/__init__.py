"""The backbones, one folder per family (resnet, resnet_torchvision, mobilenet_v2,
mobilenet_v3, efficientnet, efficientnetv2, inception_v3, densenet), each holding its
registry entries (`spec.py`, standard library only), its network (`build.py`) and, where it
has them, where TSM shifts it (`shift.py`) and its published PyTorch layout (`layout.py`).
Beside the families: the contract they fill (spec.py), the registry that finds them
(registry.py), building (build.py), the forms a layer takes while a TFLite model is traced
(tflite_forms.py), and the weight store (weight_store, weight_digests, weight_install,
pretrained). This package re-exports nothing."""
