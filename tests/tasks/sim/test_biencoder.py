"""finetune sim --architecture bi-encoder (Sentence-BERT) and the zero-shot row: the saved folder
loads in sentence-transformers and in plain transformers with the card's pooling lines, and
predict, streaming predict and evaluate give the scores the run wrote."""

import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.predict import StreamOptions, stream_predict
from bertkit.tasks.sim.task import TASK, predict_sim
from tests.tasks.sim.conftest import PAIRS, write_sim_dir

runner = CliRunner()
FAST = ["--epochs", "2", "--batch-size", "4", "--lr", "1e-3", "--device", "cpu",
        "--precision", "fp32"]


def _mean_pooled_cosines(model_dir, pairs):
    """The cosine of mean-pooled last hidden states, computed here with plain transformers."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    enc = AutoModel.from_pretrained(model_dir).eval()

    def embed(texts):
        batch = tok(texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            hidden = enc(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        return (hidden * mask).sum(1) / mask.sum(1)

    a, b = embed([p[0] for p in pairs]), embed([p[1] for p in pairs])
    return torch.nn.functional.cosine_similarity(a, b).numpy()


@pytest.fixture(scope="module")
def bi_run(tmp_path_factory, tiny_encoder):
    root = tmp_path_factory.mktemp("bi")
    d = write_sim_dir(root / "d")
    res = runner.invoke(app, ["finetune", "sim", "--data", str(d), "-m", tiny_encoder,
                              "--architecture", "bi-encoder", "-o", str(root / "run"), *FAST])
    assert res.exit_code == 0, res.output
    return root, d, res.output


def test_bi_encoder_run_records_its_recipe_and_the_zero_shot_row(bi_run, tiny_encoder):
    root, _, output = bi_run
    results = json.loads((root / "run" / "results.json").read_text())
    assert results["architecture"] == "bi-encoder" and results["objective"] == "cosine"
    assert results["pooling"] == "mean"  # a plain BERT folder declares no pooling
    assert results["score_range"] == [0.0, 4.0]  # the training scores' range
    # the zero-shot row is the untrained encoder's mean-pooled cosine, mapped onto 0-4
    from bertkit.metrics.sim import similarity_scores

    cos = _mean_pooled_cosines(tiny_encoder, PAIRS)
    expected = similarity_scores([p[2] for p in PAIRS], 4.0 * cos)
    assert results["zero_shot"]["test"]["pearson"] == pytest.approx(expected["pearson"],
                                                                    abs=1e-4)
    assert results["test"]["zero_shot_pearson"] == results["zero_shot"]["test"]["pearson"]
    assert "zero-shot (cosine, no training)" in output  # printed beside the run's own row


def test_saved_bi_encoder_loads_in_sentence_transformers_and_plain_transformers(bi_run):
    from sentence_transformers import SentenceTransformer

    root, d, _ = bi_run
    model_dir = root / "run" / "model"
    preds = [json.loads(x) for x in (root / "run" / "test_predictions.jsonl").read_text()
             .splitlines()]
    st = SentenceTransformer(str(model_dir), device="cpu")
    a = st.encode([p[0] for p in PAIRS], convert_to_tensor=True)
    b = st.encode([p[1] for p in PAIRS], convert_to_tensor=True)
    cos = st.similarity_pairwise(a, b).numpy()
    assert (4.0 * cos).tolist() == pytest.approx([p["predicted"] for p in preds], abs=1e-4)
    # the card's plain-transformers lines, run where bertkit cannot be imported
    card = (model_dir / "README.md").read_text()
    assert "sentence-similarity" in card and "mean pooling" in card
    snippet = card.split("```python\n", 1)[1].split("```", 1)[0]
    plain = snippet[snippet.index("import torch"):].replace(
        'embed(["..."]), embed(["..."])',
        f"embed({json.dumps([p[0] for p in PAIRS])}), embed({json.dumps([p[1] for p in PAIRS])})")
    code = ("import sys; sys.modules['bertkit'] = None\n" + plain +
            "\nprint(' '.join(f'{v:.6f}' for v in cosine.tolist()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert [float(v) for v in out] == pytest.approx(cos.tolist(), abs=1e-4)


def test_bi_encoder_predict_stream_and_evaluate_agree(bi_run, tmp_path):
    root, d, _ = bi_run
    run = str(root / "run")
    preds = [json.loads(x)["predicted"] for x in (root / "run" / "test_predictions.jsonl")
             .read_text().splitlines()]
    text = predict_sim(run, str(d / "test.jsonl"), device="cpu", precision="fp32")
    assert [json.loads(x)["predicted"] for x in text.splitlines()] == pytest.approx(preds,
                                                                                   abs=1e-5)
    out = tmp_path / "streamed.jsonl"
    stream_predict(TASK.stream(run, str(d / "test.jsonl"), device="cpu", precision="fp32",
                               batch_size=4), str(d / "test.jsonl"), out,
                   StreamOptions(chunk_size=4))
    assert out.read_text() == text
    res = runner.invoke(app, ["evaluate", "sim", "-m", run, "--data", str(d), "--device", "cpu",
                              "--precision", "fp32", "--output", str(tmp_path / "m.json")])
    assert res.exit_code == 0, res.output
    results = json.loads((root / "run" / "results.json").read_text())
    assert json.loads((tmp_path / "m.json").read_text())["pearson"] == \
        pytest.approx(results["test"]["pearson"], abs=1e-4)


def test_bi_encoder_asked_for_a_single_text_exits_1_with_the_way_to_embed(bi_run, tmp_path):
    root, _, _ = bi_run
    inp = tmp_path / "single.jsonl"
    inp.write_text(json.dumps({"text": "one sentence alone"}) + "\n")
    res = runner.invoke(app, ["predict", "sim", "-m", str(root / "run"), "-i", str(inp),
                              "--device", "cpu"])
    assert res.exit_code == 1
    text = " ".join(res.output.split())
    assert "no pair text field 'text_pair'" in text and "single.jsonl" in text
    assert ".encode([text])" in text and "Traceback" not in text


def test_zero_shot_evaluate_scores_the_encoder_as_given(tmp_path, tiny_encoder):
    d = write_sim_dir(tmp_path / "d")
    res = runner.invoke(app, ["evaluate", "sim", "--zero-shot", "-m", tiny_encoder, "--data",
                              str(d), "--device", "cpu", "--precision", "fp32", "--output",
                              str(tmp_path / "z.json")])
    assert res.exit_code == 0, res.output
    got = json.loads((tmp_path / "z.json").read_text())
    cos = _mean_pooled_cosines(tiny_encoder, PAIRS)
    gold = [p[2] for p in PAIRS]
    assert got["pearson"] == pytest.approx(float(np.corrcoef(gold, cos)[0, 1]), abs=1e-4)
    assert got["zero_shot"] is True and got["pooling"] == "mean"
    assert "zero-shot" in res.output


def test_cosent_objective_trains_and_is_recorded(tmp_path, tiny_encoder):
    d = write_sim_dir(tmp_path / "d")
    res = runner.invoke(app, ["finetune", "sim", "--data", str(d), "-m", tiny_encoder,
                              "--architecture", "bi-encoder", "--objective", "cosent",
                              "-o", str(tmp_path / "run"), *FAST])
    assert res.exit_code == 0, res.output
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["objective"] == "cosent" and results["loss"].startswith("CoSENTLoss")
    log = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in log if r.get("type") == "train" and "loss" in r]
    assert losses and all(np.isfinite(losses))
