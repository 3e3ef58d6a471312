"""Deployment formats of one online TSM run: size, one-core latency and test top-1.

    python benchmarks/deploy.py --run RUN [--repeats 30]

RUN is a finished run of an online TSM (e.g. `actrec train --recipe synthetic-tsm-online
--data PREPARED --workdir RUN`) whose prepared data is still where it trained. Exports it
as a SavedModel, as TFLite float32 / float16 / dynamic-range int8 / full-integer int8, as ONNX
float32 / int8 (static QDQ; the int8 models calibrated on 64 training clips), and as the
streaming (frame-by-frame) SavedModel, TFLite float32 and ONNX, then prints, measured in
this run on ONE CPU core (TensorFlow, the TFLite interpreter and ONNX Runtime each limited
to one thread; ONNX needs `pip install 'actrec[onnx]'`):

- the model file's size;
- the latency of one clip (SavedModel: the whole signature on a decoded test video, its
  sampling and crop included; TFLite, ONNX: the model on the sampled, cropped clip) and of one
  streamed frame (the streaming models);
- the centre-view top-1 on the test split: the clip models on every test video, the
  streaming models fed each video's T sampled frames one by one (mean logits);
- the online TSM's cost per frame over the clip model's cost per clip (the online TSM's
  point: about 1/T, a frame's pass instead of T frames').
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def one_core() -> None:
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def median_seconds(function, repeats: int) -> float:
    function()  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]


def model_bytes(folder: Path) -> int:
    """The model's own files: model.tflite, model.onnx, or saved_model.pb and variables/."""
    for name in ("model.tflite", "model.onnx"):
        if (folder / name).is_file():
            return (folder / name).stat().st_size
    files = [folder / "saved_model.pb", *(folder / "variables").rglob("*")]
    return sum(path.stat().st_size for path in files if path.is_file())


def test_videos(run_dir: Path) -> list[tuple[str, int]]:
    """(source video, label) of the run's prepared test split."""
    from actrec.data.format.manifest import read_manifest
    from actrec.runs.trained import load_trained_run

    manifest = read_manifest(load_trained_run(run_dir).data_dir)
    return [
        (video["path"], video["label"])
        for video in manifest["videos"]
        if video["split"] == "test" and video["status"] == "ok"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="a finished online TSM run")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--out", type=Path, help="folder for the exports (default: temporary)")
    args = parser.parse_args()
    one_core()
    import numpy as np
    import tensorflow as tf

    from actrec.data.input import sampling
    from actrec.data.input.clip_spec import clip_spec
    from actrec.data.input.clips import evaluation_crop
    from actrec.export.formats.onnx import ONNX_FILE, OnnxRunner
    from actrec.export.quantization.quantized_export import QuantizationOptions
    from actrec.export.serving import clips_from_frames
    from actrec.export.tflite_flatbuffers import TFLITE_FILE, TfliteRunner
    from actrec.export.writer import export_runs
    from actrec.predict.stream import StreamingModel
    from actrec.predict.video_files import ExportedModel
    from actrec.runs.trained import load_trained_run

    out = args.out or Path(tempfile.mkdtemp(prefix="actrec-deploy-"))
    run = load_trained_run(args.run)
    spec = clip_spec(run.recipe, training=False)
    segments = spec.num_segments
    measured = QuantizationOptions(max_drop=100.0)  # measure here; the table shows the drop
    exports = {
        "SavedModel": {},
        "TFLite float32": {"model_format": "tflite"},
        "TFLite float16": {"model_format": "tflite", "quantize": "float16"},
        "TFLite dynamic int8": {"model_format": "tflite", "quantize": "dynamic"},
        "TFLite int8": {"model_format": "tflite", "quantize": "int8"},
        "ONNX float32": {"model_format": "onnx"},
        "ONNX int8": {"model_format": "onnx", "quantize": "int8"},
        "streaming SavedModel": {"streaming": True},
        "streaming TFLite float32": {"streaming": True, "model_format": "tflite"},
        "streaming ONNX float32": {"streaming": True, "model_format": "onnx"},
    }
    folders = {}
    for name, options in exports.items():
        folders[name] = out / name.replace(" ", "-")
        if not folders[name].exists():
            print(f"exporting {name} ...", file=sys.stderr)
            if options.get("quantize", "none") != "none":
                options = {**options, "quantization": measured}
            export_runs([args.run], folders[name], **options)

    videos = test_videos(args.run)
    saved = ExportedModel(folders["SavedModel"])
    inputs = [saved.video_inputs(path) for path, _ in videos]  # uint8 [1, F, H, W, 3] each
    labels = np.array([label for _, label in videos])
    clips = [clips_from_frames(tf.constant(x["frames"]), spec).numpy() for x in inputs]

    rows, predictions = {}, {}
    clip_formats = (
        "SavedModel",
        "TFLite float32",
        "TFLite float16",
        "TFLite dynamic int8",
        "TFLite int8",
    )
    for name in (*clip_formats, "ONNX float32", "ONNX int8"):
        model = ExportedModel(folders[name])
        predicted = np.array([int(np.argmax(model.probabilities(x)[0])) for x in inputs])
        if name == "SavedModel":
            seconds = median_seconds(lambda m=model: m.probabilities(inputs[0]), args.repeats)
        elif name.startswith("ONNX"):
            runner = OnnxRunner(folders[name] / ONNX_FILE, "cpu", num_threads=1)
            seconds = median_seconds(lambda r=runner: r.run({"frames": clips[0]}), args.repeats)
        else:
            runner = TfliteRunner(folders[name] / TFLITE_FILE, num_threads=1)
            seconds = median_seconds(lambda r=runner: r(frames=clips[0]), args.repeats)
        size = model_bytes(folders[name])
        predictions[name] = predicted
        rows[name] = (size, seconds, float(np.mean(predicted == labels)), "clip")

    indices = [
        np.asarray(
            sampling.test_clip_indices(
                x["frames"].shape[1], segments, 1, spec.sampling, 1, spec.frame_interval
            )
        ).reshape(-1)
        for x in inputs
    ]
    for name in ("streaming SavedModel", "streaming TFLite float32", "streaming ONNX float32"):
        model = StreamingModel(folders[name])
        predicted = []
        for x, chosen in zip(inputs, indices, strict=True):
            model.reset()
            logits = [model.step(x["frames"][0, index]) for index in chosen]
            predicted.append(int(np.argmax(np.mean(logits, axis=0))))
        frame = inputs[0]["frames"][0, indices[0][0]]
        if name == "streaming SavedModel":
            seconds = median_seconds(lambda m=model, f=frame: m.step(f), args.repeats)
        else:
            crop = evaluation_crop(tf.cast(frame[None], tf.float32), spec).numpy()
            states = {state: model.state[state] for state in model.state}
            if name.startswith("streaming ONNX"):
                runner = OnnxRunner(folders[name] / ONNX_FILE, "cpu", num_threads=1).run
            else:
                runner = TfliteRunner(folders[name] / TFLITE_FILE, num_threads=1).run
            seconds = median_seconds(
                lambda r=runner, c=crop, s=states: r({"frame": c, **s}), args.repeats
            )
        size = model_bytes(folders[name])
        predictions[name] = np.array(predicted)
        rows[name] = (size, seconds, float(np.mean(predictions[name] == labels)), "frame")

    print(
        f"\n{run.recipe.name}: {len(videos)} test videos, T = {segments}, one CPU core, "
        f"median of {args.repeats}"
    )
    print(
        f"{'format':26} {'size MB':>8} {'latency ms':>11} {'per':>6} {'top-1':>7} "
        f"{'same top-1 as SavedModel':>25}"
    )
    for name, (size, seconds, top1, per) in rows.items():
        same = int(np.sum(predictions[name] == predictions["SavedModel"]))
        print(
            f"{name:26} {size / 1e6:8.2f} {seconds * 1e3:11.2f} {per:>6} {top1 * 100:6.1f}% "
            f"{same:>14} of {len(videos)} videos"
        )
    print(
        f"\nonline TSM per frame / clip model per clip: SavedModel "
        f"{rows['streaming SavedModel'][1] / rows['SavedModel'][1]:.2f}, TFLite float32 "
        f"{rows['streaming TFLite float32'][1] / rows['TFLite float32'][1]:.2f}, ONNX "
        f"{rows['streaming ONNX float32'][1] / rows['ONNX float32'][1]:.2f} "
        f"(1/T = {1 / segments:.2f})"
    )
    for name in (
        "TFLite float32",
        "TFLite float16",
        "TFLite dynamic int8",
        "TFLite int8",
        "ONNX float32",
        "ONNX int8",
    ):
        change = (rows[name][2] - rows["SavedModel"][2]) * 100
        print(
            f"{name}: size x{rows[name][0] / rows['TFLite float32'][0]:.2f} of float32, "
            f"top-1 {change:+.1f} points vs SavedModel"
        )
    print(
        f"int8 / float32 latency per clip: TFLite "
        f"{rows['TFLite int8'][1] / rows['TFLite float32'][1]:.2f}, ONNX "
        f"{rows['ONNX int8'][1] / rows['ONNX float32'][1]:.2f}"
    )


if __name__ == "__main__":
    main()
