"""The pretraining corpus: tokenised once (cached on disk), packed into full sequences.

Corpus files hold one sentence a line; a blank line (and the end of each file) ends a document;
``.gz`` files are read as text. The files are streamed in blocks of about 1 MiB and each block is
tokenised in one batch call of the fast (Rust) tokenizer; the token ids are appended to a flat
file (``tokens.bin``, with ``[SEP]`` after each document), so memory does not grow with the
corpus. The file is cached under a key made of the corpus files (path, size, modification time)
and the tokenizer (its serialised form), so a second run, or a run with another masking, reads
it back at once. Training reads it memory-mapped. Beside it, ``sentence_ends.bin`` (int64) holds
the stream offset just past each sentence (each non-blank line that has tokens) and
``document_ends.bin`` (int64) the offset of each document's ``[SEP]``: next-sentence prediction
rebuilds documents of sentences from them (:func:`bertkit.tasks.pretrain.nsp.stream_documents`).

Packing (no next-sentence prediction, as SpanBERT and RoBERTa found better): sequence i is
``[CLS] + stream[i*(T-2) : (i+1)*(T-2)] + [SEP]`` for ``T = --max-seq-length``, so every batch is
full and holds no padding; a sequence may span a document break (the ``[SEP]`` between them).

References:
    Joshi et al. (2020), SpanBERT, sec. 3.3 (single segments, no NSP);
    Liu et al. (2019), RoBERTa, sec. 4.2 (FULL-SENTENCES packing across documents).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from bertkit.errors import BertkitError
from bertkit.io import atomic_path, write_json
from bertkit.vocab.corpus import CorpusStats, _iter_file_blocks, resolve_corpus_files
from bertkit.vocab.wordpiece import tokenizers_parallelism as _rust_threads

CACHE_VERSION = 3


def default_cache_dir() -> Path:
    """``$BERTKIT_CACHE`` or ``~/.cache/bertkit``, plus ``pretrain/``."""
    root = os.environ.get("BERTKIT_CACHE") or Path.home() / ".cache" / "bertkit"
    return Path(root) / "pretrain"


@dataclass
class TokenStream:
    """A tokenised corpus: flat ids (``[SEP]`` after each document), memory-mapped.

    Attributes:
        ids: ``[N]`` uint16/int32 memory-mapped token ids.
        unigram: ``[V]`` int64 counts of each id (document separators excluded).
        documents: number of documents.
        path: the cache folder.
        cached: True when it was read from the cache rather than tokenised now.
        sentence_ends: ``[S]`` int64 memory-mapped offsets just past each sentence.
        document_ends: ``[D]`` int64 memory-mapped offsets of each document's ``[SEP]``.
        skipped_lines: corpus lines dropped as not UTF-8 or binary (``skip_bad_lines``).
    """

    ids: np.ndarray
    unigram: np.ndarray
    documents: int
    path: Path
    cached: bool
    sentence_ends: np.ndarray | None = None
    document_ends: np.ndarray | None = None
    skipped_lines: int = 0


def cache_key(files: list[Path], tokenizer, skip_bad_lines: bool = False) -> str:
    """SHA-256 over the files' absolute paths, sizes and modification times and the tokenizer
    (and ``skip_bad_lines`` when set: a corpus read with bad lines dropped is cached apart, so a
    run without the option still reports the bad line)."""
    h = hashlib.sha256(f"v{CACHE_VERSION}".encode())
    if skip_bad_lines:
        h.update(b"skip-bad-lines\0")
    for f in files:
        st = f.stat()
        h.update(f"{f.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    h.update(_plain_backend(tokenizer).to_str().encode())  # padding/truncation state left out
    return h.hexdigest()[:24]


def _plain_backend(tokenizer):
    """The Rust tokenizer with padding and truncation off (a ``tokenizer.json`` may set them:
    packing needs every piece of every line, unpadded)."""
    backend = copy.deepcopy(tokenizer.backend_tokenizer)
    backend.no_padding()
    backend.no_truncation()
    return backend


def _encode_block(text: str, backend, sep: int, open_doc: bool
                  ) -> tuple[np.ndarray, int, bool, np.ndarray, np.ndarray]:
    """Token ids of one block of lines, ``sep`` after each document a blank line ends.

    Returns:
        (ids, documents ended in the block, whether a document is still open at its end,
        ``[s]`` int64 offsets in ``ids`` just past each sentence, ``[d]`` int64 offsets in ``ids``
        of each document separator).
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the block's final line break
    blank = np.fromiter((not line.strip() for line in lines), dtype=bool, count=len(lines))
    content = [line for line, b in zip(lines, blank) if not b]
    encs = backend.encode_batch(content, add_special_tokens=False)
    pieces, ended = [], 0
    is_sentence: list[bool] = []
    k = 0
    for is_blank in blank.tolist():  # one step per line, not per token
        if is_blank:
            if open_doc:
                pieces.append((sep,))
                is_sentence.append(False)
                ended += 1
            open_doc = False
        else:
            ids = encs[k].ids
            k += 1
            if ids:
                pieces.append(ids)
                is_sentence.append(True)
                open_doc = True
    flat = np.fromiter(itertools.chain.from_iterable(pieces), dtype=np.int64)
    ends = np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)))
    kind = np.asarray(is_sentence, dtype=bool)
    return flat, ended, open_doc, ends[kind], ends[~kind] - 1


def tokenize_corpus(paths: Iterable[str | Path], tokenizer, cache_dir: str | Path | None = None,
                    console=None, skip_bad_lines: bool = False) -> TokenStream:
    """Tokenise a corpus into a cached :class:`TokenStream` (or read it from the cache).

    Args:
        paths: files (plain text or ``.gz``) and directories of them.
        tokenizer: a fast Hugging Face tokenizer with ``[SEP]``.
        cache_dir: where cached corpora live (default :func:`default_cache_dir`).
        skip_bad_lines: drop lines that are not UTF-8 or hold NUL bytes (counted in
            ``TokenStream.skipped_lines``) instead of failing.

    Raises:
        BertkitError: a missing path, a file that is not UTF-8 text (file and line given; without
            ``skip_bad_lines``), a corrupt ``.gz`` file, or a corpus with no text.
    """
    files = resolve_corpus_files(paths)
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    folder = root / cache_key(files, tokenizer, skip_bad_lines)
    dtype = np.uint16 if len(tokenizer) < 65535 else np.int32
    if not (folder / "meta.json").is_file():
        sep = tokenizer.sep_token_id
        if sep is None:
            raise BertkitError("the tokenizer has no [SEP] token", expected="a BERT-style vocabulary")
        counts = np.zeros(len(tokenizer), dtype=np.int64)
        total, docs = 0, 0
        stats = CorpusStats()
        backend = _plain_backend(tokenizer)
        if console is not None:
            console.print(f"tokenising {len(files)} corpus file(s) into {folder}", highlight=False)
        with atomic_path(folder) as tmp, _rust_threads():
            tmp.mkdir(parents=True)
            sentences = 0
            with open(tmp / "tokens.bin", "wb") as out, \
                    open(tmp / "sentence_ends.bin", "wb") as sent_out, \
                    open(tmp / "document_ends.bin", "wb") as doc_out:
                for path in files:
                    open_doc = False
                    for text in _iter_file_blocks(path, skip_bad_lines=skip_bad_lines,
                                                  stats=stats, progress=None,
                                                  block_bytes=1 << 20):
                        ids, ended, open_doc, sent_ends, doc_ends = _encode_block(
                            text, backend, sep, open_doc)
                        docs += ended
                        body = np.delete(ids, doc_ends) if ended else ids
                        counts += np.bincount(body, minlength=len(counts))[:len(counts)]
                        ids.astype(dtype).tofile(out)
                        (sent_ends + total).tofile(sent_out)
                        (doc_ends + total).tofile(doc_out)
                        total += len(ids)
                        sentences += len(sent_ends)
                    if open_doc:  # the end of a file ends its last document
                        np.asarray([sep], dtype=dtype).tofile(out)
                        np.asarray([total], dtype=np.int64).tofile(doc_out)
                        total, docs = total + 1, docs + 1
            np.save(tmp / "unigram.npy", counts)
            write_json(tmp / "meta.json", {"tokens": total, "documents": docs,
                                           "sentences": sentences, "dtype": np.dtype(dtype).name,
                                           "skipped_lines": stats.skipped_lines,
                                           "files": [str(f) for f in files],
                                           "tokenizer": getattr(tokenizer, "name_or_path", "")})
        cached = False
    else:
        cached = True
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    if meta["tokens"] == 0:
        raise BertkitError("the corpus holds no text", file=files[0], expected="one sentence a line")
    ids = np.memmap(folder / "tokens.bin", dtype=np.dtype(meta["dtype"]), mode="r",
                    shape=(meta["tokens"],))
    sent = np.memmap(folder / "sentence_ends.bin", dtype=np.int64, mode="r",
                     shape=(meta["sentences"],)) if meta["sentences"] else np.zeros(0, np.int64)
    doc = np.memmap(folder / "document_ends.bin", dtype=np.int64, mode="r",
                    shape=(meta["documents"],)) if meta["documents"] else np.zeros(0, np.int64)
    return TokenStream(ids, np.load(folder / "unigram.npy"), meta["documents"], folder, cached,
                       sent, doc, int(meta.get("skipped_lines", 0)))


class PackedSequences:
    """Full sequences of ``length`` tokens cut from a :class:`TokenStream` (see module docstring).

    Args:
        stream: the tokenised corpus.
        length: T, tokens per sequence including ``[CLS]`` and ``[SEP]`` (>= 8).
        cls_id / sep_id: the special token ids.
        limit: keep only the first ``limit`` sequences (None: all).
    """

    def __init__(self, stream: TokenStream, length: int, cls_id: int, sep_id: int,
                 limit: int | None = None) -> None:
        self.ids = stream.ids
        self.length, self.cls_id, self.sep_id = length, cls_id, sep_id
        self.body = length - 2
        n = len(self.ids) // self.body
        self.count = n if limit is None else min(n, limit)

    def __len__(self) -> int:
        return self.count

    def get(self, index: np.ndarray) -> np.ndarray:
        """Sequences ``index`` (``[b]`` ints) as an ``[b, T]`` int64 array."""
        index = np.asarray(index, dtype=np.int64)
        pos = index[:, None] * self.body + np.arange(self.body)
        out = np.empty((len(index), self.length), dtype=np.int64)
        out[:, 0], out[:, -1] = self.cls_id, self.sep_id
        out[:, 1:-1] = self.ids[pos]
        return out
