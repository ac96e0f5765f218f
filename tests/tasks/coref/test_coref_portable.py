"""A saved coreference model runs without bertkit: the model card's plain-PyTorch code, run with
bertkit hidden, finds the clusters bertkit finds."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import torch
from safetensors.torch import load_file, save_file

from bertkit.data.conll2012 import CorefDocument
from bertkit.tasks.coref.card import USAGE
from tests.conftest import HIDE_BERTKIT

HIDE = HIDE_BERTKIT

SENTENCES = [["Anna", "met", "her", "brother", "in", "Paris", "."],
             ["She", "smiled", "and", "he", "waved", "at", "her", "."],
             ["Tom", "saw", "the", "old", "dog", "."], ["It", "barked", "at", "him", "."]]


def test_card_code_runs_without_bertkit_and_agrees(tmp_path, coref_dir, tiny_encoder):
    from bertkit.tasks.coref import CorefConfig, finetune_coref
    from bertkit.tasks.coref.encoding import collate, encode_documents
    from bertkit.tasks.coref.model import HEAD_FILE, load_model
    from bertkit.encoders import load_tokenizer

    out = tmp_path / "run"
    finetune_coref(CorefConfig(data=str(coref_dir), model=tiny_encoder, epochs=1, device="cpu",
                               output_dir=str(out), max_length=10, max_span_width=4,
                               ffnn_size=16))
    model_dir = out / "model"
    # larger head weights than a 1-epoch tiny run learns, so that links and singletons occur
    head = load_file(str(model_dir / HEAD_FILE))
    gen = torch.Generator().manual_seed(3)
    head = {k: v + torch.randn(v.shape, generator=gen) * (0.5 if v.dim() > 1 else 1.0)
            for k, v in head.items()}
    save_file(head, str(model_dir / HEAD_FILE))
    card = (model_dir / "README.md").read_text(encoding="utf-8")
    code = USAGE.replace("{path}", str(model_dir))
    assert code in card  # the card shows exactly the code tested here

    model, meta = load_model(model_dir)
    tokenizer = load_tokenizer(meta["path"])
    enc, _ = encode_documents([CorefDocument("x", SENTENCES)], tokenizer, meta["max_length"])
    assert len(enc[0].segments) > 2  # several independent segments
    (want,) = model.resolve(**collate(enc, tokenizer.pad_token_id))
    assert want and any(len(c) > 1 for c in want)  # a non-trivial answer to agree on

    script = HIDE + code.rsplit("\nprint(", 1)[0] + \
        f"\nprint('RESULT', __import__('json').dumps(coref({json.dumps(SENTENCES)})))\n"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")][-1]
    got = [[tuple(m) for m in c] for c in json.loads(line[len("RESULT "):])]
    assert got == sorted(want)
