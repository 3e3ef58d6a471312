"""Real-size networks in every deployment format: model size, latency on one core and on all,
and the peak memory of running one.

    python benchmarks/deploy_real_size.py [--out DIR] [--repeats 20] [--models mobilenet resnet]
    python benchmarks/deploy_real_size.py --models resnet movinet videomae-s videomae-b

The networks users ship, at their published sizes, with random weights (latency does not
depend on them): TSM's online-demo MobileNetV2 (27 classes, online shift) and TSM ResNet-50
(Kinetics-400's 400 classes, 8 segments, bidirectional shift), written in their published
PyTorch layouts by the test suite's reference writers (tests/published/torch_reference.py);
MoViNet-A0 base and stream (a 7-class head: the asset's), the Model Garden's checkpoints as
the suite writes them again from its asset (tests/movinet_reference.py); VideoMAE ViT-S/16
and ViT-B/16 (400 classes, 16 frames of 224 px), transformers' own
VideoMAEForVideoClassification saved in the Hugging Face layout
(benchmarks/videomae_networks.py). Each is brought in by `actrec pretrained convert` and
exported with `actrec export` as a SavedModel, TFLite float32 / float16 / dynamic / int8 and
ONNX float32 / int8 (int8 where `actrec export
--quantize int8` exists; calibrated on a tiny synthetic set, --calibration-data), the
MobileNetV2 and the MoViNet stream also `--streaming` (one frame a step); VideoMAE and
MoViNet in the float formats (MODEL_FORMATS: their int8 is gated on real clips, which random
weights do not give). Each model is then timed in a fresh process, median of --repeats calls
after a warm-up, on 1 thread and on every core, with the process's peak resident memory:
TensorFlow for the SavedModel (its whole signature: sampling, resize, crop and the network),
LiteRT (its default CPU delegate, XNNPACK) for TFLite, ONNX Runtime's CPU provider for ONNX;
the clip models take their clip (TFLite / ONNX: the ready clip, float32 0-255; the
SavedModel: the decoded 256x256 frames its sampling reads: 8 for a TSM, segments x interval
for dense sampling), the streaming ones one frame and their states. Beside them: what
one 640x480 frame's decode (OpenCV, from an MJPG file), resize to 256 and centre 224 crop
take on one core, which a stream pays per frame outside the model.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from real_size_sources import checkpoints, convert_options

REPO_ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ACTREC = [sys.executable, "-m", "actrec_cli.main"]
FORMATS = {
    "SavedModel": [],
    "TFLite float32": ["--format", "tflite"],
    "TFLite float16": ["--format", "tflite", "--quantize", "float16"],
    "TFLite dynamic": ["--format", "tflite", "--quantize", "dynamic"],
    "TFLite int8": ["--format", "tflite", "--quantize", "int8"],
    "ONNX float32": ["--format", "onnx"],
    "ONNX int8": ["--format", "onnx", "--quantize", "int8"],
}
FLOAT_FORMATS = ("SavedModel", "TFLite float32", "TFLite float16", "ONNX float32")
MODEL_FORMATS = {"MoViNet": FLOAT_FORMATS, "VideoMAE": FLOAT_FORMATS}
"""The formats of the families that are not TSMs (by the model's first word; others: all)."""
STREAMING_MODELS = ("online", "stream")
"""A model whose name holds one of these is also exported --streaming (one frame a step)."""


def run(command: list, log: Path) -> bool:
    with open(log, "w") as out:
        return (
            subprocess.run(
                [str(c) for c in command], stdout=out, stderr=subprocess.STDOUT
            ).returncode
            == 0
        )


def calibration_set(folder: Path) -> Path:
    prepared = folder / "calibration"
    if not (prepared / "manifest.json").is_file():
        raw = folder / "calibration-raw"
        run(
            [*ACTREC, "synthetic", raw, "--videos-per-class", "2", "--frames", "16"],
            folder / "synthetic.log",
        )
        options = ["--flow", "none", "--size", "256"]  # frames the 224 crop fits in
        command = [*ACTREC, "prepare", "synthetic", "--root", raw, "--out", prepared, *options]
        run(command, folder / "calibration.log")
    return prepared


def model_bytes(folder: Path) -> int:
    for name in ("model.tflite", "model.onnx"):
        if (folder / name).is_file():
            return (folder / name).stat().st_size
    files = [folder / "saved_model.pb", *(folder / "variables").rglob("*")]
    return sum(path.stat().st_size for path in files if path.is_file())


def reload_check(folder: Path) -> str:
    """The export's own reload check (actrec.json): its scaled difference and tolerance."""
    if not (folder / "actrec.json").is_file():
        return "-"  # not an actrec export
    check = json.loads((folder / "actrec.json").read_text()).get("reload_check") or {}
    if "difference" not in check:
        return "-"
    tolerance = check.get("tolerance")
    bound = f" (tolerance {tolerance:.0e})" if tolerance is not None else " (reported)"
    return f"{check['difference']:.1e}{bound}"


def exports(folder: Path, runs: dict[str, Path], calibration: Path, int8: bool) -> list[tuple]:
    """(model, kind, format, export folder or None when the export failed) of every export."""
    rows = []
    for model, run_dir in runs.items():
        streams = any(word in model for word in STREAMING_MODELS)
        kinds = [("clip", [])] + ([("frame", ["--streaming"])] if streams else [])
        formats = MODEL_FORMATS.get(model.split()[0].split("-")[0], tuple(FORMATS))
        for kind, streaming in kinds:
            for name, options in FORMATS.items():
                if ("int8" in name and not int8) or name not in formats:
                    continue
                target = folder / f"{run_dir.name}-{kind}-{name.replace(' ', '-')}"
                extra = ["--calibration-data", calibration] if "int8" in name else []
                if not target.exists():
                    print(f"exporting {model} {kind} {name} ...", file=sys.stderr, flush=True)
                    command = [
                        *ACTREC,
                        "export",
                        run_dir,
                        "--out",
                        target,
                        *streaming,
                        *options,
                        *extra,
                    ]
                    if not run(command, folder / f"{target.name}.log"):
                        print(f"  failed: see {target.name}.log", file=sys.stderr)
                rows.append((model, kind, name, target if target.exists() else None))
    return rows


def measured(folder: Path, threads: int, repeats: int) -> dict:
    """{"ms": median milliseconds of one call of the model in `folder`, "peak_mib": the
    measuring process's peak resident memory}, in a fresh process."""
    command = [
        sys.executable,
        __file__,
        "--measure",
        folder,
        "--threads",
        threads,
        "--repeats",
        repeats,
    ]
    output = subprocess.run([str(c) for c in command], capture_output=True, text=True)
    if output.returncode != 0:
        print(output.stderr[-2000:], file=sys.stderr)
        return {"ms": float("nan"), "peak_mib": float("nan")}
    return json.loads(output.stdout.splitlines()[-1])


def measured_ms(folder: Path, threads: int, repeats: int) -> float:
    """Median milliseconds of one call of the model in `folder`, in a fresh process."""
    return measured(folder, threads, repeats)["ms"]


def peak_mib() -> float:
    """This process's peak resident memory in MiB: Linux's VmHWM (getrusage's ru_maxrss
    would report the larger of it and the benchmark's own process, which this one was
    forked from before its exec)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def model_input(name: str, shape, dtype):
    """A state input: zeros (a stream's start); any other: random pixels, batch 1."""
    import numpy as np

    shape = [1 if (d is None or isinstance(d, str) or d < 0) else int(d) for d in shape]
    if "state" in name:
        return np.zeros(shape, dtype)
    return np.random.default_rng(1).integers(0, 255, shape).astype(dtype)


def median_ms(call, repeats: int) -> float:
    call()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return 1000 * sorted(times)[len(times) // 2]


def measure(folder: Path, threads: int, repeats: int) -> float:
    import numpy as np

    if (folder / "model.tflite").is_file():
        from ai_edge_litert.interpreter import Interpreter

        runner = Interpreter(model_path=str(folder / "model.tflite"), num_threads=threads)
        signature = runner.get_signature_runner()
        details = signature.get_input_details()
        inputs = {name: model_input(name, d["shape"], d["dtype"]) for name, d in details.items()}
        return median_ms(lambda: signature(**inputs), repeats)
    if (folder / "model.onnx").is_file():
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        session = onnxruntime.InferenceSession(
            str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        types = {"tensor(float)": np.float32, "tensor(uint8)": np.uint8, "tensor(int8)": np.int8}
        inputs = {i.name: model_input(i.name, i.shape, types[i.type]) for i in session.get_inputs()}
        return median_ms(lambda: session.run(None, inputs), repeats)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    signature = tf.saved_model.load(str(folder)).signatures["serving_default"]
    streaming = json.loads((folder / "actrec.json").read_text()).get("streaming")
    if streaming:
        inputs = {streaming["frame_input"]: tf.zeros([1, 256, 256, 3], tf.uint8)}
        for state in streaming["states"]:
            inputs[state["input"]] = tf.zeros([1, *state["shape"][1:]], tf.float32)
    else:
        count = clip_frames(json.loads((folder / "actrec.json").read_text())["streams"][0])
        shape = (1, count, 256, 256, 3)
        frames = np.random.default_rng(1).integers(0, 255, shape).astype(np.uint8)
        inputs = {"frames": tf.constant(frames)}
    return median_ms(lambda: signature(**inputs), repeats)


def clip_frames(stream: dict) -> int:
    """How many decoded frames a clip SavedModel's sampling reads (actrec.json's stream):
    one a segment (tsn), or segments x interval consecutive ones (dense)."""
    if stream.get("sampling") == "dense":
        return stream["num_segments"] * max(1, stream.get("frame_interval") or 1)
    return stream["num_segments"]


def step_label(folder: Path | None, kind: str) -> str:
    """ "one frame" for a streaming step, else "N-frame clip" (the network's frames, from the
    export's actrec.json; 8 where an export has none)."""
    if kind != "clip":
        return "one frame"
    metadata = folder / "actrec.json" if folder is not None else None
    if metadata is None or not metadata.is_file():
        return "8-frame clip"
    return f"{json.loads(metadata.read_text())['streams'][0]['num_segments']}-frame clip"


def bare_network_exports(out: Path) -> list[tuple]:
    """The floor of the streaming step: keras.applications' MobileNetV2 at 224 px (27
    classes, random weights; no shift, no frame normalisation, no states), one frame,
    converted to TFLite float32 and int8 (calibrated on random frames: latency does not
    depend on it). Rows as `exports` gives them."""
    import keras
    import numpy as np
    import tensorflow as tf

    rows = []
    for name in ("TFLite float32", "TFLite int8"):
        folder = out / f"keras-mobilenetv2-{name.split()[1]}"
        if not (folder / "model.tflite").is_file():
            model = keras.applications.MobileNetV2((224, 224, 3), weights=None, classes=27)
            converter = tf.lite.TFLiteConverter.from_keras_model(model)
            if name.endswith("int8"):
                rng = np.random.default_rng(0)
                converter.optimizations = [tf.lite.Optimize.DEFAULT]
                converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
                converter.representative_dataset = lambda rng=rng: (
                    [rng.uniform(-1, 1, (1, 224, 224, 3)).astype(np.float32)] for _ in range(8)
                )
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "model.tflite").write_bytes(converter.convert())
        rows.append(("Keras MobileNetV2 (no shift)", "frame", name, folder))
    return rows


def frame_preparation_ms(folder: Path, repeats: int) -> float:
    """One 640x480 frame decoded from an MJPG file, resized to 256 and centre-cropped to
    224, on one thread."""
    import cv2
    import numpy as np

    cv2.setNumThreads(1)
    path = folder / "frames.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 25, (640, 480))
    rng = np.random.default_rng(0)
    for _ in range(repeats + 2):
        writer.write(rng.integers(0, 255, (480, 640, 3)).astype(np.uint8))
    writer.release()
    capture = cv2.VideoCapture(str(path))

    def prepared():
        _, frame = capture.read()
        resized = cv2.resize(frame, (341, 256), interpolation=cv2.INTER_LINEAR)
        return cv2.cvtColor(resized[16:240, 58:282], cv2.COLOR_BGR2RGB)

    return median_ms(prepared, repeats)


def compare(folders: list[Path], rounds: int, repeats: int) -> None:
    """Each folder's one-core median, measured in a fresh process, the folders in turn,
    `rounds` times: the median over the rounds and their range."""
    import statistics

    times: dict[Path, list[float]] = {folder: [] for folder in folders}
    for _ in range(rounds):
        for folder in folders:
            times[folder].append(measured_ms(folder, 1, repeats))
    for folder, values in times.items():
        print(
            f"{folder}: {statistics.median(values):.2f} ms on 1 core (median of {rounds} "
            f"rounds; {min(values):.2f}-{max(values):.2f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument(
        "--models",
        nargs="+",
        default=["mobilenet", "resnet"],
        choices=["mobilenet", "resnet", "movinet", "videomae-s", "videomae-b"],
    )
    parser.add_argument(
        "--compare",
        type=Path,
        nargs="+",
        help="model folders to time against each other instead: a fresh process each, "
        "in turn, --rounds times (one-core timings here move by 30 %% between runs)",
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        ms = measure(args.measure, args.threads, args.repeats)
        print(json.dumps({"ms": ms, "peak_mib": peak_mib()}))
        return
    if args.compare:
        compare(args.compare, args.rounds, args.repeats)
        return
    out = args.out or Path(tempfile.mkdtemp(prefix="actrec-deploy-real-"))
    out.mkdir(parents=True, exist_ok=True)
    help_text = subprocess.run([*ACTREC, "export", "--help"], capture_output=True, text=True).stdout
    int8 = "--calibration-data" in help_text  # `--quantize int8` calibrates on it
    runs = {}
    for model, checkpoint in checkpoints(out, args.models).items():
        run_dir = out / "runs" / re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
        if not run_dir.exists():
            options = convert_options(model, out)
            run(
                [*ACTREC, "pretrained", "convert", checkpoint, "--out", run_dir, *options],
                out / f"{run_dir.name}.log",
            )
        runs[model] = run_dir
    calibration = calibration_set(out) if int8 else None
    cores = os.cpu_count()
    avx512 = "avx512f" in Path("/proc/cpuinfo").read_text()
    print(f"{cores} cores, {'with' if avx512 else 'without'} AVX-512; exports in {out}")
    print(f"| model | step | format | size | 1 core | {cores} cores | peak memory | reload check |")
    print("|---|---|---|---|---|---|---|---|")
    rows = exports(out, runs, calibration, int8)
    if "mobilenet" in args.models:
        rows += bare_network_exports(out)
    for model, kind, name, folder in rows:
        step = step_label(folder, kind)
        if folder is None:
            print(f"| {model} | {step} | {name} | export failed | | | | |", flush=True)
            continue
        one, every = (measured(folder, threads, args.repeats) for threads in (1, cores))
        size = model_bytes(folder) / 1e6
        check = reload_check(folder)
        print(
            f"| {model} | {step} | {name} | {size:.1f} MB | {one['ms']:.1f} ms | "
            f"{every['ms']:.1f} ms | {one['peak_mib']:.0f} MiB | {check} |",
            flush=True,
        )
    frame_ms = frame_preparation_ms(out, 200)
    print(
        f"one 640x480 frame decoded, resized and cropped to 224 (OpenCV, 1 thread): "
        f"{frame_ms:.2f} ms"
    )


if __name__ == "__main__":
    main()
