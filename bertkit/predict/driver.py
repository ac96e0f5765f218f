"""The streaming ``predict`` driver: chunks in, whole records out, in input order.

:func:`stream_predict` reads the input as records (:mod:`bertkit.predict.records`), groups
them into chunks of ``chunk_size`` records (chunk ``c`` = records ``c*size .. c*size+size-1``,
the same in every run), hands each chunk to the task's predictor (which sorts the chunk by
length for its batches) and appends the chunk's outputs, in input order, to ``OUTPUT.part``; after
each chunk the state file (:mod:`bertkit.predict.state`) records where the input and output
stand (a constant cost a chunk: chunk ranges and skipped lines go to its log), and at the
end ``OUTPUT.part`` is renamed to ``OUTPUT``. Memory holds one chunk, whatever the input's size.

* ``--resume``: the output is cut back to its last whole record and reading continues there.
* ``--shard I/N``: only chunks ``c`` with ``c % N == I - 1``; shard outputs carry their chunks'
  byte ranges in their state, and :func:`bertkit.predict.merge.merge_shards` interleaves them.
* A record that cannot be read is an error naming file and line, with everything before it
  written and resumable (so is a ``.gz`` input cut off before its end: the records read whole
  are written, and ``--resume`` continues once the file is whole, a longer file with the same
  beginning); with ``skip_bad_lines`` it is counted, reported and skipped (the task
  may give it an output record saying so, as JSON lines do).
"""

from __future__ import annotations

import functools
import gzip
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable

from rich.console import Console

from bertkit.errors import BertkitError
from bertkit.predict.progress import StreamProgress
from bertkit.predict.records import InputCutOff, Position, Record, iter_records
from bertkit.predict.state import (VERSION, check_resume, input_identity, load_state, log_lines,
                                     log_path, model_identity, output_lock, part_path, read_log,
                                     save_state, state_path)

CHUNK_SIZE = 2000
"""Records per chunk by default: a few seconds of work on a CPU; what a crash can cost."""


@dataclass
class StreamPredictor:
    """What a task gives the driver: a model loaded once and a function from a chunk's records
    to their outputs.

    Attributes:
        kind: the record kind to read (:data:`bertkit.predict.records.KINDS`: ``text``,
            ``jsonl``, ``conll``, ``conllu``, ``conll2012`` or ``file``).
        predict: ``records -> outputs``, one per record, in order: the record's output text
            (with its line ends) or None for none (a blank line in CoNLL output).
        model_path: the saved model's folder (its identity is checked on ``--resume``).
        separator: text written between two outputs (CoNLL: the blank line between sentences).
        skipped: the output of a skipped unreadable record (None: none, the skip is only
            reported).
        unit: what a record is, for progress (``sentences``).
        settings: what else shapes the output (formats), checked on ``--resume``.
        check: ``record -> reason`` it cannot be predicted (None: it can), called on every
            readable record before its chunk is predicted (a JSON object without the text
            field); such a record is a bad line as an undecodable one is. It may keep what it
            parsed in ``record.item``.
        expected: what a record should be, for the message about a bad one.
        finish: called once when the whole input is done (a warning summed over the chunks).
    """

    kind: str
    predict: Callable[[list[Record]], list[str | None]]
    model_path: str
    separator: str = ""
    skipped: Callable[[Record], str | None] = lambda rec: None
    unit: str = "sentences"
    settings: dict[str, Any] = field(default_factory=dict)
    check: Callable[[Record], str | None] | None = None
    expected: str = "UTF-8 text"
    finish: Callable[[], None] | None = None


@dataclass(frozen=True)
class StreamOptions:
    """How to stream: ``chunk_size`` records a chunk; ``resume`` an unfinished run; ``shard``
    ``(I, N)``, 1-based, or None; ``skip_bad_lines``."""

    chunk_size: int = CHUNK_SIZE
    resume: bool = False
    shard: tuple[int, int] | None = None
    skip_bad_lines: bool = False


@dataclass
class StreamSummary:
    """What a run did: ``records`` read (a resumed run: with those before), ``skipped``
    ``[line, reason]``, ``seconds``, the ``output`` written (None: a stream) and ``this_run``,
    the records this process predicted (what ``seconds`` were spent on; None: ``records``)."""

    records: int
    skipped: list
    seconds: float
    output: Path | None
    this_run: int | None = None


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` as ``(I, N)``, ``1 <= I <= N``.

    >>> parse_shard("2/4")
    (2, 4)

    Raises:
        BertkitError: not of that form.
    """
    i, sep, n = str(text).partition("/")
    if sep and i.strip().isdigit() and n.strip().isdigit() and 1 <= int(i) <= int(n):
        return int(i), int(n)
    raise BertkitError(f"--shard {text!r} is not I/N", expected="I/N with 1 <= I <= N, e.g. 2/4")


def shard_output(output: str | Path, shard: tuple[int, int]) -> Path:
    """The naming convention of a shard's output: ``out.conll`` -> ``out.conll.shard-2-of-4``
    (a ``.gz`` suffix stays last: ``out.jsonl.gz`` -> ``out.jsonl.shard-2-of-4.gz``)."""
    p = Path(output)
    tag = f".shard-{shard[0]}-of-{shard[1]}"
    return p.with_name(p.name[:-3] + tag + ".gz") if p.name.endswith(".gz") else \
        p.with_name(p.name + tag)


class _Sink:
    """Appends chunks to a file (through gzip, one member a chunk, for a ``.gz`` name) or a
    text stream; ``offset`` is the bytes written."""

    def __init__(self, target: Path | IO[str], offset: int = 0) -> None:
        self.offset = offset
        self.stream = None if isinstance(target, Path) else target
        self.handle = None
        if isinstance(target, Path):
            self.gz = target.name.endswith(".gz") or target.name.endswith(".gz.part")
            target.parent.mkdir(parents=True, exist_ok=True)
            self.handle = open(target, "r+b" if target.exists() else "wb")
            self.handle.truncate(offset)  # whole records only: a half-written one goes
            self.handle.seek(offset)

    def write_bytes(self, data: bytes) -> tuple[int, int]:
        """Append ``data`` as it is (a file target only) and sync it to disk."""
        start = self.offset
        self.handle.write(data)
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.offset += len(data)
        return start, self.offset

    def write(self, text: str) -> tuple[int, int]:
        start = self.offset
        if self.stream is not None:
            self.stream.write(text)
            self.stream.flush()
            self.offset += len(text)
            return start, self.offset
        data = text.encode("utf-8")
        if self.gz and data:
            data = gzip.compress(data, mtime=0)
        self.handle.write(data)
        self.handle.flush()
        os.fsync(self.handle.fileno())  # on disk before the state says so
        self.offset += len(data)
        return start, self.offset

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


def _fresh_state(pred: StreamPredictor, input_path: str, opts: StreamOptions) -> dict:
    return {"version": VERSION, "input": input_identity(input_path),
            "model": model_identity(pred.model_path),
            "settings": {**pred.settings, "kind": pred.kind, "chunk_size": opts.chunk_size,
                         "shard": list(opts.shard) if opts.shard else None},
            "separator": pred.separator, "next": [0, 1, 0], "output_offset": 0,
            "written": 0, "records": 0, "log_offset": 0, "complete": False}


def stream_predict(pred: StreamPredictor, input_path: str, output: str | Path | IO[str],
                   opts: StreamOptions = StreamOptions(),
                   console: Console | None = None) -> StreamSummary:
    """Predict every record of ``input_path`` chunk by chunk (see the module docstring).

    Args:
        output: a file path (written as ``OUTPUT.part`` with ``OUTPUT.state.json`` beside it,
            renamed to ``OUTPUT`` at the end; a shard keeps its state file for the merge), or a
            text stream (standard output: no state, no resume).

    Returns:
        a :class:`StreamSummary`.

    Raises:
        BertkitError: an unreadable record (without ``skip_bad_lines``; the records before it
            are written and the run can be resumed), ``--resume`` onto another input, model or
            settings, or with nothing to resume; another run writing the same output
            (:func:`~bertkit.predict.state.output_lock`); whatever the task's predictor raises.
    """
    if not isinstance(output, (str, Path)):
        return _stream_predict(pred, input_path, output, opts, console)
    with output_lock(output):
        return _stream_predict(pred, input_path, output, opts, console)


def _stream_predict(pred: StreamPredictor, input_path: str, output: str | Path | IO[str],
                    opts: StreamOptions, console: Console | None) -> StreamSummary:
    t0 = time.monotonic()
    to_file = isinstance(output, (str, Path))
    state = _fresh_state(pred, input_path, opts) if to_file else None
    if to_file:
        final = Path(output)
        part, spath = part_path(final), state_path(final)
        old = load_state(spath) if spath.exists() else None
        if opts.resume and old is not None and old.get("complete") and final.exists():
            return StreamSummary(old["records"], old["skipped"], 0.0, final, 0)  # done already
        if opts.resume:
            if not part.exists() and final.exists():
                raise BertkitError(f"nothing to resume: {final} is already a finished output "
                                   f"(a run renames OUTPUT.part to OUTPUT when it ends)",
                                   file=final, expected="another -o, or the command without "
                                   "--resume to predict it again")
            if old is None or not part.exists():
                raise BertkitError("nothing to resume: no unfinished output here", file=part,
                                   expected="the output of an interrupted predict (run "
                                            "without --resume to start)")
            check_resume(old, state, spath)
            if old.pop("cut_off", None) is not None:  # a cut-off input, now longer: read on
                old["input"] = state["input"]
            state = old
        elif old is not None and console is not None:
            console.print(f"[yellow]note:[/] replacing the unfinished {part} "
                          f"({old.get('records', 0)} records); --resume would continue it",
                          highlight=False)
        sink = _Sink(part, state["output_offset"] if opts.resume else 0)
        log = _Sink(log_path(spath), state["log_offset"] if opts.resume else 0)
    else:
        sink, log = _Sink(output), None
    shard = opts.shard
    size = state["input"]["size"] if state else (os.path.getsize(input_path)
                                                 if Path(input_path).is_file() else 0)
    start = Position(*state["next"]) if state else Position()
    progress = StreamProgress(console, size, pred.unit, done=state["records"] if state else 0)
    records: list[Record] = []
    skipped_here: list[list] = []  # this run's skipped lines (a file's are also in its log)
    current, done = -1, state["records"] if state else 0
    first = done  # records predicted before this run (a resumed one)
    written = [state["written"] if state else 0]

    def flush(chunk: int, nxt: Position, raw: int) -> None:
        nonlocal done
        good = [r for r in records if r.bad is None]
        outs = iter(pred.predict(good) if good else [])
        parts = []
        for rec in records:
            text = pred.skipped(rec) if rec.bad is not None else next(outs)
            if text is None:
                continue
            prefix = pred.separator if (written[0] or shard) else ""
            parts.append(prefix + text)
            written[0] += 1
        begin, end = sink.write("".join(parts))
        done += len(records)
        if state is not None:  # the log first, then the state that says how much of it counts
            bad = [[r.line, r.bad] for r in records if r.bad is not None]
            _, log_end = log.write_bytes(log_lines([chunk, begin, end] if shard else None, bad))
            state.update(next=[nxt.offset, nxt.line, nxt.index], output_offset=end,
                         written=written[0], records=done, log_offset=log_end)
            save_state(spath, state)
        records.clear()
        release_memory()
        progress.update(done, raw)

    failed = True
    try:
        last = None
        for rec in iter_records(input_path, pred.kind, start):
            chunk = rec.index // opts.chunk_size
            if chunk != current:
                if records:
                    flush(current, Position(rec.start, rec.line, rec.index), rec.raw)
                current = chunk
            last = rec
            if not _owned(chunk, shard):
                continue
            if rec.bad is None and pred.check is not None:
                rec.bad = pred.check(rec)
            if rec.bad is not None:
                if not opts.skip_bad_lines:
                    if records:
                        flush(chunk, Position(rec.start, rec.line, rec.index), rec.raw)
                    raise BertkitError(_bad_message(rec, to_file, done), file=Path(input_path),
                                       line=rec.line, expected=pred.expected)
                skipped_here.append([rec.line, rec.bad])
                _note_skip(console, input_path, rec)
            records.append(rec)
        if records:
            flush(current, Position(last.end, last.line + 1, last.index + 1), size)
        if last is None and start.index == 0:
            raise BertkitError("no text found", file=Path(input_path),
                               expected=pred.expected)
        failed = False
    except InputCutOff as exc:  # keep every whole record before the cut, then say so
        if records:
            last_rec = records[-1]
            nxt = (last_rec.rows[-1][0] if last_rec.rows else last_rec.line) + 1
            flush(current, Position(last_rec.end, nxt, last_rec.index + 1), size)
        kept = (f"; the {done} records before it are written to {part}: once the file is whole "
                f"(the same beginning, longer), the same command with --resume continues "
                f"after them") if to_file and done else ""
        if state is not None and done:
            state["cut_off"] = {"line": exc.reached, "size": state["input"]["size"]}
            save_state(spath, state)
        raise BertkitError(exc.message + kept, file=exc.file, line=exc.line,
                           expected=exc.expected) from None
    except KeyboardInterrupt:  # Ctrl-C: say what is kept and how to go on (not a silent 130)
        if not (to_file and (done or opts.resume)):
            raise
        raise BertkitError(f"stopped (Ctrl-C) after {done} records; they are kept in {part} "
                           f"({spath.name}): run the same command with --resume to continue",
                           exit_code=130) from None
    finally:
        sink.close()
        if log is not None:
            log.close()
        progress.close()
        # failed with nothing written: leave nothing behind (a shard owning no chunk of a short
        # input finishes empty, and keeps its state for the merge)
        if to_file and failed and done == 0 and not opts.resume:
            part.unlink(missing_ok=True)
            spath.unlink(missing_ok=True)
            log_path(spath).unlink(missing_ok=True)
    if pred.finish is not None:
        pred.finish()
    skipped = read_log(log_path(spath), state["log_offset"])[1] if to_file else skipped_here
    if to_file:
        state["complete"] = True
        save_state(spath, state)
        os.replace(part, final)
        if not shard:
            spath.unlink()
            log_path(spath).unlink(missing_ok=True)
    return StreamSummary(done, skipped, time.monotonic() - t0, Path(output) if to_file else None,
                         done - first)


def release_memory() -> None:
    """Give the C heap's free pages back to the system after a chunk (glibc ``malloc_trim(0)``;
    nothing elsewhere). A chunk's tensors of many shapes leave freed blocks spread over glibc's
    arenas that ``free`` keeps, so a process's RSS crept up chunk after chunk although the memory
    it held did not grow (``benchmarks/results/predict_stream/predict_memory_trim.log``)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS, Windows)."""
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def _owned(chunk: int, shard: tuple[int, int] | None) -> bool:
    return shard is None or chunk % shard[1] == shard[0] - 1


def _bad_message(rec: Record, to_file: bool, done: int) -> str:
    tail = (f"; the {done} records before it are written: continue with --resume "
            "--skip-bad-lines, or fix the line and start again") if to_file and done else \
        "; --skip-bad-lines skips such lines and counts them"
    return rec.bad + tail


def _note_skip(console: Console | None, input_path: str, rec: Record) -> None:
    if console is not None:
        console.print(f"[yellow]skipped:[/] {input_path}:{rec.line}: {rec.bad}", highlight=False)
