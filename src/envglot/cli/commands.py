"""convert, detect, validate, schema, dialects, codes, mappings (filled in by the CLI work)."""
