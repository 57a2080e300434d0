"""`neardup migrate SRC DST`: copies a store to another location, of any backend (LMDB directory ↔ Redis URL), and
checks the copy by its count and digest (SketchStore.digest) before it says it is done.
What is copied, what is made again and what the digest compares: docs/commands/neardup-migrate.md.
"""
from __future__ import annotations

import dataclasses
import time
from itertools import islice

from ..core.errors import ConfigMismatch, InvalidArgument, JobFailed
from ..store import SketchStore, create_store, open_store, store_exists
from .progress import progress

DEFAULT_BATCH_SIZE = 1000


@dataclasses.dataclass
class MigrateSummary:
    source: str
    target: str
    articles: int = 0
    removed: int = 0          # the target's articles the source does not hold (--replace)
    clustered: int = 0
    digest: str = ""
    elapsed: float = 0.0

    def format(self) -> str:
        removed = f", removed {self.removed:,} the source does not hold" if self.removed else ""
        clusters = f", {self.clustered:,} cluster ids" if self.clustered else ""
        return (f"migrated {self.articles:,} articles{clusters} from {self.source} to {self.target}{removed} in "
                f"{self.elapsed:.2f} s; counts and digest equal ({self.digest[:16]})")


def migrate(source: str, target: str, *, replace: bool = False, batch_size: int = DEFAULT_BATCH_SIZE) -> MigrateSummary:
    """Copies the store at source into target (created when there is none), in atomic batches. An existing target
    must have the source's configuration and stop-list, and hold nothing unless `replace` (then its articles the
    source does not hold are deleted). JobFailed when the copy's count or digest differs from the source's."""
    if str(source) == str(target):
        raise InvalidArgument("SRC and DST are the same store")
    started = time.monotonic()
    summary = MigrateSummary(str(source), str(target))
    with open_store(source, readonly=True) as src:
        with _target(src, target, replace) as dst:
            with progress("migrating", total=src.count()) as bar:
                ids = set()
                items = src.items()
                while batch := list(islice(items, batch_size)):
                    dst.put_many(batch)
                    batch_ids = [doc_id for doc_id, _ in batch]
                    ids.update(batch_ids)
                    summary.clustered += _copy_clusters(src, dst, batch_ids)
                    bar.update(len(batch))
                    summary.articles += len(batch)
            if replace:
                summary.removed = _remove_others(dst, ids, batch_size)
            if src.clustering():
                dst.set_clusters([], src.clustering())
            if src.model() is not None:  # an items store's pair model, tied to the configuration both share
                dst.set_model(src.model())
            if src.threshold() is not None:
                dst.set_threshold(src.threshold())
            dst.add_languages(src.languages())
            expected, copied = src.count(), dst.count()
            if expected != copied or summary.articles != expected:
                raise JobFailed(f"the copy holds {copied:,} articles, the source {expected:,} (read "
                                    f"{summary.articles:,}): was the source written during the copy? Run again "
                                    "while nothing writes to it")
            summary.digest = src.digest()
            if dst.digest() != summary.digest:
                raise JobFailed(f"the copy's digest differs from the source's ({summary.digest[:16]}): was the "
                                    "source written during the copy? Run again while nothing writes to it")
    summary.elapsed = time.monotonic() - started
    return summary


def _target(src: SketchStore, target: str, replace: bool) -> SketchStore:
    """The store to copy into: a new one like the source, or an existing one of its configuration."""
    if not store_exists(target):
        return create_store(target, src.config, src.stoplist, indexed=src.indexed)
    dst = open_store(target)
    try:
        dst.config.require_equal(src.config, f"source {src.location}'s")
        if dst.stoplist != src.stoplist or dst.indexed != src.indexed:
            raise ConfigMismatch(f"store {target} has another stop-list or postings setting than {src.location}")
        if dst.count() and not replace:
            raise JobFailed(f"store {target} already holds {dst.count():,} articles: choose an empty target, "
                                "or --replace to make it a copy of the source")
    except BaseException:
        dst.close()
        raise
    return dst


def _copy_clusters(src: SketchStore, dst: SketchStore, ids: list[str]) -> int:
    if not (src.indexed and src.clustering()):
        return 0
    assigned = [(doc_id, cluster) for doc_id, cluster in zip(ids, src.clusters(ids)) if cluster >= 0]
    if assigned:
        dst.set_clusters(assigned)
    return len(assigned)


def _remove_others(dst: SketchStore, keep: set[str], batch_size: int) -> int:
    others = [doc_id for doc_id, _ in dst.items() if doc_id not in keep]
    for start in range(0, len(others), batch_size):
        dst.delete_many(others[start:start + batch_size])
    return len(others)


