"""`neardup label`'s console session; which pairs and the answers file are jobs/label.py's."""
from __future__ import annotations

import argparse
import json
import shutil
import sys

from neardup_client.cli_framework import EXIT_OK, CommandFailed, at_least

from ..jobs.label import LabelSession
from ..store import STORE_HELP, default_store_path, open_store

KEYS = {"y": True, "n": False, "u": None}
PROMPT = "duplicate? [y]es [n]o [u]nsure [b]ack (undo) [q]uit: "


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Label the candidate pairs of an items store that it is least sure of, for `neardup train`: each pair is "
        "shown field by field (with --corpus) with its per-field similarities; answer y, n or u (unsure), b to "
        "undo the last answer, q to stop. Every answer is appended to PAIRS at once; run it again on the same "
        "file to resume. Also in the web page: `neardup ui --store S --labels PAIRS`.")
    parser.add_argument("pairs", metavar="PAIRS", help="the answers, JSON Lines as `neardup train` reads them "
                                                       "(created if missing, appended to)")
    parser.add_argument("--store", default=default_store_path(), help=STORE_HELP)
    parser.add_argument("--corpus", metavar="JSONL",
                        help="the items indexed into the store ({\"id\": ..., \"fields\": {...}} a line), to show "
                             "each record's fields (default: ids and similarities only)")
    parser.add_argument("--count", type=at_least(1), default=120,
                        help="stop once PAIRS holds this many answers (default: 120)")
    parser.set_defaults(func=_run)


def read_records(path: str, wanted: set[str]) -> dict[str, dict]:
    """The fields of the wanted ids in a JSON Lines corpus (lines that are not such records are passed over)."""
    found = {}
    try:
        with open(path, encoding="utf-8") as stream:
            for line in stream:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and record.get("id") in wanted and isinstance(record.get("fields"), dict):
                    found[record["id"]] = record["fields"]
    except OSError as error:
        raise CommandFailed(f"cannot read --corpus {path}: {error.strerror}") from None
    return found


def _shown(value, width: int) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict) and {"lat", "lon"} <= value.keys():
        value = f"{value['lat']}, {value['lon']}"
    text = " ".join(str(value).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def show(proposal, records: dict[str, dict], counts: dict) -> str:
    """The pair as a table: one row per field, both records' values and the field's similarity."""
    width = max(16, (shutil.get_terminal_size((100, 20)).columns - 30) // 2)
    a, b = records.get(proposal.a, {}), records.get(proposal.b, {})
    names = list(proposal.similarities) + sorted((a.keys() | b.keys()) - proposal.similarities.keys())
    name_width = max(map(len, names + ["field"]))
    lines = [f"pair {counts['answered'] + 1} ({proposal.reason}; rule similarity {proposal.score:.3f}; so far "
             f"{counts['duplicates']} duplicates, {counts['others']} others, {counts['unsure']} unsure)",
             f"  {'field':{name_width}}  {_shown(proposal.a, width):{width}}  {_shown(proposal.b, width):{width}}  "
             "similarity"]
    for name in names:
        similarity = proposal.similarities.get(name)
        lines.append(f"  {name:{name_width}}  {_shown(a.get(name), width):{width}}  {_shown(b.get(name), width):{width}}"
                     f"  {'—' if similarity is None else f'{similarity:.3f}'}")
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    with open_store(args.store, readonly=True) as store:
        session = LabelSession(store, args.pairs)
    records = {}
    if args.corpus:
        records = read_records(args.corpus, set(session.pool.a) | set(session.pool.b))
    print(f"{session.counts()['pool']:,} candidate pairs sampled; {len(session.answers):,} answers in {args.pairs}",
          file=sys.stderr)
    while len(session.answers) < args.count:
        proposal = session.next()
        if proposal is None:
            print("every sampled candidate pair is answered", file=sys.stderr)
            break
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
                print(f"{len(session.answers):,} answers saved in {args.pairs}", file=sys.stderr)
                return EXIT_OK
    print(f"{len(session.answers):,} answers saved in {args.pairs}; next: neardup train {args.pairs} --store "
          f"{args.store}", file=sys.stderr)
    return EXIT_OK
