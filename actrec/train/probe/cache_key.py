"""What a cached feature set depends on (CacheKey), each part as a digest or a plain record:

    backbone   sha256 of the recipe's model section (but its weights source) and of every
               weight (shape, dtype, bytes) in order: other weights, another preprocessing
               or another size compute other features
    view       the clip each row is: modality, frames, sampling, stride, crop, evaluation
               scale, clips x crops per video (actrec.data.input.views.ViewSpec)
    data       per split, sha256 of the preparation's plan digest (dataset, classes,
               settings, video list) and of the split's shard files' SHA-256, as the
               manifest records them (actrec.data.format.integrity); a shard it does not
               record is read whole

The cache folder is named by the backbone and the view (`folder_name`); a split's file
records its data digest, so a re-prepared split is recomputed in place.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from actrec.data.format.integrity import SHARD_FILES_KEY, file_sha256
from actrec.data.format.manifest import read_manifest
from actrec.data.input.views import ViewSpec
from actrec.errors import DatasetError

FOLDER_DIGEST_CHARACTERS = 16


def _sha256_of_json(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def backbone_digest(network, settings: dict) -> str:
    """sha256 of what a feature network computes: `settings` (the recipe's model section
    but its weights source: architecture, backbone, size, preprocessing, ...) and every
    weight's shape, dtype and bytes, in the network's order. Layer and variable names are
    left out: Keras numbers them per process."""
    import numpy as np

    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    for variable in network.weights:
        array = np.ascontiguousarray(np.asarray(variable))
        digest.update(f"{array.shape}:{array.dtype}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def view_record(spec: ViewSpec) -> dict:
    """The view a cached row is, as JSON: what the evaluation clip's frames and crop are."""
    clip = spec.clip
    return {
        "modality": clip.modality,
        "num_segments": clip.num_segments,
        "new_length": clip.new_length,
        "sampling": clip.sampling,
        "frame_interval": clip.frame_interval,
        "crop_size": clip.crop_size,
        "scale_size": clip.eval_scale_size,
        "num_clips": spec.num_clips,
        "num_crops": spec.num_crops,
    }


def split_digest(prepared_dir: Path | str, split: str) -> str:
    """sha256 of a prepared split's content: the plan digest and its shards' SHA-256."""
    prepared_dir = Path(prepared_dir)
    manifest = read_manifest(prepared_dir)
    shards = manifest.get("splits", {}).get(split, {}).get("shards")
    if shards is None:
        raise DatasetError(f"{prepared_dir} has no split {split!r} in its manifest.json")
    recorded = manifest.get(SHARD_FILES_KEY) or {}
    return _sha256_of_json(
        {
            "plan_digest": manifest.get("plan_digest"),
            "split": split,
            "shards": {
                name: (recorded.get(name) or {}).get("sha256") or file_sha256(prepared_dir / name)
                for name in shards
            },
        }
    )


@dataclass(frozen=True)
class CacheKey:
    """One split's cached features: what computed them (backbone digest), which view of
    each video (view_record) and the split's content (split_digest)."""

    backbone: str
    view: dict
    split: str
    data: str

    @property
    def folder_name(self) -> str:
        """The cache folder of the backbone and view (the splits' files lie in it)."""
        return _sha256_of_json({"backbone": self.backbone, "view": self.view})[
            :FOLDER_DIGEST_CHARACTERS
        ]

    def to_json(self) -> dict:
        return {
            "backbone": self.backbone,
            "view": self.view,
            "split": self.split,
            "data": self.data,
        }

    def differences(self, recorded: dict) -> list[str]:
        """How a cache file's recorded key differs from this one ("from other prepared
        data", "with another backbone", "for another view"), empty when they agree."""
        named = {
            "data": "from other prepared data",
            "backbone": "with another backbone (other weights or network)",
            "view": "for another view",
        }
        current = self.to_json()
        return [what for key, what in named.items() if recorded.get(key) != current[key]]
