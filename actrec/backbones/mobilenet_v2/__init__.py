"""MobileNetV2: keras.applications', TSM's layout (`mobilenet_v2_tsm`, also its online
demo's) and the test network `test_mobilenet_v2`: spec.py (its registry entries), build.py
(both layouts), shift.py (where TSM shifts its blocks) and layout.py (TSM's module names ->
Keras layers). This package re-exports nothing."""
