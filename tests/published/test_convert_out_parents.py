"""`actrec pretrained convert --out runs/NAME` on a fresh checkout: the missing parents of the
run folder are created once every check has passed; a refused conversion creates nothing."""

from __future__ import annotations

import torch_reference as reference


def test_convert_creates_the_parents_of_out_only_when_it_converts(cli_runner, tmp_path):
    model = reference.randomise_(reference.tsm_mobilenet_v2(8, 2), seed=8)
    checkpoint = reference.save_tsm(model, tmp_path)
    classes = tmp_path / "classes.txt"
    classes.write_text("".join(f"class{index}\n" for index in range(8)))
    runs = tmp_path / "runs"

    # refused after the file is read (its name says Kinetics: 400 names, 8 outputs)
    refused = cli_runner("pretrained", "convert", checkpoint, "--out", runs / "a" / "run")
    assert refused.exit_code == 1 and "400 names" in " ".join(refused.output.split())
    assert not runs.exists()
    # a file on the way
    (tmp_path / "notes").write_text("mine")
    through_a_file = tmp_path / "notes" / "run"
    refused = cli_runner("pretrained", "convert", checkpoint, "--out", through_a_file)
    assert refused.exit_code == 1
    assert f"{tmp_path / 'notes'} is a file, not a folder" in " ".join(refused.output.split())

    out = runs / "a" / "run"
    result = cli_runner("pretrained", "convert", checkpoint, "--out", out, "--classes", classes)
    assert result.exit_code == 0, result.output
    assert (out / "run.json").is_file() and (out / "final.weights.h5").is_file()
    assert [path.name for path in (runs / "a").iterdir()] == ["run"]  # no temporary left
