"""TSM and TSN ResNet50 training clips/s on one GPU (Keras on JAX, mixed bfloat16), and the
CPU cores of actrec's input pipeline that GPU needs.

    python benchmarks/gpu.py [--batch 32] [--steps 30]
    python benchmarks/gpu.py --cpu-check      # runs the same code on JAX's CPU, tiny sizes

Needs JAX with a GPU (`pip install "jax[cuda12]"`; JAX is not an actrec dependency).
Without a GPU visible to JAX it says so and stops: it never reports a CPU figure as a GPU
one (`--cpu-check` only shows that the script works, and prints no clips/s figure).

The networks are actrec's own (actrec.models.segment_model uses keras.ops only, so it runs
on the JAX backend): TSM (RGB, 8 segments) and TSN (flow, 3 segments of 5 fields), 224 px,
400 classes, from random initial weights. A step is jax.value_and_grad over
`model.stateless_call` and `optimizer.stateless_apply` (SGD with momentum), jit-compiled,
on clips already in GPU memory; the input pipeline is measured apart, per core, on the CPU
(benchmarks/pipeline.py's training pipeline on bikes.mp4, the same clip shapes):

    cores one GPU needs = GPU clips/s / pipeline clips/s per core
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ["KERAS_BACKEND"] = "jax"  # before Keras is imported
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent))

STREAMS = {  # name: (build_segment_model arguments, pipeline stream of benchmarks/pipeline.py)
    "TSM ResNet50 RGB 8x224": (
        {"architecture": "tsm", "modality": "rgb", "num_segments": 8},
        "rgb",
    ),
    "TSN ResNet50 flow 3x5x224": (
        {"architecture": "tsn", "modality": "flow", "num_segments": 3, "new_length": 5},
        "flow",
    ),
}


def gpu_or_none():
    """JAX's first GPU, or None (with the reason printed)."""
    try:
        import jax
    except ImportError:
        print('JAX is not installed (`pip install "jax[cuda12]"`): no GPU figure measured')
        return None
    try:
        return jax.devices("gpu")[0]
    except RuntimeError:
        print("JAX sees no GPU on this machine: no GPU figure measured (and none is reported)")
        return None


def training_clips_per_second(
    model_arguments: dict, backbone: str, size: int, batch: int, steps: int
):
    """Clips/s of jit-compiled training steps on random clips held on the default device."""
    import jax
    import keras
    import numpy as np

    from actrec.models.segment_model import build_segment_model

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    model = build_segment_model(backbone, 400, input_size=size, weights=None, **model_arguments)
    optimizer = keras.optimizers.SGD(learning_rate=0.01, momentum=0.9)
    optimizer.build(model.trainable_variables)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def compute_loss(trainable, non_trainable, clips, labels):
        logits, non_trainable = model.stateless_call(trainable, non_trainable, clips, training=True)
        return loss(labels, logits), non_trainable

    gradient = jax.value_and_grad(compute_loss, has_aux=True)

    @jax.jit
    def step(state, clips, labels):
        trainable, non_trainable, optimizer_variables = state
        (value, non_trainable), gradients = gradient(trainable, non_trainable, clips, labels)
        trainable, optimizer_variables = optimizer.stateless_apply(
            optimizer_variables, gradients, trainable
        )
        return value, (trainable, non_trainable, optimizer_variables)

    state = tuple(
        [variable.value for variable in variables]
        for variables in (
            model.trainable_variables,
            model.non_trainable_variables,
            optimizer.variables,
        )
    )
    rng = np.random.default_rng(0)
    shape = (batch, *model.input_shape[1:])
    clips = jax.device_put(rng.uniform(0, 255, shape).astype("float32"))
    labels = jax.device_put(rng.integers(0, 400, batch).astype("int32"))
    value, state = step(state, clips, labels)  # compile
    value.block_until_ready()
    started = time.perf_counter()
    for _ in range(steps):
        value, state = step(state, clips, labels)
    value.block_until_ready()
    return batch * steps / (time.perf_counter() - started)


def pipeline_clips_per_core(clips: int) -> dict[str, float]:
    """Training-pipeline clips/s per core on bikes.mp4, RGB and flow (benchmarks/pipeline.py)."""
    import tempfile

    import pipeline
    import tensorflow as tf

    tf.config.set_visible_devices([], "GPU")  # the pipeline runs on the CPU; JAX has the GPU
    from actrec.data.input.clip_spec import ClipSpec
    from actrec.data.input.pipeline import build_dataset

    rates = {}
    with tempfile.TemporaryDirectory() as folder:
        video = pipeline.default_videos()[0]
        prepared = pipeline.prepare(video, Path(folder) / video.stem)
        for stream, (arguments, _) in pipeline.STREAMS.items():
            dataset = build_dataset(
                prepared,
                "train",
                ClipSpec(**arguments),
                pipeline.BATCH,
                True,
                seed=1,
                repeat=True,
                finish_on_device=True,
            )
            seconds, _ = pipeline.measure(dataset, clips)
            rates[stream] = 1.0 / seconds
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32, help="clips per training step")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per model")
    parser.add_argument("--cpu-check", action="store_true", help="check the script on JAX's CPU")
    arguments = parser.parse_args()
    if arguments.cpu_check:
        for name, (model_arguments, _) in STREAMS.items():
            training_clips_per_second(model_arguments, "resnet50", 32, 2, 1)
            print(f"{name}: its training step runs on JAX (CPU check at 32 px: no figure)")
        return
    device = gpu_or_none()
    if device is None:
        sys.exit(0)
    print(f"GPU: {device.device_kind}; batch {arguments.batch}, mixed bfloat16")
    per_core = pipeline_clips_per_core(400)
    for name, (model_arguments, stream) in STREAMS.items():
        rate = training_clips_per_second(
            model_arguments, "resnet50", 224, arguments.batch, arguments.steps
        )
        print(
            f"{name}: {rate:.0f} training clips/s; the input pipeline gives {per_core[stream]:.0f} "
            f"clips/s per core, so this GPU needs {rate / per_core[stream]:.1f} cores"
        )


if __name__ == "__main__":
    main()
