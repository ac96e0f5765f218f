"""``bertkit vocab extend``: add domain words to a pretrained model's WordPiece vocabulary.

Candidates are the most frequent whole words of a vocabulary V (ranked by a corpus when one is
given, else by V's own token order) or of a corpus, that model M's tokenizer splits into two or
more pieces. Each new word is appended to M's WordPiece vocabulary (a word-initial token, so it
is a single token wherever it is a whole word; it can also become the first piece of a longer
word), and its rows are initialised from the pieces M used for it:

* input embedding: the mean of the pieces' embeddings;
* MLM output bias: the smallest of the pieces' biases (a whole word is at most as likely as
  its rarest piece), so the new token does not dominate predictions before training;
* the MLM decoder stays tied to the input embeddings (an untied decoder gets the mean rows).

Old token ids, embeddings and biases are unchanged, so M's outputs on text that tokenises
without new tokens are unchanged. SciBERT had to pretrain from scratch to use SciVocab; this
adapts an existing checkpoint instead.

Reference:
    Beltagy et al. (2019), SciBERT, sec. 2-3; Devlin et al. (2019), BERT, sec. 3.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Sequence

from bertkit.encoders import _short, quiet_transformers, resolve_model_source
from bertkit.errors import BertkitError
from bertkit.io import atomic_path
from bertkit.masking.base import word_boundary_rule
from bertkit.vocab.build import check_output_dir, peak_memory_mb
from bertkit.vocab.compare import plain_backend
from bertkit.vocab.corpus import count_words, resolve_corpus_files
from bertkit.vocab.registry import load_tokenizer, resolve_vocab


def _candidate_words(tokenizer, vocab: str | Path | None, corpus: Sequence | None,
                     skip_bad_lines: bool) -> list[str]:
    """Whole words in priority order, normalised as ``tokenizer`` normalises text."""
    backend = tokenizer.backend_tokenizer
    norm = backend.normalizer
    counts: Counter[str] = Counter()
    if corpus:
        for word, n in count_words(resolve_corpus_files(corpus),
                                   skip_bad_lines=skip_bad_lines).items():
            counts[norm.normalize_str(word) if norm is not None else word] += n
    if vocab is not None:
        domain = load_tokenizer(vocab)
        order = domain.get_vocab()
        # word-initial pieces, as the domain tokenizer itself marks them (not a hard-coded "##")
        rule, mark = word_boundary_rule(domain)
        if rule == "continuation":
            starts = {t: t for t in order if not t.startswith(mark)}
        elif rule == "start":
            starts = {t: t[len(mark):] for t in order if t.startswith(mark) and len(t) > len(mark)}
        else:
            starts = {t: t for t in order}
        words = [starts[t] for t in sorted(starts, key=order.__getitem__)]
        words = [norm.normalize_str(w) if norm is not None else w for w in words]
        if corpus:
            words.sort(key=lambda w: -counts.get(w, 0))
            words = [w for w in words if counts.get(w, 0) > 0]
        return list(dict.fromkeys(words))
    return [w for w, _ in counts.most_common()]


def select_new_words(tokenizer, candidates: Sequence[str], add: int) -> list[tuple[str, list[int]]]:
    """Keep the first ``add`` candidates that ``tokenizer`` splits into several pieces.

    A candidate qualifies when it is one alphabetic-or-alphanumeric pre-token, not special,
    not already a token, and splits into 2+ pieces.

    Returns:
        ``(word, piece_ids)`` pairs, at most ``add`` of them.
    """
    backend = plain_backend(tokenizer)
    vocab = tokenizer.get_vocab()
    pre = backend.pre_tokenizer
    pool = [w for w in candidates if w and w not in vocab and w.isalnum() and not w.isdigit()
            and (pre is None or len(pre.pre_tokenize_str(w)) == 1)]
    chosen: list[tuple[str, list[int]]] = []
    step = 4096
    for i in range(0, len(pool), step):
        batch = pool[i:i + step]
        for word, enc in zip(batch, backend.encode_batch(batch, add_special_tokens=False)):
            if len(enc.ids) > 1:
                chosen.append((word, list(enc.ids)))
                if len(chosen) == add:
                    return chosen
    return chosen


def write_extend_record(tmp: Path, out: Path, model: str | Path, tokenizer, added: int) -> None:
    """The extended model's ``bertkit.json``: ``task`` ``vocab extend``, the new vocabulary's
    checksum and the whole lineage of ``model`` under this step
    (:func:`bertkit.data.lineage.lineage_record`), so that an encoder pretrained on top of it, and
    bench, know every corpus its weights saw (issue 66, kind 13)."""
    from bertkit.data.lineage import lineage_record
    from bertkit.vocab.match import vocab_checksum

    step = {"name": Path(out).name, "made_by": "vocab extend", "corpus": [], "added": added}
    meta = {"task": "vocab extend", "base_model": str(model),
            "vocab_sha256": vocab_checksum(tokenizer), **lineage_record(step, model)}
    (tmp / "bertkit.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def extend_model(model: str | Path, out: str | Path, *, add: int,
                 vocab: str | Path | None = None, corpus: Sequence[str | Path] | None = None,
                 skip_bad_lines: bool = False, overwrite: bool = False) -> dict:
    """Add up to ``add`` domain words to model M's vocabulary and save model and tokenizer.

    Args:
        model: M: a masked-LM model directory or name (``minilm``); its tokenizer must be a
            BERT WordPiece tokenizer.
        out: output directory (Hugging Face format: ``AutoModelForMaskedLM`` and
            ``AutoTokenizer`` load it).
        add: N, the most words to add.
        vocab: V, a vocabulary whose whole words are the candidates.
        corpus: text files or directories whose frequent words are the candidates (or rank V's).
        skip_bad_lines: drop non-UTF-8 corpus lines instead of failing.
        overwrite: replace an existing output directory.

    Returns:
        ``{"model", "old_size", "new_size", "added", "words", "seconds", "peak_memory_mb"}``;
        ``words`` lists the first 50 added words with their old pieces.

    Raises:
        BertkitError: neither V nor a corpus, bad ``add``, a model that cannot be loaded or is
            not WordPiece, an existing output directory.

    Reference:
        Beltagy et al. (2019), SciBERT, sec. 2-3; Devlin et al. (2019), sec. 3.
    """
    start = time.perf_counter()
    if vocab is None and not corpus:
        raise BertkitError("give --vocab or --corpus", expected="the source of the new words")
    if add < 1:
        raise BertkitError(f"--add must be positive, got {add}")
    out = check_output_dir(out, overwrite)
    tokenizer = load_tokenizer(model)
    net = _load_masked_lm(model, tokenizer)
    candidates = _candidate_words(tokenizer, vocab, corpus, skip_bad_lines)
    chosen = select_new_words(tokenizer, candidates, add)
    if not chosen:
        raise BertkitError("no candidate word is missing from the model's vocabulary",
                           expected="a vocabulary or corpus with words the model splits")
    tokens, old_size = _add_rows(net, tokenizer, chosen, model)
    new_tok = _extended_tokenizer(tokenizer, tokens)
    info = {"model": str(model), "old_size": old_size, "new_size": len(tokens),
            "added": len(chosen),
            "words": [{"word": w, "old_pieces": tokenizer.convert_ids_to_tokens(ids)}
                      for w, ids in chosen[:50]]}
    with atomic_path(out) as tmp:
        net.save_pretrained(str(tmp))
        new_tok.save_pretrained(str(tmp))
        (tmp / "vocab.txt").write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
        info["seconds"] = round(time.perf_counter() - start, 2)
        info["peak_memory_mb"] = peak_memory_mb()
        (tmp / "extend.json").write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
        write_extend_record(tmp, out, model, new_tok, len(chosen))
    return info


def _load_masked_lm(model: str | Path, tokenizer):
    """M as an ``AutoModelForMaskedLM`` (a new MLM head where it has none).

    Raises:
        BertkitError: ``tokenizer`` is not WordPiece, or the model cannot be loaded.
    """
    from transformers import AutoModelForMaskedLM

    if type(tokenizer.backend_tokenizer.model).__name__ != "WordPiece":
        raise BertkitError("extend supports WordPiece (BERT-family) tokenizers only",
                           file=str(model))
    where = resolve_vocab(model)
    source = resolve_model_source(str(where))
    quiet_transformers()  # a model without an MLM head loads with a new one: no load report
    try:
        return AutoModelForMaskedLM.from_pretrained(source)
    except Exception as exc:
        raise BertkitError(f"cannot load a masked-LM model: {_short(exc)}",
                           file=str(where), expected="a model directory or hub id") from None


def _add_rows(net, tokenizer, chosen: list[tuple[str, list[int]]],
              model: str | Path) -> tuple[list[str], int]:
    """Grow ``net``'s embeddings (and an untied decoder and the MLM bias) by a row per chosen
    word, initialised from its pieces as the module docstring says.

    Returns:
        the new vocabulary (index = id: the old tokens, ``[unused_extendN]`` up to the old
        embedding size where it exceeds the vocabulary, the new words) and the old size.

    Raises:
        BertkitError: the old vocabulary's ids have gaps.
    """
    import torch

    old_vocab = tokenizer.backend_tokenizer.get_vocab()
    tokens = sorted(old_vocab, key=old_vocab.__getitem__)
    old_size = len(tokens)
    if [old_vocab[t] for t in tokens] != list(range(old_size)):
        raise BertkitError("the model's vocabulary has gaps in its ids", file=str(model))
    emb_rows = net.get_input_embeddings().weight.shape[0]
    net.resize_token_embeddings(max(emb_rows, old_size) + len(chosen), mean_resizing=False)
    first_new = max(emb_rows, old_size)
    if first_new != old_size:  # embedding matrix larger than the vocabulary: pad the vocab
        tokens += [f"[unused_extend{i}]" for i in range(first_new - old_size)]
    emb = net.get_input_embeddings().weight
    head = net.get_output_embeddings()
    tied = head is not None and head.weight.data_ptr() == emb.data_ptr()
    with torch.no_grad():
        for k, (word, ids) in enumerate(chosen):
            row = first_new + k
            emb[row] = emb[ids].mean(dim=0)
            if head is not None and not tied:
                head.weight[row] = head.weight[ids].mean(dim=0)
            if head is not None and getattr(head, "bias", None) is not None:
                head.bias[row] = head.bias[ids].min()
    return tokens + [w for w, _ in chosen], old_size


def _extended_tokenizer(tokenizer, tokens: list[str]):
    """A ``BertTokenizerFast`` over ``tokens`` with ``tokenizer``'s case, accent and length
    settings."""
    from transformers import BertTokenizerFast

    return BertTokenizerFast(
        vocab={t: i for i, t in enumerate(tokens)},
        do_lower_case=bool(getattr(tokenizer, "do_lower_case", True)),
        strip_accents=getattr(tokenizer, "strip_accents", None),
        tokenize_chinese_chars=getattr(tokenizer, "tokenize_chinese_chars", True),
        model_max_length=getattr(tokenizer, "model_max_length", 512))
