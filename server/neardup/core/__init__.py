"""Pure core: sketching, the pair kernel and grouping. No I/O here; everything else builds on it."""
