"""An untrusted SavedModel export, run without TensorFlow's SavedModel loader: the serving
function is rebuilt by actrec's own code and the variables are read as data.

`tf.saved_model.load` runs what `saved_model.pb` holds (its functions, a TF1 saver's restore
op); PyTorch's answer for checkpoints is `weights_only` (read the tensors, build the network
with the reader's own code). For an export folder this is:

    recipe.yaml (recipe-rgb.yaml, recipe-flow.yaml)  -> the segment model(s), actrec's builder
    actrec.json (classes, top_k, fusion, streaming)  -> actrec.export.serving /
                                                        streaming_export's serving function
    variables/variables.{index,data-*}               -> tensors by name (the checkpoint
        reader, tf.train.load_checkpoint): exactly "model_variables/0" ... "model_variables/
        N-1" (actrec.export.saved_variables), each of the shape and dtype of the rebuilt
        network's variable of that index, else refused

`saved_model.pb` is not read here (actrec.export.trust.savedmodel_ops checks it as data, for a
user who loads it with TensorFlow). An export actrec cannot rebuild (an older layout, a
recipe of another version) is refused with the fix (`--trust-model`, or export again).
"""

# Imported only where an export is rebuilt (formats/savedmodel.py), which needs Keras and
# TensorFlow anyway: its imports stand here at the top.
from __future__ import annotations

from pathlib import Path

from actrec.data.input.clip_spec import clip_spec
from actrec.errors import UntrustedModelError
from actrec.export.metadata import load_export_recipe
from actrec.export.saved_variables import EXPORT_VARIABLES
from actrec.export.serving import build_serving_function, input_signature
from actrec.export.streaming_export import build_streaming_serving, state_name
from actrec.export.streams import ExportedStream
from actrec.export.trust.savedmodel_ops import TRUST_FLAG
from actrec.models.factory import build_model
from actrec.models.streaming import streaming_state_shapes
from actrec.runs.trained import without_pretrained_weights

VARIABLES_PREFIX = Path("variables") / "variables"
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
EAGER_CALLS = 4
"""A rebuilt clip export's first calls that run eagerly, before its function is traced."""


def variable_key(index: int) -> str:
    """The checkpoint key of the index-th exported variable."""
    return f"{EXPORT_VARIABLES}/{index}{VALUE_SUFFIX}"


def _cannot_rebuild(model_dir: Path, why: str) -> UntrustedModelError:
    return UntrustedModelError(
        f"{model_dir}: {why}, so actrec cannot rebuild its model from its recipe and "
        "variables; export the run again with this actrec, or, if you trust its author, pass "
        f"{TRUST_FLAG} (TensorFlow then loads saved_model.pb, which runs its code)"
    )


def checked_variable_files(model_dir: Path) -> Path:
    """The checkpoint prefix of the export's variables: UntrustedModelError unless every
    file of variables/ is a plain file inside the folder (no link out)."""
    folder = model_dir.resolve()
    variables = model_dir / VARIABLES_PREFIX.parent
    if not (variables / "variables.index").is_file():
        raise UntrustedModelError(
            f"{model_dir} has no variables/variables.index: its SavedModel is incomplete; "
            "export the model again"
        )
    for path in [variables, *variables.iterdir()]:
        if folder not in path.resolve().parents:
            raise UntrustedModelError(
                f"{path} leads outside {model_dir} (a link): an actrec export keeps its "
                f"variables inside its folder. It was not read; export the model again"
            )
    return model_dir / VARIABLES_PREFIX


def read_variables(model_dir: Path, models: list) -> None:
    """Assign the export's variables, read as tensors by name, to the variables of the
    rebuilt `models` (in order); UntrustedModelError naming the first name, shape or dtype
    that does not fit."""
    import tensorflow as tf

    prefix = checked_variable_files(model_dir)
    reader = tf.train.load_checkpoint(str(prefix))
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    variables = [variable for model in models for variable in model.variables]
    expected = {variable_key(index) for index in range(len(variables))}
    stored = set(shapes) - {OBJECT_GRAPH_KEY}
    if stored != expected:
        extra = sorted(stored - expected)
        missing = sorted(expected - stored, key=lambda key: int(key.split("/")[1]))
        detail = (
            f"it stores {extra[0]!r}, which the model of its recipe does not have"
            if extra
            else f"it lacks {missing[0]!r} of the {len(variables)} variables of its recipe's model"
        )
        raise _cannot_rebuild(model_dir, f"its variables do not fit its recipe ({detail})")
    for index, variable in enumerate(variables):
        key = variable_key(index)
        shape, dtype = tuple(shapes[key]), dtypes[key].name
        if shape != tuple(variable.shape) or dtype != str(variable.dtype):
            raise _cannot_rebuild(
                model_dir,
                f"its variable {key!r} is {dtype} {list(shape)} where the model of its recipe "
                f"has {variable.path!r} {variable.dtype} {list(variable.shape)}",
            )
        variable.assign(reader.get_tensor(key))


def rebuilt_streams(model_dir: Path, metadata: dict) -> list:
    """The export's streams (actrec.export.streams.ExportedStream, in actrec.json's order),
    their models built from the export's recipes and their variables read from the folder."""

    streams = []
    for entry in metadata["streams"]:
        recipe = without_pretrained_weights(load_export_recipe(model_dir, entry["recipe_file"]))
        if recipe.data.modality != entry["modality"]:
            raise _cannot_rebuild(
                model_dir,
                f"its {entry['recipe_file']} is a {recipe.data.modality} recipe where "
                f"actrec.json says {entry['modality']}",
            )
        model = build_model(recipe.model, recipe.data, len(metadata["classes"]))
        streams.append(ExportedStream(clip_spec(recipe, training=False), model))
    read_variables(model_dir, [stream.model for stream in streams])
    return streams


def rebuilt_clip_function(model_dir: Path, metadata: dict):
    """(function(**inputs) -> outputs by name, the streams): the clip export's serving
    function (actrec.export.serving) over the rebuilt models, uint8 videos by input name
    ("frames" [N, F, H, W, 3], "flow" [N, F-1, H, W, 2]) in, tensors out."""
    import tensorflow as tf

    streams = rebuilt_streams(model_dir, metadata)
    weights = metadata.get("fusion_weights")
    fusion = None if weights is None else [weights[stream.modality] for stream in streams]
    serve = build_serving_function(
        streams,
        metadata["classes"],
        metadata["top_k"],
        fusion,
        metadata.get("fusion_average") or "logits",
    )
    traced = tf.function(serve, input_signature=input_signature(streams), autograph=False)
    calls = 0

    def function(**inputs):
        nonlocal calls
        calls += 1
        # Tracing costs what ~9 eager calls do (the quickstart's two streams: 1.45 s, an
        # eager call 0.16 s, a traced one 0.013 s): a video's few batches run eagerly, a
        # timeline's or a folder's later ones traced.
        chosen = serve if calls <= EAGER_CALLS else traced
        return chosen(*[tf.constant(inputs[stream.input_name]) for stream in streams])

    return function, streams


def rebuilt_step_function(model_dir: Path, metadata: dict):
    """function(frame uint8 [N, H, W, 3], states by name) -> outputs by name (numpy): the
    streaming export's step (actrec.export.streaming_export) over the rebuilt online TSM."""
    import tensorflow as tf

    (stream,) = rebuilt_streams(model_dir, metadata)
    state_shapes = streaming_state_shapes(stream.model)
    declared = [tuple(state["shape"][1:]) for state in metadata["streaming"]["states"]]
    if declared != [tuple(shape) for shape in state_shapes.values()]:
        raise _cannot_rebuild(
            model_dir,
            f"actrec.json's states {declared} are not those of its recipe's online TSM "
            f"{list(state_shapes.values())}",
        )
    serve, signature = build_streaming_serving(stream.model, stream.spec, state_shapes)
    step = tf.function(serve, input_signature=signature, autograph=False)
    names = [state_name(index) for index in range(len(state_shapes))]

    def function(frame, states: dict) -> dict:
        outputs = step(tf.constant(frame), *[tf.constant(states[name]) for name in names])
        return {name: value.numpy() for name, value in outputs.items()}

    return function
