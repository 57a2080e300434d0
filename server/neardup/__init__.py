"""neardup: low-latency near-duplicate detection for ranked result sets."""
__version__ = "0.1.0"
