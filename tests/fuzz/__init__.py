"""The fuzz suite: hostile JSON, a structure-aware mutator of the bundled envelopes, and the oracle.

- :mod:`fuzz.tree`: a JSON tree that can say what ``json`` cannot (duplicate keys, raw
  invalid UTF-8 bytes, lone surrogates, number tokens no float holds) and its serializer.
- :mod:`fuzz.corpus`: the seed envelopes (``examples/**/*.json`` and the golden inputs).
- :mod:`fuzz.mutator`: a seeded, reproducible structure-aware mutator of those seeds.
- :mod:`fuzz.strategies`: hypothesis strategies over both.
- :mod:`fuzz.oracle`: every public entry point run on one input, and the properties each
  outcome must satisfy; failures are grouped so a campaign reports each bug once.

``scripts/fuzz.py`` runs the long campaign with the same pieces; ``docs/fuzzing.md`` says how.
"""
