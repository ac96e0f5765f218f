"""The coreference model card: the plain-PyTorch code that runs a saved model without bertkit.

:data:`USAGE` is the whole inference path of :class:`~bertkit.tasks.coref.model.CorefModel`
(segments, word vectors, start-to-end scores, pruning, antecedents, clusters) in plain
``torch`` + ``transformers`` + ``safetensors``; ``tests/tasks/coref/test_coref_portable.py`` runs
it with bertkit hidden and checks that it finds the clusters bertkit finds.
"""

from __future__ import annotations

USAGE = '''import json, math
import torch
from safetensors.torch import load_file
from transformers import AutoModel, AutoTokenizer

path = "{path}"
meta = json.load(open(f"{path}/bertkit.json"))
tok = AutoTokenizer.from_pretrained(path)
encoder = AutoModel.from_pretrained(path).eval()
head = load_file(f"{path}/coref.safetensors")
L, budget = meta["max_span_width"], meta["max_length"] - 2

@torch.no_grad()
def coref(sentences):
    """sentences: lists of words -> clusters of (first word, last word) over the document."""
    words = [w for s in sentences for w in s]
    sent = torch.tensor([k for k, s in enumerate(sentences) for _ in s])
    pieces = [tok(w, add_special_tokens=False)["input_ids"][:budget] or [tok.unk_token_id]
              for w in words]
    segs, start = [], 0  # independent segments, cut at the last sentence end that fits
    while start < len(words):
        end, n = start, 0
        while end < len(words) and n + len(pieces[end]) <= budget:
            n, end = n + len(pieces[end]), end + 1
        end = max(end, start + 1)
        if end < len(words):
            ends = [w + 1 for w in range(start, end) if w + 1 == len(words) or sent[w + 1] != sent[w]]
            end = ends[-1] if ends else end
        segs.append(range(start, end))
        start = end
    x = []
    for seg in segs:
        ids = [tok.cls_token_id] + [p for w in seg for p in pieces[w]] + [tok.sep_token_id]
        h = encoder(input_ids=torch.tensor([ids])).last_hidden_state[0, 1:-1]
        x += [v.mean(0) for v in h.split([len(pieces[w]) for w in seg])]
    x = torch.stack(x)  # [W, H] word vectors
    m_s, m_e, a_s, a_e = torch.nn.functional.gelu(x @ head["proj.weight"].T + head["proj.bias"]).chunk(4, -1)
    W = len(words)
    ends_ = torch.cat([m_e, m_e.new_zeros(L - 1, m_e.shape[1])]).unfold(0, L, 1)  # [W, F, L]
    score = torch.einsum("wf,wfl->wl", m_s @ head["bilinear_m"], ends_) + (m_s @ head["v"][0])[:, None] \\
        + torch.einsum("wfl,f->wl", ends_, head["v"][1]) + head["width_bias"]
    valid = torch.cat([sent, sent.new_full((L - 1,), -1)]).unfold(0, L, 1) == sent[:, None]
    cand = valid.reshape(-1).nonzero()[:, 0]
    s, e, sc = cand // L, cand // L + cand % L, score.reshape(-1)[cand]
    kept = []  # best spans first, none crossing a kept one, lambda * W of them
    for i in sc.argsort(descending=True, stable=True).tolist():
        if len(kept) >= max(1, min(len(cand), math.ceil(meta["top_lambda"] * W))):
            break
        if not any(s[j] < s[i] <= e[j] < e[i] or s[i] < s[j] <= e[i] < e[j] for j in kept):
            kept.append(i)
    kept.sort(key=lambda i: (int(s[i]), int(e[i])))
    kept = torch.tensor(kept)
    rep = torch.cat([a_s[s[kept]], a_e[e[kept]]], -1)
    m = sc[kept]
    pair = (rep @ head["bilinear_a"] @ rep.T).masked_fill(
        ~torch.ones(len(kept), len(kept), dtype=torch.bool).tril(-1), float("-inf"))
    best = torch.cat([pair.new_zeros(len(kept), 1), pair], 1).argmax(1) - 1  # -1: no antecedent
    cluster, groups = {}, []
    for q, a in enumerate(best.tolist()):
        if a >= 0:
            if a not in cluster:
                cluster[a] = len(groups)
                groups.append([a])
            cluster[q] = cluster[a]
            groups[cluster[a]].append(q)
    if meta.get("singletons", "on") == "on":  # mentions by their own score, linked to nothing
        groups += [[q] for q in range(len(kept)) if q not in cluster and m[q] > 0]
    return sorted([sorted((int(s[kept[q]]), int(e[kept[q]])) for q in g) for g in groups])

print(coref([["Anna", "met", "her", "brother", "."], ["She", "smiled", "."]]))'''


def card_notes(results: dict) -> list[str]:
    """Paragraphs after the usage code: what the model is and how it was scored."""
    return [
        "The encoder loads with `AutoModel`; the coreference head is `coref.safetensors` (a "
        "start-to-end span-ranking head, Kirstain et al. 2021, over independent segments as Joshi "
        "et al. 2019), run by the code above; `bertkit predict coref -m PATH -i FILE` does the "
        "same on CoNLL-2012, plain text or JSON lines.",
        "Scores are the reference CoNLL scorer's (Pradhan et al. 2014) metrics in points; the "
        "headline CoNLL F1 (mean of MUC, B-cubed and CEAF-e F1) counts singletons, which "
        "LitBank annotates."]
