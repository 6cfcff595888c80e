"""Exact models: one declared optimisation model per module."""
