"""The published sources actrec converts: registry.py (the contract and the registry every
caller reads) and one module per source (tsm, mmaction2, torchvision, mobilenet_demo), each
defining SOURCE. This package re-exports nothing."""
