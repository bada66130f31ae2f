"""One test module per dialect, each a :class:`~dialects.golden_suite.GoldenSuite` over its golden cases."""
