"""neardup's benchmarks: each measurement a script run from the repository root as `python -m benchmarks.NAME`,
their shared code in benchmarks.lib and their word lists and tables in benchmarks/data (see benchmarks/README.md)."""
