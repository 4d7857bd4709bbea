"""The Manager's parts: one managed server's lifecycle, the scheduler, the tools cache, names."""
