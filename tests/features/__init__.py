"""Tests of mcpsync's features part."""
