"""Every task's saved ``model/`` loads with plain ``transformers``: bertkit hidden, no remote code.

One short run per task on a tiny random BERT (NER with the CRF, RE with ``cls`` pooling,
dependency parsing, MLM pretraining), then one subprocess in which ``import bertkit`` fails loads
each ``model/`` with its ``Auto*`` class and pipeline and returns its outputs, which must match
what bertkit computes with its own loaders. Each ``model/`` also carries a model card.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from tests.conftest import HIDE_BERTKIT, write_ner_dir
from tests.tasks.dep.conftest import write_dep_dir
from tests.tasks.pretrain.conftest import write_corpus
from tests.tasks.re.conftest import write_re_dir

NER_TEXT = "Aspirin induced renal failure ."
RE_TEXT = "[E1] aspirin [/E1] inhibits [E2] cox-1 [/E2] in platelets ."
MASK_TEXT = "the protein [MASK] inhibitor reduced phosphorylation ."

# Run with `python -c` in a fresh interpreter: a meta-path finder makes `import bertkit` fail (the
# editable install would otherwise find it), and every load passes trust_remote_code=False.
LOADER = HIDE_BERTKIT + r'''
import json

import torch
from transformers import (AutoModel, AutoModelForMaskedLM, AutoModelForSequenceClassification,
                          AutoModelForTokenClassification, AutoTokenizer, pipeline)

paths, texts = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = {}

def logits(cls, key, text, field="logits"):
    tok = AutoTokenizer.from_pretrained(paths[key])
    model = cls.from_pretrained(paths[key], trust_remote_code=False).eval()
    with torch.no_grad():
        res = model(**tok(text, return_tensors="pt"))
    out[key + "_class"] = type(model).__name__
    return getattr(res, field)[0].tolist()

out["ner"] = logits(AutoModelForTokenClassification, "ner", texts["ner"])
out["ner_pipeline"] = [{k: (float(v) if k == "score" else v) for k, v in e.items()} for e in
                       pipeline("token-classification", model=paths["ner"], trust_remote_code=False,
                                aggregation_strategy="first")(texts["ner"])]
out["re"] = logits(AutoModelForSequenceClassification, "re", texts["re"])
(top,) = pipeline("text-classification", model=paths["re"], trust_remote_code=False)(texts["re"])
out["re_pipeline"] = {"label": top["label"], "score": float(top["score"])}
out["dep"] = logits(AutoModel, "dep", texts["ner"], "last_hidden_state")
out["mlm"] = logits(AutoModelForMaskedLM, "mlm", texts["mlm"])
out["mlm_pipeline"] = [r["token_str"] for r in
                       pipeline("fill-mask", model=paths["mlm"], trust_remote_code=False)(texts["mlm"])]
print("RESULT " + json.dumps(out))
'''


def hidden_bertkit_run(paths: dict[str, str], cwd: Path) -> dict:
    """Run :data:`LOADER` with bertkit hidden; its outputs as a dict."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1",
               TOKENIZERS_PARALLELISM="false")
    texts = {"ner": NER_TEXT, "re": RE_TEXT, "mlm": MASK_TEXT}
    proc = subprocess.run([sys.executable, "-c", LOADER, json.dumps(paths), json.dumps(texts)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def card_header(model_dir: Path) -> dict:
    """The YAML metadata header of ``model_dir/README.md``."""
    text = (model_dir / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def _ref_logits(model, tok, text, field="logits"):
    with torch.no_grad():
        return getattr(model(**tok(text, return_tensors="pt")), field)[0]


def test_every_task_model_loads_without_bertkit_and_has_a_card(tmp_path, tiny_encoder):
    from bertkit.tasks.dep import DepConfig, finetune_dep
    from bertkit.tasks.dep.model import load_parser
    from bertkit.tasks.ner import NERConfig, finetune_ner
    from bertkit.tasks.ner.model import load_tagger
    from bertkit.tasks.pretrain import PretrainConfig, pretrain
    from bertkit.tasks.re import REConfig, finetune_re, predict_re
    from bertkit.tasks.re.model import load_relation_model
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    common = dict(device="cpu", logging_steps=1, lr=1e-3)
    ner = finetune_ner(NERConfig(data=str(write_ner_dir(tmp_path / "ner-data")), model=tiny_encoder,
                                 crf=True, epochs=1, batch_size=4,
                                 output_dir=str(tmp_path / "ner"), **common))
    rel = finetune_re(REConfig(data=str(write_re_dir(tmp_path / "re-data")), model=tiny_encoder,
                               pooling="cls", epochs=1, batch_size=4,
                               output_dir=str(tmp_path / "re"), **common))
    dep = finetune_dep(DepConfig(data=str(write_dep_dir(tmp_path / "dep-data")), model=tiny_encoder,
                                 epochs=1, batch_size=2, arc_mlp=16, rel_mlp=8,
                                 output_dir=str(tmp_path / "dep"), **common))
    corpus = write_corpus(tmp_path / "corpus.txt", lines=120)
    mlm = pretrain(PretrainConfig(corpus=str(corpus), valid=str(corpus), model=tiny_encoder,
                                  masking="token", max_steps=2, batch_size=4, max_seq_length=32,
                                  warmup=0.0,
                                  max_eval_sequences=4, eval_steps=2, cache_dir=str(tmp_path / "cache"),
                                  output_dir=str(tmp_path / "mlm"), **common))
    paths = {k: str(tmp_path / k / "model") for k in ("ner", "re", "dep", "mlm")}
    got = hidden_bertkit_run(paths, tmp_path)

    # NER: the standard token classifier bertkit's tagger wraps, same logits
    tagger, _ = load_tagger(paths["ner"])
    tok = AutoTokenizer.from_pretrained(paths["ner"])
    assert got["ner_class"] == "BertForTokenClassification"
    assert torch.allclose(torch.tensor(got["ner"]), _ref_logits(tagger.encoder, tok, NER_TEXT), atol=1e-5)
    assert all(e["entity_group"] in ("Chemical", "Disease") for e in got["ner_pipeline"])
    # RE (cls pooling): a standard sequence classifier; the pipeline's label is bertkit's
    model, tok, *_ = load_relation_model(paths["re"])
    assert got["re_class"] == "BertForSequenceClassification"
    assert torch.allclose(torch.tensor(got["re"]), _ref_logits(model, tok, RE_TEXT), atol=1e-5)
    src = tmp_path / "re-in.txt"
    src.write_text("<< aspirin >> inhibits [[ cox-1 ]] in platelets .\n", encoding="utf-8")
    # in fp32 as the pipeline runs (auto is bf16 autocast on a CPU with AMX-BF16)
    ours = json.loads(predict_re(str(tmp_path / "re"), str(src), device="cpu", precision="fp32"))
    assert got["re_pipeline"]["label"] == ours["predicted"]
    assert got["re_pipeline"]["score"] == pytest.approx(ours["probability"], abs=1e-5)
    # dependency parser: its encoder, as bertkit's parser holds it
    parser, _ = load_parser(paths["dep"])
    tok = AutoTokenizer.from_pretrained(paths["dep"])
    assert got["dep_class"] == "BertModel"
    assert torch.allclose(torch.tensor(got["dep"]),
                          _ref_logits(parser.encoder, tok, NER_TEXT, "last_hidden_state"), atol=1e-5)
    # pretraining: a masked LM and the fill-mask pipeline
    ref = AutoModelForMaskedLM.from_pretrained(paths["mlm"]).eval()
    tok = AutoTokenizer.from_pretrained(paths["mlm"])
    assert got["mlm_class"] == "BertForMaskedLM"
    assert torch.allclose(torch.tensor(got["mlm"]), _ref_logits(ref, tok, MASK_TEXT), atol=1e-5)
    assert len(got["mlm_pipeline"]) == 5

    # model cards: the Hub metadata header with each run's scores and split
    for key, res, tag, metric, split, value in (
            ("ner", ner, "token-classification", "f1", "test", ner["test"]["f1"]),
            ("re", rel, "text-classification", "f1", "test", rel["test"]["micro_f1"]),
            ("dep", dep, "feature-extraction", "las", "test", dep["test"]["las"]),
            ("mlm", mlm, "fill-mask", "perplexity", "validation", mlm["valid"]["perplexity"])):
        head = card_header(Path(paths[key]))
        assert head["pipeline_tag"] == tag and head["library_name"] == "transformers"
        assert "bertkit" in head["tags"] and "custom_code" not in head["tags"]
        assert "base_model" not in head  # a local directory is no hub id
        (first, *_) = head["model-index"][0]["results"]
        assert first["dataset"]["split"] == split and first["task"]["type"] == tag
        assert first["metrics"][0]["type"] == metric
        assert first["metrics"][0]["value"] == pytest.approx(value, abs=1e-6)
        body = (Path(paths[key]) / "README.md").read_text(encoding="utf-8")
        assert "bertkit finetune" in body or "bertkit pretrain" in body


@pytest.mark.integration
def test_crf_ner_pipeline_first_agrees_with_bertkit_on_bc5cdr(tmp_path):
    """A CRF tagger trained briefly on a BC5CDR slice (400 sentences, 2 epochs, packaged MiniLM):
    ``pipeline("token-classification", aggregation_strategy="first")`` on the saved model finds
    the spans ``bertkit predict ner`` finds (entity-level agreement F1 >= 0.95 on 150 test
    sentences) and predicts B- tags."""
    from transformers import pipeline

    from bertkit.data.conll import read_conll
    from bertkit.data.sets import data_root
    from bertkit.metrics.ner import entity_scores
    from bertkit.tasks.ner import NERConfig, finetune_ner, predict_ner

    root = data_root()
    if root is None or not (root / "ner" / "bc5cdr" / "test.tsv").is_file():
        pytest.skip("needs BERTKIT_DATA with ner/bc5cdr")
    src = root / "ner" / "bc5cdr"
    sents = read_conll(src / "test.tsv").sentences[:150]
    finetune_ner(NERConfig(data="bc5cdr", crf=True, epochs=2, batch_size=16, lr=2e-4,
                           max_train_samples=400, max_eval_samples=100, device="cpu",
                           output_dir=str(tmp_path / "run")))
    inp = tmp_path / "test.txt"
    inp.write_text("".join(" ".join(s.tokens) + "\n" for s in sents), encoding="utf-8")
    ours = [json.loads(l)["tags"] for l in
            predict_ner(str(tmp_path / "run"), str(inp), fmt="jsonl", input_format="text",
                        device="cpu").splitlines()]
    ner = pipeline("token-classification", model=str(tmp_path / "run" / "model"),
                   aggregation_strategy="first", device="cpu")
    theirs = []
    for s in sents:
        text = " ".join(s.tokens)
        starts = [0]
        for t in s.tokens[:-1]:
            starts.append(starts[-1] + len(t) + 1)
        tags = ["O"] * len(s.tokens)
        for ent in ner(text):
            words = [i for i, st in enumerate(starts) if ent["start"] <= st < ent["end"]]
            for j, i in enumerate(words):
                tags[i] = ("B-" if j == 0 else "I-") + ent["entity_group"]
        theirs.append(tags)
    assert [len(t) for t in ours] == [len(s.tokens) for s in sents]
    agreement = entity_scores(ours, theirs)["f1"]
    n_b = sum(t.startswith("B-") for tags in theirs for t in tags)
    print(f"pipeline(first) vs bertkit predict: entity agreement F1 {agreement:.4f}, "
          f"{n_b} B- tags from the pipeline")
    assert n_b > 0 and agreement >= 0.95
