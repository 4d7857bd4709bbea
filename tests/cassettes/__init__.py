"""Tests of mcpsync's cassettes part."""
