"""finetune/evaluate/predict dep end to end on a tiny encoder; save/reload gives identical parses."""

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.data.conllu import read_conllu
from bertkit.decoding.mst import is_tree
from bertkit.errors import BertkitError
from bertkit.tasks.dep import DepConfig, evaluate_dep, finetune_dep, predict_dep
from tests.tasks.dep.conftest import TEXT, write_dep_dir


def run(tmp_path, name, data, model, **kw):
    cfg = DepConfig(data=str(data), model=model, epochs=kw.pop("epochs", 2), batch_size=2,
                    lr=1e-3, device="cpu", output_dir=str(tmp_path / name), logging_steps=1,
                    arc_mlp=16, rel_mlp=8, **kw)
    return finetune_dep(cfg)


def test_finetune_save_reload_evaluate_predict(tmp_path, dep_dir, tiny_encoder):
    res = run(tmp_path, "r", dep_dir, tiny_encoder, word_repr="mean", scalar_mix=True)
    run_dir = tmp_path / "r"
    assert res["test"]["sentences"] == 3 and res["test"]["words"] == 13
    assert res["test"]["scored_words"] == 10  # three '.' excluded by form
    assert res["best_epoch"] in (1, 2) and res["split_note"] is None
    saved = read_conllu(run_dir / "test_predictions.conllu")
    assert all(is_tree(s.heads) for s in saved)
    text = (run_dir / "test_predictions.conllu").read_text()
    assert "3-4\tnf-kb\t_" in text and "4.1\tit\t_" in text and "# text = Cells express IL-2 ." in text
    meta = json.loads((run_dir / "model" / "bertkit.json").read_text())
    assert meta["task"] == "dep" and meta["rels"] == ["compound", "dobj", "nsubj", "punct", "root"]
    assert meta["word_repr"] == "mean" and meta["scalar_mix"] is True
    from transformers import AutoModel, AutoTokenizer
    assert AutoModel.from_pretrained(run_dir / "model").config.hidden_size == 32
    assert AutoTokenizer.from_pretrained(run_dir / "model").is_fast
    # reloaded model parses the test split exactly as the trained one did
    ev = evaluate_dep(str(run_dir), str(dep_dir), "test", device="cpu")
    metrics, (heads, rels) = ev.metrics, ev.predictions
    assert ev.predictions_text() == text  # the same CoNLL-U as test_predictions.conllu
    assert [h.tolist() for h in heads] == [s.heads.tolist() for s in saved]
    assert rels == [s.rels for s in saved]
    assert metrics["las"] == pytest.approx(res["test"]["las"])
    # eisner decoding: projective trees
    h2 = evaluate_dep(str(run_dir), str(dep_dir), "test", device="cpu",
                      decoder="eisner").predictions[0]
    assert all(is_tree(h) for h in h2)
    out = predict_dep(str(run_dir), str(dep_dir / "test.conllu"), device="cpu")
    assert out == text
    plain = tmp_path / "in.txt"
    plain.write_text("IL-2 activates T cells.\n\nNF-kB binds DNA\n", encoding="utf-8")
    out = predict_dep(str(run_dir), str(plain), str(tmp_path / "out.conllu"), device="cpu")
    got = read_conllu(tmp_path / "out.conllu")
    assert [s.words for s in got] == [["IL", "-", "2", "activates", "T", "cells", "."],
                                      ["NF", "-", "kB", "binds", "DNA"]]
    assert all(is_tree(s.heads) for s in got) and got[0].metadata["text"] == "IL-2 activates T cells."


def test_same_seed_same_parses(tmp_path, dep_dir, tiny_encoder):
    a = run(tmp_path, "a", dep_dir, tiny_encoder, epochs=1, seed=3)
    b = run(tmp_path, "b", dep_dir, tiny_encoder, epochs=1, seed=3)
    assert a["test"] == b["test"]
    assert (tmp_path / "a" / "test_predictions.conllu").read_text() == \
        (tmp_path / "b" / "test_predictions.conllu").read_text()


def test_set_without_train_split_holds_out_every_tenth_dev_sentence(tmp_path, tiny_encoder):
    d = write_dep_dir(tmp_path / "d", train=None, dev="\n".join([TEXT.strip() + "\n"] * 4) + "\n")
    # no train file: dev has 12 sentences, the tenth (index 9) is held out
    res = run(tmp_path, "h", d, tiny_encoder, epochs=1)
    assert "less every 10th sentence" in res["split_note"]
    assert res["dev"] is not None and res["splits"]["dev"].endswith("(every 10th sentence)")
    ev = evaluate_dep(str(tmp_path / "h"), str(d), "dev", device="cpu")
    m, sents = ev.metrics, ev.examples
    assert len(sents) == 1 and m["sentences"] == 1   # sentence index 9 of 12


def test_cli_finetune_evaluate_predict_and_errors(tmp_path, dep_dir, tiny_encoder):
    runner = CliRunner()
    run_dir = tmp_path / "cli"
    res = runner.invoke(app, ["finetune", "dep", "--data", str(dep_dir), "--model", tiny_encoder,
                              "--epochs", "1", "--batch-size", "2", "--device", "cpu",
                              "--arc-mlp", "8", "--rel-mlp", "4", "-o", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert "UAS / LAS (no punct)" in res.output and "Unicode punctuation" in res.output
    res = runner.invoke(app, ["evaluate", "dep", "-m", str(run_dir), "-d", str(dep_dir),
                              "--device", "cpu", "--output", str(tmp_path / "m.json")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "m.json").read_text())["sentences"] == 3
    res = runner.invoke(app, ["predict", "dep", "-m", str(run_dir), "-i",
                              str(dep_dir / "test.conllu"), "--device", "cpu"])
    assert res.exit_code == 0 and res.output.count("\n\n") == 3
    bad = write_dep_dir(tmp_path / "bad", test=TEXT.replace("\t2\tdobj", "\t9\tdobj"))
    res = runner.invoke(app, ["evaluate", "dep", "-m", str(run_dir), "-d", str(bad),
                              "--device", "cpu"])
    assert res.exit_code == 1
    assert f"{bad / 'test.conllu'}:5: HEAD 9 out of range" in res.output
    with pytest.raises(BertkitError, match="no saved bertkit dependency parser"):
        evaluate_dep(str(tmp_path), str(dep_dir))
    with pytest.raises(BertkitError, match="--word-repr.*first or mean"):
        DepConfig(word_repr="last").validate()
    with pytest.raises(BertkitError, match="--decoder.*mst or eisner"):
        DepConfig(decoder="greedy").validate()
