"""`actrec pretrained convert` of VideoMAE files through the CLI: transformers' own
VideoMAEForVideoClassification (tiny, every weight drawn from a seed; the helpers of
test_videomae_reference) saved as a Hugging Face folder (safetensors and .bin) and as the
authors' .pth becomes a run whose logits are transformers' within 1e-5; a damaged file is
refused in one line naming its tensor, and no run folder appears."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from videomae_reference import (  # noqa: E402
    authors_state_dict,
    clips,
    reference,
    reference_outputs,
)

from actrec.config.files import load_recipe  # noqa: E402
from actrec.models.factory import build_model  # noqa: E402
from actrec.models.preprocessing import IMAGENET_MEAN_RGB, IMAGENET_STD_RGB  # noqa: E402

TOLERANCE = 1e-5
LABELS = {index: f"class_{index}" for index in range(5)}
CC_BY_NC = "CC-BY-NC-4.0"


@pytest.fixture(scope="module")
def model():
    return reference(num_frames=4, image_size=32, id2label=LABELS)


def _run_logits(run_dir, clip: np.ndarray) -> np.ndarray:
    """The converted run's logits on normalised clips: frames in [0, 255] that its
    preprocessing (ImageNet mean and std) maps back to `clip`."""
    frames = (clip * np.array(IMAGENET_STD_RGB) + np.array(IMAGENET_MEAN_RGB)) * 255.0
    recipe = load_recipe(run_dir / "recipe.yaml")
    # the clip's frames and size (an authors' file says none: its recipe is 16 x 224)
    data = replace(recipe.data, num_segments=clip.shape[1], crop_size=clip.shape[2])
    network = build_model(
        recipe.model, data, len(json.loads((run_dir / "run.json").read_text())["classes"])
    )
    network.load_weights(str(run_dir / "final.weights.h5"))
    return np.asarray(network(frames.astype(np.float32)))


@pytest.mark.parametrize("safe_serialization", [True, False], ids=["safetensors", "bin"])
def test_a_huggingface_folder_converts_to_transformers_logits(
    model, cli_runner, tmp_path, safe_serialization
):
    folder = tmp_path / "videomae-tiny-finetuned-kinetics"
    if safe_serialization:
        model.save_pretrained(folder)
    else:  # transformers 5 writes safetensors only: the .bin of transformers 4's folders
        model.config.save_pretrained(folder)
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
    converted = cli_runner("pretrained", "convert", folder, "--out", tmp_path / "run")
    assert converted.exit_code == 0, converted.output
    assert CC_BY_NC in converted.output
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    source = record["converted_from"]
    weights = folder / ("model.safetensors" if safe_serialization else "pytorch_model.bin")
    assert source["sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest()
    assert (source["layout"], source["classes"]) == ("huggingface", "config.json id2label")
    assert source["license"].startswith(CC_BY_NC)
    assert record["classes"] == list(LABELS.values())  # id2label over the name's kinetics
    clip = clips(4, 32)
    expected, _ = reference_outputs(model, clip)
    logits = _run_logits(tmp_path / "run", clip)
    np.testing.assert_allclose(logits, expected, atol=TOLERANCE, rtol=0)
    assert np.abs(expected[0] - expected[1]).max() > 100 * TOLERANCE
    if safe_serialization:  # the export's card states the weights' license
        exported = cli_runner("export", tmp_path / "run", "--out", tmp_path / "export")
        assert exported.exit_code == 0, exported.output
        card = (tmp_path / "export" / "MODEL_CARD.md").read_text()
        assert f"- Weights' license: {CC_BY_NC}" in card
        assert "videomae_s (videomae clip network), 4 frames" in card


def test_the_authors_checkpoint_converts_to_transformers_logits(cli_runner, tmp_path):
    model = reference(layer_norm_eps=1e-6)
    model.fc_norm.eps = 1e-6
    path = tmp_path / "checkpoint-best.pth"
    torch.save({"model": authors_state_dict(model), "epoch": 29}, path)
    out = tmp_path / "run"
    unnamed = cli_runner("pretrained", "convert", path, "--out", out, "--heads", "4")
    assert unnamed.exit_code != 0 and not out.exists()
    assert "checkpoint-best.pth does not say which dataset its 5 classes are" in unnamed.output
    converted = cli_runner(
        "pretrained", "convert", path, "--out", out, "--heads", "4", "--classes", "hmdb51"
    )  # 51 names for 5 outputs: refused by the count
    assert converted.exit_code != 0 and not out.exists()
    names = tmp_path / "classes.txt"
    names.write_text("\n".join(f"action {i}" for i in range(5)))
    converted = cli_runner(
        "pretrained", "convert", path, "--out", out, "--heads", "4", "--classes", names
    )
    assert converted.exit_code == 0, converted.output
    record = json.loads((out / "run.json").read_text())
    assert record["converted_from"]["layout"] == "videomae"
    assert record["classes"] == [f"action {i}" for i in range(5)]
    clip = clips(4, 32)
    expected, _ = reference_outputs(model, clip)
    np.testing.assert_allclose(_run_logits(out, clip), expected, atol=TOLERANCE, rtol=0)


def _zero_query_bias(model, folder):
    with torch.no_grad():
        model.videomae.encoder.layer[0].attention.attention.query.bias.zero_()
    model.save_pretrained(folder)


def _missing_tensor(model, folder):
    from safetensors.torch import save_file

    model.save_pretrained(folder)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    state.pop("videomae.encoder.layer.1.intermediate.dense.weight")
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})


def _non_finite(model, folder):
    with torch.no_grad():
        model.videomae.encoder.layer[1].output.dense.weight[0, 3] = float("inf")
    model.save_pretrained(folder)


def _a_tsm_file(model, folder):
    folder.rmdir()
    torch.save({"state_dict": {"module.base_model.conv1.weight": torch.zeros(64, 3, 7, 7)}},
               folder.with_suffix(".pth"))  # fmt: skip


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_zero_query_bias, "layer.0.attention.attention.q_bias is all zeros"),
        (_missing_tensor, "tensor videomae.encoder.layer.1.intermediate.dense.weight is missing"),
        (_non_finite, "videomae.encoder.layer.1.output.dense.weight"),
        (_a_tsm_file, "not a VideoMAE checkpoint: it has neither videomae.embeddings.patch_"
         "embeddings.projection.weight (Hugging Face) nor patch_embed.proj.weight"),
    ],
    ids=["zero-query-bias", "missing", "non-finite", "tsm-as-videomae"],
)  # fmt: skip
def test_a_damaged_file_is_refused_by_its_tensor_and_writes_nothing(
    cli_runner, tmp_path, damage, message
):
    folder = tmp_path / "source"
    folder.mkdir()
    damage(reference(num_frames=4, image_size=32, id2label=LABELS), folder)
    given = folder if folder.exists() else folder.with_suffix(".pth")
    out = tmp_path / "run"
    refused = cli_runner("pretrained", "convert", given, "--out", out, "--architecture", "videomae")
    assert refused.exit_code != 0
    lines = [line for line in refused.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), refused.output
    assert message in " ".join(refused.output.split()), refused.output
    assert not out.exists() and not list(tmp_path.glob(".run*"))


PATCH = "videomae.embeddings.patch_embeddings.projection.weight"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s, c: s.pop("videomae.encoder.layer.0.intermediate.dense.weight"),
         "tensor videomae.encoder.layer.0.intermediate.dense.weight is missing"),
        (lambda s, c: c.pop("num_attention_heads"), "config.json has no whole num_attention_heads"),
        (lambda s, c: s.update({PATCH: s[PATCH][:, :, 0]}),
         f"tensor {PATCH} has shape [32, 3, 16, 16]"),
    ],
    ids=["no-block-0-mlp", "no-heads-in-config", "patch-not-5-d"],
)  # fmt: skip
def test_a_file_the_size_cannot_be_read_from_is_one_weights_error(change, message):
    from actrec.backbones.videomae.convert import source_weights
    from actrec.errors import WeightsError

    model = reference()
    state = {key: value.numpy() for key, value in model.state_dict().items()}
    config = model.config.to_dict()
    change(state, config)
    with pytest.raises(WeightsError, match=re.escape(message)):
        source_weights(state, "file", config)
