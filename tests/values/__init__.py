"""Tests of the value modules (types, their notebook renderings, the progress bar)."""
