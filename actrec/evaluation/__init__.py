"""Multi-view evaluation (DESIGN.md §6): protocols, per-video scores, fusion, metrics, reports."""
