"""Parquet corpora for `neardup index`: a file (local path, or a URL fsspec opens) whose name ends in .parquet, with
a string column `id`, a string column `text` and optionally a string column `lang`; other columns are not read.
A row is a record as a JSON Lines line is one (records.check_record); rows are numbered from 1 in file order, and
a row group is the unit the engines split the work by (a Dask task each). pyarrow is imported only here, when a
Parquet corpus is read (the `parquet` extra)."""
from __future__ import annotations

from typing import BinaryIO

from ..core.errors import InvalidArgument, install_line

SUFFIX = ".parquet"
COLUMNS = ("id", "text", "lang")
_REQUIRED = ("id", "text")


def is_parquet(corpus: str) -> bool:
    return corpus.lower().endswith(SUFFIX)


def _open(corpus: str) -> BinaryIO:
    if "://" in corpus:
        import fsspec
        return fsspec.open(corpus, "rb").open()
    return open(corpus, "rb")


def _parquet_file(stream: BinaryIO, corpus: str):
    try:
        import pyarrow.parquet
    except ImportError:
        raise InvalidArgument(f"a Parquet corpus needs pyarrow: {install_line('parquet')}") from None
    try:
        return pyarrow.parquet.ParquetFile(stream)
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        raise InvalidArgument(f"cannot read corpus {corpus} as Parquet: {error}") from None


def row_groups(corpus: str) -> list[int]:
    """The number of rows of each row group of the Parquet corpus; InvalidArgument when it cannot be read or lacks
    the id or text column."""
    try:
        stream = _open(corpus)
    except OSError as error:
        raise InvalidArgument(f"cannot read corpus {corpus}: {error.strerror or error}") from None
    with stream:
        metadata = _parquet_file(stream, corpus).metadata
        names = set(metadata.schema.names)
        if not set(_REQUIRED) <= names:
            raise InvalidArgument(f"Parquet corpus {corpus} has no column {', '.join(sorted(set(_REQUIRED) - names))}: "
                                  f"give string columns id and text (and optionally lang)")
        return [metadata.row_group(group).num_rows for group in range(metadata.num_row_groups)]


def rows(corpus: str, group: int) -> list[dict]:
    """The records (id, text and lang where the file has that column) of one row group, in order."""
    with _open(corpus) as stream:
        parquet = _parquet_file(stream, corpus)
        columns = [name for name in COLUMNS if name in parquet.metadata.schema.names]
        return parquet.read_row_group(group, columns=columns).to_pylist()
