"""Tests of mcpsync's transports part."""
