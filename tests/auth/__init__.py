"""Tests of mcpsync's auth part."""
