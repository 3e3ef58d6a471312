"""The prepared-data format and its codecs, shared by preparation, input and maintenance.

video.py (decoding with OpenCV, resizing, frame-rate resampling), flow.py and
flow_methods.py (optical flow, its quantisation and colour pictures), frame_encoding.py
(one video's frames -> JPEG records), shards.py (THE record schema, format 2, and its
writer helpers), records.py (the reader by byte offset), manifest.py (manifest.json:
classes, videos, shard paths) and integrity.py (shard checksums, damaged-shard reports).
Import names from these modules; this package re-exports nothing.
"""
