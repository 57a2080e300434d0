"""Evaluation result sets of the development corpus: ranked lists of ~100 documents as a search returns them, with
duplicates and hard negatives, overall or per scope (an edit family, edit rate, length or language)."""
from __future__ import annotations

import random
from typing import Callable

from benchmarks.lib.devcorpus import LENGTHS, NEGATIVE_FAMILIES, Doc
from benchmarks.lib.edits import EDIT_FAMILIES, EDIT_RATES

#: A scope: which copies count as the duplicates of a result set (per family, edit rate, length, language).
Scope = Callable[[Doc], bool]


def nominal_rate(doc: Doc) -> float | None:
    """The edit rate a copy was made at (the nearest of EDIT_RATES), None for copies without word edits."""
    if doc.family not in ("edit", "combined"):
        return None
    return min(EDIT_RATES, key=lambda rate: abs(rate - doc.rate))


def scopes() -> dict[str, Scope]:
    """Named scopes: each edit family, each edit rate, each length bucket, each language."""
    named: dict[str, Scope] = {f"family {f}": (lambda d, f=f: d.family == f) for f in EDIT_FAMILIES}
    named |= {f"rate {r:.0%}": (lambda d, r=r: nominal_rate(d) == r) for r in EDIT_RATES}
    named |= {f"length {n}": (lambda d, n=n: d.length == n) for n in LENGTHS}
    return named


def language_scopes(docs: list[Doc]) -> dict[str, Scope]:
    return {f"lang {lang}": (lambda d, lang=lang: d.lang == lang)
            for lang in sorted({d.lang for d in docs if d.family in EDIT_FAMILIES})}


def draw_result_sets(docs: list[Doc], count: int, seed: int = 0, size: int = 100,
                     scope: Scope | None = None) -> list[list[int]]:
    """Result sets as a search would return them: `size` document indexes in rank order, 20–40 % of them
    near-duplicates of another member; as hard negatives a few pages of one site, a few variants of one template,
    sections of one article and texts with the texts they quote; the rest unrelated. With `scope`, every duplicate in a set is an original
    plus copies the scope accepts, so a family's (rate's, length's, language's) quality is measured on its own."""
    rng = random.Random(seed)
    groups: dict[str, list[int]] = {}
    for i, doc in enumerate(docs):
        groups.setdefault(doc.group, []).append(i)
    first = {"original", "template"}
    dup_groups = [[m for m in members if docs[m].family in first]
                  + [m for m in members if docs[m].family not in first and (scope is None or scope(docs[m]))]
                  for members in groups.values()]
    dup_groups = [members for members in dup_groups if len(members) > 1 and docs[members[0]].family in first]
    if not dup_groups:
        return []
    clusters: dict[tuple[str, str], list[int]] = {}
    for i, doc in enumerate(docs):
        if doc.family == "shared_boilerplate":
            clusters.setdefault(("site", doc.site), []).append(i)
        elif doc.family == "template":
            clusters.setdefault(("template", doc.template), []).append(i)
        elif doc.family == "original" and doc.topic:
            clusters.setdefault(("topic", doc.topic), []).append(i)
    by_group = {doc.group: i for i, doc in enumerate(docs) if doc.family == "original"}
    for i, doc in enumerate(docs):
        if doc.family == "quoting" and doc.quotes in by_group:
            clusters[("quote", doc.group)] = [by_group[doc.quotes], i]
    negative_kinds = {kind: sorted(k for k, v in clusters.items() if k[0] == kind and len(v) >= 2)
                      for kind in ("site", "template", "topic", "quote")}
    sets = []
    for _ in range(count):
        chosen: list[int] = []
        used: set[str] = set()
        for kind, keys in negative_kinds.items():
            for key in rng.sample(keys, min(len(keys), {"topic": 2, "quote": 3}.get(kind, 1))):
                members = [m for m in clusters[key] if docs[m].group not in used]
                picked = rng.sample(members, min(len(members), rng.randint(2, 5)))
                chosen += picked
                used |= {docs[m].group for m in picked}
        duplicates_wanted = round(size * rng.uniform(0.2, 0.4))
        duplicates = 0
        for members in rng.sample(dup_groups, len(dup_groups)):
            if duplicates >= duplicates_wanted:
                break
            if docs[members[0]].group in used:
                continue
            picked = rng.sample(members, min(len(members), rng.randint(2, 3), duplicates_wanted - duplicates + 1))
            chosen += picked
            duplicates += len(picked) - 1
            used.add(docs[members[0]].group)
        for i in rng.sample(range(len(docs)), len(docs)):
            if len(chosen) >= size:
                break
            if docs[i].group not in used and docs[i].family in ("original", *NEGATIVE_FAMILIES):
                chosen.append(i)
                used.add(docs[i].group)
        rng.shuffle(chosen)
        sets.append(chosen)
    return sets
