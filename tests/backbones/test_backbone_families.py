"""A backbone family is one folder of actrec/backbones/ (issue 66): the registry finds it by
itself, and nothing outside the folder imports it or names its modules, so adding a family
touches no other file of the package (its test and its docs row aside)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

from actrec.backbones.registry import (
    BACKBONES,
    CLIP_NETWORKS,
    FAMILIES,
    PUBLISHED_LAYOUTS,
    SHIFT_BLOCKS,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
BACKBONES_FOLDER = REPO_ROOT / "actrec" / "backbones"
SOURCE_FOLDERS = ("actrec", "cli", "benchmarks", "tests")


def family_folders() -> list[str]:
    return sorted(path.parent.name for path in BACKBONES_FOLDER.glob("*/__init__.py"))


def test_the_registry_lists_every_family_folder_and_each_folder_fills_the_contract():
    assert sorted(FAMILIES) == family_folders()
    assert len(FAMILIES) >= 8
    for name, family in FAMILIES.items():
        folder = BACKBONES_FOLDER / name
        assert (folder / "spec.py").is_file() and (folder / "build.py").is_file(), name
        assert bool(family.specs) != bool(family.clip_networks), name  # one kind or the other
        assert all(spec.family == name for spec in family.specs), name
        # every module of the folder that registers a Keras class, and only those
        registering = sorted(
            path.stem for path in folder.glob("*.py")
            if "@keras.saving.register_keras_serializable(" in path.read_text(encoding="utf-8")
        )  # fmt: skip
        assert sorted(family.keras_layers) == registering, name
        assert (family.shift is not None) == (folder / "shift.py").is_file(), name
        assert (family.published_layout is not None) == (folder / "layout.py").is_file(), name
    assert list(BACKBONES) == [spec.name for family in FAMILIES.values() for spec in family.specs]
    assert {spec.shift_family for spec in BACKBONES.values()} - {None} == set(SHIFT_BLOCKS)
    assert set(PUBLISHED_LAYOUTS) == {"resnet", "mobilenet_v2"}
    assert {"videomae_s", "videomae_b"} <= set(CLIP_NETWORKS)


def modules_named_in(path: Path) -> set[str]:
    """The actrec modules `path` imports, and the dotted or slashed actrec paths its code
    (not its docstrings) spells out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    named: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            named.add(node.module)
            named.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named.add(node.value.replace("/", "."))
    return named


def files_touching_families() -> dict[str, list[str]]:
    """For each family, the files outside actrec/backbones/<family>/ (and its tests,
    tests/backbones/test_<family>.py or test_<family>_<what>.py, and its benchmarks against
    a reference, benchmarks/<family>_<what>.py) that import one of its modules or spell its
    folder's path."""
    names = {
        path: modules_named_in(path)
        for folder in SOURCE_FOLDERS
        for path in sorted((REPO_ROOT / folder).rglob("*.py"))
    }
    touching: dict[str, list[str]] = {}
    for family in family_folders():
        prefix = f"actrec.backbones.{family}"
        touching[family] = [
            path.relative_to(REPO_ROOT).as_posix()
            for path, named in names.items()
            if (BACKBONES_FOLDER / family) not in path.parents
            and not _is_the_familys_test(path, family)
            and any(name == prefix or name.startswith(f"{prefix}.") for name in named)
        ]
    return touching


def _is_the_familys_test(path, family: str) -> bool:
    if path.parent == REPO_ROOT / "benchmarks":
        return path.name.startswith(f"{family}_")
    return path.parent == REPO_ROOT / "tests" / "backbones" and (
        path.name == f"test_{family}.py" or path.name.startswith(f"test_{family}_")
    )


def test_no_file_outside_a_family_folder_imports_or_names_its_modules():
    assert files_touching_families() == {family: [] for family in family_folders()}


def test_a_new_folder_is_a_backbone_choice_without_another_file(tmp_path):
    """A family folder put beside the others (here through the package's search path) is
    registered, a recipe choice and validated, with no other file changed."""
    folder = tmp_path / "tiny_family"
    folder.mkdir()
    (folder / "__init__.py").write_text('"""A test family."""\n')
    (folder / "spec.py").write_text(
        textwrap.dedent(
            """
            from actrec.backbones.spec import BackboneFamily, BackboneSpec

            FAMILY = BackboneFamily(
                name="tiny_family",
                position=99,
                specs=(
                    BackboneSpec(
                        name="tiny_net",
                        family="tiny_family",
                        constructor="tiny_net",
                        default_input_size=32,
                        preprocessing="tf",
                        feature_width=8,
                        weights=None,
                    ),
                ),
            )
            """
        )
    )
    code = textwrap.dedent(
        f"""
        import sys
        import actrec.backbones
        actrec.backbones.__path__.append({str(tmp_path)!r})
        from actrec.backbones.registry import BACKBONES
        from actrec.config.choices import BACKBONE_NAMES
        from actrec.config.files import load_recipe
        from actrec.config.overrides import with_settings
        from actrec.config.validate import validate_recipe
        recipe = with_settings(
            load_recipe("synthetic-rgb"), {{"model.backbone": "tiny_net", "model.weights": "none"}}
        )
        validate_recipe(recipe)
        heavy = [name for name in ("keras", "tensorflow") if name in sys.modules]
        print(list(BACKBONES)[-1], "tiny_net" in BACKBONE_NAMES, heavy)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == "tiny_net True []"


def test_a_new_clip_family_is_a_recipe_architecture_without_another_file(tmp_path):
    """A folder of clip networks (as MoViNet's or VideoMAE's) declares its architecture
    and builder in its spec.py: a recipe names it, validate_recipe asks the size about the
    clip before Keras is imported, and the factory builds it from the family's build.py."""
    folder = tmp_path / "tiny_clips"
    folder.mkdir()
    (folder / "__init__.py").write_text('"""A test family of clip networks."""\n')
    (folder / "spec.py").write_text(
        textwrap.dedent(
            """
            from dataclasses import dataclass

            from actrec.backbones.spec import BackboneFamily

            @dataclass(frozen=True)
            class TinySpec:
                name: str
                default_input_size: int = 32
                default_num_frames: int = 4
                preprocessing: str = "tf"
                feature_width: int = 3

                def input_problem(self, num_frames, height, width):
                    return None if num_frames % 4 == 0 else f"{self.name}: 4k frames"

            FAMILY = BackboneFamily(
                name="tiny_clips", position=99, specs=(),
                clip_networks=(TinySpec("tiny_clip_net"),), clip_architecture="tinyclip",
            )
            """
        )
    )
    (folder / "build.py").write_text(
        textwrap.dedent(
            """
            import keras

            def recipe_network(spec, num_classes, *, num_frames, input_size, preprocessing,
                               name, **options):
                frames = keras.Input((num_frames, input_size, input_size, 3), name="frames")
                x = keras.layers.GlobalAveragePooling3D()(preprocessing(frames))
                return keras.Model(frames, keras.layers.Dense(num_classes, name="classifier")(x))
            """
        )
    )
    code = textwrap.dedent(
        f"""
        import sys
        import actrec.backbones
        actrec.backbones.__path__.append({str(tmp_path)!r})
        from actrec.config.files import load_recipe
        from actrec.config.overrides import with_settings
        from actrec.config.validate import validate_recipe
        from actrec.errors import ConfigError
        settings = {{"model.architecture": "tinyclip", "model.backbone": "tiny_clip_net",
                    "model.weights": "none", "data.num_segments": 8}}
        recipe = with_settings(load_recipe("synthetic-rgb"), settings)
        validate_recipe(recipe)
        try:
            validate_recipe(with_settings(recipe, {{"data.num_segments": 6}}))
        except ConfigError as error:
            print(error)
        heavy = [name for name in ("keras", "tensorflow") if name in sys.modules]
        from actrec.models.factory import build_model
        model = build_model(recipe.model, recipe.data, 5)
        print(heavy, model.input_shape, model.output_shape)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-3:-1] == [
        "data.num_segments=6 is not valid; tiny_clip_net: 4k frames (data.num_segments frames "
        "of data.crop_size pixels)",
        "[] (None, 8, 48, 48, 3) (None, 5)",
    ]
