"""VideoMAE (Tong et al., NeurIPS 2022; MCG-NJU/VideoMAE) in Keras 3: a plain ViT over
2 x 16 x 16 tubelets with a fixed sinusoid position table, blocks whose attention has query
and value biases and no key bias, mean pooling with fc_norm, and a linear head.

    spec.py        the sizes (ViT-S / B / L / H), importable without TensorFlow
    layers.py      the Keras layers (keras.ops only: every backend)
    build.py       the classifier and the pooled-feature model
    convert.py     published weights (Hugging Face and the authors' layouts) as Keras arrays

Reading the published files as data is actrec.published.videomae_files's job.
"""
