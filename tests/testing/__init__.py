"""Tests of mcpsync's testing part."""
