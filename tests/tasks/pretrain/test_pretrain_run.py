import json

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, pipeline
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.tasks.pretrain import PretrainConfig, pretrain
from bertkit.tasks.pretrain.batches import PretrainBatches


def _cfg(corpus, model, out, **kw):
    base = dict(corpus=str(corpus), valid=str(corpus), model=model, output_dir=str(out),
                max_steps=6, batch_size=4, max_seq_length=32, lr=1e-3, warmup=0.0,
                logging_steps=1, eval_steps=3, max_eval_sequences=8, device="cpu",
                cache_dir=str(out.parent / "cache"), save_steps=2)
    base.update(kw)
    return PretrainConfig(**base)


def _records(run, kind="train"):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()
            if json.loads(line)["type"] == kind]


def test_pretrain_span_sbo_writes_run_and_a_loadable_masked_lm(corpus, tiny_encoder, tmp_path, tokenizer):
    run = tmp_path / "run"
    res = pretrain(_cfg(corpus, tiny_encoder, run, max_steps=4, eval_steps=2))
    assert res["steps"] == 4 and res["sbo"] and res["masking"] == "span"
    assert set(res["train"]) == {"loss", "mlm_loss", "sbo_loss"}
    assert res["train"]["loss"] == pytest.approx(res["train"]["mlm_loss"] + res["train"]["sbo_loss"])
    assert {"loss", "perplexity", "accuracy"} <= set(res["valid"])
    assert res["valid"]["perplexity"] == pytest.approx(2.718281828 ** res["valid"]["loss"], rel=1e-6)
    assert [r["step"] for r in _records(run, "eval")] == [2, 4]
    train = _records(run)
    assert [r["step"] for r in train] == [1, 2, 3, 4] and all("sbo_loss" in r for r in train)
    # batches are masked ahead by a worker thread; the share of each step spent waiting is logged
    assert all(0 <= r["data_wait_share"] <= r["data_wait_max_share"] + 1e-9 <= 1 + 1e-9
               for r in train)
    assert 0 <= res["data_wait_share"] <= 1
    for name in ("config.yaml", "results.json", "model/config.json", "model/sbo.safetensors",
                 "model/bertkit.json", "model/tokenizer.json"):
        assert (run / name).is_file(), name

    from bertkit.tasks.pretrain.model import build_pretrain_model

    ours, _ = build_pretrain_model(str(run / "model"), None, tokenizer, sbo=True, sbo_weight=1.0)
    mlm = AutoModelForMaskedLM.from_pretrained(run / "model").eval()
    ids = tokenizer("the protein [MASK] inhibitor", return_tensors="pt")
    with torch.no_grad():
        expected = ours.eval().mlm(**ids).logits
        assert torch.allclose(mlm(**ids).logits, expected, atol=1e-5)
    fill = pipeline("fill-mask", model=mlm, tokenizer=AutoTokenizer.from_pretrained(run / "model"))
    guesses = fill("the protein [MASK] inhibitor")
    assert len(guesses) == 5 and all("token_str" in g for g in guesses)


class Killed(Exception):
    pass


def test_resume_gives_the_same_loss_sequence(corpus, tiny_encoder, tmp_path, monkeypatch):
    full_run = tmp_path / "full"
    pretrain(_cfg(corpus, tiny_encoder, full_run, max_steps=5))
    real_iter = PretrainBatches.iter_batches
    seen = {"n": 0}

    def dying(self, epoch, start=0):
        for batch in real_iter(self, epoch, start):
            if seen["n"] == 3:  # after the checkpoint at step 2
                raise Killed
            seen["n"] += 1
            yield batch

    monkeypatch.setattr(PretrainBatches, "iter_batches", dying)
    with pytest.raises(Killed):
        pretrain(_cfg(corpus, tiny_encoder, tmp_path / "cut", max_steps=5))
    monkeypatch.setattr(PretrainBatches, "iter_batches", real_iter)
    pretrain(_cfg(corpus, tiny_encoder, tmp_path / "cut", max_steps=5, resume=True))
    a, b = _records(full_run), _records(tmp_path / "cut")
    assert [r["step"] for r in b] == list(range(1, 6))
    for key in ("loss", "mlm_loss", "sbo_loss"):
        assert [r[key] for r in a] == [r[key] for r in b]
    assert [r["loss"] for r in _records(full_run, "eval")] == [r["loss"] for r in _records(tmp_path / "cut", "eval")]


@pytest.mark.parametrize("masking", ["token", "wwm"])
def test_token_and_wwm_runs_have_no_sbo(masking, corpus, tiny_encoder, tmp_path):
    res = pretrain(_cfg(corpus, tiny_encoder, tmp_path / masking, masking=masking, max_steps=2,
                        valid=None, save_steps=0))
    assert not res["sbo"] and set(res["train"]) == {"loss", "mlm_loss"} and res["valid"] is None
    assert not (tmp_path / masking / "model" / "sbo.safetensors").exists()


def test_pretrained_model_fine_tunes_for_ner(corpus, tiny_encoder, tmp_path, ner_dir):
    from bertkit.tasks.ner import NERConfig, finetune_ner

    run = tmp_path / "pt"
    pretrain(_cfg(corpus, tiny_encoder, run, max_steps=2, valid=None, save_steps=0))
    res = finetune_ner(NERConfig(model=str(run / "model"), data=str(ner_dir), epochs=1,
                                 batch_size=2, device="cpu", output_dir=str(tmp_path / "ner")))
    assert res["steps"] == 2 and "f1" in res["test"]


def test_settings_errors_are_clear(corpus, tmp_path):
    for kw, message in ((dict(masking="token", sbo=True), "needs span masking"),
                        (dict(config="tiny"), "needs --vocab"),
                        (dict(model="x", config="tiny", vocab="minilm"), "exclude each other"),
                        (dict(masking="bert"), "unknown --masking"),
                        (dict(mask_prob=1.5), "--mask-prob"),
                        (dict(head_warmup_steps=1000, max_steps=1000), "--head-warmup-steps"),
                        (dict(prefetch=-1), "--prefetch")):
        with pytest.raises(BertkitError, match=message):
            PretrainConfig(corpus=str(corpus), **kw).validate()
    with pytest.raises(BertkitError, match="fewer than one sequence"):
        pretrain(PretrainConfig(corpus=str(corpus), config="tiny", vocab="minilm",
                                max_seq_length=1_000_000, output_dir=str(tmp_path / "r"),
                                cache_dir=str(tmp_path / "c"), device="cpu"))


def test_cli_from_scratch_and_errors(corpus, tmp_path):
    out = tmp_path / "cli"
    res = CliRunner().invoke(app, [
        "pretrain", "--corpus", str(corpus), "--config", "tiny", "--vocab", "minilm",
        "--masking", "wwm", "--max-steps", "2", "--batch-size", "2", "--max-seq-length", "32",
        "--device", "cpu", "--cache-dir", str(tmp_path / "cache"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "trained 2 steps" in res.output
    results = json.loads((out / "results.json").read_text())
    assert results["config"] == "tiny" and results["new_mlm_head"]
    bad = CliRunner().invoke(app, ["pretrain", "--corpus", str(tmp_path / "missing.txt"),
                                   "-o", str(tmp_path / "x")])
    assert bad.exit_code == 1 and "corpus file not found" in bad.output


def test_pretrain_report_to_mlflow(corpus, tiny_encoder, tmp_path, monkeypatch):
    """``pretrain --report-to mlflow`` (issue 46): settings, losses, validation and results in a
    real local MLflow store, the model card as an artefact."""
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "")  # bertkit sets it for a file: URI
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "store").as_uri())
    run = tmp_path / "run"
    res = pretrain(_cfg(corpus, tiny_encoder, run, max_steps=4, eval_steps=2, report_to="mlflow"))
    client = MlflowClient(tracking_uri=(tmp_path / "store").as_uri())
    found = client.get_run(json.loads((run / "mlflow.json").read_text())["run_id"])
    assert found.info.status == "FINISHED" and found.data.tags["bertkit.command"] == "pretrain"
    assert (found.data.params["masking"], found.data.params["max_steps"]) == ("span", "4")
    history = client.get_metric_history(found.info.run_id, "train/sbo_loss")
    assert [m.step for m in history] == [1, 2, 3, 4]
    assert [m.value for m in history] == pytest.approx([r["sbo_loss"] for r in _records(run)])
    evals = [r for r in _records(run, "eval")]
    group = evals[0].get("split") or "eval"
    assert [m.step for m in client.get_metric_history(found.info.run_id, f"{group}/loss")] == [2, 4]
    assert found.data.metrics["results/valid/perplexity"] == pytest.approx(
        res["valid"]["perplexity"])
    paths = {a.path for a in client.list_artifacts(found.info.run_id, "model")}
    assert paths == {"model/README.md"}
