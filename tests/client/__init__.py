"""Tests of the client facade (mcpsync.client, mcpsync._lifecycle): its requests, handlers, threads and batches."""
