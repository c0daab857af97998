"""`agent-monitor dataset export`: failing (or reviewed) production traces as a dataset for `evaluate --dataset`.

Reads a result store (`--store`: a SQLite file, or a postgresql:// URL; else the store of the config `run` reads,
--config, else $AGENT_MONITOR_CONFIG, else the embedded default: daemon_address.py)
and writes the SDK's Dataset (evaluators/sdk/task.py) as JSON or CSV, by the output's suffix; what a task holds is
dataset_export.py's. Exit 0 when written, 1 when the store cannot be read, nothing matches or the file cannot be
written (nothing is written then), 2 for bad arguments or an invalid config.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TextIO

from evaluators.sdk import Dataset
from monitor.commands.daemon_address import CONFIG_ENV, InvalidConfig, add_config_argument, store_location
from monitor.commands.dataset_export import MARGIN, NoSuchSignature, Selection, select, task_of
from monitor.review.api_params import BadRequest, parse_time
from monitor.review.of_store import StoreReviewReader
from monitor.review.open_reader import StoreUnreadable, is_url, open_store_reader
from monitor.store.health import StoreUnavailable
from monitor.store.schema import StoreSchemaError
from monitor.text import clip, redact_url

DEFAULT_LIMIT = 1000
FORMATS = (".json", ".csv")


class ExportError(Exception):
    """One line for the user, and the command's exit status."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(clip(message, 400))
        self.exit_code = exit_code


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dataset",
        help="turn stored failures and reviewers' verdicts into test cases (a dataset for evaluate --dataset)",
        description="Datasets from the result store: `dataset export` writes tasks for `agent-monitor evaluate "
        "--dataset`.",
    )
    commands = parser.add_subparsers(dest="dataset_command", metavar="COMMAND", required=True)
    export = commands.add_parser(
        "export",
        help="write the stored failing (or reviewed) results' traces as tasks (JSON or CSV)",
        description="Write one task per trace of the matching results, newest first: the failing results (of "
        "--evaluator, since --since), those with a failure signature (--signature), or with --reviewed every result "
        "a reviewer reviewed (whatever its verdict; --since then on the review's time). A task's id is the trace "
        "id and its input the trace's; its expected output is a reviewer's corrected label; a run a reviewer "
        f"confirmed as good gives the expected tool trajectory and constraints (its cost and latency x{MARGIN:g}); "
        "the metadata names the trace, evaluators, signatures and reviewers. Times: RFC 3339, Unix seconds, or a "
        "duration before now (30m, 1h, 7d). Without --store: the store of the config (store.url, else store.path; "
        f"--config, else ${CONFIG_ENV}, else the embedded default). Exit 1 when the store cannot be read or nothing "
        "matches, 2 for bad arguments or an invalid config.",
    )
    export.add_argument("--reviewed", action="store_true", help="only results with a review in force (any verdict)")
    export.add_argument("--evaluator", help="only this evaluator's results (its metric label)")
    export.add_argument("--signature", metavar="ID", help="only failing results with this failure signature")
    export.add_argument("--since", metavar="TIME", help="evaluated (with --reviewed: reviewed) at or after TIME")
    export.add_argument(
        "--limit", type=_count, default=DEFAULT_LIMIT, metavar="N", help=f"at most N tasks (default {DEFAULT_LIMIT})"
    )
    export.add_argument(
        "--store",
        metavar="FILE|URL",
        help="the result store: a SQLite file or a postgresql:// URL (default: the config's store.url, else "
        "store.path, data/results.db by default)",
    )
    add_config_argument(export)
    export.add_argument("--name", help="the dataset's name (default: the output file's name without its suffix)")
    export.add_argument("-o", "--output", required=True, metavar="FILE", help="tasks.json or tasks.csv")
    export.set_defaults(handler=run)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        dataset, output = export(args, time.time())
    except InvalidConfig as exc:
        return exc.report(err)
    except ExportError as exc:
        print(f"agent-monitor dataset export: {exc}", file=err)
        return exc.exit_code
    tasks = dataset.tasks
    answers = sum(1 for t in tasks if t.expected_output is not None)
    paths = sum(1 for t in tasks if t.expected_trajectory is not None)
    out.write(
        f"wrote {len(tasks)} task{'' if len(tasks) == 1 else 's'} to {output}: {answers} with an expected output "
        f"(a reviewer's correction), {paths} with an expected trajectory and constraints (runs confirmed good)\n"
    )
    return 0


def export(args: argparse.Namespace, now: float) -> tuple[Dataset, Path]:
    """Read the matching results from the store and write their tasks to `args.output`; (dataset, path)."""
    output = Path(args.output)
    if output.suffix.lower() not in FORMATS:
        raise ExportError(f"-o must name a .json or .csv file, got {str(output)!r}", 2)
    try:
        since = parse_time("since", args.since, now) if args.since is not None else None
    except BadRequest as exc:
        raise ExportError(f"--{exc}", 2) from None
    selection = Selection(args.reviewed, args.evaluator, args.signature, since)
    store = store_location(args)
    try:
        reader = open_store_reader(store)
    except (StoreUnreadable, StoreSchemaError) as exc:
        raise ExportError(str(exc)) from None
    if not isinstance(reader, StoreReviewReader):  # what open_store_reader opens: it reads the reviews too
        raise TypeError(f"not a store reader: {type(reader).__name__}")
    try:
        dataset = Dataset(name=args.name or output.stem, tasks=_tasks(reader, selection, args.limit, now))
    except NoSuchSignature:
        raise ExportError(f"no failing result with signature {args.signature!r} in {_where(store)}") from None
    except (StoreUnavailable, StoreSchemaError) as exc:
        raise ExportError(str(exc)) from None
    finally:
        reader.close()
    if not dataset.tasks:
        raise ExportError(f"no {_what(selection)} in {_where(store)}: nothing written")
    try:
        if output.suffix.lower() == ".csv":
            dataset.to_csv(output)
        else:
            dataset.to_json(output)
    except OSError as exc:
        raise ExportError(f"cannot write {output}: {exc.strerror or exc}") from None
    return dataset, output


def _tasks(reader: StoreReviewReader, selection: Selection, limit: int, now: float) -> list:
    picked = select(reader, selection, limit, now)
    return [
        task_of(trace_id, results, reader.trace(trace_id), reader.reviews_of_trace(trace_id), selection.evaluator)
        for trace_id, results in picked.items()
    ]


def _where(store: str) -> str:
    """The store for messages (a URL without its password)."""
    return redact_url(store) if is_url(store) else store


def _what(selection: Selection) -> str:
    """The selection in words, for the message saying nothing matched."""
    what = "reviewed results" if selection.reviewed else "failing results"
    if selection.evaluator is not None:
        what += f" of {selection.evaluator}"
    if selection.signature is not None:
        what += f" with signature {selection.signature}"
    if selection.since is not None:
        what += f" since {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(selection.since))}"
    return what
