"""`--format onnx [--opset N]`: model.onnx for ONNX Runtime (CPU, CUDA, TensorRT and the
other execution providers), in actrec.export.ready_clips' layout with a dynamic batch
(normalisation inside, sampling and crop outside), clip models (one stream or fused) and the
online TSM's streaming step alike.

Written by tf2onnx from the same function the TFLite model is converted from (Keras's
`export_onnx` converts one model's call; a fused model and the streaming step with its
named states are functions over the models, which tf2onnx converts directly), checked in
ONNX Runtime against the in-process model (within 1e-4). Needs the `actrec[onnx]` extra
(tf2onnx, onnx, onnxruntime). `--quantize int8`: ONNX Runtime's static QDQ quantisation
(actrec.export.quantization.onnx_int8), calibrated on request.calibration, its accuracy gated.
"""

from __future__ import annotations

from pathlib import Path

from actrec.errors import ActrecError, ConfigError
from actrec.export.formats.registry import (
    ExportFormat,
    ExportRequest,
    FormatOption,
    WrittenModel,
    predict_usage_lines,
)
from actrec.export.quantization.onnx_int8 import quantized_int8
from actrec.export.ready_clips import (
    ReadyClipModel,
    ReadyFrameStep,
    model_function,
    probe_difference,
    ready_clip_entries,
)
from actrec.export.trust.onnx_checks import check_onnx_file
from actrec.files.atomic import write_bytes_atomic

ONNX_FILE = "model.onnx"
DEFAULT_OPSET = 17
OPSETS = range(13, 19)
"""The opsets tf2onnx 1.16-1.17 writes: 13 (ONNX Runtime 1.8, 2021) to 18."""
TOLERANCE = 1e-4
PROVIDERS = ("auto", "cpu", "cuda", "tensorrt", "coreml", "directml", "openvino")
"""`--provider` values: "auto" takes the first of CUDA and CPU that ONNX Runtime has; the
others name an execution provider (e.g. "cuda": CUDAExecutionProvider)."""
PROVIDER_NAMES = {
    "cpu": "CPUExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "directml": "DmlExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
}


def _missing_extra(what: str) -> ConfigError:
    return ConfigError(f"{what} needs the ONNX extra: pip install 'actrec[onnx]'")


def onnx_runtime():
    """The onnxruntime module; ConfigError naming the extra when it is not installed."""
    try:
        import onnxruntime
    except ImportError:
        raise _missing_extra("running an ONNX model (onnxruntime)") from None
    return onnxruntime


def execution_providers(provider: str) -> list[str]:
    """ONNX Runtime's provider list for `provider` (PROVIDERS), the CPU as the fallback;
    ConfigError for one this ONNX Runtime does not have."""
    available = onnx_runtime().get_available_providers()
    if provider == "auto":
        return [
            name for name in ("CUDAExecutionProvider", "CPUExecutionProvider") if name in available
        ]
    if provider not in PROVIDER_NAMES:
        raise ConfigError(
            f"--provider {provider!r} is not valid; choose one of: {', '.join(PROVIDERS)}"
        )
    name = PROVIDER_NAMES[provider]
    if name not in available:
        raise ConfigError(
            f"--provider {provider}: this ONNX Runtime has no {name} (it has "
            f"{', '.join(available)}); install the onnxruntime build for it (e.g. "
            "onnxruntime-gpu for CUDA), or leave --provider out"
        )
    return [name] + (["CPUExecutionProvider"] if name != "CPUExecutionProvider" else [])


class OnnxRunner:
    """An ONNX model (a path or its bytes) in an ONNX Runtime session: `run`(inputs by name,
    numpy) -> outputs by name. provider: one of PROVIDERS; num_threads: ONNX Runtime's
    threads per op (None: its default, one per core)."""

    def __init__(self, model: Path | bytes, provider: str = "auto", num_threads: int | None = None):
        runtime = onnx_runtime()
        source = model if isinstance(model, bytes) else str(model)
        options = runtime.SessionOptions()
        if num_threads is not None:
            options.intra_op_num_threads = num_threads
            options.inter_op_num_threads = 1
        try:
            self.session = runtime.InferenceSession(
                source, options, providers=execution_providers(provider)
            )
        except ConfigError:
            raise
        except Exception as error:  # onnxruntime raises its own exception types
            where = "the converted model" if isinstance(model, bytes) else str(model)
            raise ConfigError(
                f"ONNX Runtime cannot load {where}: {str(error).splitlines()[0]}"
            ) from None
        self.input_names = [item.name for item in self.session.get_inputs()]
        self.output_names = [item.name for item in self.session.get_outputs()]

    def run(self, inputs: dict) -> dict:
        import numpy as np

        feed = {name: np.asarray(inputs[name], np.float32) for name in self.input_names}
        values = self.session.run(self.output_names, feed)
        return dict(zip(self.output_names, values, strict=True))


NEXT_STATE = "next_{}"
"""An ONNX graph's output cannot have an input's name: the new state_00 is next_state_00
(actrec.json's streaming states say each state's input and output)."""


def _with_next_state_names(function, metadata: dict):
    """`function` with its state outputs renamed (NEXT_STATE), and actrec.json's entries
    renamed alike."""
    states = {state["input"] for state in metadata["streaming"]["states"]}

    def renamed(*inputs):
        outputs = function(*inputs)
        return {
            NEXT_STATE.format(name) if name in states else name: v for name, v in outputs.items()
        }

    for state in metadata["streaming"]["states"]:
        state["output"] = NEXT_STATE.format(state["input"])
    metadata["outputs"] = {
        NEXT_STATE.format(name) if name in states else name: text
        for name, text in metadata["outputs"].items()
    }
    return renamed


def unconverted_ops(graph) -> list[str]:
    """The op types of an ONNX graph (and its subgraphs) that no ONNX operator set defines:
    what tf2onnx left as TensorFlow ops (it logs them and still returns a model)."""
    import onnx

    found = set()
    for node in graph.node:
        if not onnx.defs.has(node.op_type, node.domain):
            found.add(node.op_type)
        for attribute in node.attribute:
            for subgraph in [attribute.g, *attribute.graphs]:
                found.update(unconverted_ops(subgraph))
    return sorted(found)


def converted(function, signature: list, opset: int) -> bytes:
    """The ONNX model of `function` (tensors by `signature` -> dict of tensors, the
    models' weights frozen into it); ActrecError naming what did not convert (nothing is
    written then)."""
    import tensorflow as tf

    try:
        import tf2onnx
    except ImportError:
        raise _missing_extra("--format onnx (tf2onnx)") from None
    traced = tf.function(function, input_signature=signature, autograph=False)
    try:
        proto, _ = tf2onnx.convert.from_function(traced, input_signature=signature, opset=opset)
    except Exception as error:  # tf2onnx raises many types; its message names the op
        raise ActrecError(
            f"the model does not convert to ONNX (opset {opset}): {type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else 'no detail'}; try another "
            "--opset, or export --format savedmodel or tflite"
        ) from None
    missing = unconverted_ops(proto.graph)
    if missing:
        # Keras runs a grouped convolution (Conv3D with groups > 1) in a function of
        # its own compiled by XLA, which tf2onnx leaves as a call.
        grouped = "StatefulPartitionedCall" in missing
        raise ActrecError(
            f"the model does not convert to ONNX (opset {opset}): tf2onnx has no conversion "
            f"for the TensorFlow ops {', '.join(missing)}"
            + (" (Keras's XLA-compiled grouped convolutions: Conv3D with groups)" * grouped)
            + "; export --format savedmodel"
            + ("" if grouped else " or tflite")
        )
    return proto.SerializeToString()


class OnnxFormat(ExportFormat):
    name = "onnx"
    title = "ONNX model"
    summary = (
        "model.onnx for ONNX Runtime (sampled, cropped clips in, normalisation inside, any "
        "batch; layout in actrec.json; needs actrec[onnx])"
    )
    quantizations = ("none", "int8")
    quantize_help = "int8: QDQ, per-channel weights, calibrated (--calibration-clips)"
    options = (
        FormatOption(
            "opset",
            f"the ONNX operator set, {OPSETS.start}-{OPSETS.stop - 1}",
            int,
            default=DEFAULT_OPSET,
        ),
    )
    runtime_options = (
        FormatOption(
            "provider",
            "ONNX Runtime's execution provider (auto: CUDA where this ONNX Runtime has it, "
            "else the CPU)",
            choices=PROVIDERS,
            default="auto",
        ),
    )

    def check_request(self, request: ExportRequest) -> None:
        super().check_request(request)
        opset = request.options.get("opset")
        if opset is not None and opset not in OPSETS:
            raise ConfigError(
                f"--opset {opset} is not valid; choose one from {OPSETS.start} to "
                f"{OPSETS.stop - 1} (default {DEFAULT_OPSET})"
            )
        try:
            import onnxruntime  # noqa: F401
            import tf2onnx  # noqa: F401
        except ImportError:
            raise _missing_extra("--format onnx (tf2onnx, onnxruntime)") from None

    def write(self, request: ExportRequest, folder: Path) -> WrittenModel:
        opset = request.options.get("opset") or DEFAULT_OPSET
        function, signature, state_shapes = model_function(request, None)
        metadata = {
            "model": ONNX_FILE,
            "opset": opset,
            "top_k": None,
            **ready_clip_entries(request, state_shapes, None),
        }
        exported = function
        if request.streaming:
            exported = _with_next_state_names(function, metadata)
        model = converted(exported, signature, opset)
        metadata["quantize"] = request.quantize
        if request.quantize == "int8":
            model = quantized_int8(model, request.calibration)
        write_bytes_atomic(folder / ONNX_FILE, model)
        runner = OnnxRunner(model, "cpu")
        output = "logits" if request.streaming or not request.two_stream else "probabilities"
        difference = probe_difference(function, signature, runner.run, output)
        tolerance = TOLERANCE if request.quantize == "none" else None
        return WrittenModel(difference, tolerance, metadata, run=runner.run)

    def usage_lines(self, metadata: dict) -> list[str]:
        streaming = bool(metadata.get("streaming"))
        feed = ", ".join(f'"{name}": {name}' for name in metadata["inputs"])
        return [
            *predict_usage_lines(metadata, " [--provider cuda]"),
            "or with ONNX Runtime alone (`pip install onnxruntime`) on "
            + (
                "N resized, centre-cropped frames at a time, the states fed back"
                if streaming
                else "N sampled, centre-cropped clips"
            )
            + " (float32 0-255; the normalisation is inside; inputs below):",
            "",
            "```python",
            "import onnxruntime",
            f'session = onnxruntime.InferenceSession("THIS_FOLDER/{ONNX_FILE}")',
            "names = [output.name for output in session.get_outputs()]",
            f"outputs = dict(zip(names, session.run(None, {{{feed}}})))",
            'outputs["logits"], outputs["next_state_00"]'
            if streaming
            else 'outputs["probabilities"]',
            "```",
            "",
        ]

    def check_untrusted(self, model_dir: Path, metadata: dict) -> None:
        check_onnx_file(model_dir / ONNX_FILE)

    def clip_model(self, model_dir: Path, metadata: dict, trusted: bool = False, **options):
        runner = OnnxRunner(model_dir / ONNX_FILE, options.get("provider", "auto"))
        return ReadyClipModel(runner.run, model_dir, metadata)

    def stream_model(self, model_dir: Path, metadata: dict, trusted: bool = False, **options):
        runner = OnnxRunner(model_dir / ONNX_FILE, options.get("provider", "auto"))
        return ReadyFrameStep(runner.run, model_dir, metadata)


FORMAT = OnnxFormat()
