"""The serving runtime: the Deduplicator (the service's domain operations) and what one serving process keeps of
the store (its view, session cache, change feed and in-memory search index)."""
