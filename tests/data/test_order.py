"""The example stream (actrec.data.input.order): n pipelines read the one stream a single
pipeline reads, whatever n and the number of videos, so a run can continue on another number
of workers; and a K-step averaging run is refused one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from actrec.config.files import load_recipe
from actrec.data.input import order
from actrec.errors import ConfigError
from actrec.runs.record import RunRecord
from actrec.train.life.resume import check_worker_count


def _videos(num_videos: int, pipelines: int, pipeline: int, examples: range) -> list[int]:
    return [
        int(order.example_video(k, num_videos, pipelines, pipeline, seed=5)[0]) for k in examples
    ]


@pytest.mark.parametrize("num_videos", [7, 8])
@pytest.mark.parametrize("pipelines", [2, 3])
def test_pipelines_read_the_single_pipelines_stream_and_each_epoch_once(num_videos, pipelines):
    length = 5 * num_videos  # five epochs, each wrapping at another step of each pipeline
    single = _videos(num_videos, 1, 0, range(length))
    for epoch in range(5):
        chunk = single[epoch * num_videos : (epoch + 1) * num_videos]
        assert sorted(chunk) == list(range(num_videos))
    assert single[:num_videos] != single[num_videos : 2 * num_videos]  # a new order each epoch
    for pipeline in range(pipelines):
        examples = range(length // pipelines)
        expected = [single[pipeline + pipelines * k] for k in examples]
        assert _videos(num_videos, pipelines, pipeline, examples) == expected


def test_two_workers_then_one_train_on_each_epoch_exactly_once():
    """7 videos, a global batch of 4: 3 steps on 2 workers (2 clips each), then 4 on 1."""
    stream = []
    for step in range(3):
        pairs = zip(*(_videos(7, 2, i, range(2 * step, 2 * step + 2)) for i in (0, 1)), strict=True)
        stream += [video for pair in pairs for video in pair]
    stream += _videos(7, 1, 0, range(3 * 4, 7 * 4))
    assert len(stream) == 28
    for epoch in range(4):
        assert sorted(stream[epoch * 7 : (epoch + 1) * 7]) == list(range(7))


def test_evaluation_reads_the_split_in_order_once():
    for pipelines in (1, 2, 3):
        read = []
        for pipeline in range(pipelines):
            count = order.examples_per_epoch(7, pipelines, pipeline)
            read += [int(order.example_video(k, 7, pipelines, pipeline, None)[0]) for k in
                     range(count)]  # fmt: skip
        assert sorted(read) == list(range(7))
        assert np.all(np.array(read[: order.examples_per_epoch(7, pipelines, 0)]) % pipelines == 0)


def test_a_kavg_run_cannot_change_its_number_of_workers(tmp_path):
    recipe = load_recipe("synthetic-flow")
    check_worker_count(tmp_path, recipe, RunRecord(workers=2), 1)  # allreduce: allowed
    kavg = dataclasses.replace(recipe, train=dataclasses.replace(recipe.train, sync="kavg"))
    check_worker_count(tmp_path, kavg, RunRecord(workers=2), 2)  # the same number: allowed
    check_worker_count(tmp_path, kavg, RunRecord(), 1)  # a run.json from before the record: allowed
    with pytest.raises(ConfigError) as error:
        check_worker_count(tmp_path, kavg, RunRecord(workers=2), 1)
    message = str(error.value)
    assert str(tmp_path) in message and "train.sync=kavg on 2 workers" in message
    assert "cannot continue on 1" in message and "resume it on 2 workers" in message
