"""Offline jobs on a store: index a corpus (locally or on a Dask cluster), write its near-duplicate pairs, cluster
it, train an items model, migrate it, set its default threshold. Each returns a summary; the command line in
neardup.cli maps it to output and an exit code."""
