"""Distillation from a flow teacher (`actrec train --distill-from`, MARS): the teacher's clips
are the flow of the student's frames in its crop box and flip; a tiny distilled run logs its
loss terms, records its teacher, resumes and starts from another run; bad teachers and data
are refused before anything is written. (Several workers, K-step averaging and float16:
tests/cluster/test_multiworker.py.) The distilled student is an ordinary RGB model: it
evaluates on frames alone and streams frame by frame as TFLite with no flow input."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import numpy as np
import pytest
from card_harness import assert_cards_give_the_runs_outputs
from streaming_checks import assert_steps_are_the_clip_models_segments
from tiny_recipe import TINY_RUN_SETTINGS

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.data.format import records, shards
from actrec.data.format.integrity import file_sha256
from actrec.data.input import augment, clip_reading, order, sampling
from actrec.data.input.clip_spec import ClipSpec, dataset_info
from actrec.data.input.clips import stack_flow_frames
from actrec.data.input.pipeline import batch_finisher, build_dataset
from actrec.errors import ConfigError, DatasetError
from actrec.runs.folder import FINAL_WEIGHTS_FILE, METRICS_FILE, RUN_FILE
from actrec.runs.record import RunRecord
from actrec.train.distillation.teacher import teacher_clip_spec, teacher_of
from actrec.train.run import train

tf = pytest.importorskip("tensorflow")

TOLERANCE = 1e-3  # grey levels: the format-2 pipeline's (tests/data/test_pipeline_format2.py)


def _student(teacher, *extra, recipe: str = "synthetic-tsm"):
    """The tiny `recipe` distilled from `teacher`."""
    return apply_overrides(
        load_recipe(recipe),
        [*TINY_RUN_SETTINGS, f"train.distill_from={teacher}", *extra],
    )


def _expected_teacher_clip(decoded: dict, student: ClipSpec, teacher: ClipSpec, seed):
    """The teacher's clip made of the whole decoded video: the flow stacks from the student's
    frames (moved back at the video's end), the student's crop box, resized to the teacher's
    crop, mirrored with x negated, on the stored scale."""
    sample_seed, crop_seed, flip_seed = sampling.split_seed(seed, 3)
    frames, flow = decoded["frames"], decoded["flow"]  # [T, H, W, 3], [T-1, H, W, 2]
    starts = clip_reading.clip_starts(len(frames), student, True, sample_seed)
    starts = tf.minimum(starts, len(flow) - teacher.new_length)
    indices = sampling.consecutive_indices(starts, teacher.new_length, len(flow))
    pixels = shards.dequantize_flow_tensor(tf.gather(flow, tf.reshape(indices, [-1])))
    clip = stack_flow_frames(pixels, student.num_segments, teacher.new_length)
    box = augment.multi_scale_crop_box(
        frames.shape[1],
        frames.shape[2],
        student.crop_size,
        crop_seed,
        scales=student.scales,
        more_fixed_crops=student.more_fix_crop,
    )
    clip = augment.resize_clip(augment.crop_clip(clip, box), teacher.crop_size, teacher.crop_size)
    clip = augment.random_horizontal_flip(clip, True, flip_seed)
    return augment.flow_to_stored_scale(clip).numpy()


def test_the_teachers_clips_are_the_flow_of_the_students_frames_crop_and_flip(tiny_runs):
    prepared = tiny_runs["prepared"]
    student = ClipSpec("rgb", 3, crop_size=32, flip=True, scales=(1.0, 0.875, 0.75, 0.66))
    recipe = _student(tiny_runs["flow"])
    teacher = teacher_clip_spec(student, teacher_of(recipe, dataset_info(prepared), RunRecord()))
    assert (teacher.modality, teacher.new_length, teacher.num_segments) == ("flow", 2, 3)
    videos = {
        video_id: records.decode_video(video_records)
        for video_id, video_records in records.iter_split_videos(prepared, "train")
    }
    ids = list(videos)

    def batches(teacher_spec):
        return build_dataset(
            prepared, "train", student, 4, True, seed=5, with_video_ids=True,
            finish_on_device=True, teacher_spec=teacher_spec,
        )  # fmt: skip

    plain = batches(None)
    mirrored = 0
    for batch_index, ((inputs, _, video_ids), (plain_inputs, _, _)) in enumerate(
        zip(batches(teacher).take(3), plain.take(3), strict=True)
    ):
        clips, teacher_clips = batch_finisher(student, teacher)(inputs)
        # the student's clips are those of a run without a teacher
        np.testing.assert_array_equal(clips.numpy(), batch_finisher(student)(plain_inputs))
        assert teacher_clips.shape == (4, 3, 32, 32, 4)
        for slot, video_id in enumerate(video_ids.numpy()):
            _, value = order.example_video(batch_index * 4 + slot, len(ids), 1, 0, 5)
            seed = tf.stack([value, tf.constant(0, tf.int64)])
            expected = _expected_teacher_clip(videos[video_id.decode()], student, teacher, seed)
            difference = np.abs(teacher_clips[slot].numpy() - expected)
            assert difference.max() <= TOLERANCE, (video_id, difference.max())
            mirrored += int(inputs[1][slot][4])
    assert 0 < mirrored < 12  # both sides of the flip were compared


@pytest.fixture(scope="module")
def distilled_run(tiny_runs, tmp_path_factory):
    """The tiny built-in distilled online TSM (synthetic-tsm-online-mars: FitNets' hints, on
    the test network's block_2_add maps) distilled from a copy of the tiny flow run, started
    from the tiny RGB run, stopped after one of its two steps and resumed."""
    folder = tmp_path_factory.mktemp("distilled")
    teacher = folder / "teacher"
    shutil.copytree(tiny_runs["flow"], teacher)
    recipe = _student(
        teacher,
        f"model.weights=run:{tiny_runs['rgb']}",
        "runtime.steps_per_epoch=2",
        "runtime.log_every_steps=1",
        "train.distill_layer=block_2_add",  # the test network has no block_5_add
        recipe="synthetic-tsm-online-mars",
    )
    run = folder / "run"
    first = train(recipe, tiny_runs["prepared"], run, stop_after_steps=1)
    assert first.stopped_early and first.global_step == 1
    summary = train(recipe, tiny_runs["prepared"], run, resume="latest")
    return {"run": run, "teacher": teacher, "summary": summary, "recipe": recipe}


def test_a_distilled_run_logs_its_loss_terms_and_records_its_teacher(distilled_run):
    run, teacher = distilled_run["run"], distilled_run["teacher"]
    summary = distilled_run["summary"]
    assert summary.resumed_from and summary.global_step == 2 and summary.weights_path
    rows = [json.loads(line) for line in (run / METRICS_FILE).read_text().splitlines()]
    steps = [row for row in rows if row["event"] == "train"]
    assert [row["global_step"] for row in steps] == [1, 2]
    weight = distilled_run["recipe"].train.distill_weight
    assert distilled_run["recipe"].train.distill_features == "maps"
    for row in steps:  # loss = cross-entropy + weight x feature MSE
        assert row["feature_mse"] > 0
        assert row["loss"] == pytest.approx(row["cross_entropy"] + weight * row["feature_mse"])
    record = json.loads((run / RUN_FILE).read_text())
    recorded = record["distilled_from"]
    assert recorded["path"] == str(teacher.resolve())
    assert recorded["sha256"] == file_sha256(teacher / FINAL_WEIGHTS_FILE)
    assert (recorded["modality"], recorded["new_length"], recorded["flow"]) == ("flow", 2, "dis")
    assert record["initialised_from"]["modality"] == "rgb"  # --init-from the RGB run too


def test_a_distilled_online_tsm_evaluates_and_streams_as_tflite_without_flow(
    distilled_run, tiny_runs, tmp_path
):
    from actrec.evaluation.evaluate import evaluate_run
    from actrec.evaluation.protocols import resolve_protocol
    from actrec.export.writer import export_runs
    from actrec.predict.stream import StreamingModel

    run = distilled_run["run"]
    teacher = json.loads((run / RUN_FILE).read_text())["distilled_from"]
    evaluation = evaluate_run(run, resolve_protocol("centre"), out_dir=tmp_path / "eval")
    assert evaluation.metrics.num_videos == 8  # every test video, from RGB frames only
    export_runs([run], tmp_path / "lite", model_format="tflite", streaming=True)
    metadata = json.loads((tmp_path / "lite" / "actrec.json").read_text())
    assert "flow" not in metadata["inputs"] and metadata["preparation"]["flow"] == "none"
    assert [stream["modality"] for stream in metadata["streams"]] == ["rgb"]
    assert_steps_are_the_clip_models_segments(
        StreamingModel(tmp_path / "lite"), run, tiny_runs["prepared"]
    )
    card = (tmp_path / "lite" / "MODEL_CARD.md").read_text()
    assert f"Distilled from: the flow run `{teacher['path']}`" in card
    assert teacher["sha256"] in card and "reads RGB frames only" in card
    assert "the maps of its backbone's layer block_2_add (FitNets' hints)" in card
    # the cards' code, in a fresh process, gives the distilled run's outputs
    export_runs([run], tmp_path / "keras", model_format="keras")
    compared = assert_cards_give_the_runs_outputs([tmp_path / "lite", tmp_path / "keras"], tmp_path)
    assert compared == {("tflite", 1, True), ("keras", 1, False)}


def test_resuming_with_a_changed_teacher_is_refused(distilled_run, tiny_runs, tmp_path):
    """The same teacher folder holding other weights (retrained since) is refused on
    --resume: run.json's SHA-256 no longer matches."""
    run, changed = tmp_path / "run", tmp_path / "teacher"
    shutil.copytree(distilled_run["run"], run)
    shutil.copytree(distilled_run["teacher"], changed)
    with open(changed / FINAL_WEIGHTS_FILE, "ab") as weights:
        weights.write(b"\0")  # another file: another SHA-256
    recipe = distilled_run["recipe"]
    recipe = replace(recipe, train=replace(recipe.train, distill_from=str(changed)))
    recipe_file = run / "recipe.yaml"  # the copy's recipe names the copied teacher
    recipe_file.write_text(
        recipe_file.read_text().replace(str(distilled_run["teacher"]), str(changed))
    )
    before = (run / RUN_FILE).read_bytes()
    with pytest.raises(ConfigError, match="is not the one this run started with"):
        train(recipe, tiny_runs["prepared"], run, resume="latest")
    assert (run / RUN_FILE).read_bytes() == before


def _refused(recipe, prepared, run, error, match):
    with pytest.raises(error, match=match):
        train(recipe, prepared, run)
    assert not run.exists()  # nothing written


def test_an_rgb_teacher_an_unfinished_one_and_a_folder_that_is_no_run_are_refused(
    tiny_runs, tmp_path
):
    prepared = tiny_runs["prepared"]
    _refused(_student(tiny_runs["rgb"]), prepared, tmp_path / "a", ConfigError,
             r"is an RGB model, and the teacher must be a flow model")  # fmt: skip
    unfinished = tmp_path / "unfinished"
    shutil.copytree(tiny_runs["flow"], unfinished)
    (unfinished / FINAL_WEIGHTS_FILE).unlink()
    _refused(_student(unfinished), prepared, tmp_path / "b", ConfigError,
             r"cannot distil from .*unfinished.*has not finished")  # fmt: skip
    (tmp_path / "empty").mkdir()
    _refused(_student(tmp_path / "empty"), prepared, tmp_path / "c", ConfigError,
             r"neither a finished run directory")  # fmt: skip


def test_a_flow_student_is_refused(tiny_runs):
    from actrec.config.validate import validate_recipe

    recipe = apply_overrides(
        load_recipe("synthetic-flow"),
        [*TINY_RUN_SETTINGS, f"train.distill_from={tiny_runs['flow']}"],
    )
    with pytest.raises(ConfigError, match=r"train\.distill_from.*must be an RGB model"):
        validate_recipe(recipe)


def _with_manifest_flow(prepared, folder, flow: str):
    """A copy of `prepared` whose manifest says its flow is `flow`."""
    shutil.copytree(prepared, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["settings"]["flow"] = flow
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_data_without_flow_or_with_another_method_than_the_teachers_is_refused(tiny_runs, tmp_path):
    without = _with_manifest_flow(tiny_runs["prepared"], tmp_path / "rgb-only", "none")
    _refused(_student(tiny_runs["flow"]), without, tmp_path / "a", DatasetError,
             r"prepared without optical flow .* prepare the data again with flow")  # fmt: skip
    other = _with_manifest_flow(tiny_runs["prepared"], tmp_path / "tvl1", "tvl1")
    _refused(_student(tiny_runs["flow"]), other, tmp_path / "b", DatasetError,
             r"learned from 'dis' optical flow, and .*tvl1.* holds 'tvl1' flow")  # fmt: skip


def test_a_teacher_of_other_classes_gives_features_only(tiny_runs, tmp_path):
    """A teacher trained on other classes (a converted Kinetics flow model, say) is allowed
    with a note for its features, and refused for its class scores."""
    prepared = tmp_path / "renamed"
    shutil.copytree(tiny_runs["prepared"], prepared)
    manifest = json.loads((prepared / "manifest.json").read_text())
    manifest["classes"] = [*manifest["classes"][:-1], "SomethingElse"]
    (prepared / "manifest.json").write_text(json.dumps(manifest))
    info = dataset_info(prepared)
    teacher = teacher_of(_student(tiny_runs["flow"]), info, RunRecord())
    assert "trained on other classes (8) than the data's (8): only its features" in teacher.note
    with pytest.raises(ConfigError, match="distill_features=logits matches the teacher's class"):
        teacher_of(_student(tiny_runs["flow"], "train.distill_features=logits"), info, RunRecord())


def _segment_like(width: int, name: str):
    """A one-segment model shaped as actrec's segment models (pooled features [B, width]
    into the layer distillation reads them from, then the classifier)."""
    import keras

    from actrec.models.segment_model import POOLED_FEATURES_LAYER

    inputs = keras.Input((6, 6, 2))
    features = keras.layers.Dense(width, activation="tanh")(keras.layers.Flatten()(inputs))
    dropped = keras.layers.Dropout(0.0, name=POOLED_FEATURES_LAYER)(features)
    return keras.Model(inputs, keras.layers.Dense(3, name="classifier")(dropped), name=name)


def test_the_projection_trains_with_the_student_is_checkpointed_and_never_part_of_it(tmp_path):
    """Widths 8 (student) and 5 (teacher): a Dense projection 8 -> 5 on the student's side,
    updated by the optimizer, saved and restored with the run's checkpoint items, and not a
    variable of the student model that evaluation and export use; the teacher is frozen."""
    from actrec.config.recipe import TrainConfig
    from actrec.train.distillation.loss import DistillationSettings
    from actrec.train.loop.trainer import DistributedTrainer

    teacher = _segment_like(5, "teacher")
    trainer = DistributedTrainer(
        tf.distribute.get_strategy(),
        lambda: _segment_like(8, "student"),
        TrainConfig(optimizer="sgd", momentum=0.0, weight_decay=0.0, clip_norm=None),
        distillation=DistillationSettings(lambda: teacher, 0.5, "clip", 1),
    )
    projection = trainer.distillation.projection
    assert projection.kernel.shape == (8, 5)
    student_variables = {id(variable) for variable in trainer.model.variables}
    assert not {id(variable) for variable in projection.variables} & student_variables
    rng = np.random.default_rng(0)
    clips = tf.constant(rng.normal(size=(4, 6, 6, 2)), tf.float32)
    labels = tf.constant([0, 1, 2, 0])
    teacher_before = [np.array(variable) for variable in teacher.variables]
    kernel_before = np.array(projection.kernel)
    values = trainer.train_step(((clips, clips * 2.0), labels), 0.5)
    assert values["loss"] == pytest.approx(values["cross_entropy"] + 0.5 * values["feature_mse"])
    assert not np.allclose(np.array(projection.kernel), kernel_before)  # it learns
    for before, variable in zip(teacher_before, teacher.variables, strict=True):
        np.testing.assert_array_equal(before, np.array(variable))  # the teacher does not
    saved = tf.train.Checkpoint(**trainer.checkpoint_items()).save(str(tmp_path / "ckpt"))
    trained = np.array(projection.kernel)
    projection.kernel.assign(np.zeros_like(trained))
    tf.train.Checkpoint(**trainer.checkpoint_items()).restore(
        saved
    ).assert_existing_objects_matched()
    np.testing.assert_array_equal(np.array(projection.kernel), trained)
