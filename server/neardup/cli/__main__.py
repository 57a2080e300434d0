"""`python -m neardup.cli`: the `neardup` command."""
import sys

from .main import main

sys.exit(main())
