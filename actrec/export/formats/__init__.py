"""The export formats: registry.py (the registry every caller reads) and one module per
format (savedmodel, keras, tflite, onnx), each defining FORMAT. Import names from these
modules; this package re-exports nothing."""
