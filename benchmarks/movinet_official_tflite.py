"""The Model Garden's own TFLite export of a MoViNet stream, for benchmarks/movinet_stream_speed.py:
run by the reference environment's Python (tf-models-official, TensorFlow and tf_keras, made
by tests/movinet_reference.py; never in actrec's process).

    ENV/bin/python benchmarks/movinet_official_tflite.py OUT [--model-id a0] [--image-size 172]

Builds tf-models-official's Movinet + MovinetClassifier with the published stream settings
(causal (2+1)D, 2plus3d squeeze-excitation, hard swish, external states, 600 classes), draws
every variable from the suite's seeded rule (tests/movinet_reference_values.py), writes its
checkpoint (OUT/model/ckpt-1, the Model Garden's own call) and exports it as the Model
Garden's README does: `export_saved_model.export_saved_model` (batch 1, one frame, the
states as inputs) and `tf.lite.TFLiteConverter.from_saved_model` with no options
(OUT/official.tflite). Prints a JSON line: the files and seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import tensorflow as tf
from movinet_reference_values import drawn_value
from official.projects.movinet.modeling import movinet, movinet_model
from official.projects.movinet.tools import export_saved_model

STREAM = dict(causal=True, conv_type="2plus1d", se_type="2plus3d", activation="hard_swish",
              gating_activation="hard_sigmoid", use_positional_encoding=False)  # fmt: skip
NUM_CLASSES = 600
SEED = 7


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--model-id", default="a0")
    parser.add_argument("--image-size", type=int, default=172)
    args = parser.parse_args()
    size = args.image_size
    backbone = movinet.Movinet(model_id=args.model_id, use_external_states=True, **STREAM)
    model = movinet_model.MovinetClassifier(backbone, num_classes=NUM_CLASSES, output_states=True)
    shape = [1, 1, size, size, 3]
    model.build(shape)
    states = model.init_states(tf.constant(shape))
    model({**states, "image": tf.zeros(shape)})
    for variable in model.weights:
        name = variable.name.removesuffix(":0")
        variable.assign(drawn_value(SEED, name, tuple(variable.shape)))
    checkpoint = tf.train.Checkpoint(model=model).write(str(args.out / "model" / "ckpt-1"))
    started = time.perf_counter()
    saved = args.out / "savedmodel"
    export_saved_model.export_saved_model(
        model=model,
        input_shape=shape,
        export_path=str(saved),
        causal=True,
        bundle_input_init_states_fn=False,
    )
    converter = tf.lite.TFLiteConverter.from_saved_model(str(saved))
    (args.out / "official.tflite").write_bytes(converter.convert())
    print(json.dumps({
        "checkpoint": checkpoint,
        "tflite": str(args.out / "official.tflite"),
        "export_seconds": round(time.perf_counter() - started, 1),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
