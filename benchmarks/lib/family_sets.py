"""Result sets of a family corpus: its documents shuffled and numbered, grouped, and drawn into ranked sets of ~100
ids with 20-40 % duplicates, negative clusters (texts sharing a site, package, disclaimer or topic) and filler."""
from __future__ import annotations

import random

from benchmarks.lib.devcorpus import LENGTHS, Doc

RESULT_SET_SIZE = 100


def shuffle_numbered(docs: list[Doc], split: str, rng: random.Random) -> dict[str, list[int]]:
    """Shuffles the documents and numbers them in their new order, so an id says nothing of its group; returns
    their groups (group_members)."""
    rng.shuffle(docs)
    for number, doc in enumerate(docs):
        doc.id = f"{split[:2]}{number:06d}"
    return group_members(docs)


def group_members(docs: list[Doc]) -> dict[str, list[int]]:
    """group → document indexes, the original first."""
    groups: dict[str, list[int]] = {}
    for i, doc in enumerate(docs):
        groups.setdefault(doc.group, []).append(i)
    return {name: sorted(members, key=lambda i: docs[i].family != "original") for name, members in groups.items()}


def filled(chosen: list[int], fill: list[int], rng: random.Random, size: int = RESULT_SET_SIZE) -> list[int]:
    """chosen plus distinct documents of other groups up to size, in a random rank order."""
    chosen = list(chosen)
    taken = set(chosen)
    for i in rng.sample(fill, len(fill)):
        if len(chosen) >= size:
            break
        if i not in taken:
            chosen.append(i)
            taken.add(i)
    rng.shuffle(chosen)
    return chosen


def draw_set(rng: random.Random, docs: list[Doc], duplicates: list[list[int]], fill: list[int],
             negatives: list[list[int]] = (), first: list[int] = (), clusters: int = 2,
             negatives_per_cluster: tuple[int, int] = (2, 6), per_group: tuple[int, int] = (2, 3),
             size: int = RESULT_SET_SIZE) -> list[int]:
    """A result set: `first` (a popular story's copies), per_group members of duplicate groups until 20-40 % of
    the set are duplicates, documents of a few negative clusters (distinct texts that share a site, package,
    disclaimer or topic), the rest other documents; no group is drawn twice."""
    chosen = list(first)
    used = {docs[i].group for i in chosen}
    wanted = round(size * rng.uniform(0.2, 0.4))
    for members in rng.sample(duplicates, len(duplicates)):
        if wanted <= 0 or len(chosen) >= size:
            break
        if docs[members[0]].group in used:
            continue
        picked = rng.sample(members, min(len(members), rng.randint(*per_group)))
        chosen += picked
        used.add(docs[members[0]].group)
        wanted -= len(picked) - 1
    for cluster in rng.sample(negatives, min(clusters, len(negatives))):
        free = [i for i in cluster if docs[i].group not in used]
        picked = rng.sample(free, min(len(free), rng.randint(*negatives_per_cluster)))
        chosen += picked
        used |= {docs[i].group for i in picked}
    return filled(chosen[:size], [i for i in fill if docs[i].group not in used], rng, size)


def length_scopes(docs: list[Doc], rng: random.Random, duplicates: list[list[int]], fill: list[int],
                  count: int = 4, negatives: list[list[int]] = ()) -> dict[str, list[list[int]]]:
    """Result sets whose duplicates all have an original of one length bucket (buckets with duplicates only), with
    the family's negative clusters when it has them."""
    sets = {}
    for bucket in LENGTHS:
        scoped = [m for m in duplicates if docs[m[0]].length == bucket]
        if scoped:
            sets[f"length {bucket}"] = [draw_set(rng, docs, scoped, fill, negatives) for _ in range(count)]
    return sets
