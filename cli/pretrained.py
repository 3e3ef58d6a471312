"""`actrec pretrained list | fetch | import`: the local store of ImageNet weight files."""

from __future__ import annotations

import json
from pathlib import Path

import click
from actrec_cli.console import console, import_tensorflow_quietly, progress_for
from actrec_cli.convert_report import print_conversion
from actrec_cli.pretrained_table import print_weights_table, weights_rows

from actrec.backbones.registry import backbone_spec
from actrec.backbones.weight_install import fetch_weights, import_weights
from actrec.config.choices import MODALITIES, SEGMENT_ARCHITECTURES, SHIFT_DIRECTIONS
from actrec.published.class_lists import CLASS_LISTS, published_class_names
from actrec.published.convert import (
    ConversionOptions,
    check_conversion_paths,
    convert_checkpoint,
)
from actrec.published.downloads import refuse_video_checkpoint_import
from actrec.published.imagenet import convert_imagenet_file
from actrec.published.movinet_convert import convert_movinet_file, is_movinet_file
from actrec.published.videomae_convert import ARCHITECTURE as VIDEOMAE


@click.group()
def pretrained() -> None:
    """ImageNet weight files of the backbones: list them, download them, or import files
    downloaded elsewhere (store: $ACTREC_PRETRAINED, else ./pretrained); convert published
    PyTorch video models into actrec runs."""


@pretrained.command("list")
@click.option("--verify", is_flag=True, help="Also check the digest of every file present.")
@click.option("--urls", is_flag=True, help="Also show the download URL of every file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_command(verify: bool, urls: bool, as_json: bool) -> None:
    """List the known weight files, present or not, and where they are."""
    rows = weights_rows(verify)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    print_weights_table(rows, urls)


@pretrained.command()
@click.argument("backbone")
@click.option("--url", help="Download from this URL (a mirror, or file://) instead of Keras's.")
@click.option("--sha256", "expected_sha256", help="Also require this SHA-256 of the file.")
def fetch(backbone: str, url: str | None, expected_sha256: str | None) -> None:
    """Download BACKBONE's weight file into the store and check its digest."""
    path = fetch_weights(
        backbone_spec(backbone),
        url=url,
        expected_sha256=expected_sha256,
        progress=progress_for("bytes"),
        convert=convert_imagenet_file,
    )
    console().print(f"installed {path}", highlight=False)


@pretrained.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--backbone", help="Whose file it is [default: found from the file name].")
@click.option("--sha256", "expected_sha256", help="Also require this SHA-256 of the file.")
def import_command(file: Path, backbone: str | None, expected_sha256: str | None) -> None:
    """Check FILE (downloaded elsewhere) against its published digest and copy it into the
    store; a file that does not match installs nothing."""
    refuse_video_checkpoint_import(file)  # a TSM / mmaction2 video model: `convert` takes it
    spec = None if backbone is None else backbone_spec(backbone)
    path = import_weights(
        file, spec, expected_sha256=expected_sha256, convert=convert_imagenet_file
    )
    console().print(f"installed {path}", highlight=False)


@pretrained.command()
@click.argument("checkpoint", type=click.Path(path_type=Path))
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The run folder to write (must not exist).",
)
@click.option(
    "--classes",
    help="Class names: a built-in list (`actrec pretrained classes` lists them: kinetics400, "
    "something-something-v2, jester, ucf101, hmdb51, ...) or a file, one name per line "
    "[default: from the file name].",
)
@click.option(
    "--architecture",
    type=click.Choice((*SEGMENT_ARCHITECTURES, VIDEOMAE)),
    help="tsn or tsm, or videomae (a VideoMAE / VideoMAE V2 .pth, .bin or .safetensors file "
    "or Hugging Face folder) [default: from the file's keys and name].",
)
@click.option(
    "--heads",
    type=click.IntRange(min=1),
    help="A VideoMAE of no published size without its config.json: its attention heads.",
)
@click.option("--backbone", help="Check the tensors are this backbone [default: from the keys].")
@click.option("--segments", type=click.IntRange(min=1), help="Segments [default: file name, 8].")
@click.option(
    "--modality", type=click.Choice(MODALITIES), help="rgb or flow [default: from the keys]."
)
@click.option(
    "--shift-direction",
    type=click.Choice(SHIFT_DIRECTIONS),
    help="A TSM's shift: bidirectional, or online (streaming) [default: online for the online "
    "demo's MobileNetV2, else bidirectional].",
)
def convert(
    checkpoint: Path,
    out: Path,
    classes: str | None,
    architecture: str | None,
    backbone: str | None,
    segments: int | None,
    modality: str | None,
    shift_direction: str | None,
    heads: int | None,
) -> None:
    """Convert a published PyTorch CHECKPOINT (TSM's, mmaction2's TSN / TSM, torchvision's
    ImageNet ResNet, TSM's MobileNetV2) or a VideoMAE (Hugging Face folder, the authors' or
    V2's .pth) into a finished actrec run folder that eval, export, predict and `train
    --init-from` take. The file is read as data only (no code in it runs);
    docs/model-zoo.md lists the published files. A TensorFlow Model Garden MoViNet checkpoint
    (ckpt-N.index, or its folder) or TF Hub MoViNet SavedModel folder converts too, its
    variables read as data."""
    if is_movinet_file(checkpoint):
        options = {
            "--architecture": architecture, "--backbone": backbone, "--segments": segments,
            "--modality": modality, "--shift-direction": shift_direction,
        }  # fmt: skip
        given = [name for name, value in options.items() if value is not None]
        if given:
            raise click.UsageError(f"{given[0]} is a PyTorch file's option: a MoViNet file says it")
        import_tensorflow_quietly()
        print_conversion(convert_movinet_file(checkpoint, out, classes))
        return
    # before TensorFlow: a mistake is answered at once
    check_conversion_paths(checkpoint, out, architecture)
    import_tensorflow_quietly()
    options = ConversionOptions(
        classes=classes,
        architecture=architecture,
        backbone=backbone,
        num_segments=segments,
        modality=modality,
        shift_direction=shift_direction,
        heads=heads,
    )
    conversion = convert_checkpoint(checkpoint, out, options)
    print_conversion(conversion)


@pretrained.command("classes")
@click.argument("name", required=False)
def classes_command(name: str | None) -> None:
    """The built-in class lists of the published models (their source's label order), or the
    names of list NAME, one per line (index = the classifier's output)."""
    if name is not None:
        for class_name in published_class_names(name):
            click.echo(class_name)
        return
    for list_name in CLASS_LISTS:
        click.echo(f"{list_name}\t{len(published_class_names(list_name))} classes")
