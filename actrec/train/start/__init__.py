"""Starting points: where a fine-tuning run starts (`--init-from`, starting_point.py) and
the settings it takes from its source (source_settings.py)."""
