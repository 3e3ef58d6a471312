"""`train` of a probe run (`train.probe: linear`), once the plan is made and the run folder
started:

    the recipe's model, its starting weights (model.weights, --init-from)
      -> the feature network: the input of its `classifier` layer (a clip network's fc_norm
         features [B, D]; a segment model's [B*T, D], averaged over its T segments)
      -> each split read (train, and the validation's) cached: read back when its record
         matches, else computed (features.py) and written (feature_cache.py)
      -> the linear head trained on the training rows (head.py); each epoch's loss and
         validation in metrics.jsonl
      -> the head set into the model's classifier: final.weights.h5 (and best.weights.h5 of
         the best validation) hold the whole model, backbone and head, as any run's

Averaging a segment model's features before the head is what the model computes: its
output is the mean of the segments' logits, and the head is linear. So the model's logits
on a view are the head's on that view's cached row, and the run evaluates, exports and
predicts as any other.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import keras
import numpy as np

from actrec.config.choices import weights_source
from actrec.data.input.views import ViewSpec
from actrec.models.factory import build_model
from actrec.progress import Progress
from actrec.runs.folder import FINAL_WEIGHTS_FILE, save_weights_atomically
from actrec.runs.record import RunRecordFile
from actrec.train.life.best import BestWeights
from actrec.train.life.metrics_log import MetricsLog
from actrec.train.probe.cache_key import CacheKey, backbone_digest, split_digest, view_record
from actrec.train.probe.feature_cache import (
    CACHE_DIR,
    SplitFeatures,
    read_split_features,
    write_split_features,
)
from actrec.train.probe.features import compute_split_features
from actrec.train.probe.head import EpochResult, LinearHead, train_linear_head
from actrec.train.start.starting_point import load_starting_weights

CLASSIFIER_LAYER = "classifier"
SEGMENT_CONSENSUS_LAYER = "consensus"  # a segment model's mean of its segments' logits
RANDOM_BACKBONE_WARNING = (
    "warning: probe: model.weights is none, so the frozen backbone's weights are random and "
    "its features were never learned; start from a trained or converted model with "
    "--init-from RUN_OR_EXPORT (docs/fine-tuning.md)"
)
FEATURE_BATCH = 16
"""Views per batch of the feature pass."""


@dataclass
class ProbeOutcome:
    """What a probe run did: epochs and head steps done; the last validation ("loss",
    "accuracy", "num_examples"; empty without one) and its confusion int [K, K]; the final
    weights; the cache folder and, per split read, whether its features were "computed" or
    "reused"; the views a video and the feature width D."""

    kind: str = "linear"
    epochs_done: int = 0
    global_step: int = 0
    validation: dict = field(default_factory=dict)
    validation_confusion: np.ndarray | None = None
    weights_path: Path | None = None
    cache: dict = field(default_factory=dict)
    cache_folder: Path | None = None
    views: int = 0
    width: int = 0

    def to_json(self) -> dict:
        """run.json's "probe" entry."""
        return {
            "kind": self.kind,
            "cache": str(self.cache_folder),
            "features": dict(self.cache),
            "views": self.views,
            "width": self.width,
        }


def feature_network(model: keras.Model) -> keras.Model:
    """The model up to its classifier: frames -> the classifier's input ([B, D] for a clip
    network, [B*T, D] for a segment model)."""
    return keras.Model(model.inputs, model.get_layer(CLASSIFIER_LAYER).input)


def rows_per_view(model: keras.Model, num_segments: int) -> int:
    """The feature network's rows per view: T for a segment model, else 1."""
    names = {layer.name for layer in model.layers}
    return num_segments if SEGMENT_CONSENSUS_LAYER in names else 1


def probe_view_spec(plan) -> ViewSpec:
    """The views each video is cached with: the evaluation clip (the recipe's frames,
    sampling and centre crop), train.probe_clips clips a video."""
    return ViewSpec(clip=plan.data.eval_spec, num_clips=plan.recipe.train.probe_clips)


def cache_folder(cache_dir: Path, key: CacheKey) -> Path:
    """The folder of `key`'s backbone and view in `cache_dir`."""
    return cache_dir / key.folder_name


def cached_split(
    network,
    backbone: str,
    prepared_dir: Path,
    split: str,
    spec: ViewSpec,
    cache_dir: Path,
    rows: int,
    progress: Progress,
) -> tuple[SplitFeatures, str]:
    """(the split's features, "reused" or "computed"): the cache's when its record matches
    the backbone, the view and the split's content, else computed and cached (a line says
    why a file there was not used)."""
    key = CacheKey(backbone, view_record(spec), split, split_digest(prepared_dir, split))
    folder = cache_folder(cache_dir, key)
    lookup = read_split_features(folder, key)
    if lookup.features is not None:
        progress.message(f"probe: the {split} features are reused from {folder}")
        return lookup.features, "reused"
    if lookup.reason:
        progress.message(f"probe: {lookup.reason}")
    features = compute_split_features(
        network, prepared_dir, split, spec, FEATURE_BATCH, rows, progress
    )
    write_split_features(folder, key, features)
    progress.message(f"probe: the {split} features are cached in {folder}")
    return features, "computed"


def _validation_values(
    head: LinearHead, rows: SplitFeatures, num_classes: int
) -> tuple[dict, np.ndarray]:
    """({"loss", "accuracy", "num_examples"}, confusion int64 [K, K]) of the head on the
    validation videos, each scored by its views' mean logits."""
    logits = head.logits(rows.features).mean(axis=1)  # [V, views, K] -> [V, K]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    labels = rows.labels.astype(np.int64)
    predictions = logits.argmax(axis=1)
    confusion = np.zeros([num_classes, num_classes], np.int64)
    np.add.at(confusion, (labels, predictions), 1)
    values = {
        "loss": float(-log_probabilities[np.arange(len(labels)), labels].mean()),
        "accuracy": float((predictions == labels).mean()),
        "num_examples": len(labels),
    }
    return values, confusion


def _held_out_rows(features: SplitFeatures, held_out: tuple[str, ...], keep: bool) -> SplitFeatures:
    """The videos of `features` whose ids are (keep=True) or are not in `held_out`."""
    chosen = np.isin(features.video_ids, list(held_out)) == keep
    return SplitFeatures(
        features.features[chosen], features.labels[chosen], features.video_ids[chosen]
    )


def train_probe(
    plan,
    prepared_dir: Path,
    run_dir: Path,
    record_file: RunRecordFile | None,
    progress: Progress,
    feature_cache: Path | None = None,
) -> ProbeOutcome:
    """The probe run of `plan` (actrec.train.plan.RunPlan; see the module) into `run_dir`,
    its cache in `feature_cache` (default RUN/feature_cache)."""
    recipe, data = plan.recipe, plan.data
    classes, validation = data.info.classes, data.validation
    keras.utils.set_random_seed(recipe.runtime.seed)
    model = build_model(plan.training_recipe.model, recipe.data, len(classes))
    if plan.start is not None:
        for line in load_starting_weights(model, plan.start, recipe, classes):
            progress.message(line)
    elif weights_source(recipe.model.weights).kind == "none":
        progress.message(RANDOM_BACKBONE_WARNING)
    network = feature_network(model)
    settings = {**dataclasses.asdict(recipe.model), "weights": None}  # the weights: hashed
    backbone = backbone_digest(network, settings)
    rows = rows_per_view(model, recipe.data.num_segments)
    spec = probe_view_spec(plan)
    cache_dir = Path(feature_cache) if feature_cache is not None else run_dir / CACHE_DIR
    outcome = ProbeOutcome(kind=recipe.train.probe, views=spec.num_views)
    features = {}
    splits = [recipe.data.train_split, *([validation.split] if validation.split else [])]
    for split in dict.fromkeys(splits):  # the train split once, a hold-out's included
        features[split], outcome.cache[split] = cached_split(
            network, backbone, prepared_dir, split, spec, cache_dir, rows, progress
        )
    outcome.cache_folder = cache_folder(
        cache_dir, CacheKey(backbone, view_record(spec), recipe.data.train_split, "")
    )
    outcome.width = features[recipe.data.train_split].width
    training = _held_out_rows(features[recipe.data.train_split], validation.held_out, keep=False)
    training_rows = training.features.reshape(-1, training.width)  # [V * views, D]
    training_labels = np.repeat(training.labels, spec.num_views)  # [V * views]
    validation_rows = None
    if validation.split is not None:
        validation_rows = features[validation.split]
        if validation.held_out:
            validation_rows = _held_out_rows(validation_rows, validation.held_out, keep=True)

    metrics = MetricsLog(run_dir, record_file is not None)
    best = BestWeights(run_dir, record_file, 0)
    best_head: dict = {}  # "head", "epoch", "step", "accuracy" of the best validation

    def on_epoch(result: EpochResult, head: LinearHead) -> None:
        outcome.epochs_done = result.epoch + 1
        outcome.global_step += result.steps
        metrics.write(
            "epoch",
            outcome.global_step,
            epoch=result.epoch,
            steps_per_epoch=result.steps,
            loss=result.loss,
            accuracy=result.train_top1,
            lr=result.learning_rate,
        )
        shown = {"loss": round(result.loss, 4), "accuracy": round(result.train_top1, 3)}
        if validation_rows is not None:
            values, outcome.validation_confusion = _validation_values(
                head, validation_rows, len(classes)
            )
            outcome.validation = values
            metrics.write(
                "validation",
                outcome.global_step,
                epoch=result.epoch,
                split=validation.name,
                **values,
            )
            shown["validation"] = round(values["accuracy"], 3)
            if values["accuracy"] > best_head.get("accuracy", -1.0):
                best_head.update(
                    head=head,
                    epoch=result.epoch,
                    step=outcome.global_step,
                    accuracy=values["accuracy"],
                )
        progress.advance(1)
        progress.show(**shown)

    progress.start(
        f"probe: the linear head on {len(training_rows)} cached views", recipe.train.epochs
    )
    try:
        head = train_linear_head(
            training_rows,
            training_labels,
            len(classes),
            recipe.train,
            recipe.runtime.seed,
            on_epoch,
        )
    finally:
        progress.finish()
        metrics.close()
    classifier = model.get_layer(CLASSIFIER_LAYER)
    if best_head:
        classifier.set_weights([best_head["head"].kernel, best_head["head"].bias])
        best.update(
            model,
            best_head["epoch"],
            best_head["step"],
            validation.name,
            {"accuracy": best_head["accuracy"]},
        )
    classifier.set_weights([head.kernel, head.bias])
    if record_file is not None:
        outcome.weights_path = save_weights_atomically(model, run_dir / FINAL_WEIGHTS_FILE)
    return outcome
