"""The CRF tagger's joint objective: CRF likelihood + token cross-entropy on the emissions."""

import torch
import torch.nn.functional as F

from bertkit.data.conll import Sentence
from bertkit.tasks.ner.encoding import collate, encode
from bertkit.tasks.ner.model import TOKEN_LOSS_WEIGHT, build_tagger

LABELS = ["B-Chem", "B-Dis", "I-Chem", "I-Dis", "O"]
TRAIN = [Sentence("Aspirin induced renal failure .".split(), ["B-Chem", "O", "B-Dis", "I-Dis", "O"]),
         Sentence("Cisplatin causes kidney damage".split(), ["B-Chem", "O", "B-Dis", "I-Dis"]),
         Sentence("No entities here".split(), ["O", "O", "O"])]


def _batch(tokenizer, sents=TRAIN, las=False):
    l2i = {l: i for i, l in enumerate(LABELS)}
    windows, _ = encode(sents, tokenizer, l2i, 64, label_all_subwords=las)
    return collate(windows, tokenizer.pad_token_id)


def test_crf_loss_is_crf_nll_plus_token_cross_entropy(tiny_encoder, tokenizer):
    torch.manual_seed(0)
    tagger = build_tagger(tiny_encoder, LABELS, crf=True, label_all_subwords=False).eval()
    batch = _batch(tokenizer)
    out = tagger(**batch)
    logits = out["logits"]
    # summed per window (3 windows) as the CRF's NLL is
    ce = F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=-100,
                         reduction="sum") / 3
    emissions = tagger.word_scores(logits, batch["word_pos"])
    nll = tagger.crf(emissions, batch["word_labels"], batch["word_mask"]) / 3
    assert torch.allclose(out["token_loss"], ce) and torch.allclose(out["crf_loss"], nll)
    assert torch.allclose(out["loss"], nll + TOKEN_LOSS_WEIGHT * ce)
    # the cross-entropy covers exactly the words' first pieces (one per word)
    assert int((batch["labels"] != -100).sum()) == sum(len(s.tokens) for s in TRAIN) == 12


def test_trained_crf_emissions_alone_predict_b_tags(tiny_encoder, tokenizer):
    """Trained with the joint objective, the argmax of the emissions (what a plain
    AutoModelForTokenClassification predicts) gives the gold B- and I- tags by itself."""
    torch.manual_seed(0)
    tagger = build_tagger(tiny_encoder, LABELS, crf=True, label_all_subwords=False)
    batch = _batch(tokenizer)
    opt = torch.optim.AdamW(tagger.parameters(), lr=3e-3)
    tagger.train()
    for _ in range(60):
        opt.zero_grad()
        tagger(**batch)["loss"].backward()
        opt.step()
    tagger.eval()
    with torch.no_grad():
        logits = tagger.encoder(input_ids=batch["input_ids"],
                                attention_mask=batch["attention_mask"]).logits
    first = tagger.word_scores(logits, batch["word_pos"]).argmax(-1)
    gold = batch["word_labels"]
    mask = batch["word_mask"].bool()
    assert torch.equal(first[mask], gold[mask])
    assert int((first[mask] == LABELS.index("B-Chem")).sum()) == 2
