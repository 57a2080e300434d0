"""The corpus indexed into the store (`neardup ui --corpus JSONL`), for what the store does not keep: the page shows
a title beside each id, the texts of a pair of stored ids with the passages they share, and an items pair's values.

The file is scanned once when the page starts: where each id's record starts (the last record of an id, as
`neardup index` keeps the last), nothing else, so a large corpus costs one offset per id; a record is read again
from the file when it is asked for. Lines that are not records with a string id are passed over.
"""
from __future__ import annotations

import json
import threading

from ..core.errors import InvalidArgument

#: The most characters of a title (a text's first line, or an item's first text field).
TITLE_CHARS = 120
#: The field an item's title is read from first; else its first field holding a string.
TITLE_FIELDS = ("title", "name")


class Corpus:
    """A JSON Lines corpus of {"id", "text"} or {"id", "fields"} records, read by id; thread-safe."""

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        self._offsets: dict[str, int] = {}
        try:
            self._file = open(path, "rb")
        except OSError as error:
            raise InvalidArgument(f"cannot read --corpus {path}: {error.strerror}") from None
        offset = 0
        for line in self._file:
            doc_id = _record_id(line)
            if doc_id is not None:
                self._offsets[doc_id] = offset
            offset += len(line)

    def __len__(self) -> int:
        return len(self._offsets)

    def record(self, doc_id: str) -> dict | None:
        """The record of an id ({"id", "text" or "fields", ...}), or None when the corpus has none."""
        offset = self._offsets.get(doc_id)
        if offset is None:
            return None
        with self._lock:
            self._file.seek(offset)
            line = self._file.readline()
        try:
            record = json.loads(line)
        except ValueError:  # the file changed since the page started
            return None
        return record if isinstance(record, dict) and record.get("id") == doc_id else None

    def text(self, doc_id: str) -> dict | None:
        """{"text", "lang"?} of a text record, or None."""
        record = self.record(doc_id)
        if record is None or not isinstance(record.get("text"), str):
            return None
        return {"text": record["text"], **({"lang": record["lang"]} if isinstance(record.get("lang"), str) else {})}

    def fields(self, doc_id: str) -> dict | None:
        """The fields of an items record, or None."""
        record = self.record(doc_id)
        return record["fields"] if record is not None and isinstance(record.get("fields"), dict) else None

    def title(self, doc_id: str) -> str | None:
        """A line to show beside the id: a text's first non-blank line, an item's title (TITLE_FIELDS, else its first
        field holding a string), white space collapsed, cut at TITLE_CHARS with an ellipsis; None when the corpus
        has no record of the id, or nothing to show of it."""
        record = self.record(doc_id)
        if record is None:
            return None
        shown = None
        if isinstance(record.get("text"), str):
            shown = next((line for line in record["text"].splitlines() if line.strip()), None)
        elif isinstance(record.get("fields"), dict):
            values = record["fields"]
            shown = next((values[name] for name in TITLE_FIELDS if isinstance(values.get(name), str)), None) or \
                next((value for value in values.values() if isinstance(value, str) and value.strip()), None)
        if shown is None:
            return None
        shown = " ".join(shown.split())
        return shown if len(shown) <= TITLE_CHARS else shown[:TITLE_CHARS - 1] + "…"

    def close(self) -> None:
        self._file.close()


def _record_id(line: bytes) -> str | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if isinstance(record, dict) and isinstance(record.get("id"), str):
        return record["id"]
    return None


def field_rows(similarities: dict, fields_a: dict | None, fields_b: dict | None, weights: dict | None = None
               ) -> list[dict]:
    """An items pair as the page shows it, field by field (the label view and the pair view): each field of the
    schema in order with its similarity (None: not compared, a record lacks it) and, when given, its weight; then
    the records' other fields (not compared). Values are the records' (None when unknown: no --corpus)."""
    fields_a, fields_b = fields_a or {}, fields_b or {}
    names = list(similarities)
    others = sorted((fields_a.keys() | fields_b.keys()) - set(names))
    return [{"name": name, "compared": name in similarities, "similarity": similarities.get(name),
             "weight": (weights or {}).get(name), "a": fields_a.get(name), "b": fields_b.get(name)}
            for name in names + others]
