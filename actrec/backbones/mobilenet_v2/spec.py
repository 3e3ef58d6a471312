"""MobileNetV2 in the registry: keras.applications' (no digest published: keras/src/
applications/mobilenet_v2.py), TSM's layout with TSM's ImageNet file (archs/mobilenet_v2.py,
mit-han-lab/temporal-shift-module), and the test network. Standard library only."""

from __future__ import annotations

from actrec.backbones.mobilenet_v2.layout import TSM_MOBILENET_V2_LAYOUT
from actrec.backbones.mobilenet_v2.shift import MOBILENET_V2_SHIFT
from actrec.backbones.spec import KERAS_APPLICATIONS_URL, BackboneFamily, BackboneSpec, WeightsFile
from actrec.backbones.torch_files import pytorch_weights_file

TSM_MOBILENET_V2_URL = (
    "https://www.dropbox.com/s/47tyzpofuuyyv1b/mobilenetv2_1.0-f2a8633.pth.tar?dl=1"
)
"""archs/mobilenet_v2.py's ImageNet file (mit-han-lab/temporal-shift-module)."""
_KERAS_FILE = "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_224_no_top.h5"

FAMILY = BackboneFamily(
    name="mobilenet_v2",
    position=3,
    specs=(
        BackboneSpec(
            name="mobilenet_v2",
            family="mobilenet_v2",
            constructor="MobileNetV2",
            default_input_size=224,
            preprocessing="tf",
            feature_width=1280,
            # keras.applications.mobilenet_v2 publishes no digest (Keras downloads it
            # unchecked), and none is published elsewhere that actrec can cite: its digest is
            # the SHA-256 the store records when it installs the file (`--sha256 HEX` checks a
            # mirror's).
            weights=WeightsFile(
                _KERAS_FILE,
                f"{KERAS_APPLICATIONS_URL}mobilenet_v2/{_KERAS_FILE}",
                None,
                None,
                sha256_recorded_at_install=True,
            ),
            shift_family=MOBILENET_V2_SHIFT.name,
        ),
        BackboneSpec(
            name="mobilenet_v2_tsm",
            family="mobilenet_v2",
            constructor="mobilenet_v2_tsm",
            default_input_size=224,
            preprocessing="tsm",
            feature_width=1280,
            weights=pytorch_weights_file("mobilenet_v2_tsm", TSM_MOBILENET_V2_URL),
            shift_family=MOBILENET_V2_SHIFT.name,
            layout="pytorch",
        ),
        # A few MobileNetV2 blocks with TSM's layout and keras.applications' layer names: TSM
        # shifts it and the streaming export cuts it as it does MobileNetV2, and a one-step
        # training takes 3.7x less time (benchmarks/tiny_backbone.py). It has no weights.
        BackboneSpec(
            name="test_mobilenet_v2",
            family="mobilenet_v2",
            constructor="test_mobilenet_v2",
            default_input_size=32,
            preprocessing="tsm",
            feature_width=64,
            weights=None,
            shift_family=MOBILENET_V2_SHIFT.name,
            layout="pytorch",
        ),
    ),
    shift=MOBILENET_V2_SHIFT,
    published_layout=TSM_MOBILENET_V2_LAYOUT,
)
