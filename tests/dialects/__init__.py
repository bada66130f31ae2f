"""One folder per dialect, named after it: its test module, cases, canonical forms, pinned writes.

Each test module runs a :class:`~dialects.golden_suite.GoldenSuite` over its cases.
"""
