"""envglot migrate (filled in by the batch-migration work)."""
