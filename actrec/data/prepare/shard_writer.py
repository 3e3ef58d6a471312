"""Writing prepared videos into a shard, and their rows in the manifest.

A video's records (a header, then one record per frame: actrec.data.format.shards) go into one
shard, consecutively; its manifest row holds the header's byte offset, which is how a
training clip finds the video without reading anything before it.
"""

from __future__ import annotations

from pathlib import Path

from actrec.data.format.shards import framed_size, shard_file_name
from actrec.data.prepare.encode_video import VideoResult
from actrec.files.atomic import commit_temporary, temporary_path


class ShardWriter:
    """Writes one shard under a temporary name; `commit` makes it final (atomic)."""

    def __init__(self, out_dir: Path, split: str, index: int):
        import tensorflow as tf

        self.path = out_dir / shard_file_name(split, index)
        self.temporary = temporary_path(self.path)
        self._writer = tf.io.TFRecordWriter(str(self.temporary))
        self.bytes_written = 0  # the file's size so far (records and their framing)
        self.num_records = 0

    def write_video(self, records: tuple[bytes, ...]) -> int:
        """Write one video's records (header first); returns the header's byte offset."""
        offset = self.bytes_written
        for record in records:
            self._writer.write(record)
        self.bytes_written += framed_size(records)
        self.num_records += len(records)
        return offset

    def commit(self) -> None:
        self._writer.close()
        commit_temporary(self.temporary, self.path)

    def discard(self) -> None:
        self._writer.close()
        self.temporary.unlink(missing_ok=True)


def video_row(result: VideoResult, shard_name: str | None, offset: int | None) -> dict:
    row = {
        "id": result.video_id,
        "split": result.split,
        "label": result.label,
        "path": result.path,
        "frames": result.num_frames,
    }
    if result.records is not None:
        row.update(
            status="ok",
            shard=shard_name,
            offset=offset,
            height=result.height,
            width=result.width,
            digest=result.digest,
        )
    else:
        row.update(status="skipped", shard=None, reason=result.reason, detail=result.detail)
    return row
