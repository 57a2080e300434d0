"""The gRPC edge: converters between messages and domain values, the servicer, the server bootstrap."""
