"""The `neardup` command line: dispatch (main.py), shared option types (options.py) and one module per command
that reads its options and turns a job's outcome into output and an exit code."""
