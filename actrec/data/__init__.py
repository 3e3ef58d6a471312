"""Datasets, by subsystem (each subpackage's docstring lists its modules):

sources/      one module per dataset: (video path, label, split) from the official lists
format/       the prepared-data format and codecs: decoding, optical flow, the record
              schema and reader, manifest, checksums (used by all the others)
prepare/      making a prepared folder (`actrec prepare`)
input/        reading prepared data for training and evaluation (tf.data)
maintenance/  tools over an existing prepared folder: inspect, migrate format 1 -> 2
synthetic/    the built-in synthetic motion dataset

Import names from the module that defines them; no package re-exports a module's names.
"""
