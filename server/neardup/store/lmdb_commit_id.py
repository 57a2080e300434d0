"""LMDB's id of the last committed transaction, read from the lock file's shared memory: how an LMDB store tells
that nothing changed without a read transaction."""
from __future__ import annotations

import mmap
import struct
import sys
from pathlib import Path
from typing import BinaryIO

import lmdb


class CommitId:
    """LMDB's id of the last committed transaction, read from the lock file's shared memory (lock.mdb, where
    LMDB itself keeps it for readers to pick the newest snapshot): no transaction and no system call.

    Why: a read transaction gives up the GIL twice, and in a busy server each give-up is a thread hand-off; a
    generation read per request cost DedupStream a large share of its messages per second
    (benchmarks/request_cost.py, with the read removed). Every commit of any process changes the id before a new reader can see the
    commit, so an unchanged id is an unchanged store. The layout (magic, format, the id after the reader-table
    mutex) is checked against the environment at open; where it differs (another platform or LMDB build, no lock
    file) attach() answers None and every generation read is a transaction, as before.

    The lock file stays open as long as the environment: closing any descriptor of a file drops every POSIX lock the
    process holds on it, LMDB's own included, and the next process to open the store would then take itself for
    its only user and reset the reader table under this process's live read transactions (a writer could then
    reuse the pages they read)."""

    _MAGIC = 0xBEEFC0DE
    _OFFSET = 48  # 2 × uint32, then pthread_mutex_t (40 bytes on 64-bit Linux glibc)

    def __init__(self, lock_file: BinaryIO, memory: mmap.mmap | None):
        self._lock_file, self._memory = lock_file, memory

    @classmethod
    def attach(cls, env: lmdb.Environment, path: Path) -> "CommitId | None":
        """None where the id cannot be read this way (and then no descriptor of the lock file was opened, or it
        is held until close() all the same)."""
        if sys.byteorder != "little" or struct.calcsize("P") != 8 or not env.flags()["lock"]:
            return None
        try:
            lock_file = open(path / "lock.mdb", "rb")
        except OSError:
            return None
        try:
            commits = cls(lock_file, mmap.mmap(lock_file.fileno(), 4096, access=mmap.ACCESS_READ))
        except (OSError, ValueError):
            return cls(lock_file, None)
        for _ in range(3):  # a commit between the two reads makes them differ: try again
            before = commits.last()
            if struct.unpack_from("<I", commits._memory, 0)[0] == cls._MAGIC \
                    and before == env.info()["last_txnid"] and before == commits.last():
                return commits
        commits._memory.close()
        return cls(lock_file, None)

    def last(self) -> int | None:
        """The id, or None where it cannot be read from the lock file (every generation read is then a transaction)."""
        return struct.unpack_from("<Q", self._memory, self._OFFSET)[0] if self._memory is not None else None

    def close(self) -> None:
        """After the environment's close."""
        if self._memory is not None:
            self._memory.close()
        self._lock_file.close()
