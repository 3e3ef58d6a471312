"""A seeded, stratified part of a prepared split held out for validation.

UCF101 and HMDB51 have no validation split, and choosing epochs or weights on the test
split makes the reported test accuracy optimistic. A run can instead hold out a fraction of
its training videos (the same share of every class, chosen by a seed): it validates and
keeps best.weights.h5 on them and never trains on them.

`held_out_videos` chooses the videos (scikit-learn's stratified `train_test_split`, from
the manifest, so every worker chooses the same); `selected_videos` keeps or drops them from
a split's list of videos before the input pipeline orders it (actrec.data.input.order).
"""

from __future__ import annotations

from collections.abc import Collection

from actrec.errors import ConfigError


def held_out_videos(manifest: dict, split: str, fraction: float, seed: int) -> tuple[str, ...]:
    """The ids of the prepared videos of `split` held out: `fraction` of each class, chosen
    by `seed` (sorted). ConfigError when a class has too few videos to give one up."""
    if fraction <= 0:
        return ()
    from sklearn.model_selection import train_test_split

    videos = sorted(
        (video["id"], video["label"])
        for video in manifest["videos"]
        if video["split"] == split and video["status"] == "ok"
    )
    ids, labels = [video_id for video_id, _ in videos], [label for _, label in videos]
    try:
        _, held_out = train_test_split(
            ids, test_size=fraction, stratify=labels, random_state=seed, shuffle=True
        )
    except ValueError as error:  # too few videos in a class, or fewer held out than classes
        raise ConfigError(
            f"data.validation_holdout={fraction}: cannot hold out a stratified {fraction:.0%} of "
            f"the {len(ids)} {split!r} videos in {len(set(labels))} classes ({error}); use a "
            "larger fraction, or data.validation_holdout=0"
        ) from None
    return tuple(sorted(held_out))


def selected_videos(
    videos: list[dict], only_videos: Collection[str] | None, skip_videos: Collection[str]
) -> list[dict]:
    """`videos` (dicts with an "id", in order) restricted to `only_videos` (when given) and
    without `skip_videos`; the order is kept."""
    only = None if only_videos is None else set(only_videos)
    skip = set(skip_videos)
    return [
        video
        for video in videos
        if (only is None or video["id"] in only) and video["id"] not in skip
    ]
