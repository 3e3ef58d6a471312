"""Datasets: sources, decoding, optical flow, shards and preparation."""
