"""Tests of mcpsync's cli part."""
