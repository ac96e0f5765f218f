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
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable

from rich.console import Console

from bertkit.errors import BertkitError
from bertkit.predict.progress import StreamProgress
from bertkit.predict.records import InputCutOff, Position, Record, iter_records
from bertkit.predict.sink import Sink
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
    """:func:`stream_predict`'s body, as steps: open the output (or find it finished), read and
    predict chunk by chunk, then make the output whole."""
    t0 = time.monotonic()
    run = _Run(pred, input_path, output, opts, console)
    if run.finished is not None:
        return run.finished
    run.read()
    if pred.finish is not None:
        pred.finish()
    return run.close(time.monotonic() - t0)


class _Run:
    """One streaming run: its output (a file with its state and log, or a stream), the records
    of the chunk being read and the counts; :meth:`read` reads and predicts, :meth:`close`
    renames the finished output into place."""

    def __init__(self, pred: StreamPredictor, input_path: str, output: str | Path | IO[str],
                 opts: StreamOptions, console: Console | None) -> None:
        self.pred, self.input_path, self.opts, self.console = pred, input_path, opts, console
        self.to_file = isinstance(output, (str, Path))
        self.finished: StreamSummary | None = None
        self.state: dict | None = None
        self.log: Sink | None = None
        if self.to_file:
            self._open_file(Path(output))
            if self.finished is not None:
                return
        else:
            self.sink = Sink(output)
        state = self.state
        self.size = state["input"]["size"] if state else (
            os.path.getsize(input_path) if Path(input_path).is_file() else 0)
        self.start = Position(*state["next"]) if state else Position()
        self.done = state["records"] if state else 0
        self.first = self.done  # records predicted before this run (a resumed one)
        self.written = state["written"] if state else 0
        self.progress = StreamProgress(console, self.size, pred.unit, done=self.done)
        self.records: list[Record] = []
        self.skipped_here: list[list] = []  # this run's skipped lines (a file's: in its log)
        self.current = -1

    def _open_file(self, final: Path) -> None:
        """The state to start from (fresh, or the one resumed) and the output's sinks; a
        resumed run already complete sets :attr:`finished`.

        Raises:
            BertkitError: ``--resume`` with nothing to resume, or onto another input, model or
                settings (:func:`~bertkit.predict.state.check_resume`).
        """
        self.final, self.part, self.spath = final, part_path(final), state_path(final)
        fresh = _fresh_state(self.pred, self.input_path, self.opts)
        old = load_state(self.spath) if self.spath.exists() else None
        if self.opts.resume and old is not None and old.get("complete") and final.exists():
            self.finished = StreamSummary(old["records"], old["skipped"], 0.0, final, 0)
            return
        if self.opts.resume:
            self.state = self._resumed(old, fresh)
        else:
            self.state = fresh
            if old is not None and self.console is not None:
                self.console.print(f"[yellow]note:[/] replacing the unfinished {self.part} "
                                   f"({old.get('records', 0)} records); --resume would continue "
                                   f"it", highlight=False)
        resume = self.opts.resume
        self.sink = Sink(self.part, self.state["output_offset"] if resume else 0)
        self.log = Sink(log_path(self.spath), self.state["log_offset"] if resume else 0)

    def _resumed(self, old: dict | None, fresh: dict) -> dict:
        """The state of the unfinished run to continue, checked against this run's."""
        if not self.part.exists() and self.final.exists():
            raise BertkitError(f"nothing to resume: {self.final} is already a finished output "
                               f"(a run renames OUTPUT.part to OUTPUT when it ends)",
                               file=self.final, expected="another -o, or the command without "
                               "--resume to predict it again")
        if old is None or not self.part.exists():
            raise BertkitError("nothing to resume: no unfinished output here", file=self.part,
                               expected="the output of an interrupted predict (run "
                                        "without --resume to start)")
        check_resume(old, fresh, self.spath)
        if old.pop("cut_off", None) is not None:  # a cut-off input, now longer: read on
            old["input"] = fresh["input"]
        return old

    def flush(self, chunk: int, nxt: Position, raw: int) -> None:
        """Predict the chunk's records, append their outputs, then log and save how far the
        run got (the log first, then the state that says how much of it counts)."""
        pred, shard = self.pred, self.opts.shard
        good = [r for r in self.records if r.bad is None]
        outs = iter(pred.predict(good) if good else [])
        parts = []
        for rec in self.records:
            text = pred.skipped(rec) if rec.bad is not None else next(outs)
            if text is None:
                continue
            parts.append((pred.separator if (self.written or shard) else "") + text)
            self.written += 1
        begin, end = self.sink.write("".join(parts))
        self.done += len(self.records)
        if self.state is not None:
            bad = [[r.line, r.bad] for r in self.records if r.bad is not None]
            _, log_end = self.log.write_bytes(log_lines([chunk, begin, end] if shard else None,
                                                        bad))
            self.state.update(next=[nxt.offset, nxt.line, nxt.index], output_offset=end,
                              written=self.written, records=self.done, log_offset=log_end)
            save_state(self.spath, self.state)
        self.records.clear()
        release_memory()
        self.progress.update(self.done, raw)

    def read(self) -> None:
        """Read, check and predict every record this run owns, a chunk at a time.

        Raises:
            BertkitError: an unreadable record (without ``skip_bad_lines``), an input cut off
                (:meth:`_cut_off`), Ctrl-C after records were kept, no record at all.
        """
        failed = True
        try:
            self._read_records()
            failed = False
        except InputCutOff as exc:
            self._cut_off(exc)
        except KeyboardInterrupt:  # Ctrl-C: say what is kept and how to go on (not a silent 130)
            if not (self.to_file and (self.done or self.opts.resume)):
                raise
            raise BertkitError(f"stopped (Ctrl-C) after {self.done} records; they are kept in "
                               f"{self.part} ({self.spath.name}): run the same command with "
                               f"--resume to continue", exit_code=130) from None
        finally:
            self._release(failed)

    def _read_records(self) -> None:
        last = None
        for rec in iter_records(self.input_path, self.pred.kind, self.start):
            chunk = rec.index // self.opts.chunk_size
            if chunk != self.current:
                if self.records:
                    self.flush(self.current, Position(rec.start, rec.line, rec.index), rec.raw)
                self.current = chunk
            last = rec
            if _owned(chunk, self.opts.shard):
                self._take(rec, chunk)
        if self.records:
            self.flush(self.current, Position(last.end, last.line + 1, last.index + 1),
                       self.size)
        if last is None and self.start.index == 0:
            raise BertkitError("no text found", file=Path(self.input_path),
                               expected=self.pred.expected)

    def _take(self, rec: Record, chunk: int) -> None:
        """Add ``rec`` to the chunk, checked; a bad one is skipped or ends the run.

        Raises:
            BertkitError: a bad record without ``skip_bad_lines`` (the chunk's records before
                it written first).
        """
        if rec.bad is None and self.pred.check is not None:
            rec.bad = self.pred.check(rec)
        if rec.bad is not None:
            if not self.opts.skip_bad_lines:
                if self.records:
                    self.flush(chunk, Position(rec.start, rec.line, rec.index), rec.raw)
                raise BertkitError(_bad_message(rec, self.to_file, self.done),
                                   file=Path(self.input_path), line=rec.line,
                                   expected=self.pred.expected)
            self.skipped_here.append([rec.line, rec.bad])
            _note_skip(self.console, self.input_path, rec)
        self.records.append(rec)

    def _cut_off(self, exc: InputCutOff) -> None:
        """Keep every whole record before the cut, then say so.

        Raises:
            BertkitError: always: the cut, and how ``--resume`` continues once the file is whole.
        """
        if self.records:
            last = self.records[-1]
            nxt = (last.rows[-1][0] if last.rows else last.line) + 1
            self.flush(self.current, Position(last.end, nxt, last.index + 1), self.size)
        kept = (f"; the {self.done} records before it are written to {self.part}: once the file "
                f"is whole (the same beginning, longer), the same command with --resume "
                f"continues after them") if self.to_file and self.done else ""
        if self.state is not None and self.done:
            self.state["cut_off"] = {"line": exc.reached, "size": self.state["input"]["size"]}
            save_state(self.spath, self.state)
        raise BertkitError(exc.message + kept, file=exc.file, line=exc.line,
                           expected=exc.expected) from None

    def _release(self, failed: bool) -> None:
        """Close the output, its log and the progress; a run that failed with nothing written
        leaves nothing behind (a shard owning no chunk of a short input finishes empty, and
        keeps its state for the merge)."""
        self.sink.close()
        if self.log is not None:
            self.log.close()
        self.progress.close()
        if self.to_file and failed and self.done == 0 and not self.opts.resume:
            self.part.unlink(missing_ok=True)
            self.spath.unlink(missing_ok=True)
            log_path(self.spath).unlink(missing_ok=True)

    def close(self, seconds: float) -> StreamSummary:
        """Mark the state complete and rename ``OUTPUT.part`` to ``OUTPUT`` (an unsharded run
        drops its state and log); the run's summary."""
        if not self.to_file:
            return StreamSummary(self.done, self.skipped_here, seconds, None,
                                 self.done - self.first)
        skipped = read_log(log_path(self.spath), self.state["log_offset"])[1]
        self.state["complete"] = True
        save_state(self.spath, self.state)
        os.replace(self.part, self.final)
        if not self.opts.shard:
            self.spath.unlink()
            log_path(self.spath).unlink(missing_ok=True)
        return StreamSummary(self.done, skipped, seconds, self.final, self.done - self.first)


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
