"""Exported models: a trained run (or an RGB and a flow run, fused) as one self-contained
folder, and predictions on video files with it.

    writer.py         export_runs: checks, build, the format's write, atomic rename
    checks.py         the options, out folder, runs and preparation settings of an export
    formats/          THE format registry (registry.py) and one module per format
    streams.py        ExportedStream: an export's stream, its clip and its model
    model_writers.py  the SavedModel / Keras model written and reloaded
    serving.py        the SavedModel's graph: decoded video -> evaluation clip -> scores
    ready_clips.py    the device formats' layout (TFLite, ONNX): ready clips in
    tflite.py         the TFLite converter and interpreters (LiteRT, TensorFlow)
    metadata.py       actrec.json, classes.txt and recipe file names; reading actrec.json
    model_card.py     MODEL_CARD.md
    predict.py        ExportedModel, predict_videos: video files -> top-k classes
    quantization.py, calibration.py, streaming_quantization.py, onnx_int8.py
                      `--quantize` (int8: calibrated on the run's clips, streaming
                      models on their real states, ONNX as QDQ)
    accuracy_gate.py  a quantised export's float and quantised top-1 on held-out clips
    annotation.py, annotated_video.py, annotation_output.py, timeline_strip.py
                      `predict --annotate`: the top-k drawn on frames, the video written,
                      its path checked, `--timeline`'s PNG strip

Import names from these modules; this package re-exports nothing.
"""
