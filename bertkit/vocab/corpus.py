"""Streaming corpus reader: plain text files, ``.gz`` files and directories of them.

The corpus is read in blocks of about 1 MiB that end on a line break, so memory use does not grow
with the corpus size and a corpus larger than memory works. Every block is checked for NUL bytes
(a binary file) and decoded as strict UTF-8; a bad byte is reported with its file, line and byte
offset, or, with ``skip_bad_lines``, the offending lines are dropped and counted.

Reference:
    Beltagy et al. (2019), SciBERT, sec. 2: the vocabulary is built on the full-text corpus.
"""

from __future__ import annotations

import gzip
import zlib
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from bertkit.errors import BertkitError

BLOCK_BYTES = 1 << 20

ProgressFn = Callable[[int], None]


@dataclass
class CorpusStats:
    """Counts gathered while a corpus is streamed.

    Attributes:
        files: the corpus files read, in reading order.
        lines: non-blank lines yielded.
        words: whitespace-separated words (ASCII whitespace), skipped lines included.
        bytes: bytes read from disk (compressed size for ``.gz``).
        skipped_lines: lines dropped as not UTF-8 or binary (only with ``skip_bad_lines``).
    """

    files: list[str] = field(default_factory=list)
    lines: int = 0
    words: int = 0
    bytes: int = 0
    skipped_lines: int = 0


def resolve_corpus_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand corpus arguments into a sorted list of files.

    Args:
        paths: files (plain text or ``.gz``) and directories; a directory contributes every
            non-hidden file under it, recursively, in sorted order.

    Returns:
        The files, in argument order, each directory's files sorted.

    Raises:
        BertkitError: no path given, a path does not exist, or a directory holds no file.
    """
    files: list[Path] = []
    given = [Path(p) for p in paths]
    if not given:
        raise BertkitError("no corpus given", expected="one or more text files or directories")
    for path in given:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file()
                           and not any(part.startswith(".") for part in p.relative_to(path).parts))
            if not found:
                raise BertkitError("the corpus directory holds no file", file=path)
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise BertkitError("corpus file not found", file=path)
    return files


def _bad_text(path: Path, offset: int, line: int, what: str, gz: bool) -> BertkitError:
    where = "of the uncompressed file" if gz else "of the file"  # as data.conll.read_lines says it
    return BertkitError(f"{what} at byte {offset} {where}", file=path, line=line,
                        expected="UTF-8 text; pass --skip-bad-lines to drop such lines")


def _decode_block(block: bytes, path: Path, base: int, base_line: int, gz: bool,
                  skip_bad_lines: bool, stats: CorpusStats) -> str:
    """Decode one block that ends on a line break; raise or drop bad lines."""
    nul = block.find(b"\x00")
    if nul < 0:
        try:
            return block.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad, what = exc.start, "not valid UTF-8"
    else:
        bad, what = nul, "binary data (NUL byte)"
    if not skip_bad_lines:
        raise _bad_text(path, base + bad, base_line + block.count(b"\n", 0, bad) + 1, what, gz)
    kept = []
    for raw in block.split(b"\n"):
        try:
            if b"\x00" in raw:
                raise ValueError
            kept.append(raw.decode("utf-8"))
        except ValueError:
            stats.skipped_lines += 1
    return "\n".join(kept)


_ASCII_SPACE = np.zeros(256, dtype=bool)
_ASCII_SPACE[[9, 10, 11, 12, 13, 32]] = True


def count_words_bytes(block: bytes) -> int:
    """Whitespace-separated words in ``block`` (ASCII whitespace, as ``len(block.split())``),
    counted with NumPy: a word starts at a non-space byte after a space or at the start."""
    if not block:
        return 0
    space = _ASCII_SPACE[np.frombuffer(block, dtype=np.uint8)]
    return int(np.count_nonzero(~space[1:] & space[:-1])) + int(not space[0])


def _iter_file_blocks(path: Path, *, skip_bad_lines: bool, stats: CorpusStats,
                      progress: ProgressFn | None, block_bytes: int) -> Iterator[str]:
    gz = path.suffix == ".gz"
    with open(path, "rb") as raw:
        fh = gzip.GzipFile(fileobj=raw) if gz else raw
        base, base_line, seen = 0, 0, 0
        try:
            while True:
                block = fh.read(block_bytes)
                if not block:
                    break
                if not block.endswith(b"\n"):
                    block += fh.readline()
                text = _decode_block(block, path, base, base_line, gz, skip_bad_lines, stats)
                stats.words += count_words_bytes(block)
                if base == 0 and text.startswith("\ufeff"):
                    text = text[1:]
                base += len(block)
                base_line += block.count(b"\n")
                pos = raw.tell()
                stats.bytes += pos - seen
                if progress is not None:
                    progress(pos - seen)
                seen = pos
                yield text
        except (OSError, EOFError, zlib.error) as exc:
            raise BertkitError(f"cannot read the file: {exc}", file=path,
                               expected="a plain UTF-8 text file or a valid .gz file") from None


def iter_corpus_batches(files: Iterable[str | Path], *, skip_bad_lines: bool = False,
                        stats: CorpusStats | None = None, progress: ProgressFn | None = None,
                        block_bytes: int = BLOCK_BYTES) -> Iterator[list[str]]:
    """Stream a corpus as batches of non-blank lines (one batch per ~1 MiB block).

    Args:
        files: corpus files, e.g. from :func:`resolve_corpus_files`.
        skip_bad_lines: drop lines that are not UTF-8 or hold NUL bytes instead of failing.
        stats: filled in while reading (lines, words, bytes, skipped lines).
        progress: called with the number of bytes read from disk after each block.
        block_bytes: read size in bytes; a block is extended to the next line break.

    Yields:
        Lists of lines (``str``, without the line break), about ``block_bytes`` of text each.

    Raises:
        BertkitError: a file is not valid UTF-8 or is binary (file, line and byte offset given),
            or a ``.gz`` file is corrupt.
    """
    stats = stats if stats is not None else CorpusStats()
    for path in files:
        path = Path(path)
        stats.files.append(str(path))
        for text in _iter_file_blocks(path, skip_bad_lines=skip_bad_lines, stats=stats,
                                      progress=progress, block_bytes=block_bytes):
            lines = [line for line in text.split("\n") if line and not line.isspace()]
            if lines:
                stats.lines += len(lines)
                yield lines


def corpus_size(files: Iterable[str | Path]) -> int:
    """Total size in bytes of ``files`` on disk (the progress bar's total)."""
    return sum(Path(f).stat().st_size for f in files)


def count_words(files: Iterable[str | Path], *, skip_bad_lines: bool = False,
                stats: CorpusStats | None = None,
                progress: ProgressFn | None = None) -> Counter[str]:
    """Count the words of a corpus as BERT's pre-tokeniser splits them (case kept).

    Whitespace tokens are counted first (fast), then each distinct token is split on
    punctuation with ``tokenizers``' ``BertPreTokenizer``, so the cost of the second step
    grows with the number of distinct tokens, not with the corpus size.

    Returns:
        ``Counter`` mapping word -> occurrences.

    Raises:
        BertkitError: as :func:`iter_corpus_batches`.

    Reference:
        Devlin et al. (2019), BERT, sec. 3 and the released ``BasicTokenizer``.
    """
    from tokenizers.pre_tokenizers import BertPreTokenizer

    raw: Counter[str] = Counter()
    for lines in iter_corpus_batches(files, skip_bad_lines=skip_bad_lines, stats=stats,
                                     progress=progress):
        raw.update("\n".join(lines).split())
    pre = BertPreTokenizer()
    words: Counter[str] = Counter()
    for token, n in raw.items():
        for word, _ in pre.pre_tokenize_str(token):
            words[word] += n
    return words


@contextmanager
def progress_bar(description: str, total: int | None, enabled: bool) -> Iterator[ProgressFn | None]:
    """A rich progress bar over bytes on stderr; yields its ``advance(n)`` callback, or ``None``
    (not ``enabled``, or stderr is not a terminal, where the bar could not redraw)."""
    from rich.console import Console

    console = Console(stderr=True)
    if not enabled or not console.is_terminal:
        yield None
        return
    from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn,
                               TimeRemainingColumn, TransferSpeedColumn)

    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), TimeRemainingColumn(),
                  console=console) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)
