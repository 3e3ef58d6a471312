"""An export handed to `actrec predict` is not trusted: what each runtime would load of it
is read as data by actrec first (docs/evaluation-and-export.md, "Untrusted models").

    savedmodel_ops.py      the ops a SavedModel's TF2 loader would run, against actrec's own
    savedmodel_rebuild.py  an untrusted SavedModel run without TensorFlow's loader: its
                           serving function rebuilt from its recipe, its variables read as data
    onnx_checks.py         what an ONNX file may hold, before ONNX Runtime loads it
    tflite_checks.py       what a TFLite file may hold, before an interpreter loads it
    model_reading.py       a runtime's error while reading a model, as one line

Import names from these modules; this package re-exports nothing.
"""
