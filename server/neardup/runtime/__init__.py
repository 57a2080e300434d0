"""The serving runtime: the service's domain operations on a served store (served_store.py: Dedup in
deduplicator.py, FindSimilar in similar_search.py, Explain in explainer.py, the writes in writer.py) and what one
serving process keeps of the store (its view, session cache, change feed and in-memory search index)."""
