"""Models: keras.applications backbones, TSN / TSM segment models, two-stream fusion."""
