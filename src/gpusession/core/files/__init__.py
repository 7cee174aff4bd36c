"""Storage primitives: errors, clocks, units, digests, the strict text, TOML and link-safe file readers and writers, schema kinds and the free-text checks.

The lowest floor of core: it imports nothing else of core, so every room above can use it.
"""
