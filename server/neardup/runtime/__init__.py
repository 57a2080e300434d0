"""The serving runtime: the domain engine (Deduplicator) and what one serving process keeps of the store (its view,
session cache, change feed and in-memory search index)."""
