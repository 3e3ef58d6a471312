"""Multi-view evaluation (docs/architecture.md §6): protocols, per-video scores, fusion,
metrics, reports."""
