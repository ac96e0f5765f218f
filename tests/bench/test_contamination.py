"""Contamination: an encoder's pretraining corpora from its provenance, and the test sentences
found verbatim in them."""

from __future__ import annotations

import json

from bertkit.bench.contamination import count, normalise, split_sentences
from bertkit.bench.encoders import resolve


def test_counts_test_sentences_of_five_tokens_or_more_as_the_data_readme(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The BRCA1 gene is mutated here .\nshort line\nAnother unrelated line "
                      "of text here\n", encoding="utf-8")
    test = tmp_path / "test.tsv"
    rows = ["The\tO", "BRCA1\tB-GENE", "gene\tO", "is\tO", "mutated\tO", "here\tO", ".\tO", "",
            "short\tO", "line\tO", "", "A\tO", "new\tO", "sentence\tO", "not\tO", "there\tO", "",
            "the\tO", "brca1\tB-GENE", "gene\tO", "is\tO", "mutated\tO", "here\tO", ".\tO", ""]
    test.write_text("\n".join(rows), encoding="utf-8")
    # "short line" is under 5 tokens; a repeated sentence of a sentence file counts each time
    # (the data README's rule: BC2GM's 4,864 of 4,939 counts its 9 repeats)
    assert split_sentences("ner", test) == {"the brca1 gene is mutated here .": 2,
                                    "a new sentence not there": 1}
    assert count("ner", test, (str(corpus),)) == {"found": 2, "of": 3, "corpora": [str(corpus)]}


def test_pair_sets_count_both_texts_and_drop_relation_markers(tmp_path):
    test = tmp_path / "test.jsonl"
    row = {"text": "<< Aspirin >> inhibits [[ COX-1 ]] in cells", "text_pair": "a b c d e f"}
    other = {"text": "[[ Aspirin ]] inhibits << COX-1 >> in cells", "text_pair": "a b c d e f"}
    test.write_text(json.dumps(row) + "\n" + json.dumps(other) + "\n", encoding="utf-8")
    # a pair set counts each distinct text once (one sentence, two marked pairs)
    assert split_sentences("cls", test) == {"aspirin inhibits cox-1 in cells": 1, "a b c d e f": 1}
    assert normalise("a b c d") is None


def test_a_coreference_test_folder_of_conll_2012_documents_is_read(tmp_path, monkeypatch):
    """LitBank's test split is a folder of CoNLL-2012 documents (the word in the fourth column):
    once read as no sentences at all, so coreference had no contamination count."""
    from bertkit.bench.contamination import task_test_file

    folder = tmp_path / "coref" / "litbank" / "test"
    folder.mkdir(parents=True)
    words = "It was the best of times".split()
    doc = ["#begin document (a); part 0",
           *[f"a\t0\t{i}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_\t{'(0)' if i == 0 else ''}"
             for i, w in enumerate(words)], "", "a\t0\t0\tShort\t_\t_", "", "#end document"]
    (folder / "a.conll").write_text("\n".join(doc) + "\n", encoding="utf-8")
    (folder / "b.conll").write_text("#begin document (b); part 0\nb\t0\t0\tAnother\t_\n"
                                    "b\t0\t1\tsentence\t_\nb\t0\t2\tof\t_\nb\t0\t3\tfive\t_\n"
                                    "b\t0\t4\twords\t_\n#end document\n", encoding="utf-8")
    assert split_sentences("coref", folder) == {"it was the best of times": 1,
                                       "another sentence of five words": 1}
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("It was the best of times\n", encoding="utf-8")
    monkeypatch.setenv("BERTKIT_DATA", str(tmp_path))
    assert task_test_file("coref", "litbank") == folder
    assert count("coref", folder, (str(corpus),))["found"] == 1


def test_a_bertkit_pretrained_encoder_names_its_corpora_through_its_parent(tmp_path,
                                                                            tiny_encoder):
    import shutil

    def pretrained(name, corpus, base=None):
        run = tmp_path / name
        shutil.copytree(tiny_encoder, run / "model")
        (run / "results.json").write_text(json.dumps({"task": "pretrain", "corpus": corpus}))
        (run / "model" / "bertkit.json").write_text(json.dumps(
            {"task": "pretrain", "base_model": str(base) if base else None}))
        return run / "model"

    general = pretrained("G", str(tmp_path / "general.txt"))
    dapt = pretrained("GD", str(tmp_path / "science.txt"), base=general)
    enc = resolve("G+D", str(dapt))
    assert enc.corpora == (str(tmp_path / "science.txt"), str(tmp_path / "general.txt"))
    assert resolve("plain", tiny_encoder).corpora == ()


def test_a_run_directory_as_encoder_points_at_its_model_folder(tmp_path):
    """`--encoder a=RUN` (a finetune/pretrain run directory) names RUN/model in the refusal."""
    import pytest

    from bertkit.bench.encoders import resolve
    from bertkit.errors import BertkitError

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(BertkitError, match="model/ folder"):
        resolve("a", str(tmp_path))
