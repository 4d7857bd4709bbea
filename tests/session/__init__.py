"""Tests of mcpsync's session part."""
