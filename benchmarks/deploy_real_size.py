"""Real-size TSMs in every deployment format: model size and latency on one core and on all.

    python benchmarks/deploy_real_size.py [--out DIR] [--repeats 20] [--models mobilenet resnet]

The networks users ship, at 224 px, with random weights (latency does not depend on them):
TSM's online-demo MobileNetV2 (27 classes, online shift) and TSM ResNet-50 (Kinetics-400's
400 classes, 8 segments, bidirectional shift), written in their published PyTorch layouts by
the test suite's reference writers (tests/published/torch_reference.py) and brought in by
`actrec pretrained convert`. Each is exported with `actrec export` as a SavedModel, TFLite
float32 / float16 / dynamic / int8 and ONNX float32 / int8 (int8 where `actrec export
--quantize int8` exists; calibrated on a tiny synthetic set, --calibration-data), the
MobileNetV2 also `--streaming` (one frame a step). Each model is then timed in a fresh
process, median of --repeats calls after a warm-up, on 1 thread and on every core:
TensorFlow for the SavedModel (its whole signature: resize, crop and the network), LiteRT
(its default CPU delegate, XNNPACK) for TFLite, ONNX Runtime's CPU provider for ONNX; the
clip models take 8 frames (TFLite / ONNX: the ready clip, float32 0-255; the SavedModel:
8 decoded 256x256 frames), the streaming ones one frame and their states. Beside them: what
one 640x480 frame's decode (OpenCV, from an MJPG file), resize to 256 and centre 224 crop
take on one core, which a stream pays per frame outside the model.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def run(command: list, log: Path) -> bool:
    with open(log, "w") as out:
        return (
            subprocess.run(
                [str(c) for c in command], stdout=out, stderr=subprocess.STDOUT
            ).returncode
            == 0
        )


def checkpoints(folder: Path, models: list[str]) -> dict[str, Path]:
    """The published-layout files with random weights: {name: .pth path}."""
    sys.path.insert(0, str(REPO_ROOT / "tests" / "published"))
    import torch_reference as reference  # the test suite's reference writers

    files = {}
    if "mobilenet" in models:
        model = reference.randomise_(reference.online_mobilenet_v2(27), seed=6)
        files["TSM MobileNetV2 (online)"] = reference.save_online_demo(model, folder)
    if "resnet" in models:
        model = reference.randomise_(reference.tsm_resnet(400, 8), seed=7)
        files["TSM ResNet-50"] = reference.save_tsm(model, folder)
    return files


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
        kinds = [("clip", [])] + ([("frame", ["--streaming"])] if "online" in model else [])
        for kind, streaming in kinds:
            for name, options in FORMATS.items():
                if "int8" in name and not int8:
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


def measured_ms(folder: Path, threads: int, repeats: int) -> float:
    """Median milliseconds of one call of the model in `folder`, in a fresh process."""
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
        return float("nan")
    return json.loads(output.stdout.splitlines()[-1])["ms"]


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
        frames = np.random.default_rng(1).integers(0, 255, (1, 8, 256, 256, 3)).astype(np.uint8)
        inputs = {"frames": tf.constant(frames)}
    return median_ms(lambda: signature(**inputs), repeats)


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
    parser.add_argument("--models", nargs="+", default=["mobilenet", "resnet"])
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
        print(json.dumps({"ms": measure(args.measure, args.threads, args.repeats)}))
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
        run_dir = out / checkpoint.name.split(".")[0].lower()
        if not run_dir.exists():
            run(
                [*ACTREC, "pretrained", "convert", checkpoint, "--out", run_dir],
                out / f"{run_dir.name}.log",
            )
        runs[model] = run_dir
    calibration = calibration_set(out) if int8 else None
    cores = os.cpu_count()
    avx512 = "avx512f" in Path("/proc/cpuinfo").read_text()
    print(f"{cores} cores, {'with' if avx512 else 'without'} AVX-512; exports in {out}")
    print(f"| model | step | format | size | 1 core | {cores} cores | reload check |")
    print("|---|---|---|---|---|---|---|")
    rows = exports(out, runs, calibration, int8)
    if "mobilenet" in args.models:
        rows += bare_network_exports(out)
    for model, kind, name, folder in rows:
        step = "8-frame clip" if kind == "clip" else "one frame"
        if folder is None:
            print(f"| {model} | {step} | {name} | export failed | | | |", flush=True)
            continue
        one, every = (measured_ms(folder, threads, args.repeats) for threads in (1, cores))
        size = model_bytes(folder) / 1e6
        check = reload_check(folder)
        print(
            f"| {model} | {step} | {name} | {size:.1f} MB | {one:.1f} ms | {every:.1f} ms "
            f"| {check} |",
            flush=True,
        )
    frame_ms = frame_preparation_ms(out, 200)
    print(
        f"one 640x480 frame decoded, resized and cropped to 224 (OpenCV, 1 thread): "
        f"{frame_ms:.2f} ms"
    )


if __name__ == "__main__":
    main()
