"""keras.applications' InceptionV3 in the registry (keras/src/applications/inception_v3.py's
no-top file and MD5). Standard library only."""

from __future__ import annotations

from actrec.backbones.spec import KERAS_APPLICATIONS_URL, BackboneFamily, BackboneSpec, WeightsFile

_FILE = "inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5"

FAMILY = BackboneFamily(
    name="inception_v3",
    position=2,
    specs=(
        BackboneSpec(
            name="inception_v3",
            family="inception_v3",
            constructor="InceptionV3",
            default_input_size=299,
            preprocessing="tf",
            feature_width=2048,
            weights=WeightsFile(
                _FILE,
                f"{KERAS_APPLICATIONS_URL}inception_v3/{_FILE}",
                "md5",
                "bcbd6486424b2319ff4ef7d526e38f63",
            ),
        ),
    ),
)
