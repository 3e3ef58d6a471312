"""Encoding one split into shards: videos encoded in parallel, written in list order,
a shard closed (and its row appended to state.jsonl) once it holds `shard_size_mb`.

A killed run loses at most the open shard (see actrec.data.prepare.dataset).
"""

from __future__ import annotations

import json
from pathlib import Path

from actrec.data.format.shards import shard_file_name
from actrec.data.prepare.encode_video import PrepareSettings, VideoResult, VideoTask
from actrec.data.prepare.executors.registry import Executor
from actrec.data.prepare.plan import PARTIAL_DIR, STATE_FILE
from actrec.data.prepare.shard_writer import ShardWriter, video_row
from actrec.data.sources.base import VideoEntry
from actrec.files.atomic import append_line_durably, read_json_lines
from actrec.progress import Progress


def prepare_split(
    out_dir: Path,
    split: str,
    entries: list[VideoEntry],
    classes: tuple[str, ...],
    settings: PrepareSettings,
    executor: Executor,
    progress: Progress,
) -> None:
    """Encode the videos of `split` not yet in a closed shard, closing shards as they fill."""
    state_path = out_dir / PARTIAL_DIR / STATE_FILE
    rows = [row for row in read_json_lines(state_path) if row["split"] == split]
    if any(row["split_complete"] for row in rows):
        return
    next_position = max((row["last_position"] for row in rows), default=-1) + 1
    next_shard = sum(1 for row in rows if row["shard_index"] is not None)
    tasks = [
        VideoTask(
            position,
            entry.video_id,
            str(entry.path),
            entry.label,
            classes[entry.label] if entry.label >= 0 else "",
            split,
        )
        for position, entry in enumerate(entries)
        if position >= next_position
    ]
    target_bytes = settings.shard_size_mb * 1024 * 1024
    writer: ShardWriter | None = None
    results: list[VideoResult] = []
    offsets: list[int | None] = []  # of each result's header in the open shard
    split_closed = False

    def close(last_position: int, split_complete: bool) -> None:
        nonlocal writer, next_shard, results, offsets, split_closed
        shard_index = None
        if writer is not None and writer.num_records:
            writer.commit()
            shard_index = next_shard
            next_shard += 1
        elif writer is not None:
            writer.discard()
        shard_name = shard_file_name(split, shard_index) if shard_index is not None else None
        row = {
            "split": split,
            "shard_index": shard_index,
            "first_position": results[0].position if results else last_position + 1,
            "last_position": last_position,
            "split_complete": split_complete,
            "videos": [
                video_row(result, shard_name, offset)
                for result, offset in zip(results, offsets, strict=True)
            ],
        }
        append_line_durably(state_path, json.dumps(row))
        writer, results, offsets, split_closed = None, [], [], split_complete

    last_position = next_position - 1
    try:
        for result in executor.encode_in_order(tasks, settings):
            offset = None
            if result.records is not None:
                if writer is None:
                    writer = ShardWriter(out_dir, split, next_shard)
                offset = writer.write_video(result.records)
            results.append(result)
            offsets.append(offset)
            last_position = result.position
            progress.advance(1, frames=result.num_frames)
            if writer is not None and writer.bytes_written >= target_bytes:
                close(last_position, split_complete=last_position == len(entries) - 1)
        if not split_closed:
            close(len(entries) - 1, split_complete=True)
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
