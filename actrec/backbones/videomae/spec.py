"""The VideoMAE sizes: what a network's shape depends on, importable without TensorFlow.

The sizes are those of the authors' `vit_small/base/large/huge_patch16_224`
(MCG-NJU/VideoMAE, modeling_finetune.py; VideoMAE V2's ViTs are the same module): patch 16,
tubelet 2, MLP ratio 4, LayerNorm epsilon 1e-6, query / value biases, mean pooling.
"""

from __future__ import annotations

from dataclasses import dataclass

from actrec.backbones.spec import BackboneFamily


@dataclass(frozen=True)
class VideoMAESpec:
    """One VideoMAE encoder's shape.

    width: the token size D; depth: the number of blocks; heads: attention heads (D // heads
    per head); mlp_width: the MLP's hidden size (4 D in every published size);
    patch_size / tubelet_size: a token covers tubelet_size frames x patch_size^2 pixels;
    layer_norm_epsilon: 1e-6 in the authors' code (Hugging Face's config says 1e-12 and its
    fc_norm uses 1e-5: a converted config keeps the source's values); mean_pooling: the
    clip feature is fc_norm(mean of the tokens) (every published video classifier), else the
    first token after a final LayerNorm.
    """

    name: str
    width: int
    depth: int
    heads: int
    mlp_width: int
    patch_size: int = 16
    tubelet_size: int = 2
    layer_norm_epsilon: float = 1e-6
    head_norm_epsilon: float = 1e-6
    query_value_bias: bool = True
    mean_pooling: bool = True
    layer_scale: float = 0.0
    default_input_size: int = 224
    default_num_frames: int = 16
    preprocessing: str = "torch"

    @property
    def feature_width(self) -> int:
        """The width D of the pooled clip feature (fc_norm's output)."""
        return self.width

    def __post_init__(self):
        if self.width % self.heads:
            raise ValueError(
                f"{self.name}: width {self.width} is not a multiple of {self.heads} heads"
            )

    def input_problem(self, num_frames: int, height: int, width: int) -> str | None:
        """Why a clip of num_frames x height x width pixels does not cut into whole
        tubelets (a sentence naming the fix), None when it does."""
        for value, step, what in (
            (num_frames, self.tubelet_size, "frames"),
            (height, self.patch_size, "pixels high"),
            (width, self.patch_size, "pixels wide"),
        ):
            if value < step or value % step:
                return f"{self.name} takes clips whose {what} are a multiple of {step}; got {value}"
        return None

    def token_grid(self, num_frames: int, height: int, width: int) -> tuple[int, int, int]:
        """(T', H', W'): the tubelets along time, rows and columns of a clip; ValueError
        (input_problem's sentence) when they do not divide it."""
        problem = self.input_problem(num_frames, height, width)
        if problem:
            raise ValueError(problem)
        return num_frames // self.tubelet_size, height // self.patch_size, width // self.patch_size


VIDEOMAE_SPECS = {
    spec.name: spec
    for spec in (
        VideoMAESpec("videomae_s", width=384, depth=12, heads=6, mlp_width=1536),
        VideoMAESpec("videomae_b", width=768, depth=12, heads=12, mlp_width=3072),
        VideoMAESpec("videomae_l", width=1024, depth=24, heads=16, mlp_width=4096),
        VideoMAESpec("videomae_h", width=1280, depth=32, heads=16, mlp_width=5120),
        VideoMAESpec(
            "test_videomae",
            width=32,
            depth=2,
            heads=2,
            mlp_width=128,
            default_input_size=32,
            default_num_frames=4,
        ),
    )
}
"""The encoder sizes by name: the published ViT-S, B, L, H with 16 x 16 patches, and
`test_videomae` (width 32, 2 blocks of 2 heads: a 32 px clip is 4 tokens per tubelet
step), which has no published weights and exists so that tests train the whole pipeline in
seconds (as timm's test_* networks)."""


FAMILY = BackboneFamily(
    name="videomae",
    position=8,
    specs=(),
    clip_networks=tuple(VIDEOMAE_SPECS.values()),
    clip_architecture="videomae",
    clip_builder="recipe_network",
    clip_converter="convert",
    keras_layers=("layers",),
)
"""The registry's entry: clip networks only (a video in, logits out; built by
actrec.backbones.videomae.build.recipe_network): a recipe names model.architecture=videomae
and one of the sizes as model.backbone."""
