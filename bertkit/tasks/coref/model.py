"""The coreference model: a Hugging Face encoder plus a start-to-end span-ranking head.

Sources: Kirstain, Ram & Levy (2021), "Coreference Resolution without Span Representations"
(s2e: mention and antecedent scores from start/end projections and bilinear forms, no span
vectors; here the pair score leaves the mention scores out, see :class:`CorefHead`); Lee et al. (2017, 2018) for the candidate spans, pruning to ``lambda * W`` spans,
the dummy antecedent and the marginal log-likelihood of the gold antecedents; Joshi et al.
(2019) for the independent segments. Departures, stated: candidates are spans of *words* (a
word's vector is the mean of its pieces), within one sentence, at most ``max_span_width`` words;
a mention-detection loss (binary cross-entropy on every candidate, gold mentions incl. LitBank's
singletons positive, as Toshniwal et al. 2020 train theirs) is added to the antecedent loss, so
that one-mention entities can be output (a kept span with mention score > 0 and no link).

``model/`` holds the encoder and tokenizer (``AutoModel``/``AutoTokenizer`` load them),
``coref.safetensors`` (the head) and ``bertkit.json`` (the head's sizes and settings).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

from bertkit.errors import BertkitError
from bertkit.tasks.common import find_saved_model, load_pretrained, write_saved_model
from bertkit.tasks.coref.decode import clusters_from_antecedents, prune_spans

HEAD_FILE = "coref.safetensors"


class CorefHead(nn.Module):
    """Start-to-end scoring over word vectors ``x`` ``[W, H]`` (Kirstain et al., 2021, §2).

    Mention score of span ``(i, j)``, ``l = j - i`` (``m_s = GELU(W_ms x)``, ``m_e = GELU(W_me x)``,
    ``[W, F]``): ``f_m(i, j) = v_s . m_s[i] + v_e . m_e[j] + m_s[i]^T B_m m_e[j] + b_width[l]``.
    Antecedent score of span ``c`` for span ``q`` (``c`` before ``q``), with ``a = [a_s[start];
    a_e[end]]`` ``[K, 2F]`` from two more projections: ``f(c, q) = a_q^T B_a a_c`` (``B_a`` holds
    the four start/end bilinear forms as one ``[2F, 2F]`` matrix); the dummy antecedent scores 0.
    Kirstain et al. add ``f_m(c) + f_m(q)``; here the mention scores are trained apart (binary
    cross-entropy, calibrated: most spans score far below 0) and only prune and detect
    singletons, as mention detection and pair scoring are apart in Toshniwal et al. (2020): added
    to the pair score they vetoed every link (a first LitBank run linked nothing after one
    epoch: every kept span's mention score was below -0.6).

    Args:
        hidden: encoder width H; ffnn: projection width F; max_width: L (words); dropout.
    """

    def __init__(self, hidden: int, ffnn: int = 384, max_width: int = 30, dropout: float = 0.3):
        super().__init__()
        self.max_width = max_width
        self.proj = nn.Linear(hidden, 4 * ffnn)  # m_s, m_e, a_s, a_e in one matmul
        self.drop = nn.Dropout(dropout)
        self.v = nn.Parameter(torch.zeros(2, ffnn))  # v_s, v_e
        self.bilinear_m = nn.Parameter(torch.zeros(ffnn, ffnn))
        self.width_bias = nn.Parameter(torch.zeros(max_width))
        self.bilinear_a = nn.Parameter(torch.zeros(2 * ffnn, 2 * ffnn))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.v, std=0.02)
        nn.init.normal_(self.bilinear_m, std=0.02)
        nn.init.normal_(self.bilinear_a, std=0.02)

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``[W, H]`` -> ``m_s, m_e, a_s, a_e``, each ``[W, F]``."""
        return self.drop(nn.functional.gelu(self.proj(x))).chunk(4, dim=-1)

    def mention_scores(self, m_s: torch.Tensor, m_e: torch.Tensor, sentence: torch.Tensor
                       ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(scores, valid)``, both ``[W, L]``: span ``(i, i + l)``; valid when it ends inside
        the document and the sentence of its first word."""
        W, F = m_e.shape
        L = self.max_width
        pad_e = torch.cat([m_e, m_e.new_zeros(L - 1, F)])  # [W+L-1, F]
        ends = pad_e.unfold(0, L, 1)  # [W, F, L]: m_e of word i + l
        scores = torch.einsum("wf,wfl->wl", m_s @ self.bilinear_m, ends)  # [W, L]
        scores = scores + (m_s @ self.v[0]).unsqueeze(1) + torch.einsum("wfl,f->wl", ends, self.v[1])
        pad_s = torch.cat([sentence, sentence.new_full((L - 1,), -1)])
        valid = pad_s.unfold(0, L, 1) == sentence.unsqueeze(1)  # [W, L]
        return scores + self.width_bias, valid

    def antecedent_scores(self, a_s: torch.Tensor, a_e: torch.Tensor, starts: torch.Tensor,
                          ends: torch.Tensor) -> torch.Tensor:
        """``[K, K+1]`` scores of each kept span's antecedents, column 0 the dummy (0); a span
        at or after ``q`` scores ``-inf`` (``starts``/``ends`` ``[K]`` sorted by start, end)."""
        rep = torch.cat([a_s[starts], a_e[ends]], dim=-1)  # [K, 2F]
        pair = rep @ self.bilinear_a @ rep.T  # [q, c]
        K = len(starts)
        earlier = torch.ones(K, K, dtype=torch.bool, device=rep.device).tril(-1)
        pair = pair.masked_fill(~earlier, float("-inf"))
        return torch.cat([pair.new_zeros(K, 1), pair], dim=1)


class CorefModel(nn.Module):
    """Encoder over independent segments -> word vectors -> :class:`CorefHead`, per document.

    Args:
        encoder: a Hugging Face base model (``AutoModel``).
        ffnn / max_width / dropout: the head's sizes; top_lambda: spans kept per word.
    """

    def __init__(self, encoder: nn.Module, ffnn: int = 384, max_width: int = 30,
                 dropout: float = 0.3, top_lambda: float = 0.4) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = CorefHead(encoder.config.hidden_size, ffnn, max_width, dropout)
        self.settings = {"ffnn_size": ffnn, "max_span_width": max_width, "dropout": dropout,
                         "top_lambda": top_lambda}
        self.top_lambda = top_lambda
        self.head_lr: float | None = None  # set for training; not saved

    def lr_for(self, name: str) -> float | None:
        """``head_lr`` for the head's (fresh) parameters, else the run's ``--lr``."""
        return self.head_lr if name.startswith("head.") else None

    def word_vectors(self, input_ids, attention_mask, piece_word, n_words) -> torch.Tensor:
        """``[S, T]`` segments -> ``[W_all, H]``: each word the mean of its pieces' vectors."""
        h = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        H = h.shape[-1]
        flat, idx = h.reshape(-1, H), piece_word.reshape(-1)
        keep = idx >= 0
        total = int(n_words.sum())
        sums = flat.new_zeros(total, H).index_add_(0, idx[keep], flat[keep])
        count = flat.new_zeros(total).index_add_(0, idx[keep], flat.new_ones(int(keep.sum())))
        return sums / count.clamp(min=1).unsqueeze(1)

    def _document(self, x, sentence):
        """Mention scores, candidates and the kept spans of one document."""
        m_s, m_e, a_s, a_e = self.head.project(x)
        scores, valid = self.head.mention_scores(m_s, m_e, sentence)
        W, L = scores.shape
        cand = valid.reshape(-1).nonzero().squeeze(1)  # flat i * L + l
        c_start, c_end = cand // L, cand // L + cand % L
        c_score = scores.reshape(-1)[cand]
        k = max(1, min(len(cand), math.ceil(self.top_lambda * W)))
        kept = torch.from_numpy(prune_spans(c_start.cpu().numpy(), c_end.cpu().numpy(),
                                            c_score.detach().float().cpu().numpy(), k))
        kept = kept.to(x.device)
        return scores, valid, (c_start, c_end, cand), kept, (a_s, a_e)

    def forward(self, input_ids, attention_mask, piece_word, n_words, sentence, spans, clusters,
                span_doc, **_) -> dict[str, torch.Tensor]:
        """Loss of a batch of documents: mean over documents of the mention BCE (mean over
        candidates) plus the antecedent loss (mean over kept spans of ``-log sum P(gold
        antecedents)``, Lee et al. 2017 eq. 8)."""
        x_all = self.word_vectors(input_ids, attention_mask, piece_word, n_words)
        offsets = torch.cat([n_words.new_zeros(1), n_words.cumsum(0)])
        m_losses, a_losses = [], []
        L = self.head.max_width
        for b in range(len(n_words)):
            lo, hi = int(offsets[b]), int(offsets[b + 1])
            x, sent = x_all[lo:hi], sentence[lo:hi]
            scores, valid, (c_start, c_end, cand), kept, (a_s, a_e) = self._document(x, sent)
            gold = spans[span_doc == b] - lo  # [M, 2]
            gold_cl = clusters[span_doc == b]
            width = gold[:, 1] - gold[:, 0]
            ok = width < L
            target = torch.zeros_like(scores)
            target[gold[ok, 0], width[ok]] = 1.0
            m_losses.append(nn.functional.binary_cross_entropy_with_logits(
                scores[valid], target[valid]))
            # gold cluster of each kept span (-1: not a gold mention)
            key = gold[:, 0] * L + width
            flat_kept = cand[kept]
            kept_cl = torch.full_like(flat_kept, -1)
            if bool(ok.any()):  # a crop may hold no gold mention at all
                match = (flat_kept.unsqueeze(1) == key[ok].unsqueeze(0))  # [K, M_ok]
                kept_cl = torch.where(match.any(1), gold_cl[ok][match.float().argmax(1)],
                                      kept_cl)
            ant = self.head.antecedent_scores(a_s, a_e, c_start[kept], c_end[kept])  # [K, K+1]
            K = len(kept)
            same = (kept_cl.unsqueeze(1) == kept_cl.unsqueeze(0)) & (kept_cl >= 0).unsqueeze(1)
            same &= torch.ones(K, K, dtype=torch.bool, device=x.device).tril(-1)
            gold_ant = torch.cat([~same.any(1, keepdim=True), same], dim=1)  # dummy when none
            a_losses.append((ant.logsumexp(1) - ant.masked_fill(~gold_ant, float("-inf"))
                             .logsumexp(1)).mean())
        m_loss, a_loss = torch.stack(m_losses).mean(), torch.stack(a_losses).mean()
        return {"loss": m_loss + a_loss, "mention_loss": m_loss.detach(),
                "antecedent_loss": a_loss.detach()}

    @torch.inference_mode()
    def resolve(self, input_ids, attention_mask, piece_word, n_words, sentence,
                singletons: bool = True, **_) -> list[list[list[tuple[int, int]]]]:
        """Clusters per document of a batch: lists of ``(start, end)`` word mentions."""
        x_all = self.word_vectors(input_ids, attention_mask, piece_word, n_words)
        offsets = torch.cat([n_words.new_zeros(1), n_words.cumsum(0)])
        out = []
        for b in range(len(n_words)):
            lo, hi = int(offsets[b]), int(offsets[b + 1])
            scores, _, (c_start, c_end, cand), kept, (a_s, a_e) = self._document(
                x_all[lo:hi], sentence[lo:hi])
            mention = scores.reshape(-1)[cand[kept]]
            ant = self.head.antecedent_scores(a_s, a_e, c_start[kept], c_end[kept])
            best = (ant.argmax(1) - 1).cpu().numpy()  # -1: the dummy
            kept_spans = torch.stack([c_start[kept], c_end[kept]], 1).cpu().numpy()
            out.append(clusters_from_antecedents(kept_spans, best,
                                                 (mention > 0).cpu().numpy(), singletons))
        return out

    def save(self, directory: Path, tokenizer, meta: dict) -> None:
        """Write the encoder and tokenizer (Hugging Face format), the head and ``bertkit.json``."""
        write_saved_model(self.encoder, tokenizer, directory, "coref", {**meta, **self.settings},
                          weights={HEAD_FILE: self.head})


def build_model(model_name: str, ffnn: int, max_width: int, dropout: float,
                top_lambda: float) -> CorefModel:
    """A new model from a pretrained encoder (directory or hub id) with a fresh head.

    Raises:
        BertkitError: the encoder cannot be loaded.
    """
    from transformers import AutoModel

    from bertkit.encoders import resolve_model_source

    encoder = load_pretrained(AutoModel.from_pretrained, resolve_model_source(model_name))
    return CorefModel(encoder, ffnn, max_width, dropout, top_lambda)


def load_model(directory: str | Path) -> tuple[CorefModel, dict]:
    """Load a model saved by :meth:`CorefModel.save` (a run directory or its ``model/``).

    Raises:
        BertkitError: no saved bertkit coreference model there, or its files cannot be loaded.
    """
    from safetensors.torch import load_file
    from transformers import AutoModel

    path, meta = find_saved_model(directory, "coref", "coreference", files=(HEAD_FILE,))
    model = CorefModel(load_pretrained(AutoModel.from_pretrained, path), meta["ffnn_size"],
                       meta["max_span_width"], meta["dropout"], meta["top_lambda"])
    try:
        model.head.load_state_dict(load_file(str(path / HEAD_FILE)))
    except (RuntimeError, OSError) as exc:
        raise BertkitError(f"cannot load {HEAD_FILE}: {str(exc).splitlines()[0]}", file=path,
                           expected="the model/ folder bertkit saved") from None
    model.eval()
    return model, meta
