"""Exported models: a trained run (or an RGB and a flow run, fused) written as one
self-contained folder, and checked; running one is actrec.predict's.

    writer.py              export_runs: checks, build, the format's write, atomic rename
    checks.py              the options, out folder, runs and preparation settings of an export
    formats/               THE format registry (registry.py) and one module per format
    streams.py             ExportedStream: an export's stream, its clip and its model
    model_writers.py       the SavedModel / Keras model written and reloaded
    parity.py              how far a reloaded model's outputs are from the model's
    fresh_process.py       a model card's code run in a new Python process
    serving.py             the SavedModel's graph: decoded video -> evaluation clip -> scores
    streaming_export.py    the online TSM's step: one frame and the shift state in
    saved_variables.py     what an export's SavedModel tracks: its models' variables
    ready_clips.py         the device formats' layout (TFLite, ONNX): ready clips in
    tflite_flatbuffers.py  TFLite flatbuffers converted, and run (LiteRT, TensorFlow)
    metadata.py            actrec.json, classes.txt and recipe file names; reading actrec.json
    metadata_schema.py     actrec.json's schema, checked whenever it is read
    model_card.py          MODEL_CARD.md
    quantization/          `--quantize`: calibration clips, the accuracy gate, ONNX int8,
                           the streaming step on its real states
    trust/                 an export handed to `actrec predict` read as data before any
                           runtime loads it (SavedModel ops and rebuild, ONNX, TFLite)

Import names from these modules; this package re-exports nothing.
"""
