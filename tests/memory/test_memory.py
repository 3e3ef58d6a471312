"""Memory-efficient training: batch-size probing, the throughput model, accumulation with
frozen BatchNorm, rematerialisation, and `actrec train --batch-size auto`.

Probes run in fresh processes (about 10-20 s each on 2 CPU cores, most of it importing
TensorFlow and tracing the step), so the tests that probe for real are marked slow.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from actrec.config.files import load_recipe, recipe_to_yaml
from actrec.config.overrides import apply_overrides
from actrec.config.validate import validate_recipe
from actrec.errors import ConfigError
from actrec.train.memory.choose import choose_batch
from actrec.train.memory.probe import ProbeResult, probe_batch
from actrec.train.memory.recipe_edits import with_batch_size, with_saved_decision
from actrec.train.memory.step_time import StepTimeModel
from actrec.train.memory.units import GIB, MIB, format_bytes, parse_batch_size, parse_memory_size

TINY = [
    "model.backbone=test_mobilenet_v2",
    "data.crop_size=32",
    "data.num_segments=2",
    "train.epochs=1",
    "runtime.steps_per_epoch=2",
    "runtime.validate_every_epochs=0",
]


def _recipe(*overrides: str, base: str = "synthetic-rgb"):
    return apply_overrides(load_recipe(base), [*TINY, *overrides])


def _auto(*overrides: str):
    """The tiny recipe with --batch-size auto applied (lr_reference_batch = 16)."""
    return with_batch_size(_recipe(*overrides), "auto")


class FakeMachine:
    """A probe with peak = base + per_clip * b and step time = overhead + per_clip_s * b."""

    def __init__(self, base=1000 * MIB, per_clip=50 * MIB, overhead=0.05, seconds=0.01, slow=()):
        self.base, self.per_clip = base, per_clip
        self.overhead, self.seconds = overhead, seconds
        self.slow = dict(slow)  # batch -> extra seconds (memory pressure)
        self.probed: list[int] = []

    def peak(self, batch: int) -> int:
        return self.base + self.per_clip * batch

    def __call__(self, recipe, num_classes, batch, *, budget_bytes, device, steps):
        self.probed.append(batch)
        peak = self.peak(batch)
        if budget_bytes is not None and peak > budget_bytes:
            return ProbeResult(batch, False, peak, None, "over budget")
        seconds = self.overhead + self.seconds * batch + self.slow.get(batch, 0.0)
        return ProbeResult(batch, True, peak, seconds)


# --- settings ----------------------------------------------------------------------------------


def test_memory_sizes_and_batch_values_parse_or_fail_clearly():
    assert parse_memory_size("2GiB") == 2 * GIB
    assert parse_memory_size("512 MiB") == 512 * MIB
    assert parse_memory_size("1.5GB") == 1_500_000_000
    assert parse_memory_size("1KB") == 1000 and parse_memory_size("64") == 64
    for bad in ("lots", "2 parsecs", "-1GiB", "0B", ""):
        with pytest.raises(ConfigError, match="memory size"):
            parse_memory_size(bad)
    assert parse_batch_size("auto") == "auto" and parse_batch_size("AUTO") == "auto"
    assert parse_batch_size("16") == 16
    for bad in ("foo", "0", "-4", "1.5"):
        with pytest.raises(ConfigError, match=r"--batch-size .* whole number >= 1 .* auto"):
            parse_batch_size(bad)
    assert format_bytes(1536 * MIB) == "1.50 GiB" and format_bytes(None) == "-"


def test_recipes_accept_auto_and_explain_what_it_needs():
    recipe = _recipe("train.batch_size=auto", "train.lr_reference_batch=16", "model.remat=true")
    validate_recipe(recipe)
    assert recipe.train.batch_size == "auto" and recipe.model.remat is True
    assert "batch_size: auto" in recipe_to_yaml(recipe)
    with pytest.raises(ConfigError, match=r"train\.batch_size='foo'.*whole number or 'auto'"):
        _recipe("train.batch_size=foo")
    with pytest.raises(ConfigError, match=r"max_per_replica_batch=\[1\].*or 'auto' or null"):
        _recipe("train.max_per_replica_batch=[1]")
    with pytest.raises(ConfigError, match=r"train\.batch_size='auto'.*lr_reference_batch"):
        validate_recipe(_recipe("train.batch_size=auto"))  # linear coupling needs B_ref
    validate_recipe(_recipe("train.batch_size=auto", "train.lr_coupling=constant"))
    # --batch-size keeps the rate tied to the recipe's batch (synthetic-rgb: 16).
    assert with_batch_size(_recipe(), "auto").train.lr_reference_batch == 16
    assert with_batch_size(_recipe(), 64).train.lr_reference_batch == 16
    from actrec.train.schedule import global_batch_size

    with pytest.raises(ConfigError, match=r"batch_size=auto has not been resolved"):
        global_batch_size(_auto().train, 0)


# --- the decision ------------------------------------------------------------------------------


def test_step_time_model_recovers_overhead_and_time_per_clip():
    probes = [ProbeResult(b, True, 0, 0.040 + 0.003 * b) for b in (1, 2, 4, 8)]
    model = StepTimeModel.fit(probes)
    assert model.overhead_seconds == pytest.approx(0.040, abs=1e-12)
    assert model.seconds_per_clip == pytest.approx(0.003, abs=1e-12)
    assert model.slower_than_modelled == ()
    assert StepTimeModel.fit([ProbeResult(4, True, 0, 0.2)]).step_seconds(8) == pytest.approx(0.4)


def test_a_larger_budget_gives_a_larger_batch_that_fits_it():
    machine = FakeMachine()
    chosen = []
    for budget_mib in (1060, 1230, 1500, 2700):
        machine.probed.clear()
        decision = choose_batch(
            _auto(), 8, budget_bytes=budget_mib * MIB, device="cpu", probe=machine, max_batch=64
        )
        largest_fit = (budget_mib - 1000) // 50  # 1, 4, 10, 34
        chosen_batch = decision.per_replica_batch
        assert machine.peak(chosen_batch) <= budget_mib * MIB
        # throughput grows with the batch: the largest probed batch that fits, which
        # bisection finds to within an eighth in a logarithmic number of probes
        assert largest_fit - chosen_batch <= max(0, largest_fit // 8)
        failures = [b for b in machine.probed if machine.peak(b) > budget_mib * MIB]
        assert min(failures) - chosen_batch <= max(1, chosen_batch // 8)
        assert len(machine.probed) <= 2 * (largest_fit.bit_length() + 1)
        chosen.append(decision.per_replica_batch)
    assert chosen == sorted(chosen) and len(set(chosen)) == 4


def test_batch_auto_sets_the_global_batch_and_couples_the_learning_rate():
    machine = FakeMachine()  # 8 clips fit in 1420 MiB, 9 do not
    decision = choose_batch(
        _auto(), 8, num_replicas=2, budget_bytes=1420 * MIB, device="cpu", probe=machine
    )
    recipe = decision.apply(_auto())
    assert decision.per_replica_batch == 8 and recipe.train.batch_size == 16  # 8 x 2 replicas
    assert recipe.train.max_per_replica_batch == 8 and recipe.train.lr_reference_batch == 16
    rate = load_recipe("synthetic-rgb").train.lr  # at its batch of 16, linear coupling
    assert decision.learning_rate == pytest.approx(rate)
    one = choose_batch(_auto(), 8, budget_bytes=1420 * MIB, device="cpu", probe=FakeMachine())
    assert one.batch_size == 8 and one.learning_rate == pytest.approx(rate * 8 / 16)
    # A growing schedule reaches its larger batches by accumulation over the chosen batch.
    growing = _auto("train.batch_growth=2", "train.batch_growth_every=1", "train.epochs=3")
    resolved = choose_batch(
        growing, 8, budget_bytes=1420 * MIB, device="cpu", probe=FakeMachine()
    ).apply(growing)
    from actrec.train.schedule import epoch_plan

    plans = [epoch_plan(resolved.train, resolved.runtime, e, 1, 64) for e in range(3)]
    assert [(p.per_replica_batch, p.accumulation_steps) for p in plans] == [(8, 1), (8, 2), (8, 4)]


def test_a_batch_slower_than_its_model_gives_way_to_a_faster_one():
    machine = FakeMachine(slow={16: 1.0})  # batch 16 fits but swaps: 1.21 s, not 0.21 s
    decision = choose_batch(
        _auto(), 8, budget_bytes=1800 * MIB, device="cpu", probe=machine, max_batch=16
    )
    assert decision.model.slower_than_modelled == (16,)
    assert decision.model.seconds_per_clip == pytest.approx(0.01)  # fitted on the others
    rows = {row["batch"]: row for row in decision.rows()}
    assert rows[16]["fits"] == "yes" and decision.per_replica_batch == 8
    assert rows[8]["chosen"] and rows[8]["clips_per_second"] > rows[16]["clips_per_second"]


def test_max_per_replica_auto_keeps_the_global_batch_by_accumulation():
    recipe = _recipe("train.batch_size=16", "train.max_per_replica_batch=auto")
    decision = choose_batch(recipe, 8, budget_bytes=1320 * MIB, device="cpu", probe=FakeMachine())
    resolved = decision.apply(recipe)
    assert decision.probed_choice == 6  # 6 clips fit in 1.32 GiB
    # 16 does not split into micro-batches of 6 (3 steps): 4 micro-batches of 4.
    assert resolved.train.batch_size == 16 and resolved.train.max_per_replica_batch == 4
    assert (decision.micro_batch, decision.accumulation_steps) == (4, 4)
    # the global batch did not change: the recipe's own rate
    assert decision.learning_rate == pytest.approx(load_recipe("synthetic-rgb").train.lr)


def test_not_even_batch_one_fits_is_a_clear_error():
    with pytest.raises(
        ConfigError, match=r"not even a per-replica batch of 1 fits the memory budget of 900 MiB"
    ) as error:
        choose_batch(_auto(), 8, budget_bytes=900 * MIB, device="cpu", probe=FakeMachine())
    assert "at least 1.03 GiB" in str(error.value) and "--remat" in str(error.value)


def test_a_resumed_recipe_takes_the_saved_numbers():
    decision = choose_batch(_auto(), 8, budget_bytes=1420 * MIB, device="cpu", probe=FakeMachine())
    saved = decision.apply(_auto())
    assert with_saved_decision(_auto(), saved) == saved
    assert with_saved_decision(saved, _recipe()) == saved  # nothing auto: unchanged
    assert json.loads(json.dumps(decision.to_json()))["batch_size"] == 8


# --- accumulation and rematerialisation in one process -----------------------------------------


def _max_relative_difference(first, second) -> float:
    return max(
        float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))
        for a, b in zip(first, second, strict=True)
    )


def test_accumulation_with_frozen_batchnorm_gives_the_update_of_one_large_batch():
    tf = pytest.importorskip("tensorflow")
    from actrec.cluster.strategy import build_strategy
    from actrec.config.recipe import TrainConfig
    from actrec.models.segment_model import batch_normalization_layers, build_segment_model
    from actrec.train.loop.trainer import DistributedTrainer

    def frozen_bn_model():
        model = build_segment_model(
            "test_mobilenet_v2", 4, num_segments=2, input_size=32, dropout=0.0, weights=None
        )
        for layer in batch_normalization_layers(model):
            layer.trainable = False
        return model

    strategy = build_strategy("one-device", environ={})
    sgd = TrainConfig(optimizer="sgd", momentum=0.0, weight_decay=0.0, clip_norm=None)
    large = DistributedTrainer(strategy, frozen_bn_model, sgd, seed=3)
    accumulated = DistributedTrainer(strategy, frozen_bn_model, sgd, seed=3)
    weights = [np.array(v.value) for v in large.model.trainable_variables]
    for variable, value in zip(accumulated.model.trainable_variables, weights, strict=True):
        variable.assign(value)
    rng = np.random.default_rng(0)
    clips = rng.uniform(0, 255, (16, 2, 32, 32, 3)).astype("float32")
    labels = rng.integers(0, 4, 16).astype("int32")

    def stream(trainer):
        dataset = tf.data.Dataset.from_tensor_slices((clips, labels)).batch(8)
        return iter(trainer.distribute(lambda context: dataset))

    large_batches, accumulated_batches = stream(large), stream(accumulated)
    for _ in range(2):
        one = large.train_step(next(large_batches), 0.5, accumulation_steps=1)
        four = accumulated.train_step(next(accumulated_batches), 0.5, accumulation_steps=4)
        assert four["loss"] == pytest.approx(one["loss"], rel=1e-5)
    after = [np.array(v.value) for v in large.model.trainable_variables]
    difference = _max_relative_difference(
        [np.array(v.value) for v in accumulated.model.trainable_variables], after
    )
    print(f"4 micro-batches of 2 vs one batch of 8 (SGD, frozen BN): {difference:.2e}")
    assert difference <= 1e-5
    assert _max_relative_difference(after, weights) > 1e-4  # the steps moved the weights


def test_remat_gives_the_same_loss_gradients_statistics_and_weight_layout(tmp_path):
    tf = pytest.importorskip("tensorflow")
    import keras

    from actrec.models.remat import describe_plan, segment_count
    from actrec.models.segment_model import build_segment_model, segment_backbone

    def build(remat: bool):
        return build_segment_model(
            "resnet50",
            8,
            num_segments=2,
            input_size=32,
            dropout=0.0,
            partial_bn=False,  # BatchNorm trains: batch statistics and moving averages
            weights=None,
            remat=remat,
        )

    plain, remat = build(False), build(True)
    remat.set_weights(plain.get_weights())
    backbone = segment_backbone(remat)
    assert segment_count(backbone) >= 5 and type(backbone) is type(segment_backbone(plain))
    print(describe_plan(backbone))
    rng = np.random.default_rng(0)
    clips = tf.constant(rng.uniform(0, 255, (3, 2, 32, 32, 3)).astype("float32"))
    labels = tf.constant(rng.integers(0, 8, 3).astype("int32"))

    def loss_and_gradients(model):
        @tf.function
        def step(clips, labels):
            with tf.GradientTape() as tape:
                logits = model(clips, training=True)
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
                )
            return loss, tape.gradient(loss, model.trainable_variables)

        loss, gradients = step(clips, labels)
        return float(loss), [np.array(gradient) for gradient in gradients]

    plain_loss, plain_gradients = loss_and_gradients(plain)
    remat_loss, remat_gradients = loss_and_gradients(remat)
    gradient_difference = _max_relative_difference(remat_gradients, plain_gradients)
    print(f"loss {plain_loss:.6f} vs {remat_loss:.6f}; gradients {gradient_difference:.2e}")
    assert remat_loss == pytest.approx(plain_loss, rel=1e-5)
    assert gradient_difference <= 1e-5
    # The recomputation does not update the BatchNorm moving statistics a second time.
    moving = [w for w in plain.non_trainable_weights if "moving" in w.path]
    assert moving
    for mine, theirs in zip(
        [w for w in remat.non_trainable_weights if "moving" in w.path], moving, strict=True
    ):
        np.testing.assert_allclose(np.array(mine.value), np.array(theirs.value), rtol=1e-5)
    # The weight file of a remat model loads into a model without remat, and back.
    remat.save_weights(str(tmp_path / "remat.weights.h5"))
    other = build(False)
    other.load_weights(str(tmp_path / "remat.weights.h5"))
    for mine, theirs in zip(other.get_weights(), remat.get_weights(), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    # keras.RematScope is no alternative: a keras.applications model built inside it cannot
    # be called with training= inside tf.function on the TensorFlow backend.
    with keras.RematScope(mode="full"):
        scoped = keras.applications.ResNet50(
            include_top=False, weights=None, input_shape=(32, 32, 3), pooling="avg"
        )
    with pytest.raises(ValueError, match="custom_gradient"):
        tf.function(lambda x: scoped(x, training=True))(tf.zeros((1, 32, 32, 3)))


# --- real probes (fresh processes) -------------------------------------------------------------


@pytest.mark.slow
def test_auto_fits_a_measured_cpu_budget_and_a_larger_budget_gives_a_larger_batch():
    # Activations large enough (8 segments of 112 px) that each clip adds ~50 MiB of peak;
    # a real network, whose larger batches train more clips a second (the test network's
    # steps are so short that a larger batch can measure slower, and is then not chosen).
    recipe = _auto("data.crop_size=112", "data.num_segments=8", "model.backbone=mobilenet_v3_small")
    measured: dict[int, ProbeResult] = {}

    def measuring_probe(recipe, num_classes, batch, *, budget_bytes, device, steps):
        """A real probe per batch (fresh process, no budget), judged against each budget."""
        if batch not in measured:
            measured[batch] = probe_batch(recipe, num_classes, batch, device=device, steps=steps)
        result = measured[batch]
        fits = budget_bytes is None or result.peak_bytes <= budget_bytes
        return dataclasses.replace(
            result,
            fits=fits,
            reason="" if fits else "over budget",
            step_seconds=result.step_seconds if fits else None,
        )

    def decide(budget):
        return choose_batch(
            recipe, 8, budget_bytes=budget, device="cpu", max_batch=4, steps=2,
            probe=measuring_probe,
        )  # fmt: skip

    decide(64 * GIB)  # measures batches 1, 2 and 4
    peaks = {batch: measured[batch].peak_bytes for batch in (1, 2, 4)}
    print({batch: format_bytes(peak) for batch, peak in peaks.items()})
    assert peaks[1] + 20 * MIB < peaks[2] and peaks[2] + 40 * MIB < peaks[4]
    small_budget = (peaks[1] + peaks[2]) // 2  # batch 1 fits, 2 does not
    larger_budget = peaks[4] + 20 * MIB  # all fit (no further probes)
    small, larger = decide(small_budget), decide(larger_budget)
    print(f"budget {format_bytes(small_budget)}: batch {small.per_replica_batch}")
    print(f"budget {format_bytes(larger_budget)}: batch {larger.per_replica_batch}")
    print("\n".join(str(row) for row in larger.rows()))
    assert small.per_replica_batch == 1 and small.batch_size == 1
    assert larger.per_replica_batch in (2, 4) and larger.batch_size == larger.per_replica_batch
    assert measured[larger.per_replica_batch].peak_bytes <= larger_budget
    assert sorted(measured) == [1, 2, 4]
    # A fresh probe of the chosen batch under the small budget (watchdog armed) fits it.
    again = probe_batch(recipe, 8, 1, budget_bytes=small_budget, device="cpu", steps=1)
    assert again.fits and again.peak_bytes <= small_budget


@pytest.mark.slow
def test_remat_lowers_the_measured_peak_of_a_resnet():
    recipe = _recipe(
        "model.backbone=resnet50", "data.crop_size=112", "data.num_segments=2",
        "train.optimizer=sgd",
    )  # fmt: skip
    plain = probe_batch(recipe, 8, 8, device="cpu", steps=2)
    remat = probe_batch(dataclasses.replace(recipe, model=dataclasses.replace(
        recipe.model, remat=True)), 8, 8, device="cpu", steps=2)  # fmt: skip
    print(
        f"ResNet50, 8 clips x 2 frames of 112 px: peak {format_bytes(plain.peak_bytes)} without "
        f"remat, {format_bytes(remat.peak_bytes)} with; step {plain.step_seconds:.2f} s vs "
        f"{remat.step_seconds:.2f} s"
    )
    assert plain.fits and remat.fits
    assert remat.peak_bytes < plain.peak_bytes - 80 * MIB


@pytest.mark.slow
def test_cli_batch_size_auto_prints_its_table_and_a_resume_keeps_the_batch(
    tiny_synthetic_prepared, tmp_path, cli_runner
):
    run_dir = tmp_path / "run"
    arguments = [
        "train", "--recipe", "synthetic-rgb", "--data", tiny_synthetic_prepared,
        "--workdir", run_dir, *(f"--set={setting}" for setting in TINY),
        "--set", "train.max_batch_size=2", "--set", "train.epochs=2",
        "--batch-size", "auto", "--memory-budget", "8GiB", "--remat",
    ]  # fmt: skip
    result = cli_runner(*arguments, "--stop-after-steps", "1")
    assert result.exit_code == 0, result.output
    assert "probe: batch 1" in result.output and "probe: batch 2" in result.output
    assert "per-replica batch probed on CPU, budget 8.00 GiB" in result.output
    assert "<- chosen" in result.output
    assert "chosen: per-replica batch" in result.output
    saved = load_recipe(run_dir / "recipe.yaml")
    record = json.loads((run_dir / "run.json").read_text())
    decision = record["batch_decision"]
    assert saved.train.batch_size == decision["batch_size"] in (1, 2)
    assert saved.train.lr_reference_batch == 16 and saved.model.remat is True
    assert [probe["batch"] for probe in decision["probes"]] == [1, 2]
    resumed = cli_runner(*arguments, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert "probe:" not in resumed.output and "resumed from" in resumed.output
    assert load_recipe(run_dir / "recipe.yaml") == saved
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "finished" and record["batch_decision"] == decision
    epochs = [
        json.loads(line)
        for line in (run_dir / "metrics.jsonl").read_text().splitlines()
        if '"epoch"' in line and '"event": "epoch"' in line
    ]
    assert [row["global_batch"] for row in epochs] == [saved.train.batch_size] * 2


def test_cli_bad_batch_and_budget_values_are_refused(tiny_synthetic_prepared, tmp_path, cli_runner):
    common = ["train", "--recipe", "synthetic-rgb", "--data", tiny_synthetic_prepared]
    run_dir = tmp_path / "run"
    result = cli_runner(*common, "--workdir", run_dir, "--batch-size", "foo")
    assert result.exit_code == 2 and "--batch-size 'foo' is not valid" in result.output
    result = cli_runner(
        *common, "--workdir", run_dir, "--batch-size", "auto", "--memory-budget", "lots"
    )
    assert result.exit_code == 2 and "memory size 'lots' is not valid" in result.output
    result = cli_runner(
        *common, "--workdir", run_dir, *(f"--set={setting}" for setting in TINY),
        "--batch-size", "auto", "--memory-budget", "1KB",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "not even a per-replica batch of 1 fits the memory budget of 1000 B" in result.output
    assert "--memory-budget" in result.output and "Traceback" not in result.output
    assert not run_dir.exists()
    result = cli_runner(*common, "--workdir", run_dir, "--set", "train.batch_size=auto")
    assert result.exit_code == 1 and "train.lr_reference_batch" in result.output
