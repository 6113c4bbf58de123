"""Compaction of one sample: keep the head and tail, summarise the middle span."""
