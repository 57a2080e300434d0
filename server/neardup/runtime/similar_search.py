"""FindSimilar and the corpus searches built on it (SimilarSearch): the stored articles similar to one article or
document, every near-duplicate pair of the store, and the samples a threshold is learned from and pairs to label
are proposed from. Candidates come from the postings (core/candidates.py) or the reader's in-memory search index,
verified by the kernel of the store's sketch kind."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator, NamedTuple, Sequence

from ..core import calibration, candidates, kernel, language
from ..core.errors import InvalidArgument, NotFound, TooLarge
from ..core.vocabulary import SIMHASH
from ..store.base import MemoizedArticles, Snapshot, encode_id, read_consistently
from .documents import RequestDocument, inline_sketch, query_language
from .params import SimilarParams
from .served_store import Reader, ServedStore


class Match(NamedTuple):
    id: str
    similarity: float
    cluster: int = -1  # its cluster id once the store is clustered (`neardup cluster`)


class SimilarOutcome(NamedTuple):
    matches: list[Match]  # best first: similarity descending, then id
    # False when more candidates passed than Limits.max_candidates
    exact: bool
    # a query text's stemmer language and how it was chosen (core.language.query_language); "" for an id or a sketch
    lang: str = ""
    lang_source: str = ""


class SimilarSearch:
    """The corpus searches of one served store."""

    def __init__(self, served: ServedStore):
        self.served = served
        self.store = served.store
        self.config = served.config
        self.limits = served.limits
        self.reader = served.reader
        self.items = served.items

    def find_similar(self, query: str | RequestDocument, params: SimilarParams, reader: Reader | None = None
                     ) -> SimilarOutcome:
        """Stored articles similar to a stored one (by id) or to a document (text or sketch), best first, never
        the query itself. From the reader's search index when it has one (in memory, as fresh as the reader),
        else from a snapshot of the store; clusters from the reader (default: the store)."""
        reader = reader or self.reader
        index = reader.search_index
        if params.top_k > self.limits.max_result_set:
            raise TooLarge(f"top_k {params.top_k} exceeds the limit of {self.limits.max_result_set}", "top_k",
                           self.limits.max_result_set)
        self.served.check_metric(params.metric)
        chosen = None
        if isinstance(query, RequestDocument):
            if not query.inline:
                raise InvalidArgument("a document to search with needs text or a sketch (fields, on an items "
                                      "store), or search by its id", "document")
            if query.text is not None and query.sketch is None and self.items is None:
                chosen = query_language(self.served, query)
                query = replace(query, lang=chosen.lang)
            sketch = inline_sketch(self.served, query, "document")
        if index is not None:
            if isinstance(query, RequestDocument):
                searched = index.search(query.id or None, sketch, params.threshold, params.metric,
                                        self.limits.max_candidates)
            else:
                encode_id(query, field="id")
                searched = index.search(query, None, params.threshold, params.metric, self.limits.max_candidates)
            if searched is not None:
                stored, found = searched
                if not stored and not isinstance(query, RequestDocument):
                    raise NotFound(f"no article {query!r} is stored")
                return self._with_language(self._answer(found.matches, found.exact, params, reader), chosen)

        def search(snapshot: Snapshot) -> SimilarOutcome:
            if isinstance(query, RequestDocument):
                stored = snapshot.sketch(query.id) if query.id else None
                return self._search(snapshot, sketch, params, exclude=stored[0] if stored else -1)
            encode_id(query, field="id")
            stored = snapshot.sketch(query)
            if stored is None:
                raise NotFound(f"no article {query!r} is stored")
            return self._search(snapshot, stored[1], params, exclude=stored[0])

        return self._with_language(read_consistently(self.store, search), chosen)

    @staticmethod
    def _with_language(outcome: SimilarOutcome, chosen: "language.QueryLanguage | None") -> SimilarOutcome:
        return outcome if chosen is None else outcome._replace(lang=chosen.lang, lang_source=chosen.source)

    def similar_pairs(self, threshold: float, metric: str, start: int = 0, stop: int | None = None
                      ) -> Iterator[tuple[str, SimilarOutcome]]:
        """Each stored article numbered start ≤ docno < stop with every article of a larger number it reaches the
        threshold with: every near-duplicate pair of the store exactly once over all ranges. One snapshot, never read
        again (the pairs already handed out cannot be taken back), so on a store without older states (Redis) a
        write during the run ends it with StoreChanged."""
        params = SimilarParams(threshold=threshold, metric=metric)
        self.served.check_metric(metric)
        with self.store.snapshot() as snapshot:
            articles = MemoizedArticles(snapshot)
            for docno, doc_id, sketch in snapshot.scan(start, stop):
                yield doc_id, self._search(snapshot, sketch, params, above=docno, read_articles=articles)

    def sample_similarities(self, count: int, metric: str | None = None) -> tuple[list[float], list[float]]:
        """What calibration.learn_threshold learns from, under `metric` (default: the store's): the similarity of
        each of `count` stored articles, drawn by their ids (calibration.sampled_keys), to its best match in the
        store (0 when none reaches calibration.SEARCH_FLOOR), and that of every candidate of theirs that reaches it.
        A bounded sample: `count` searches, whatever the store's size."""
        params = SimilarParams(top_k=calibration.CANDIDATES, threshold=calibration.SEARCH_FLOOR,
                               metric=metric or self.served.defaults.metric)
        sampled = [matches for _, matches in self.sampled_matches(count, params, calibration.CANDIDATES)]
        return ([matches[0].similarity if matches else 0.0 for matches in sampled],
                [match.similarity for matches in sampled for match in matches])

    def sampled_matches(self, count: int, params: SimilarParams, max_candidates: int) -> list[tuple[str, list[Match]]]:
        """Each of `count` stored articles, drawn by their ids (calibration.sampled_keys: the same articles give
        the same sample however they are stored), in id order, with its best matches in the store under params
        (the article itself left out), verifying at most `max_candidates` candidates each: the sample a threshold
        is learned from (sample_similarities) and `neardup label` proposes text pairs from. One snapshot; `count`
        searches and one read of every id, whatever the store's size."""
        self.served.check_metric(params.metric)

        def sample(snapshot: Snapshot) -> list[tuple[str, list[Match]]]:
            chosen = [key.decode() for key in calibration.sampled_keys(snapshot.id_keys(), count)]
            return [(doc_id, self._search(snapshot, sketch, params, exclude=docno, max_candidates=max_candidates,
                                          whole_ties=True).matches)
                    for doc_id, (docno, sketch) in zip(chosen, snapshot.sketches(chosen))]

        return read_consistently(self.store, sample)

    def docno_limit(self) -> int:
        """One more than the largest article number: similar_pairs ranges split [0, docno_limit())."""
        return read_consistently(self.store, lambda snapshot: snapshot.docno_limit())

    def _search(self, snapshot: Snapshot, sketch: bytes, params: SimilarParams, exclude: int = -1,
                above: int = -1, max_candidates: int | None = None,
                read_articles: Callable[[Sequence[int]], list[tuple[str, bytes]]] | None = None,
                whole_ties: bool = False) -> SimilarOutcome:
        """Candidates from the postings, verified by the kernel; top_k of them unless `above` (all pairs); at most
        max_candidates verified (default: the limit), those sharing the most values first (`whole_ties`: and all
        that share as many as the last of them, candidates.candidates); the candidates' sketches read by
        `read_articles` (default: snapshot.articles)."""
        max_candidates = max_candidates or self.limits.max_candidates
        read_articles = read_articles or snapshot.articles

        def read_unread(value_indices):
            return snapshot.unread_postings(sketch, value_indices)

        if self.items is not None:
            found = candidates.item_candidates(snapshot.postings(sketch), read_unread=read_unread, exclude=exclude,
                                               above=above, max_candidates=max_candidates, whole_ties=whole_ties)
            articles = read_articles(found.docnos.tolist())
            verified = self.items.similar(sketch, [article for _, article in articles], params.threshold)
        elif self.config.kind == SIMHASH:
            if candidates.simhash_tables_suffice(params.threshold):
                found = candidates.simhash_candidates(snapshot.postings(sketch), params.threshold,
                                                      read_unread=read_unread, exclude=exclude, above=above,
                                                      max_candidates=max_candidates)
            else:
                found = candidates.simhash_scan(snapshot.fingerprints(), sketch, params.threshold, exclude=exclude,
                                                above=above, max_candidates=max_candidates)
            articles = read_articles(found.docnos.tolist())
            verified = kernel.similar_simhash(sketch, [article for _, article in articles], params.threshold)
        else:
            found = candidates.candidates(len(sketch) // 4, snapshot.postings(sketch), params.threshold,
                                          params.metric, read_unread=read_unread, exclude=exclude, above=above,
                                          max_candidates=max_candidates, whole_ties=whole_ties)
            articles = read_articles(found.docnos.tolist())
            verified = kernel.similar(sketch, [article for _, article in articles], self.config.k,
                                      params.threshold, params.metric)
        return self._answer([(articles[position][0], score) for position, score in verified], found.exact, params,
                            self.reader, every=above >= 0)

    def _answer(self, verified: list[tuple[str, float]], exact: bool, params: SimilarParams, reader: Reader,
                every: bool = False) -> SimilarOutcome:
        """The verified (id, similarity) pairs best first (similarity descending, then id): the top_k of them with
        their clusters (from reader), or `every` one (all pairs)."""
        matches = sorted((Match(doc_id, score) for doc_id, score in verified),
                         key=lambda match: (-match.similarity, match.id))
        if not every:
            matches = matches[:params.top_k]
            clusters = reader.clusters([match.id for match in matches])
            if clusters is not None:
                matches = [match._replace(cluster=cluster) for match, cluster in zip(matches, clusters)]
        return SimilarOutcome(matches, exact)
