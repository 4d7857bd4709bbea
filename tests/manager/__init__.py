"""Tests of mcpsync's manager part."""
