"""Tests of mcpsync's llm part."""
