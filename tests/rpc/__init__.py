"""Tests of mcpsync's rpc part."""
