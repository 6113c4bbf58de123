"""Recall-first tuning of a prompt's fields."""
