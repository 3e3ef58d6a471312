"""The streams of `actrec eval --fuse`: each a run directory to evaluate (or whose saved
evaluation to reuse), or the saved scores of an earlier evaluation."""

from __future__ import annotations

from pathlib import Path

from actrec_cli.console import console, import_tensorflow_quietly, progress_for

from actrec.errors import ConfigError
from actrec.evaluation.evaluate import evaluate_run, load_evaluation, saved_run_evaluation
from actrec.evaluation.scores import SCORES_FILE
from actrec.runs.folder import RECIPE_FILE


def is_run_directory(path: Path) -> bool:
    return path.is_dir() and (path / RECIPE_FILE).is_file()


def stream_evaluation(source: Path, protocol, options: dict, force: bool):
    """A run directory is evaluated (unless its evaluation under the same protocol, split,
    view average, data and weights is already saved and not `force`); an eval folder or
    scores.npz is loaded as saved. A run directory evaluated on a worker other than the
    chief gives None (its share of the scores is saved; the chief writes the results)."""
    if is_run_directory(source):
        if not force:
            saved = saved_run_evaluation(
                source,
                protocol,
                data_dir=options["data_dir"],
                split=options["split"],
                checkpoint=options["checkpoint"],
                average=options["average"],
            )
            if saved is not None:
                console().print(
                    f"{source}: reusing its saved evaluation {saved.out_dir} (same protocol, "
                    "split, data and weights; --force evaluates again)",
                    soft_wrap=True,
                    highlight=False,
                )
                return saved
        import_tensorflow_quietly()
        return evaluate_run(source, protocol, progress=progress_for("videos"), **options)
    if source.is_file() or (source / SCORES_FILE).is_file():
        return load_evaluation(source)
    raise ConfigError(
        f"{source} is neither a run directory (the --workdir of `actrec train`) nor saved "
        f"scores (an eval folder or its {SCORES_FILE})"
    )
