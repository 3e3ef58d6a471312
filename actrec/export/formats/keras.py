"""`--format keras`: OUT/model.keras, the segment model (or the two-stream model of
actrec.models.fusion) on ready clips, loaded with actrec; a run can start from a one-stream
Keras export (`--init-from`). No streaming model, and `actrec predict` does not run it (it
takes sampled clips, not videos)."""

from __future__ import annotations

from pathlib import Path

from actrec.errors import ActrecError, ConfigError
from actrec.export.formats.registry import ExportFormat, ExportRequest, WrittenModel
from actrec.export.model_writers import KERAS_MODEL_FILE, write_keras

RELOAD_TOLERANCE = 1e-5
MODEL_PATH_VARIABLE = "model_path"
"""The card code's variable holding the model file's path: the card sets it to a Python
literal of THIS_FOLDER/model.keras; the export's fresh-process check passes the real path
as an argument (a folder named with a quote is data, never code)."""


def clip_inputs(streams) -> dict:
    """actrec.json's "inputs" of a Keras export: ready clips by name."""
    inputs = {}
    for stream in streams:
        spec = stream.spec
        name = "frames" if len(streams) == 1 else stream.modality
        meaning = (
            "RGB 0-255"
            if stream.modality == "rgb"
            else "flow on the stored 0-255 scale (127.5 = no motion), channels [x0, y0, x1, ...]"
        )
        inputs[name] = {
            "dtype": "float32",
            "shape": ["N", spec.num_segments, spec.crop_size, spec.crop_size, spec.channels],
            "description": f"sampled, centre-cropped clips, {meaning}; no resizing or sampling "
            "inside (actrec.export.serving.clips_from_frames / clips_from_flow make them)",
        }
    return inputs


def model_path_line(path: str) -> str:
    """The card's first Python line: `model_path = 'PATH'`, the path as a literal (repr)."""
    return f"{MODEL_PATH_VARIABLE} = {path!r}"


def usage_code(input_names: tuple[str, ...]) -> list[str]:
    """The model card's Python lines after `model_path_line`: the model at `model_path`
    loaded in any process under any Keras backend (every actrec layer registered, Keras's
    safe mode on) and called on the inputs of these names, the outputs as numpy arrays."""
    if len(input_names) == 1:
        call, result = input_names[0], "logits [N, K]"
    else:
        call = "{" + ", ".join(f'"{name}": {name}' for name in input_names) + "}"
        result = "fused probabilities [N, K]"
    return [
        "import keras",
        "from actrec.models.keras_file import load_segment_model",
        f"model = load_segment_model({MODEL_PATH_VARIABLE})",
        f"outputs = keras.ops.convert_to_numpy(model({call}))  # {result}",
    ]


class KerasFormat(ExportFormat):
    name = "keras"
    title = "Keras model"
    summary = "model.keras on ready clips, loaded with actrec"
    streaming = False
    predicts = False
    starts_runs = True

    def write(self, request: ExportRequest, folder: Path) -> WrittenModel:
        inputs = clip_inputs(request.streams)
        code = "\n".join(usage_code(tuple(inputs)))
        path = {MODEL_PATH_VARIABLE: str(folder.resolve() / KERAS_MODEL_FILE)}
        try:
            difference = write_keras(
                request.streams, request.fusion_weights, folder, request.fusion_average, code, path
            )
        except ActrecError as error:
            raise ActrecError(
                f"the Keras export does not load as its model card says ({error}); nothing was "
                "written. Please report this with the run's recipe."
            ) from None
        metadata = {
            "model": KERAS_MODEL_FILE,
            "inputs": inputs,
            "outputs": "float32 [N, K]: fused probabilities"
            if request.two_stream
            else "float32 [N, K]: logits (apply softmax)",
            "top_k": None,
        }
        return WrittenModel(difference, RELOAD_TOLERANCE, metadata, fresh_process=True)

    def usage_lines(self, metadata: dict) -> list[str]:
        return [
            "## Use",
            "",
            "A Keras model of sampled, centre-cropped clips (no resizing or sampling inside); "
            "load it with actrec, under any Keras backend (TensorFlow, JAX or PyTorch: set "
            "`KERAS_BACKEND=jax` or `torch` before Keras is imported; "
            "tests/models/test_every_backend.py checks each backbone family on each):",
            "",
            "```python",
            model_path_line(f"THIS_FOLDER/{KERAS_MODEL_FILE}"),
            *usage_code(tuple(metadata["inputs"])),
            "```",
            "",
        ]

    def cannot_predict(self, model_dir: Path) -> str:
        return (
            f"{model_dir} holds a Keras export (--format keras), which takes ready clips; "
            "`actrec predict` needs the default SavedModel export: run `actrec export RUN "
            "--out NEW_FOLDER`"
        )

    def check_start(self, model_dir: Path, metadata: dict, stream_index: int) -> None:
        streams = metadata["streams"]
        if len(streams) > 1:
            raise ConfigError(
                f"{model_dir} is a two-stream Keras export; start from the run it was exported "
                f"from ({streams[stream_index]['run']}) or a SavedModel export"
            )

    def source_model(self, model_dir: Path, metadata: dict, stream_index: int, num_classes: int):
        # Keras: lazily, the CLI reads the format registry before TensorFlow
        from actrec.models.keras_file import load_segment_model

        return load_segment_model(model_dir / KERAS_MODEL_FILE)


FORMAT = KerasFormat()
