"""Option types of the server's commands: the shared ones (neardup_client.cli_framework), with checks that raise the
core's InvalidArgument (a SketchConfig refusing a value) refused as usage errors (exit code 2) too."""
from __future__ import annotations

from neardup_client import cli_framework

from ..core.errors import InvalidArgument


def checked(convert, check):
    """cli_framework.checked, refusing what the core refuses as well as ValueError."""
    return cli_framework.checked(convert, check, refused=(ValueError, InvalidArgument))
