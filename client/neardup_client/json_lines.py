"""One JSON Lines line read, and what is wrong with it said the same way by every reader: `neardup index`,
`neardup dedup --jsonl` and the web page (which asks its server when the browser's parser refuses a line).

json's own messages name the parser's state ("Invalid control character at", "Expecting value"): a user who
left a quote open or pasted a tab into a string reads here what to fix, with the column to look at.
"""
from __future__ import annotations

import json

#: json's message for each mistake, and what the user reads instead.
_MISTAKES = {
    "Unterminated string starting at": "a string is not closed (its closing quote is missing)",
    "Invalid control character at": "a string holds a raw tab or line break (write it as \\t or \\n)",
    "Invalid \\escape": "a string holds an unknown escape (a lone backslash: write it as \\\\)",
    "Expecting value": "a value is missing or is not JSON (strings need double quotes)",
    "Expecting ',' delimiter": "a comma is missing between two values",
    "Expecting ':' delimiter": "a colon is missing after a key",
    "Expecting property name enclosed in double quotes": "a key is not in double quotes (or a comma is left over)",
    "Extra data": "the line holds more than one JSON value",
}


def parse_line(line: bytes | str) -> object:
    """The JSON value of one line (its line break left out); ValueError says what is wrong, in the words of
    _MISTAKES, with the column (counted in characters from 1)."""
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
    except UnicodeDecodeError as error:
        raise ValueError(f"invalid UTF-8 at byte {error.start}") from None
    try:
        return json.loads(text.rstrip("\r\n"))
    except json.JSONDecodeError as error:
        raise ValueError(f"bad JSON at column {error.colno}: {_MISTAKES.get(error.msg, error.msg)}") from None
    except ValueError as error:  # a number too long to convert
        raise ValueError(f"bad JSON: {error}") from None
