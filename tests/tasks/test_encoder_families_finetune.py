"""Every fine-tuning task on tiny random ModernBERT and DeBERTa-v2/v3 encoders (issue 64): a
fine-tune, a prediction from the saved model (``evaluate`` reloads ``model/`` and must score test
as the run did), and the saved ``model/`` loading with its card's Auto class while bertkit cannot
be imported. Scores agree to 1e-4 (ModernBERT: batches padded otherwise)."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import HIDE_BERTKIT, write_ner_dir
from tests.encoder_families import tiny_family, tiny_modernbert  # noqa: F401 (fixtures)
from tests.tasks.cls.conftest import write_cls_dir
from tests.tasks.coref.conftest import write_coref_dir
from tests.tasks.dep.conftest import write_dep_dir
from tests.tasks.qa.conftest import write_qa_dir
from tests.tasks.re.conftest import write_re_dir
from tests.tasks.sim.conftest import write_sim_dir

TASKS = {"ner": ("NERConfig", write_ner_dir), "re": ("REConfig", write_re_dir),
         "dep": ("DepConfig", write_dep_dir), "cls": ("CLSConfig", write_cls_dir),
         "qa": ("QAConfig", write_qa_dir), "sim": ("SimConfig", write_sim_dir),
         "coref": ("CorefConfig", write_coref_dir)}

LOADER = HIDE_BERTKIT + r'''
import json

import torch
import transformers

out = {}
for task, (path, auto) in json.loads(sys.argv[1]).items():
    tok = transformers.AutoTokenizer.from_pretrained(path)
    model = getattr(transformers, auto).from_pretrained(path, trust_remote_code=False).eval()
    with torch.no_grad():
        res = model(**tok("aspirin inhibits platelets .", return_tensors="pt"))
    first = res[0]
    out[task] = [type(model).__name__, model.config.model_type, bool(torch.isfinite(first).all())]
print("RESULT " + json.dumps(out))
'''


def _numbers(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if isinstance(v, float)}


@pytest.mark.slow
def test_every_task_fine_tunes_predicts_and_saves_a_plain_model(tiny_family, tmp_path):
    family = json.loads((Path(tiny_family) / "config.json").read_text())["model_type"]
    saved = {}
    for task, (config_name, write) in TASKS.items():
        module = importlib.import_module(f"bertkit.tasks.{task}")
        data = write(tmp_path / f"{task}-data")
        run = tmp_path / task
        results = getattr(module, f"finetune_{task}")(getattr(module, config_name)(
            data=str(data), model=tiny_family, epochs=1, batch_size=2, device="cpu",
            precision="fp32", lr=1e-3, output_dir=str(run)))
        assert results["model"] == tiny_family and results["steps"] > 0, task
        again = getattr(module, f"evaluate_{task}")(str(run), str(data), split="test",
                                                    device="cpu", precision="fp32")
        expected = _numbers(results["test"])
        assert expected, task
        got = _numbers(again.metrics)
        assert {k: pytest.approx(v, abs=1e-4) for k, v in expected.items() if k in got} == \
            {k: got[k] for k in expected if k in got}, task
        card = (run / "model" / "README.md").read_text(encoding="utf-8")
        auto = re.search(r"Loads with `(\w+)` from plain `transformers` \(no bertkit", card)
        assert auto, task
        family_name = "ModernBERT" if family == "modernbert" else "DeBERTa-v2/v3"
        assert f"Architecture: {family_name}" in card, task
        saved[task] = (str(run / "model"), auto.group(1))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", LOADER, json.dumps(saved)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")][-1]
    loaded = json.loads(line[len("RESULT "):])
    prefix = "ModernBert" if family == "modernbert" else "DebertaV2"
    assert set(loaded) == set(TASKS)
    for task, (cls, model_type, finite) in loaded.items():
        assert cls.startswith(prefix) and model_type == family and finite, (task, cls)


def test_segments_longer_than_512_where_the_encoder_has_the_positions(tiny_modernbert,
                                                                      tiny_encoder, tmp_path):
    """The limit is the encoder's own (its config), not 512: coreference segments of 2,048
    pieces train on ModernBERT (8,192 positions) and are refused on a 512-position BERT."""
    from bertkit.errors import BertkitError
    from bertkit.tasks.coref import CorefConfig, finetune_coref

    data = write_coref_dir(tmp_path / "coref-data")
    common = dict(data=str(data), epochs=1, device="cpu", max_length=2048)
    res = finetune_coref(CorefConfig(model=tiny_modernbert, output_dir=str(tmp_path / "m"),
                                     **common))
    assert res["steps"] > 0
    assert "inputs up to 8,192 pieces" in (tmp_path / "m" / "model" / "README.md").read_text()
    with pytest.raises(BertkitError, match="2048 exceeds the model's 512 positions"):
        finetune_coref(CorefConfig(model=tiny_encoder, output_dir=str(tmp_path / "b"), **common))
    assert not (tmp_path / "b").exists()
