"""Deterministic training scripts for the built-in models."""
