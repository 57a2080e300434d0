"""A user's answers, simulated: `neardup label`'s own proposals answered from a corpus's truth, then `neardup
train`, as a user who labels a few dozen pairs would do (issue 38: what a duplicate is differs per user).

The session proposes (jobs/label.label_with: LabelSession, the order the console and the page show); each proposal is
answered "duplicate" when its two articles are in one group of the truth, "not" otherwise (never "unsure"); at each
checkpoint (a number of answers) the answers are trained on (jobs/train.train, which stores a threshold or refuses,
store unchanged) and the session starts again on the same answers file, so later proposals come near the trained
threshold, as they would for a user who trains and goes on labelling. Given the corpus, the session proposes where
the texts' similarities under the other stop-lists too leave the answers undecided (`neardup label --corpus`), and
train also tries the texts under those stop-lists (none, or one that counts copies of one text each); where it
advises re-indexing with one, the user does (`reindex`), trains the new store on the same answers, and goes on
labelling there; where train advises again at a later checkpoint (the other one, on more answers), the user follows
again.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping, Sequence

from neardup.core.errors import NearDupError
from neardup.jobs.label import label_with
from neardup.jobs.train import train
from neardup.store import open_store


def answer_and_train(store_path: Path, group_of: Mapping[str, str], answers_path: Path,
                     checkpoints: Sequence[int], at_checkpoint: Callable[[int, dict, Path], None],
                     corpus: Path | None = None, reindex: Callable[[str, dict], Path] | None = None) -> list[dict]:
    """Answers proposals from `group_of` (id to its truth group) into answers_path, training at each checkpoint
    (ascending answer counts); at_checkpoint(count, report, store) runs after each training (the store closed,
    holding what train left). With `corpus` (the records the store was indexed from), the session and train are
    given it, and where it advises re-indexing with another stop-list, reindex(name, options) makes that store
    (name: jobs.train.OTHER_STOPLISTS; options: the advice's IndexOptions fields; it returns the store's path), which
    is trained on the same answers and used from then on, until train advises another. Returns train's reports, each
    with the answers it saw, whether it was refused and the stop-list the store it leaves was re-indexed with ("" for
    none: the first store)."""
    reports, reindexed = [], ""
    for count in checkpoints:
        with open_store(store_path) as store:
            answered = len(label_with(store, answers_path, lambda a, b: group_of[a] == group_of[b], count,
                                      corpus=str(corpus) if corpus else None))
        try:
            report = train(str(answers_path), str(store_path), corpus=str(corpus) if corpus else None)
            if report.get("advised") and reindex is not None:
                reindexed = report["advised"]
                store_path = reindex(reindexed, report["advised_options"])
                report = train(str(answers_path), str(store_path))
        except NearDupError as refused:  # too few of a class: the store is unchanged, as for a user
            report = {"refused": str(refused)}
        # a refusal names the answers file: by its name, so that no result file holds the run's temporary path
        refusal = report.get("refused", "").replace(str(answers_path), answers_path.name)
        report = {"answers": answered, "refused": refusal, "reindexed": reindexed,
                  **{key: report[key] for key in ("threshold", "duplicates", "others", "cv") if key in report}}
        reports.append(report)
        at_checkpoint(count, report, store_path)
    return reports
