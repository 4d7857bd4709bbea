"""Tests of mcpsync's config part."""
