"""MoViNet (Kondratyuk et al., CVPR 2021; TensorFlow Model Garden
official/projects/movinet, Apache-2.0) in Keras 3: mobile video networks of inverted
bottlenecks with depthwise 3D or (2+1)D convolutions and squeeze-excitation, base
(non-causal) or causal, whose causal model runs a video frame by frame with its stream
buffers as explicit states.

    spec.py          the sizes A0-A5 and the base / stream settings, without TensorFlow
    layers.py        convolutions, causal padding, stream buffers (keras.ops only)
    blocks.py        squeeze-excitation with cumulative pooling, the bottleneck, the head
    build.py         the clip classifier and its endpoints
    stream.py        the causal classifier as a stateless step: frames + states in,
                     logits + new states out
    checkpoint_files.py  Model Garden checkpoints and TF Hub SavedModels' variables read as
                     data (tf.train.load_checkpoint and the object graph; nothing executed)
    convert.py       their tensors mapped by name onto the Keras network, shapes checked
"""
