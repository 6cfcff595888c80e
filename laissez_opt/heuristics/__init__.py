"""Heuristics and baselines: one algorithm per module."""
