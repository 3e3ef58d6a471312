"""The default synthetic set, generated and prepared (RGB + DIS flow at 128x96) for the
benchmarks that train on it: `prepared_synthetic_set(folder)` -> the prepared folder."""

from __future__ import annotations

from pathlib import Path


def prepared_synthetic_set(folder: Path) -> Path:
    """Generate the default synthetic set in folder/raw and prepare it into
    folder/prepared (frames at their original 128x96, as the test suite does)."""
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    generate_synthetic_dataset(folder / "raw")
    prepared = folder / "prepared"
    prepare_dataset(
        list_videos("synthetic", folder / "raw"), prepared, PrepareSettings(frame_size="original")
    )
    return prepared
