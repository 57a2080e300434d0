"""`neardup label`'s console session; which pairs and the answers file are jobs/label.py's."""
from __future__ import annotations

import argparse
import shutil
import sys
import textwrap

from neardup_client.cli_framework import EXIT_OK, CommandFailed, at_least

from ..jobs.label import LabelSession
from ..jobs.records import read_records
from ..store import STORE_HELP, default_store_path, open_store
from .options import add_progress_argument, reporting

KEYS = {"y": True, "n": False, "u": None}
PROMPT = "duplicate? [y]es [n]o [u]nsure [b]ack (undo) [q]uit: "
#: The most lines of each text shown side by side.
MAX_LINES = 40


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Label the pairs of a store that it is least sure of, for `neardup train`: pairs near the store's threshold, "
        "spread over the bands of similarity, one pair per family of look-alikes. A store of texts: pairs sharing "
        "sketch values, each shown side by side with --corpus, the passages they share marked «so», with its "
        "similarity. An items store: its candidate pairs, each shown field by field (with --corpus) with its "
        "per-field similarities. Answer y, n or u (unsure), b to undo the last answer, q to stop. Every answer is "
        "appended to PAIRS at once; run it again on the same file to resume. Also in the web page: `neardup ui "
        "--store S --labels PAIRS`.")
    parser.add_argument("pairs", metavar="PAIRS", help="the answers, JSON Lines as `neardup train` reads them "
                                                       "(created if missing, appended to)")
    parser.add_argument("--store", default=default_store_path(), help=STORE_HELP)
    parser.add_argument("--corpus", metavar="JSONL",
                        help="the corpus indexed into the store, as `neardup index` read it ({\"id\": ..., "
                             "\"text\": ...} a line for texts, {\"id\": ..., \"fields\": {...}} for items), to "
                             "show each text or record (default: ids and similarities only); for texts, proposals "
                             "also weigh each pair's similarity under the other stop-lists, as `neardup train "
                             "--corpus` does")
    parser.add_argument("--count", type=at_least(1), default=120,
                        help="stop once PAIRS holds this many answers (default: 120)")
    add_progress_argument(parser)
    parser.set_defaults(func=_run)


def _shown(value, width: int) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict) and {"lat", "lon"} <= value.keys():
        value = f"{value['lat']}, {value['lon']}"
    text = " ".join(str(value).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def show(proposal, records: dict[str, dict], counts: dict) -> str:
    """An items pair as a table: one row per field, both records' values and the field's similarity."""
    width = max(16, (shutil.get_terminal_size((100, 20)).columns - 30) // 2)
    a, b = records.get(proposal.a, {}).get("fields", {}), records.get(proposal.b, {}).get("fields", {})
    names = list(proposal.similarities) + sorted((a.keys() | b.keys()) - proposal.similarities.keys())
    name_width = max(map(len, names + ["field"]))
    lines = [_heading(proposal, "rule similarity", counts),
             f"  {'field':{name_width}}  {_shown(proposal.a, width):{width}}  {_shown(proposal.b, width):{width}}  "
             "similarity"]
    for name in names:
        similarity = proposal.similarities.get(name)
        lines.append(f"  {name:{name_width}}  {_shown(a.get(name), width):{width}}  {_shown(b.get(name), width):{width}}"
                     f"  {'—' if similarity is None else f'{similarity:.3f}'}")
    return "\n".join(lines)


def _heading(proposal, score: str, counts: dict) -> str:
    return (f"pair {counts['answered'] + 1} ({proposal.reason}; {score} {proposal.score:.3f}; so far "
            f"{counts['duplicates']} duplicates, {counts['others']} others, {counts['unsure']} unsure)")


def _marked(text: str, spans) -> str:
    """The text with each span (code points) between « and »."""
    pieces, at = [], 0
    for start, end in spans:
        pieces += [text[at:start], "«", text[start:end], "»"]
        at = end
    return "".join(pieces + [text[at:]])


def show_texts(proposal, records: dict[str, dict], explained, metric: str, counts: dict,
               corpus: str | None) -> str:
    """A text pair side by side, the passages both texts have (Explain's shared spans) marked «so»; ids alone
    when --corpus (`corpus`) does not hold both texts (`explained` None), saying which it lacks."""
    width = max(20, (shutil.get_terminal_size((100, 20)).columns - 5) // 2)
    lines = [_heading(proposal, metric, counts), f"  {proposal.a:{width}} | {proposal.b}"]
    if explained is None:
        lacking = [doc_id for doc_id in (proposal.a, proposal.b) if doc_id not in records]
        why = "give --corpus, the JSON Lines indexed into the store" if corpus is None else (
            f"--corpus {corpus} holds no text of {' nor of '.join(lacking)}")
        return "\n".join(lines + [f"  (texts not shown: {why})"])
    explanation = explained.explanation
    sides = [textwrap.wrap(_marked(records[doc_id]["text"], side.shared), width) or [""]
             for doc_id, side in ((proposal.a, explanation.a), (proposal.b, explanation.b))]
    rows = min(max(map(len, sides)), MAX_LINES)
    sides = [side[:rows] + [""] * (rows - len(side[:rows])) for side in sides]
    lines.append(f"  {'-' * width}-+-{'-' * width}")
    lines += [f"  {left:{width}} | {right}" for left, right in zip(*sides)]
    if rows == MAX_LINES:
        lines.append(f"  … (at most {MAX_LINES} lines of each)")
    lines.append(f"  «marked»: passages both texts have ({explanation.shared_shingles} shared shingles, "
                 f"{explanation.shared_sketch_values} shared sketch values)")
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    with open_store(args.store, readonly=True) as store:
        with reporting(args, "label"):  # the session's start: --corpus sketched once more on a store of texts
            session = LabelSession(store, args.pairs, corpus=args.corpus)
        if not session.counts()["pool"]:  # nothing to propose, and nothing train could be given
            raise CommandFailed(f"store {args.store} has no candidate pairs to label: no two of its articles share "
                                + ("a sketch value" if session.texts else "a super token"))
        records = {}
        if args.corpus:
            records = read_records(args.corpus, set(session.pool.a) | set(session.pool.b),
                                   "text" if session.texts else "fields")
        counts = session.counts()
        print(f"{counts['pool']:,} candidate pairs sampled; {counts['answered']:,} answers in {args.pairs}",
              file=sys.stderr)
        return _ask(args, session, records)


def _ask(args: argparse.Namespace, session: LabelSession, records: dict[str, dict]) -> int:
    while session.counts()["answered"] < args.count:
        proposal = session.next()
        if proposal is None:
            print("every sampled candidate pair is answered", file=sys.stderr)
            break
        if session.texts:
            print(show_texts(proposal, records, session.explain(proposal, records), session.metric,
                             session.counts(), args.corpus))
        else:
            print(show(proposal, records, session.counts()))
        while True:
            try:
                key = input(PROMPT).strip().lower()[:1]
            except EOFError:
                key = "q"
            if key in KEYS:
                session.answer(proposal.a, proposal.b, KEYS[key])
                break
            if key == "b":
                undone = session.undo()
                print("nothing to undo" if undone is None else f"undone: {undone[0]} / {undone[1]}")
                break
            if key == "q":
                return _saved(args, session)
    return _saved(args, session)


def _saved(args: argparse.Namespace, session: LabelSession) -> int:
    """The session's last line: where its answers are and what to run on them."""
    print(f"{session.counts()['answered']:,} answers saved in {args.pairs}; next: {session.next_command}",
          file=sys.stderr)
    return EXIT_OK
