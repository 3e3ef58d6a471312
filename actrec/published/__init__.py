"""Published video models: their files, layouts and class lists."""
