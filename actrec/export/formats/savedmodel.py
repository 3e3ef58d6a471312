"""`--format savedmodel` (the default): a TensorFlow SavedModel whose "serving_default"
signature takes decoded uint8 video of any size and returns probabilities and the top-k
classes, the sampling, resizing, cropping and normalisation of evaluation inside its graph
(actrec.export.serving); `--streaming`: the online TSM's one-frame step with its shift state
in and out (actrec.export.streaming_export). It loads with `tf.saved_model.load` alone, and a
run can start from it (`--init-from`: its variables are read back into the model its recipe
builds)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from actrec.errors import ConfigError
from actrec.export.formats.registry import (
    ExportFormat,
    ExportRequest,
    WrittenModel,
    predict_usage_lines,
)
from actrec.export.metadata import load_export_recipe
from actrec.export.model_writers import SIGNATURE_NAME, write_savedmodel
from actrec.export.saved_variables import EXPORT_VARIABLES, export_variables
from actrec.export.streaming_export import streaming_metadata, write_streaming_savedmodel
from actrec.export.trust.model_reading import error_detail, reading_model
from actrec.export.trust.savedmodel_ops import check_savedmodel_ops
from actrec.models.factory import build_model
from actrec.runs.trained import without_pretrained_weights

RELOAD_TOLERANCE = 1e-5


def clip_inputs(streams) -> dict:
    """actrec.json's "inputs" of the clip SavedModel: whole decoded videos by name."""
    inputs = {}
    for stream in streams:
        if stream.modality == "rgb":
            inputs["frames"] = {
                "dtype": "uint8",
                "shape": ["N", "F", "H", "W", 3],
                "description": "all decoded RGB frames of N videos of F frames each, any "
                "resolution (resized and centre-cropped inside the model)",
            }
        else:
            inputs["flow"] = {
                "dtype": "uint8",
                "shape": ["N", "F-1", "H", "W", 2],
                "description": "optical flow between consecutive frames, x and y, quantised "
                "as `actrec prepare` stores it: round(255 * (clip(v, -20, 20) + 20) / 40), "
                "128 = no motion",
            }
    return inputs


def clip_outputs(streams, top_k: int) -> dict:
    """actrec.json's "outputs" of the clip SavedModel."""
    outputs = {
        "probabilities": "float32 [N, K]: class probabilities"
        + (" (the streams' weighted fusion, see fusion_average)" if len(streams) == 2 else ""),
        "top_k_indices": f"int32 [N, {top_k}]: class indices, most probable first",
        "top_k_probabilities": f"float32 [N, {top_k}]: their probabilities",
        "top_k_classes": f"string [N, {top_k}]: their class names",
    }
    if len(streams) == 2:
        for stream in streams:
            outputs[f"{stream.modality}_probabilities"] = (
                f"float32 [N, K]: the {stream.modality} stream's softmax"
            )
    return outputs


def loaded_signature(model_dir: Path):
    """The SavedModel's serving signature (ConfigError naming the folder otherwise) and the
    loaded object that keeps its variables alive."""
    import tensorflow as tf

    with reading_model(model_dir):
        loaded = tf.saved_model.load(str(model_dir))
    if SIGNATURE_NAME not in loaded.signatures:
        raise ConfigError(
            f"{model_dir}: the SavedModel has no {SIGNATURE_NAME!r} signature; export the "
            "model again with `actrec export`"
        )
    return loaded.signatures[SIGNATURE_NAME], loaded


class SavedModelClip:
    """The clip SavedModel of an export folder, ready: probabilities of uint8 videos.
    trusted: loaded by TensorFlow (`tf.saved_model.load`, which runs saved_model.pb's code);
    otherwise its serving function is rebuilt by actrec from the folder's recipes and its
    variables read as data (actrec.export.trust.savedmodel_rebuild)."""

    def __init__(self, model_dir: Path, metadata: dict, trusted: bool = False):
        self.input_names = tuple(metadata["inputs"])
        if trusted:
            self.signature, self._loaded = loaded_signature(model_dir)
        else:
            # Keras: lazily, the CLI reads the format registry before TensorFlow
            from actrec.export.trust.savedmodel_rebuild import rebuilt_clip_function

            self.signature, self._loaded = rebuilt_clip_function(model_dir, metadata)

    def probabilities(self, inputs: dict) -> np.ndarray:
        import tensorflow as tf

        named = {name: tf.constant(inputs[name]) for name in self.input_names}
        return self.signature(**named)["probabilities"].numpy()


class SavedModelFormat(ExportFormat):
    name = "savedmodel"
    title = "TensorFlow SavedModel"
    summary = "decoded video in, preprocessing inside, TensorFlow only to load"
    starts_runs = True

    def write(self, request: ExportRequest, folder: Path) -> WrittenModel:
        if request.streaming:
            stream = request.streams[0]
            difference, state_shapes = write_streaming_savedmodel(stream, folder)
            entries = streaming_metadata(stream, state_shapes, stream.run)
            return WrittenModel(
                difference, RELOAD_TOLERANCE, {"model": SIGNATURE_NAME, "top_k": None, **entries}
            )
        difference = write_savedmodel(
            request.streams,
            request.classes,
            request.top_k,
            request.fusion_weights,
            folder,
            request.fusion_average,
        )
        metadata = {
            "model": SIGNATURE_NAME,
            "inputs": clip_inputs(request.streams),
            "outputs": clip_outputs(request.streams, request.top_k),
            "top_k": request.top_k,
        }
        return WrittenModel(difference, RELOAD_TOLERANCE, metadata)

    def usage_lines(self, metadata: dict) -> list[str]:
        call = ", ".join(f"{name}={name}" for name in metadata["inputs"])
        streaming = bool(metadata.get("streaming"))
        return [
            *predict_usage_lines(metadata),
            "or, with TensorFlow only ("
            + (
                "one decoded frame at a time, any resolution, the states fed back"
                if streaming
                else "decoded frames of any resolution"
            )
            + "; inputs below):",
            "",
            "```python",
            "import tensorflow as tf",
            'model = tf.saved_model.load("THIS_FOLDER")',
            f"outputs = model.signatures[{SIGNATURE_NAME!r}]({call})",
            'outputs["logits"], outputs["state_00"]'
            if streaming
            else 'outputs["top_k_classes"], outputs["top_k_probabilities"]',
            "```",
            "",
        ]

    def check_untrusted(self, model_dir: Path, metadata: dict) -> None:
        check_savedmodel_ops(model_dir)

    def clip_model(self, model_dir: Path, metadata: dict, trusted: bool = False, **options):
        return SavedModelClip(model_dir, metadata, trusted)

    def stream_model(self, model_dir: Path, metadata: dict, trusted: bool = False, **options):
        import tensorflow as tf

        if not trusted:
            # Keras: lazily, the CLI reads the format registry before TensorFlow
            from actrec.export.trust.savedmodel_rebuild import rebuilt_step_function

            return rebuilt_step_function(model_dir, metadata)
        signature, loaded = loaded_signature(model_dir)

        def step(frame: np.ndarray, states: dict) -> dict:
            tensors = {name: tf.constant(value) for name, value in states.items()}
            outputs = signature(frame=tf.constant(frame), **tensors)
            return {name: value.numpy() for name, value in outputs.items()}

        step.loaded = loaded  # keeps the signature's variables alive
        return step

    def source_model(self, model_dir: Path, metadata: dict, stream_index: int, num_classes: int):
        """A model rebuilt from the export's recipe with the SavedModel's variables restored
        into it (the export's tf.Module tracks their variables in order,
        actrec.export.saved_variables; earlier exports tracked the models as `models`)."""
        import tensorflow as tf

        # Keras: lazily, the CLI reads the format registry before TensorFlow
        from actrec.export.trust.savedmodel_rebuild import checked_variable_files

        fix = "start from the run it was exported from"
        models = []
        for stream in metadata["streams"]:
            recipe = without_pretrained_weights(
                load_export_recipe(model_dir, stream["recipe_file"])
            )
            models.append(build_model(recipe.model, recipe.data, num_classes))
        mismatches = []
        with reading_model(model_dir, fix):
            prefix = str(checked_variable_files(model_dir))
            for layout in ({EXPORT_VARIABLES: export_variables(models)}, {"models": models}):
                status = tf.train.Checkpoint(**layout).read(prefix)
                try:
                    status.expect_partial().assert_existing_objects_matched()
                    return models[stream_index]
                except AssertionError as error:
                    mismatches.append(error)
        raise ConfigError(
            f"{model_dir}: its SavedModel variables do not fit the model of its recipe "
            f"({error_detail(mismatches[0])}); {fix}"
        )


FORMAT = SavedModelFormat()
