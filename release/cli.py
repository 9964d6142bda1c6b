"""The command line: ``python -m release --plan PLAN.json --data PATH --ledger LEDGER.sqlite
--out DIR [--budget EPSILON]`` runs the release the app would run and writes its files;
``--package OUT.zip`` also writes the release package (``release.package``: the files, the
published plan, the OpenDP program as a script and a notebook, report.html);
``python -m release --example-plan`` prints a plan for the built-in Adult data.
Every file a release publishes (the package among them) is also kept with its ledger entry;
``python -m release fetch N --ledger LEDGER.sqlite --out DIR`` writes release N's kept files
into DIR, byte for byte (``release-N.zip`` is its package).
A release records the data's names in the dataset declarations and prints which schema
and unit versions are on record for it.

A plan that records the versions of the data's declarations it was built on
(``dataset.declarations``) is refused when the declarations store (``--declarations``, else
``$EPSILON_LAB_DECLARATIONS``, else ``declarations.sqlite`` beside the ledger) holds later
ones for that data; ``--confirm-stale`` releases it as built (recorded in the released plan).

Exit status: 0 released (or fetched); 1 refused (over budget, a map above the plan's
figure, a mechanism OpenDP cannot sample, data that does not fit the plan, a stale plan); 2 a
bad plan or bad arguments (fetch: no release N, or release N has no kept files); 3 data that
cannot be read, or files that cannot be written; 4 a ledger (or declarations file) that cannot
be used (after a release: its files could not be kept in it — the release is recorded and its
files written); 5 the draw failed after noise was drawn (its budget recorded as spent, nothing
written). A refusal prints one line on stderr.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from engine import EngineError
from engine.sources import FileSource
from plan.examples import adult_plan
from plan.model import Plan, PlanError
from release.access import OPERATOR, acting_as
from release.bound import checked_plan
from release.declarations import DECLARATIONS_ENV, DeclarationsError, DeclarationStore, on_record
from release.errors import DrawFailed, ReleaseRefused
from release.files import write_bytes
from release.ledger import Ledger, LedgerError, default_path, ledger_path, left_in_words
from release.package import OUT_FILES, keep_files, package_name
from release.run import dataset_identity, run

__all__ = ["main"]

REFUSED, BAD_PLAN, BAD_DATA, BAD_LEDGER, DRAW_FAILED = 1, 2, 3, 4, 5


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m release",
        description="Release a plan for real with OpenDP, record it in the ledger, and write "
                    "release.csv, release.json and card.json.")
    parser.add_argument("--plan", type=Path, help="the plan (JSON, from the app or "
                        "--example-plan)")
    parser.add_argument("--data", type=Path, help="a CSV, CSV.gz or Parquet file, or a folder "
                        "of Parquet files")
    parser.add_argument("--ledger", type=Path, default=None, help="the ledger (default "
                        "$EPSILON_LAB_LEDGER, else the user's data folder)")
    parser.add_argument("--out", type=Path, help="the folder the files are written to")
    parser.add_argument("--budget", type=float, default=None, metavar="EPSILON",
                        help="the dataset's total ε, set the first time the dataset is seen")
    parser.add_argument("--budget-delta", type=float, default=None, metavar="DELTA",
                        help="with --budget: the dataset's total δ (default: δ not capped)")
    parser.add_argument("--package", type=Path, default=None, metavar="OUT.zip",
                        help="also write the release package: the files, the plan, the "
                             "OpenDP program (script and notebook) and report.html")
    parser.add_argument("--declarations", type=Path, default=None, metavar="FILE",
                        help="the dataset declarations store (default "
                             "$EPSILON_LAB_DECLARATIONS, else declarations.sqlite beside the "
                             "ledger)")
    parser.add_argument("--confirm-stale", action="store_true",
                        help="release a plan built on declarations of the data that changed "
                             "since, as built (the confirmation is recorded in its plan)")
    parser.add_argument("--example-plan", action="store_true",
                        help="print a plan for data/adult.csv.gz and exit")
    return parser


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _fail(code: int, kind: str, text: object) -> int:
    print(f"{kind}: {_one_line(text)}", file=sys.stderr)
    return code


def _source(path: Path):  # -> FileSource
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    name = path.name.lower()
    if path.is_dir() or name.endswith(".parquet"):
        return FileSource(path, "parquet")
    if name.endswith((".csv", ".csv.gz", ".tsv")):
        return FileSource(path, "csv")
    raise ValueError(f"{path}: give a .csv, .csv.gz or .parquet file or a folder of Parquet "
                     "files")


def _fetch_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m release fetch",
        description="Write the files kept with a recorded release (its package among them) "
                    "into a folder, byte for byte as the release published them.")
    parser.add_argument("entry", type=int, metavar="N", help="the release's ledger entry "
                        "(#N on the Releases page)")
    parser.add_argument("--ledger", type=Path, default=None, help="the ledger (default "
                        "$EPSILON_LAB_LEDGER, else the user's data folder)")
    parser.add_argument("--out", type=Path, required=True, help="the folder the files are "
                        "written to")
    return parser


def fetch(argv: Sequence[str]) -> int:
    """``python -m release fetch N --ledger L --out DIR``: release N's kept files into DIR."""
    args = _fetch_parser().parse_args(argv)

    try:
        path = ledger_path(args.ledger)
        if not path.is_file():   # never create an empty ledger to fetch from
            return _fail(BAD_LEDGER, "ledger", f"there is no ledger at {path}: give --ledger "
                         "(or set EPSILON_LAB_LEDGER)")
        with Ledger(path) as ledger:
            record = next((r for r in ledger.releases() if r.id == args.entry), None)
            files = {} if record is None else ledger.release_files(record.id)
            why = "" if record is None or files else ledger.why_no_files(record)
    except LedgerError as exc:
        return _fail(BAD_LEDGER, "ledger", exc)
    if record is None:
        return _fail(BAD_PLAN, "usage", f"the ledger {path} has no release #{args.entry} (the "
                     "Releases page lists them)")
    if not files:
        return _fail(BAD_PLAN, "no files", f"release #{record.id}: {why}")
    try:
        for name, data in files.items():
            write_bytes(args.out / name, data)
    except OSError as exc:
        return _fail(BAD_DATA, "files", f"release #{record.id}'s files could not be written "
                     f"to {args.out} ({exc.strerror or exc})")
    print(f"release #{record.id} ({record.dataset.name!r}, {record.time}): {len(files)} "
          f"files written to {args.out}: {', '.join(files)}")
    return 0


def fetch_command(entry: int, ledger: str | Path) -> str:
    """The ``fetch`` command a page quotes for release ``entry`` of ``ledger``, as it runs from
    any shell: ``--out DIR`` (required), and ``--ledger`` unless ``ledger`` is the default one
    (a server's EPSILON_LAB_LEDGER is not the shell's)."""
    import shlex

    command = f"python -m release fetch {int(entry)}"
    if Path(ledger).expanduser().absolute() != default_path().absolute():
        command += f" --ledger {shlex.quote(str(ledger))}"
    return command + " --out DIR"


def _declarations(args: argparse.Namespace):  # -> Path | None
    """``--declarations``, else ``$EPSILON_LAB_DECLARATIONS``, else beside ``--ledger`` (None:
    the store's own default, beside the default ledger)."""
    import os

    if args.declarations is not None or os.environ.get(DECLARATIONS_ENV, "").strip():
        return args.declarations
    return None if args.ledger is None else args.ledger.parent / "declarations.sqlite"


def _on_record(args: argparse.Namespace, plan, dataset: str) -> str:
    """Record the data's names under its content identity ``dataset`` (the release's: a first
    release of a CSV computes it from the cells its aggregates read, so the file is parsed
    once, issue 37) in the dataset declarations (the file of :func:`_declarations`) and say
    which of its declarations are on record (issue 32)."""
    try:
        return on_record(DeclarationStore(_declarations(args)), dataset,
                         (args.data.name, plan.dataset.name))
    except (OSError, EngineError, DeclarationsError) as exc:
        return f"declarations: not looked up ({_one_line(exc)})"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line as the server's operator (a steward: whoever runs it holds the
    ledger's file anyway); what it records names them as ``command line (user@host)``."""
    with acting_as(OPERATOR):
        return _main(argv)


def _main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["fetch"]:
        return fetch(argv[1:])
    args = _parser().parse_args(argv)
    if args.example_plan:
        print(adult_plan().to_json())
        return 0
    missing = [f"--{n}" for n in ("plan", "data", "out") if getattr(args, n) is None]
    if missing:
        return _fail(BAD_PLAN, "usage", f"give {', '.join(missing)} (or --example-plan)")
    if args.budget is not None and not (0 < args.budget < math.inf):
        return _fail(BAD_PLAN, "usage", f"--budget must be a positive number, got "
                     f"{args.budget}")
    if args.budget_delta is not None and (args.budget is None or not 0 <= args.budget_delta < 1):
        return _fail(BAD_PLAN, "usage", "--budget-delta needs --budget and a δ in [0, 1), got "
                     f"{args.budget_delta}")

    try:
        plan = Plan.from_json(args.plan.read_bytes())
    except OSError as exc:
        return _fail(BAD_PLAN, "bad plan", f"cannot read {args.plan}: {exc.strerror or exc}")
    except PlanError as exc:
        return _fail(BAD_PLAN, "bad plan", f"{args.plan}: {exc}")
    try:
        source = _source(args.data)
    except (OSError, ValueError, EngineError) as exc:
        return _fail(BAD_DATA, "unreadable data", exc)
    try:
        ledger = Ledger(args.ledger)
    except LedgerError as exc:
        return _fail(BAD_LEDGER, "ledger", exc)
    content_hash = None
    if plan.dataset.declarations is not None:   # bound: refused while stale
        try:
            content_hash = dataset_identity(plan, source, ledger_file=ledger.path).content_hash
            plan, stale = checked_plan(plan, content_hash, _declarations(args),
                                       confirm=args.confirm_stale)
        except ReleaseRefused as exc:
            return _fail(REFUSED, "refused", exc)
        except DeclarationsError as exc:
            return _fail(BAD_LEDGER, "declarations", exc)
        except EngineError as exc:
            return _fail(BAD_DATA, "unreadable data", exc)
        if stale:
            return _fail(REFUSED, "refused", f"{stale}: pass --confirm-stale to release it "
                         "as built")
    try:
        with ledger:
            release = run(plan, source, ledger=ledger, budget=args.budget,
                          budget_delta=args.budget_delta, content_hash=content_hash)
            status = ledger.status(release.dataset)
            # after the commit: one build of the files, kept with the entry and written below
            files, not_kept = keep_files(release, ledger)
    except DrawFailed as exc:   # not a refusal: noise was drawn, the budget is spent
        return _fail(DRAW_FAILED, "failed", exc)
    except ReleaseRefused as exc:
        return _fail(REFUSED, "refused", exc)
    except PlanError as exc:
        return _fail(BAD_PLAN, "bad plan", exc)
    except LedgerError as exc:
        return _fail(BAD_LEDGER, "ledger", exc)
    except EngineError as exc:
        return _fail(BAD_DATA, "unreadable data", exc)
    # the names are recorded under the identity the release found (and so only for data
    # released): looked up before the release, it parsed a CSV a second time
    declared = _on_record(args, plan, release.dataset.content_hash)
    # Recorded: the files are written after the commit (if this fails, the release stays
    # recorded and its budget spent; the values are lost, never shown).
    lost = ("its values are lost" if not_kept else
            f"they are kept in the ledger: python -m release fetch {release.record.id}")
    try:
        for name, data in files.items():
            if name in OUT_FILES or name.startswith("rows-"):
                write_bytes(args.out / name, data)
    except OSError as exc:
        return _fail(BAD_DATA, "files", f"release #{release.record.id} was recorded but its "
                     f"files could not be written to {args.out} ({exc.strerror or exc}); "
                     + lost)
    if args.package is not None:
        try:
            write_bytes(args.package, files[package_name(release.record.id)])
        except OSError as exc:
            return _fail(BAD_DATA, "files", f"release #{release.record.id} was recorded and "
                         f"its files written to {args.out}, but its package could not be "
                         f"written to {args.package} ({exc.strerror or exc})")
    spent = release.spent
    left = status.remaining_epsilon
    budget = ("no budget set" if left is None
              else f"{left_in_words(left)} of {status.budget.epsilon:g}" if left >= 0
              else f"{left_in_words(left)} (budget ε = {status.budget.epsilon:g})")
    if status.remaining_delta is not None and status.remaining_delta < 0:
        budget += f", {left_in_words(status.remaining_delta, 'δ', digits=3)}"
    print(f"released {plan.dataset.name!r}: {len(release.queries)} queries, ε = "
          f"{spent.epsilon:.6g}, δ = {spent.delta:.3g} ({spent.method} accounting); ledger "
          f"entry {release.record.id} in {ledger.path}; {budget}; files in {args.out}"
          + ("" if args.package is None else f"; package {args.package}"))
    print(declared)
    for note in release.notes + tuple(n for q in release.queries for n in q.notes):
        print(f"note: {_one_line(note)}")
    if not_kept:
        return _fail(BAD_LEDGER, "ledger", not_kept)
    return 0
