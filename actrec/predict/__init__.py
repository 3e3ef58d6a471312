"""Running an export (written by actrec.export): predictions on video files, a long video's
timeline, a streaming export frame by frame on a file, a camera or a stream URL, and the
annotated video of any of them.

    video_files.py        ExportedModel, predict_videos: video files -> top-k classes
    timeline.py           a long video's top-k over sliding windows (`predict --timeline`)
    timeline_strip.py     the timeline's predicted class over time as a PNG strip
    stream.py             `predict --stream`: a streaming export, frame by frame
    annotation.py         the top-k drawn on a frame
    annotated_video.py    the annotated video written (`predict --annotate OUT`)
    annotation_output.py  where `--annotate OUT` writes, checked before TensorFlow or OpenCV

Import names from these modules; this package re-exports nothing.
"""
