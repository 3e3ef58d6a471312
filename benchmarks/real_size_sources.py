"""The published-layout files benchmarks/deploy_real_size.py converts, with random weights
(latency does not depend on them): TSM's by the suite's PyTorch reference writers, MoViNet's
as the suite writes the Model Garden's checkpoints again from its asset, VideoMAE's by
transformers itself."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def checkpoints(folder: Path, models: list[str]) -> dict[str, Path]:
    """{model name: its published-layout file or folder} for `models` (mobilenet, resnet,
    movinet, videomae-s, videomae-b), random weights."""
    sys.path.insert(0, str(REPO_ROOT / "tests" / "published"))
    import torch_reference as reference  # the test suite's reference writers

    files = {}
    if "mobilenet" in models:
        model = reference.randomise_(reference.online_mobilenet_v2(27), seed=6)
        files["TSM MobileNetV2 (online)"] = reference.save_online_demo(model, folder)
    if "resnet" in models:
        model = reference.randomise_(reference.tsm_resnet(400, 8), seed=7)
        files["TSM ResNet-50"] = reference.save_tsm(model, folder)
    if "movinet" in models:
        files.update(movinet_checkpoints(folder / "movinet"))
    for size in ("s", "b"):
        if f"videomae-{size}" in models:
            files[f"VideoMAE ViT-{size.upper()}/16"] = videomae_folder(folder, size)
    return files


MOVINET_CLASSES = 7
"""The classifier width of the suite's MoViNet asset (the Model Garden's 600-class head
would add 2048 x 593 weights: 4.9 MB, a fraction of a millisecond)."""


def convert_options(model: str, folder: Path) -> list[str]:
    """`actrec pretrained convert` options a source needs beyond its file: the class names
    (VideoMAE's random 400-class head: Kinetics-400's; MoViNet's checkpoint has none, and
    its head is not Kinetics-600's 600 wide)."""
    if model.startswith("VideoMAE"):
        return ["--classes", "kinetics400"]
    if not model.startswith("MoViNet"):
        return []
    names = folder / "movinet-classes.txt"
    names.write_text("".join(f"class{index}\n" for index in range(MOVINET_CLASSES)))
    return ["--classes", str(names)]


def movinet_checkpoints(folder: Path) -> dict[str, Path]:
    """MoViNet-A0 base and stream: the Model Garden's checkpoints as the suite writes them
    again from its asset (a MOVINET_CLASSES-class head), every variable drawn by its seeded
    rule."""
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from movinet_reference import written_references

    _, cases = written_references(folder)
    return {
        f"MoViNet-A0 {kind}": folder / f"{cases[f'a0_{kind}']['files']['model']}.index"
        for kind in ("base", "stream")
    }


def videomae_folder(folder: Path, size: str) -> Path:
    """transformers' VideoMAEForVideoClassification of `size` (400 classes, 16 frames of
    224 px, random weights), saved in the Hugging Face layout (config.json and
    model.safetensors)."""
    sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
    from videomae_networks import SIZES, transformers_classifier

    target = folder / f"videomae-{size}-huggingface"
    if not (target / "config.json").is_file():
        transformers_classifier(SIZES[size]).save_pretrained(target)
    return target
