"""TFLite conversion: actrec's route (the traced function, variables frozen) against the
route Keras 3 documents (keras.export.ExportArchive -> SavedModel -> from_saved_model).

    python benchmarks/tflite_convert.py RUN [RUN] [--quantize none] [--rounds 2] [--data DIR]

Exports the run (or an RGB and a flow run, fused) with `actrec export --format tflite` in
this process, `--rounds` times each route, alternating, all in this run on this machine,
and prints each route's median seconds, the ratio, the file sizes and the largest
difference between the two files' outputs on the same random clips. For example, after
`actrec quickstart`: `python benchmarks/tflite_convert.py runs/synthetic-tsm
runs/synthetic-flow --quantize float16`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def keras_documented_route(function, input_signature, models, quantize: str) -> bytes:
    """The flatbuffer by keras.export.ExportArchive, a SavedModel and from_saved_model."""
    import keras
    import tensorflow as tf

    with tempfile.TemporaryDirectory() as folder:
        archive = keras.export.ExportArchive()
        for model in models:
            archive.track(model)
        archive.add_endpoint("serve", function, input_signature=input_signature)
        archive.write_out(folder, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(folder)
        converter.experimental_enable_resource_variables = True
        if quantize != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        return converter.convert()


def outputs(model_file: Path, inputs: dict) -> dict:
    from actrec.export.tflite_flatbuffers import TfliteRunner

    return TfliteRunner(model_file).run(inputs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--quantize", default="none", choices=("none", "float16", "dynamic"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--data", type=Path, help="the prepared folder, if it has moved")
    arguments = parser.parse_args()

    import actrec.export.tflite_flatbuffers as tflite_module
    from actrec.export.writer import export_runs

    routes = {"actrec": tflite_module.converted, "Keras's documented": keras_documented_route}
    seconds = {name: [] for name in routes}
    with tempfile.TemporaryDirectory() as folder:
        files = {}
        for _ in range(arguments.rounds):
            for name, route in routes.items():
                tflite_module.converted = route
                out = Path(folder) / name.split("'")[0]
                start = time.perf_counter()
                export_runs(
                    arguments.runs, out, model_format="tflite",
                    quantize=arguments.quantize, overwrite=True, data_dir=arguments.data,
                )  # fmt: skip
                seconds[name].append(time.perf_counter() - start)
                files[name] = out / tflite_module.TFLITE_FILE
        tflite_module.converted = routes["actrec"]
        import tensorflow as tf

        details = tf.lite.Interpreter(str(files["actrec"])).get_signature_runner()
        rng = np.random.default_rng(0)
        inputs = {
            name: rng.uniform(0, 255, detail["shape"]).astype(np.float32)
            for name, detail in details.get_input_details().items()
        }
        ours, theirs = (outputs(files[name], inputs) for name in routes)
        difference = max(float(np.max(np.abs(ours[key] - theirs[key]))) for key in ours)
        sizes = {name: files[name].stat().st_size for name in routes}
    base = statistics.median(seconds["Keras's documented"])
    print(f"{' + '.join(str(run) for run in arguments.runs)}, quantize {arguments.quantize}, "
          f"{arguments.rounds} rounds, medians")  # fmt: skip
    for name in routes:
        median = statistics.median(seconds[name])
        print(f"  {name:20} {median:6.1f} s  {base / median:4.2f}x  {sizes[name] / 1e6:6.2f} MB")
    print(f"  largest output difference between the two files: {difference:.2e}")


if __name__ == "__main__":
    main()
