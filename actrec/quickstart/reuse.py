"""What a second `actrec quickstart` in the same folder keeps instead of redoing: the
evaluations of unchanged runs and the export written after their weights (the trained runs
themselves are kept by actrec.quickstart.stages)."""

from __future__ import annotations

from pathlib import Path

from actrec.errors import ConfigError
from actrec.evaluation.evaluate import evaluate_run, saved_run_evaluation
from actrec.export.metadata import METADATA_FILE, read_export_metadata
from actrec.export.writer import export_runs
from actrec.runs.folder import FINAL_WEIGHTS_FILE


def evaluated(run_dir: Path, protocol, progress):
    """The run's evaluation: the saved one when it is of these weights and data (a second
    quickstart), else a new one."""
    saved = saved_run_evaluation(run_dir, protocol)
    if saved is not None:
        progress.message(f"{saved.out_dir} is already evaluated; kept")
        return saved
    return evaluate_run(run_dir, protocol, progress=progress)


def export_is_current(export_dir: Path, run_dirs: list[Path]) -> bool:
    """Whether `export_dir` is a finished export of `run_dirs`, in this order, written after
    each run's final weights."""
    try:
        metadata = read_export_metadata(export_dir)
        exported_at = (export_dir / METADATA_FILE).stat().st_mtime_ns
        written = [(run / FINAL_WEIGHTS_FILE).stat().st_mtime_ns for run in run_dirs]
    except (ConfigError, OSError):
        return False
    named = [str(stream.get("run")) for stream in metadata.get("streams") or []]
    current = all(exported_at > weights_at for weights_at in written)
    return named == [str(run.resolve()) for run in run_dirs] and current


def exported(run_dirs: list[Path], export_dir: Path, progress) -> Path:
    """`export_dir`, a two-stream SavedModel of `run_dirs`: kept when it is current, else
    written anew."""
    if export_is_current(export_dir, run_dirs):
        progress.message(f"{export_dir} is already exported from these runs; kept")
        return export_dir
    export_runs(run_dirs, export_dir, overwrite=True, progress=progress)
    return export_dir
