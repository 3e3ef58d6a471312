"""The `actrec` command group."""

from __future__ import annotations

import os
import sys

import click

from actrec import __version__
from actrec.errors import ActrecError


class ActrecGroup(click.Group):
    """A group that prints ActrecError messages without a traceback and exits 1 (or the
    error's own `exit_code`: actrec.errors.RESTART_EXIT_CODE for a lost worker)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ActrecError as error:
            from actrec_cli.console import error_console
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

if __name__ == "__main__":
    main()
