"""The checks of a command's arguments that need no TensorFlow, run before the command imports
it: an argument mistake (a missing file, a folder of the wrong kind) is answered in well
under a second instead of after TensorFlow's import (seconds). The library's own checks
stay where they are; these only come first (actrec_cli.folder_kinds tells the folders apart by
the names of their files)."""

from __future__ import annotations

from pathlib import Path

from actrec_cli.folder_kinds import (
    DESCRIPTIONS,
    folder_kind,
    require_export,
    require_prepared,
    require_run,
    require_run_or_export,
)

from actrec.cluster.strategy import is_chief
from actrec.data.sources import check_dataset_root
from actrec.errors import ConfigError, OutputError
from actrec.export.checks import check_out_dir
from actrec.files.output_paths import refuse_a_file_on_the_way
from actrec.train.life.resume import check_run_directory

_NOT_A_WORKDIR = ("export", "prepared", "partial", "videos")


def check_train_folders(
    prepared: Path,
    run_dir: Path,
    resume: str | None,
    init_from: Path | None,
    distill_from: Path | None,
) -> None:
    """`actrec train`: --data is prepared data, --init-from / --distill-from a run or an
    export, and (on the chief, which alone judges it) --workdir a new, empty or run folder."""
    require_prepared(prepared, "--data")
    for option, source in (("--init-from", init_from), ("--distill-from", distill_from)):
        if source is not None:
            require_run_or_export(source, option)
    refuse_a_file_on_the_way(run_dir, "--workdir")
    if not is_chief():
        return  # the chief may be writing the folder already
    kind = folder_kind(run_dir)
    if kind in _NOT_A_WORKDIR:
        raise OutputError(
            f"--workdir {run_dir} is {DESCRIPTIONS[kind]}; give a new folder for the run "
            f"(--data {prepared} is what it trains on)"
        )
    check_run_directory(run_dir, resume)


def check_prepare_arguments(dataset: str, root: Path, out_dir: Path, dry_run: bool) -> None:
    """`actrec prepare DATASET`: --root a folder (synthetic: made when missing), --out
    writable (its missing parents are made when the preparation starts)."""
    if dataset != "synthetic" or root.exists():
        check_dataset_root(dataset, root)
    if not dry_run:
        refuse_a_file_on_the_way(out_dir, "--out")


def check_eval_arguments(run_dir: Path | None, data_dir: Path | None, out_dir: Path | None):
    """`actrec eval RUN`: RUN a run folder, --data prepared data, --out writable."""
    if run_dir is not None:
        require_run(run_dir, "eval")
    if data_dir is not None:
        require_prepared(data_dir, "--data")
    if out_dir is not None:
        refuse_a_file_on_the_way(out_dir, "--out")


def check_export_arguments(
    run_dirs: list[Path],
    out_dir: Path,
    data_dir: Path | None,
    overwrite: bool,
    calibration_data: Path | None = None,
) -> None:
    """`actrec export RUN [--fuse RUN2]`: run folders, --data and --calibration-data prepared
    data, --out new, empty or (with --overwrite) an earlier export."""
    for run_dir in run_dirs:
        require_run(run_dir, "export")
    for option, folder in (("--data", data_dir), ("--calibration-data", calibration_data)):
        if folder is not None:
            require_prepared(folder, option)
    refuse_a_file_on_the_way(out_dir, "--out")
    check_out_dir(out_dir, overwrite)


def _is_local_path(video: str) -> bool:
    """Not a stream URL (rtsp://, http://) nor a camera index."""
    return "://" not in video and not video.isdigit()


_NOT_A_VIDEO = ("export", "run", "prepared", "partial", "videos", "empty")
"""Folder kinds that are no video (a frame folder is one: "other", its images)."""


def _video_problem(video: str) -> str | None:
    """Why the local path `video` cannot be a video (None: it may be one)."""
    kind = folder_kind(video)
    if kind is None:
        return "no such file"
    if kind in _NOT_A_VIDEO:
        return f"{DESCRIPTIONS[kind]}, not a video file or a folder of its frames"
    return None


def check_predict_arguments(videos: tuple[str, ...], model_dir: Path) -> None:
    """`actrec predict VIDEO... --model EXPORT`: EXPORT an export folder, and at least one
    VIDEO there (an unreadable one among others is reported and skipped, as documented)."""
    require_export(model_dir, "--model")
    local = [video for video in videos if _is_local_path(video)]
    problems = [_video_problem(video) for video in local]
    if not local or len(local) < len(videos) or None in problems:
        return
    if len(local) == 1 and problems[0] != "no such file":
        raise ConfigError(f"{local[0]} is {problems[0]}; give the path of a video file")
    if len(local) == 1:
        raise ConfigError(f"{local[0]}: no such file; give the path of a video file")
    shown = ", ".join(local[:3]) + (", ..." if len(local) > 3 else "")
    raise ConfigError(f"none of the {len(local)} videos exists ({shown}); give video files")


def check_inspect_arguments(prepared: Path, contact_sheet: Path | None) -> None:
    """`actrec inspect PREPARED`: prepared data, and --contact-sheet's folder writable."""
    require_prepared(prepared, "PREPARED")
    if contact_sheet is not None:
        refuse_a_file_on_the_way(contact_sheet.parent, "--contact-sheet")


def check_migrate_arguments(prepared: Path, out: Path) -> None:
    """`actrec migrate PREPARED --out OUT`: prepared data (format 1), OUT writable."""
    require_prepared(prepared, "PREPARED")
    refuse_a_file_on_the_way(out, "--out")
