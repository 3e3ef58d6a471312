"""The reload check's measure (actrec.export.parity): scaled by the logits' size, so that a
correct model with large logits passes where an absolute 1e-4 refused it (issue 55: a 224-px
MobileNetV2 TSM's TFLite and ONNX exports differed by 1.17e-4 / 1.06e-4), while an export
of other weights (one layer changed by 5 %) is still refused, by over 10x the tolerance,
in TFLite and ONNX."""

from __future__ import annotations

import numpy as np
import pytest

from actrec.export.parity import MEASURE, scaled_difference


def test_small_logits_keep_the_absolute_bound_and_large_ones_are_scaled():
    small = np.array([[0.2, -0.7, 0.4]])
    assert scaled_difference(small, small + 3e-5) == pytest.approx(3e-5)
    # logits of a real-size model: summing in another order moves them by ~1e-7 of their
    # size, more than 1e-4 in absolute terms
    rng = np.random.default_rng(0)
    large = rng.normal(0, 15, (4, 400))
    reordered = large * (1 + rng.uniform(-3e-7, 3e-7, large.shape)) + 1.2e-4
    assert np.max(np.abs(reordered - large)) > 1e-4
    assert scaled_difference(large, reordered) < 1e-5
    # another network's logits: far off however large they are
    assert scaled_difference(large, large * 1.05) > 1e-2
    assert scaled_difference(large, large[:, :-1]) == float("inf")
    assert "max(1, max |model|)" in MEASURE


def _every_layer(model):
    """The layers of `model` and of the models nested in it, in order."""
    for layer in model.layers:
        yield layer
        if hasattr(layer, "layers"):
            yield from _every_layer(layer)


def _request(run_dir, scale_one_layer: float = 1.0):
    """The ExportRequest `actrec export RUN` makes, the kernel of the layer before the
    classifier (the backbone's last convolution) multiplied by `scale_one_layer`."""
    from actrec.data.input.clip_spec import clip_spec
    from actrec.export.formats.registry import ExportRequest
    from actrec.export.streams import ExportedStream
    from actrec.runs.trained import build_trained_model, load_trained_run

    run = load_trained_run(run_dir)
    model = build_trained_model(run)
    if scale_one_layer != 1.0:
        layer = [layer for layer in _every_layer(model) if hasattr(layer, "kernel")][-2]
        kernel = layer.get_weights()
        layer.set_weights([kernel[0] * scale_one_layer, *kernel[1:]])
    stream = ExportedStream(clip_spec(run.recipe, training=False), model, run)
    return ExportRequest([stream], run.classes, 1, (1.0, 1.5))


@pytest.mark.parametrize("model_format", ["tflite", "onnx"])
def test_an_export_of_other_weights_is_refused_and_the_right_one_passes(tiny_runs, model_format):
    """The format's own converter and runtime, on the tiny RGB run: the export of the run
    passes the format's tolerance; the export of the run with one layer 5 % off (what a
    wrong conversion looks like) is refused by the same check."""
    from actrec.export.ready_clips import model_function, probe_difference

    right = _request(tiny_runs["rgb"])
    wrong = _request(tiny_runs["rgb"], scale_one_layer=1.05)
    if model_format == "tflite":
        from actrec.export.formats.tflite import BATCH
        from actrec.export.tflite_flatbuffers import FLOAT_TOLERANCE, TfliteRunner, converted

        def runner(request):
            function, signature, _ = model_function(request, BATCH)
            return TfliteRunner(content=converted(function, signature, request.models, "none"))

        batch, tolerance = BATCH, FLOAT_TOLERANCE
    else:
        from actrec.export.formats.onnx import DEFAULT_OPSET, TOLERANCE, OnnxRunner, converted

        def runner(request):
            function, signature, _ = model_function(request, None)
            return OnnxRunner(converted(function, signature, DEFAULT_OPSET), "cpu")

        batch, tolerance = None, TOLERANCE
    function, signature, _ = model_function(right, batch)
    assert probe_difference(function, signature, runner(right).run, "logits") <= tolerance
    wrong_difference = probe_difference(function, signature, runner(wrong).run, "logits")
    assert wrong_difference > 10 * tolerance  # 37x measured on the tiny run
