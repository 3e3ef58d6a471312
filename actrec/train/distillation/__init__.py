"""Distillation from a flow teacher (MARS): the loss terms (loss.py) and the teacher,
found and checked before anything is written (teacher.py)."""
