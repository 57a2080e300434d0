"""A document a request sends (RequestDocument) and how a served store sketches it: inline_sketch (a text, an items
store's fields, or a sketch the client made, each within the limits), and the stemmer language of a query text."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..core import language
from ..core.encoding import check_sketch
from ..core.errors import InvalidArgument, TooLarge
from .served_store import ServedStore


@dataclass(frozen=True)
class RequestDocument:
    """One result (or article to store): an id with its text, its fields (an items store), its precomputed sketch,
    or none of them (read the store)."""

    id: str
    text: str | None = None
    sketch: bytes | None = None
    lang: str | None = None
    fields: Mapping | None = None

    @property
    def inline(self) -> bool:
        """Whether it carries its content (else it is read from the store)."""
        return self.text is not None or self.sketch is not None or self.fields is not None


def inline_sketch(served: ServedStore, doc: RequestDocument, field: str) -> bytes:
    """The sketch of a document sent inline; `field` is its place in the request ("documents[3]")."""
    limit = served.limits.max_text_bytes
    if doc.sketch is not None:
        try:
            return check_sketch(doc.sketch, served.config)
        except InvalidArgument as error:
            raise InvalidArgument(str(error), f"{field}.sketch") from None
    if doc.fields is not None:
        if served.items is None:
            raise InvalidArgument(f"document {doc.id!r} has fields, but this store holds {served.config.kind} "
                                  "sketches of texts: send text, or use a store made with `neardup index "
                                  "--fields SCHEMA`", f"{field}.fields")
        size = sum(len(value.encode("utf-8", "surrogatepass")) for value in doc.fields.values()
                   if isinstance(value, str))
        if size > limit:
            raise TooLarge(f"fields of {doc.id!r} are {size} bytes, over the limit of {limit}", f"{field}.fields",
                           limit)
        try:
            return served.item_sketcher.sketch(doc.fields, doc.lang or None)
        except InvalidArgument as error:
            raise InvalidArgument(f"document {doc.id!r}: {error}", f"{field}.fields") from None
    size = len(doc.text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise TooLarge(f"text of {doc.id!r} is {size} bytes, over the limit of {limit}", f"{field}.text", limit)
    if served.items is not None:
        raise InvalidArgument(f"document {doc.id!r} has a text, but this store holds items with fields "
                              f"({', '.join(spec.name for spec in served.config.fields)}): send its fields",
                              f"{field}.text")
    try:
        return served.sketcher.sketch(doc.text, doc.lang or None)
    except InvalidArgument as error:  # its lang
        raise InvalidArgument(str(error), f"{field}.lang") from None


def query_language(served: ServedStore, doc: RequestDocument) -> language.QueryLanguage:
    """The stemmer language a query document's text is sketched in, and how it was chosen: the one rule
    (core.language.query_language) over the store's language and the languages its texts carried, read now
    (another worker's Upsert may have added one); an unknown lang of the document is the INVALID_ARGUMENT of
    its field."""
    try:
        held = () if doc.lang or served.config.lang == language.AUTO else served.store.languages()
        return language.query_language(doc.text, doc.lang, served.config.lang, held)
    except InvalidArgument as error:
        raise InvalidArgument(str(error), "document.lang") from None


def identifies_queries(served: ServedStore) -> bool:
    """Whether a query text without its lang is identified (query_language): an auto store, or a store whose
    texts carried another language than its own. `neardup serve` then loads the identifier before it forks."""
    return served.config.lang == language.AUTO or bool(served.store.languages() - {served.config.lang})
