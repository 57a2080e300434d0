"""`neardup ui`: a web page for people, beside the gRPC service. An edge like service/ and cli/: plain HTML, one
JavaScript file and CSS (static/, package data: no build step) and a small JSON API on the same port that calls a
running `neardup serve` through the Python client (app.py)."""
