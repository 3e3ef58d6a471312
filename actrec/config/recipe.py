"""The recipe's schema: frozen dataclasses, one per section, that round-trip through YAML.

    Recipe = name, description, reference
             + DataConfig    (clips: modality, segments, crop, sampling, splits)
             + ModelConfig   (architecture, backbone, ImageNet weights, dropout, TSM shift)
             + TrainConfig   (batch schedule, learning rate and its coupling, optimizer, sync)
             + RuntimeConfig (seed, distribution strategy, checkpoints, logging)

Each choice field is typed with its `Literal` alias from actrec.config.choices (the one list
of its allowed values); each other field that has a range says it beside its default
(actrec.config.bounds), where `validate_recipe` finds it. This module imports neither
TensorFlow, Keras, OpenCV nor actrec.data / actrec.models.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields
from typing import Literal

from actrec.backbones.spec import PREPROCESSING_MODES
from actrec.config.bounds import MAX_THREADS_PER_OP, at_least, between, checked
from actrec.config.choices import (
    AdamState,
    Architecture,
    Backbone,
    ClassBalance,
    Communication,
    Decay,
    DistillFeatures,
    LrCoupling,
    MixedPrecision,
    Modality,
    Optimizer,
    Probe,
    Sampling,
    ShiftDirection,
    ShiftPlacement,
    Strategy,
    Sync,
    WeightDecayMode,
)

LR_MULT_KEYS = ("bias_lr_mult", "first_conv_lr_mult", "classifier_lr_mult")
VALIDATION_SPLIT_AUTO = "auto"
VALIDATION_SPLIT_NONE = "none"
TEST_SPLIT = "test"
MAX_VALIDATION_HOLDOUT = 0.5
AUTO = "auto"
"""train.batch_size / train.max_per_replica_batch: chosen by probing memory and throughput
(actrec.train.memory) when the run starts."""
SECTIONS = ("data", "model", "train", "runtime")
LR_MULT_ALLOWED = "use a multiplier > 0 (1 for none)"
TEXT_KEYS = ("name", "description", "reference")


def _positive(value: float) -> bool:
    return value > 0


@dataclass(frozen=True)
class DataConfig:
    """The clips: see actrec.data.input.clip_spec.ClipSpec for the meaning of each field.

    modality: "rgb" or "flow".
    num_segments: T, frames (RGB) or flow stacks per clip.
    new_length: L, consecutive flow fields per segment (2 L channels); 1 for RGB, 5 in TSN.
    crop_size: side of the square crop in pixels (the model's input side).
    sampling: "tsn" (one random frame per segment) or "dense" (TSM: T frames every
        frame_interval frames).
    frame_interval: stride of dense sampling.
    scale_size: evaluation short side before the centre crop (None: crop_size * 256 / 224).
    flip: random horizontal flip in training (flow-aware).
    scales: TSN's multi-scale crop: training crops of these fractions of the short side
        (TSN: RGB 1, .875, .75, .66; flow 1, .875, .75); milder when objects are small.
    more_fix_crop: the crop is placed at one of TSN's 13 fixed positions (corners, centre,
        edge centres, quarter points) instead of 5 (corners, centre), as the sources do.
    shuffle_buffer: unused since record format 2, whose training order is a new permutation
        of all the videos every epoch (actrec.data.input.order); older recipes keep loading.
    train_split: the prepared split trained on.
    validation_split: what validation (and best.weights.h5) uses: "auto" = the held-out part
        of train when validation_holdout > 0, else "val" when the prepared data has it, else
        none; "none" disables validation; another value names a prepared split. Never
        "test": the test split is for `actrec eval` (choosing on it biases the test result).
    validation_holdout: fraction of the train split held out (the same share of every
        class, chosen by runtime.seed) to validate on; those videos are not trained on.
        0 = none (UCF101 / HMDB51 recipes: the published protocol trains on all of train).
    """

    modality: Modality = "rgb"
    num_segments: int = at_least(3, 1)
    new_length: int = at_least(1, 1)
    crop_size: int = at_least(224, 1)
    sampling: Sampling = "tsn"
    frame_interval: int = at_least(2, 1)
    scale_size: int | None = None
    flip: bool = True
    scales: tuple[float, ...] = checked(
        (1.0, 0.875, 0.75, 0.66),
        lambda scales: len(scales) > 0 and all(0 < scale <= 1 for scale in scales),
        "give one or more fractions of the short side in (0, 1], e.g. [1.0, 0.875]",
    )
    more_fix_crop: bool = True
    shuffle_buffer: int = at_least(128, 1)
    train_split: str = checked("train", str.strip, "name a prepared split")
    validation_split: str = checked(VALIDATION_SPLIT_AUTO, str.strip, "name a prepared split")
    validation_holdout: float = checked(
        0.0,
        lambda fraction: 0 <= fraction <= MAX_VALIDATION_HOLDOUT,
        f"use a fraction of the train split in [0, {MAX_VALIDATION_HOLDOUT}] (e.g. 0.1), "
        "or 0 for none",
    )


@dataclass(frozen=True)
class ModelConfig:
    """The network: see actrec.models.segment_model.build_segment_model.

    architecture: "tsn" or "tsm" (TemporalShift; ResNet family and MobileNetV2 only): a
        segment model over a per-frame backbone; or a clip network's family of the registry
        ("videomae": the whole clip [B, T, H, W, 3] in, logits out; its T = data.num_segments
        frames, consecutive or strided with data.sampling=dense and data.frame_interval, or
        one per segment with data.sampling=tsn; VideoMAE's 16x4 is num_segments=16,
        sampling=dense, frame_interval=4).
    backbone: a name of the registry actrec.backbones.registry: a per-frame backbone for
        tsn / tsm, one of the family's sizes for a clip network ("videomae_b").
    weights: "imagenet", "none" (random initialisation), the path of a no-top weight file, or
        "run:PATH": every backbone weight from the finished run directory (or export folder)
        at PATH, relative to the current folder, and its classifier when the classes are the
        same (else a new one); `actrec train --init-from PATH` sets it (fine-tuning).
    dropout: rate before the classifier, in [0, 1).
    partial_bn: freeze every BatchNorm but the first (TSN); None: True for TSN, False for TSM.
    shift_fraction: fraction of the channels shifted each way (TSM: 1/8).
    shift_placement: "blockres" (in the residual branch) or "block" (on the block input).
    shift_direction: "bidirectional" (TSM: 1/8 of the channels from the next segment, 1/8
        from the previous one) or "online" (1/8 from the previous segment only: the online
        TSM, which `actrec export --streaming` runs one frame at a time).
    input_size: the model's frame side; None: data.crop_size (the only value that fits).
    batch_norm_momentum: momentum of every BatchNorm's moving statistics; None keeps the
        backbone's own (0.99, MobileNetV2 0.999: right for fine-tuning ImageNet weights, too
        slow for a few hundred steps from scratch, where 0.9 lets evaluation statistics settle).
    remat: rematerialise the backbone's blocks (actrec.models.remat): their activations are
        recomputed in the backward pass instead of kept; less memory, more compute, the same
        values, gradients and weights.
    drop_path_rate: stochastic depth of a clip network's blocks (rising linearly to this rate
        for the last block; VideoMAE's fine-tuning: 0.1); 0 for segment models.
    network: a clip network's size with fields set otherwise, as FIELD=VALUE
        ("layer_norm_epsilon=1e-12", "heads=4": actrec.config.network_settings); what a
        converted published file differs in from the size model.backbone names; () for none.
    preprocessing: how frames in [0, 255] become the backbone's input (one of
        actrec.backbones.spec.PREPROCESSING_MODES); None: the backbone's own. A converted
        published model records its source's ("tsm", "mmaction2"): flow normalisation differs
        between sources. It has no weights, but the weights were trained under it.
    """

    architecture: Architecture = "tsn"
    backbone: Backbone = "resnet50"
    weights: str = checked(
        "imagenet", str.strip, "use imagenet, none, the path of a weight file or run:PATH"
    )
    dropout: float = checked(0.8, lambda rate: 0 <= rate < 1, "use a rate in [0, 1)")
    partial_bn: bool | None = None
    shift_fraction: float = checked(
        0.125, lambda fraction: 0 < fraction <= 0.5, "use a fraction in (0, 0.5] (TSM: 0.125)"
    )
    shift_placement: ShiftPlacement = "blockres"
    shift_direction: ShiftDirection = "bidirectional"
    input_size: int | None = None
    batch_norm_momentum: float | None = checked(
        None,
        lambda momentum: 0 <= momentum < 1,
        "use a momentum in [0, 1) (e.g. 0.9), or null for the backbone's own",
    )
    remat: bool = False
    drop_path_rate: float = checked(0.0, lambda rate: 0 <= rate < 1, "use a rate in [0, 1)")
    network: tuple[str, ...] = ()
    preprocessing: str | None = checked(
        None,
        lambda mode: mode in PREPROCESSING_MODES,
        f"choose one of: {', '.join(PREPROCESSING_MODES)}, or null for the backbone's own",
    )


SHIFT_SETTINGS = ("model.shift_fraction", "model.shift_placement", "model.shift_direction")
"""The temporal shift's settings: they hold no weights but shape what the weights compute,
so a run started from another takes them from its source (actrec.train.start), and a
published file's name or keys give them (actrec.published). The one list of them."""


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation: the batch schedule, the learning rate and the synchronisation.

    Global batch of epoch e (actrec.train.schedule.global_batch_size):
        B_e = floor(batch_size * batch_growth ** floor(e / batch_growth_every)),
        capped at max_batch_size; constant when batch_growth_every is 0.
    Learning rate (actrec.train.schedule.learning_rate): lr is the rate at the global batch
    lr_reference_batch (default batch_size); lr_coupling says how it follows B_e:
    "constant" (Smith et al. 2017), "linear" (lr * B_e / B_ref, Goyal et al. 2017) or
    "sqrt" (lr * sqrt(B_e / B_ref)). Warm-up rises linearly, per step, from a tenth of the
    coupled rate to the full rate over warmup_epochs; decay is "step" (x decay_factor at
    each epoch of decay_epochs), "cosine" (to zero over the epochs after warm-up) or "none".

    sync: "allreduce" (gradients averaged every step) or "kavg" (K-step averaging: kavg_steps
        local steps, then parameters averaged; adam_state says what happens to Adam's moments:
        "local" (the default: each worker keeps its own; on synthetic-flow, 2 workers, K = 4,
        3 seeds: 94.0 % mean test top-1 against "average" 88.7 % and allreduce 91.1 %,
        benchmarks/kavg.py; a resumed run gives every worker the chief's moments),
        "average" (averaged with the parameters: a resume is bit-exact) or "reset").
    accumulation_steps / max_per_replica_batch: gradient accumulation over micro-batches when
        a replica's share of the global batch is more than it can hold.
    batch_size / max_per_replica_batch may be "auto" (actrec.train.memory): the largest
        per-replica batch that fits the memory budget and runs fastest is probed when the run
        starts. batch_size=auto: the starting global batch is that batch times the replicas
        (lr_reference_batch is then required unless lr_coupling is constant) and it is also
        the limit above which accumulation makes up the share; max_per_replica_batch=auto:
        the global schedule stays, the probed batch is the accumulation limit. The run
        directory's recipe.yaml holds the numbers chosen, which a resumed run reuses.
    clip_norm: global gradient norm clip (TSN / TSM: 20); None disables it.
    weight_decay / weight_decay_mode: "coupled" L2 as Caffe and PyTorch SGD apply it
        (weight_decay * w joins the gradient and goes through momentum; what published
        values mean) or "decoupled" (Keras' weight_decay: w -= lr * weight_decay * w, about
        10x weaker at momentum 0.9). Biases and BatchNorm parameters never decay.
        optimizer "adamw" (decoupled only): PyTorch's AdamW, the decay at each variable's
        rate (actrec.train.loop.optimizer).
    bias_lr_mult / first_conv_lr_mult / classifier_lr_mult: learning-rate multipliers of
        the official code (actrec.train.loop.param_groups): every bias (TSN / TSM: 2), the first
        convolution (the flow stream: 5, its bias 5 x 2), the new classifier (TSM from
        ImageNet, `fc_lr5`: 5, its bias 5 x 2); 1 means none.
    layer_decay: a transformer's layer-wise rate decay d (actrec.train.loop.layer_decay):
        block i of L learns at d ** (L - i) of the rate, the embeddings d ** (L + 1), the
        head 1 (VideoMAE: 0.75, 0.7 on UCF101 / HMDB51); 1 means none.
    mixup / cutmix (actrec.train.loop.mixing): the Beta(a, a) parameter of mixup and of
        CutMix (0: off, the default); a step mixes with probability mix_prob, and with both
        on cuts with probability mix_switch_prob (VideoMAE: 0.8, 1.0, 1, 0.5); the targets
        are mixed and smoothed by label_smoothing alike.

    Distillation (MARS, Crasto et al. CVPR 2019; actrec.train.distillation.loss): distill_from
        names a finished flow run or an `actrec export` folder holding a flow stream (the
        teacher, frozen); the RGB student's loss is its cross-entropy plus distill_weight x
        the mean squared error between its pooled features (through a learned projection
        when the widths differ) and the teacher's on the same clip (MARS's alpha: 50).
        distill_features: "clip" (the features averaged over the segments: MARS matches one
        clip feature of a 3D network, actrec's 2D adaptation) or "segments" (each
        segment's), "logits" (the teacher's class scores), or "maps" (FitNets' hints:
        each segment's output map of the backbone layer distill_layer, e.g. MobileNetV2's
        "block_5_add", through a learned 1x1 projection on the student's side, against the
        teacher's map of the same layer resized to the student's grid). None: no
        distillation.

    class_balance (actrec.train.inputs.class_balance): "none"; "weights" (each example's loss
        x the inverse frequency of its class in the training split, normalised to a mean
        of 1 over the examples); "sampling" (each epoch keeps the split's length, its
        classes drawn equally often, each class's videos in a seeded order:
        actrec.data.input.balanced_order).

    Divergence (actrec.train.life.divergence): a non-finite loss, a loss above loss_upper_bound,
    or one above loss_explosion_factor x the mean of the 5 before it (None: that test is
    off) rolls every worker back to the last checkpoint and continues past the offending
    batches, with the learning rate x recovery_lr_factor after each recovery; the run stops
    with an error after max_recoveries of them (0: at the first divergence).

    probe (actrec.train.probe): "none" trains the whole network; "linear" trains only its
        classifier, on the frozen backbone's clip features computed once per clip view
        (the evaluation clip; probe_clips clips a video) and cached beside the run
        (RUN/feature_cache, or `actrec train --feature-cache DIR`): epochs, lr and its
        schedule, batch_size, optimizer, momentum, weight_decay (coupled L2 on the head)
        and label_smoothing apply to the head; the final weights are the backbone with it.
    """

    epochs: int = at_least(80, 1)
    batch_size: int | Literal["auto"] = at_least(32, 1)
    batch_growth: float = at_least(1.0, 1.0)
    batch_growth_every: int = at_least(0, 0)
    max_batch_size: int | None = None
    lr: float = checked(0.001, lambda rate: rate > 0, "use a learning rate > 0")
    lr_reference_batch: int | None = at_least(None, 1, optional=True)
    lr_coupling: LrCoupling = "linear"
    warmup_epochs: float = 0.0
    decay: Decay = "step"
    decay_epochs: tuple[int, ...] = checked(
        (30, 60),
        lambda epochs: (
            all(epoch >= 1 for epoch in epochs)
            and all(b > a for a, b in itertools.pairwise(epochs))
        ),
        "use strictly increasing epochs >= 1, e.g. [30, 60] (or [] for no step)",
    )
    decay_factor: float = checked(0.1, lambda factor: 0 < factor <= 1, "use a factor in (0, 1]")
    optimizer: Optimizer = "sgd"
    momentum: float = checked(0.9, lambda momentum: 0 <= momentum < 1, "use a value in [0, 1)")
    nesterov: bool = False
    weight_decay: float = at_least(5e-4, 0.0)
    weight_decay_mode: WeightDecayMode = "coupled"
    bias_lr_mult: float = checked(1.0, _positive, LR_MULT_ALLOWED)
    first_conv_lr_mult: float = checked(1.0, _positive, LR_MULT_ALLOWED)
    classifier_lr_mult: float = checked(1.0, _positive, LR_MULT_ALLOWED)
    layer_decay: float = checked(
        1.0, lambda decay: 0 < decay <= 1, "use a decay in (0, 1] (VideoMAE: 0.75; 1 for none)"
    )
    clip_norm: float | None = checked(20.0, _positive, "use a norm > 0, or null for none")
    label_smoothing: float = checked(
        0.0, lambda smoothing: 0 <= smoothing < 1, "use a value in [0, 1)"
    )
    mixup: float = at_least(0.0, 0.0)
    cutmix: float = at_least(0.0, 0.0)
    mix_prob: float = checked(1.0, lambda p: 0 < p <= 1, "use a probability in (0, 1]")
    mix_switch_prob: float = checked(0.5, lambda p: 0 <= p <= 1, "use a probability in [0, 1]")
    sync: Sync = "allreduce"
    kavg_steps: int = at_least(1, 1)
    adam_state: AdamState = "local"
    mixed_precision: MixedPrecision = "none"
    accumulation_steps: int = at_least(1, 1)
    max_per_replica_batch: int | Literal["auto"] | None = at_least(None, 1, optional=True)
    loss_upper_bound: float | None = checked(None, _positive, "use a loss > 0, or null")
    loss_explosion_factor: float | None = checked(
        None,
        lambda factor: factor > 1,
        "use a factor > 1 (e.g. 5: a loss 5x the mean of the last 5), or null",
    )
    max_recoveries: int = at_least(3, 0)
    recovery_lr_factor: float = checked(
        1.0,
        lambda factor: 0 < factor <= 1,
        "use a factor in (0, 1] (1 keeps the rate, 0.5 halves it after each recovery)",
    )
    distill_from: str | None = None
    distill_weight: float = checked(50.0, _positive, "use a weight > 0 (MARS: 50)")
    distill_features: DistillFeatures = "clip"
    distill_layer: str | None = None
    class_balance: ClassBalance = "none"
    probe: Probe = "none"
    probe_clips: int = at_least(1, 1)


@dataclass(frozen=True)
class RuntimeConfig:
    """How the run executes; nothing here changes the optimisation maths.

    strategy: "auto" (multi-worker when TF_CONFIG / Slurm names several workers, mirrored
        with several local GPUs, else one device), "one-device", "mirrored", "multi-worker".
    communication: collective implementation of multi-worker runs: "auto", "ring", "nccl".
    checkpoint_every_steps: 0 = at epoch ends only. validate_every_epochs: 0 = never.
    steps_per_epoch: None = training videos // global batch (at least 1).
    peer_timeout: seconds a multi-worker run's peer may stop sending heartbeats before the
        others stop with the restart status (TensorFlow's coordination-service heartbeat
        timeout); None = TensorFlow's default, 10 s.
    threads_per_op: TensorFlow's threads for a CPU op (docs/training.md), None = one a core.
    """

    seed: int = at_least(0, 0)
    deterministic: bool = False
    strategy: Strategy = "auto"
    communication: Communication = "auto"
    checkpoint_every_steps: int = at_least(0, 0)
    keep_checkpoints: int = at_least(3, 1)
    validate_every_epochs: int = at_least(1, 0)
    log_every_steps: int = at_least(10, 1)
    steps_per_epoch: int | None = at_least(None, 1, optional=True)
    peer_timeout: float | None = at_least(None, 1, optional=True)
    threads_per_op: int | None = between(None, 1, MAX_THREADS_PER_OP, optional=True)


@dataclass(frozen=True)
class Recipe:
    """A complete training recipe.

    reference: the paper, the published accuracy and how this recipe departs from it.
    """

    name: str
    description: str = ""
    reference: str = ""
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)


SECTION_TYPES: dict[str, type] = {
    "data": DataConfig,
    "model": ModelConfig,
    "train": TrainConfig,
    "runtime": RuntimeConfig,
}


def section_keys(section: str) -> list[str]:
    """The valid keys of a recipe section ("data", "model", "train", "runtime")."""
    return [item.name for item in fields(SECTION_TYPES[section])]


def resolved_partial_bn(model: ModelConfig) -> bool:
    """partial_bn with None resolved: True for TSN, False for TSM."""
    return model.architecture == "tsn" if model.partial_bn is None else model.partial_bn


def resolved_input_size(model: ModelConfig, data: DataConfig) -> int:
    """The model's frame side: model.input_size, else data.crop_size (said only here)."""
    return model.input_size or data.crop_size
