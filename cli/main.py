"""The `actrec` command group."""

from __future__ import annotations

import os
import sys

import click
from actrec_cli.console import error_console

from actrec import __version__
from actrec.cluster.optional_imports import decline_optional_imports
from actrec.errors import ActrecError
from actrec.train.inputs.input_pipelines import teardown_pending


class ActrecGroup(click.Group):
    """A group that prints ActrecError messages without a traceback and exits 1 (or the
    error's own `exit_code`: actrec.errors.RESTART_EXIT_CODE for a lost worker)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ActrecError as error:
            from rich.markup import escape

            # escape: a message's own brackets (pip install "actrec[ray]") are not markup
            message = escape(str(error))
            error_console().print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
            sys.exit(getattr(error, "exit_code", 1))
        except KeyboardInterrupt:
            click.echo("interrupted; re-run the same command to resume", err=True)
            sys.exit(130)


@click.group(cls=ActrecGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="actrec")
def main() -> None:
    """Train video action-recognition networks (two-stream TSN, TSM) with ImageNet
    transfer learning on Keras 3 + TensorFlow."""
    # TensorFlow's C++ start-up lines (oneDNN, CUDA probing) are noise for CLI users.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _register_commands() -> None:
    from actrec_cli import (
        eval_command,
        export,
        inspect_command,
        launch,
        migrate,
        predict,
        prepare,
        pretrained,
        quickstart,
        recipes,
        synthetic,
        train,
    )

    main.add_command(quickstart.quickstart)
    main.add_command(prepare.prepare)
    main.add_command(inspect_command.inspect)
    main.add_command(migrate.migrate)
    main.add_command(synthetic.synthetic)
    main.add_command(pretrained.pretrained)
    main.add_command(recipes.recipes)
    main.add_command(train.train)
    main.add_command(launch.launch)
    main.add_command(eval_command.eval_command)
    main.add_command(export.export)
    main.add_command(predict.predict)


_register_commands()


def run() -> None:
    """The `actrec` console script: `main`, then the process's end.

    A training leaves its input pipelines' teardown on a thread of its own
    (actrec.train.inputs.input_pipelines.drop_in_background: tf.data's destructor can wait up to a
    minute), which Python's exit would wait for: a finished `actrec train` sat 20 s after
    its last line. Once the command has returned, everything it wrote is written, so the
    process ends without waiting for that thread (os._exit, after flushing its output).
    Only the console script does this: `main` called in a process (tests, CliRunner)
    returns as any click command. The console script also declines the optional packages
    TensorFlow and Keras import at start-up for helpers it never calls
    (actrec.cluster.optional_imports: about 2 s less CPU a command that imports TensorFlow).
    """
    decline_optional_imports()
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code

    if not teardown_pending():
        sys.exit(code)  # as Python ends any script
    import logging

    if not isinstance(code, int):  # sys.exit(message): printed, status 1, as Python does
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
