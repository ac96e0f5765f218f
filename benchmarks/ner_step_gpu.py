"""The NER fine-tuning step on one device: bertkit's against the stock token-classification step.

Sides, each trained on the same BC5CDR sentences in batches of ``--batch-size`` (32), in the
same precision (bf16 autocast on CUDA, fp32 on a CPU unless ``--precision``), fused AdamW:

- ``bertkit-crf``: ``bertkit finetune ner``'s step as the training loop runs it
  (:func:`bertkit.training.loop.forward_backward`, the meter, :func:`optimizer_step`): packed
  rows planned in the prefetch worker, pinned batches, the CRF's log-depth scan (where the
  branch has it) and the token loss, losses read back only at logging time;
- ``bertkit-softmax``: the same without the CRF;
- ``stock``: ``AutoModelForTokenClassification`` on padded batches (padding to the batch's
  longest, as ``DataCollatorForTokenClassification``), its own cross-entropy; its loss is kept
  on the device, not read per step (the ``Trainer`` reads it only every ``logging_steps``), so
  neither side pays a loss read; what the stock model reads by itself (transformers'
  ``padding_mask.all()``) is counted;
- ``cpu``: ``bertkit-crf`` on the machine's CPU (all its cores, fp32), a few steps, for the
  "against the device's own CPU" figure.

Each side runs ``--warmup`` steps (their seconds reported apart as one-time cost: compilation,
allocator growth, first kernels), then ``--steps`` timed steps, each between device
synchronisations (the timing's own). Reported per side: median step ms with min-max, sentences/s,
one-time seconds; over 20 steady steps the operations that would make the host wait
(:class:`bertkit.training.host_sync.HostSyncCounter`, any device; on CUDA also the warnings of
``torch.cuda.set_sync_debug_mode("warn")``); a ``torch.profiler`` table of 5 steady steps.

    python benchmarks/ner_step_gpu.py --model MODEL --data BC5CDR_DIR [--size minilm|base]
        [--compile] --json OUT.json
    python benchmarks/ner_step_gpu.py --dry-run --json /tmp/ner_step.json   # CPU check, tiny
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertkit.training.host_sync import HostSyncCounter  # noqa: E402

BERT_BASE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def load_sentences(data: str | None, n: int):
    """BC5CDR training sentences (``data``: a folder with ``train.tsv``), or synthetic ones."""
    from bertkit.data.conll import Sentence

    if data:
        from bertkit.data.conll import read_conll

        sents = read_conll(Path(data) / "train.tsv").sentences
        return [s for s in sents if s.tokens][:n]
    import random

    rng = random.Random(0)
    words = "aspirin induced renal failure in rats treated with cisplatin and kidney".split()
    out = []
    for _ in range(n):
        k = rng.randint(4, 40)
        toks = [rng.choice(words) for _ in range(k)]
        out.append(Sentence(toks, ["B-Chemical" if t in ("aspirin", "cisplatin") else "O"
                                   for t in toks]))
    return out


def encoder_dir(args, tmp: Path) -> str:
    """The encoder: ``--model`` (MiniLM), a random BERT-base with its vocabulary (``--size
    base``), or a tiny random BERT (``--dry-run``)."""
    if args.size == "minilm" and not args.dry_run:
        return args.model
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(args.model)
    shape = BERT_BASE if args.size == "base" and not args.dry_run else dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    torch.manual_seed(0)
    path = tmp / f"encoder-{args.size}"
    BertModel(BertConfig(vocab_size=len(tok), **shape)).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


class BertkitSide:
    """``finetune ner``'s model, batches (prefetched, planned) and the loop's step functions."""

    def __init__(self, model: str, sentences, device, dtype, crf: bool, batch: int, tmp: Path,
                 compile_: bool) -> None:
        from bertkit.encoders import load_tokenizer
        from bertkit.inputs.packing import Packer
        from bertkit.tasks.ner.encoding import WindowBatches, encode
        from bertkit.tasks.ner.model import build_tagger
        from bertkit.training.config import TrainConfig
        from bertkit.training.devices import Runtime
        from bertkit.training.loop import setup
        from bertkit.training.prefetch import Prefetcher
        from bertkit.training.rundir import RunWriter

        tok = load_tokenizer(model)
        labels = sorted({t for s in sentences for t in s.tags} | {"O"})
        tagger = build_tagger(model, labels, crf, False)
        tagger.packer = Packer(tagger.encoder.config, 64)
        windows, _ = encode(sentences, tok, {lab: i for i, lab in enumerate(labels)}, 128)
        rows = 8 if device.type == "cuda" else 1
        source = WindowBatches(windows, batch, 1, tok.pad_token_id, length_group=1,
                               pack=(64, tagger.packer.start, rows), multiple=32)
        self.source = Prefetcher(source, depth=2)
        self.runtime = Runtime(device, dtype)
        cfg = TrainConfig(epochs=1000, lr=5e-5, warmup=0, batch_size=batch, save_steps=0)
        self.parts = setup(tagger, self.source, cfg, self.runtime, RunWriter(tmp / "run"))
        if compile_:
            tagger.compile(dynamic=False)
        self.batches = self._forever()

    def _forever(self):
        epoch = 0
        while True:
            yield from self.source.iter_batches(epoch)
            epoch += 1

    def step(self) -> int:
        from bertkit.training import loop

        batch = next(self.batches)
        out = loop.forward_backward(self.parts, batch)
        self.parts.meter.add(out)
        loop.optimizer_step(self.parts)
        return out.examples

    def loss(self) -> float:
        return self.parts.meter.means().get("loss", float("nan"))


class StockSide:
    """``AutoModelForTokenClassification`` + padded batches + its own loss, fused AdamW."""

    def __init__(self, model: str, sentences, device, dtype, batch: int, compile_: bool) -> None:
        from transformers import AutoModelForTokenClassification

        from bertkit.encoders import load_tokenizer
        from bertkit.tasks.ner.encoding import collate, encode

        tok = load_tokenizer(model)
        labels = sorted({t for s in sentences for t in s.tags} | {"O"})
        self.model = AutoModelForTokenClassification.from_pretrained(
            model, num_labels=len(labels), attn_implementation="sdpa").to(device).train()
        if compile_:
            self.model.compile(dynamic=False)
        windows, _ = encode(sentences, tok, {lab: i for i, lab in enumerate(labels)}, 128)
        self.device, self.dtype = device, dtype
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=5e-5,
                                     fused=device.type in ("cuda", "cpu"))
        import random

        self.windows, self.batch, self.pad = windows, batch, tok.pad_token_id
        self.rng = random.Random(1)  # random batches, drawn on the host
        self.collate = collate
        self.last = None

    def step(self) -> int:
        idx = [self.rng.randrange(len(self.windows)) for _ in range(self.batch)]
        b = self.collate([self.windows[i] for i in idx], self.pad)
        b = {k: b[k].to(self.device, non_blocking=True)
             for k in ("input_ids", "attention_mask", "labels")}
        with torch.autocast(self.device.type, dtype=self.dtype, enabled=self.dtype is not None):
            loss = self.model(**b).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.last = loss.detach()
        return self.batch

    def loss(self) -> float:
        return float(self.last) if self.last is not None else float("nan")


def measure(side, device, warmup: int, steps: int, profile: bool, out_dir: Path, name: str) -> dict:
    """One-time seconds of the warm-up steps, then timed steady steps, sync audit, profile."""
    sync(device)
    t0 = time.perf_counter()
    for _ in range(warmup):
        side.step()
    sync(device)
    one_time = time.perf_counter() - t0
    times, examples = [], 0
    for _ in range(steps):
        sync(device)
        t = time.perf_counter()
        examples += side.step()
        sync(device)
        times.append(time.perf_counter() - t)
    audit_steps = min(20, steps)
    counter = HostSyncCounter()
    debug_warnings = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if device.type == "cuda":
            torch.cuda.set_sync_debug_mode("warn")
        try:
            with counter:
                for _ in range(audit_steps):
                    side.step()
        finally:
            if device.type == "cuda":
                torch.cuda.set_sync_debug_mode(0)
        if device.type == "cuda":
            debug_warnings = sum("synchroniz" in str(w.message) for w in caught)
    table = None
    if profile:
        from torch.profiler import ProfilerActivity, profile as prof

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with prof(activities=acts) as p:
            for _ in range(5):
                side.step()
            sync(device)
        sort = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
        table = p.key_averages().table(sort_by=sort, row_limit=20)
        (out_dir / f"profile_{name}.txt").write_text(table + "\n", encoding="utf-8")
    med = statistics.median(times)
    return {"median_step_ms": 1000 * med, "min_step_ms": 1000 * min(times),
            "max_step_ms": 1000 * max(times), "sentences_per_s": examples / sum(times),
            "one_time_s": one_time, "warmup_steps": warmup, "steps": steps,
            "host_syncs_per_step": counter.total / audit_steps,
            "host_sync_kinds": dict(counter.counts), "sync_debug_warnings": debug_warnings,
            "last_loss": side.loss(), "profile": f"profile_{name}.txt" if table else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="Encoder folder (default: the packaged MiniLM).")
    ap.add_argument("--data", help="BC5CDR folder with train.tsv (default: synthetic sentences).")
    ap.add_argument("--size", choices=("minilm", "base"), default="minilm")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--precision", choices=("auto", "bf16", "fp32"), default="auto")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--sentences", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--cpu-steps", type=int, default=5, help="Timed steps of the CPU side (0: none).")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny model, a few steps.")
    ap.add_argument("--json", required=True)
    args = ap.parse_args(argv)
    from bertkit.encoders import default_model, quiet_transformers

    quiet_transformers()
    args.model = args.model or default_model()
    if args.dry_run:
        args.device, args.sentences, args.warmup, args.steps, args.cpu_steps = "cpu", 24, 1, 3, 2
        args.batch_size = 4
    device = torch.device(args.device)
    dtype = (torch.bfloat16 if args.precision == "bf16" or (args.precision == "auto"
                                                           and device.type == "cuda") else None)
    out = Path(args.json).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="ner_step_"))
    sentences = load_sentences(args.data, args.sentences)
    model = encoder_dir(args, tmp)
    report = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
              "torch": torch.__version__, "size": args.size, "batch_size": args.batch_size,
              "precision": "bf16" if dtype else "fp32", "compile": args.compile,
              "sentences": len(sentences), "sides": {}}
    sides = [("bertkit-crf", lambda: BertkitSide(model, sentences, device, dtype, True,
                                                 args.batch_size, tmp / "crf", args.compile)),
             ("bertkit-softmax", lambda: BertkitSide(model, sentences, device, dtype, False,
                                                     args.batch_size, tmp / "sm", args.compile)),
             ("stock", lambda: StockSide(model, sentences, device, dtype, args.batch_size,
                                         args.compile))]
    for name, build in sides:
        torch.manual_seed(0)
        report["sides"][name] = measure(build(), device, args.warmup, args.steps, True,
                                        out.parent, name)
        r = report["sides"][name]
        print(f"{name:16s} {r['median_step_ms']:8.1f} ms/step ({r['min_step_ms']:.1f}-"
              f"{r['max_step_ms']:.1f}), {r['sentences_per_s']:8.1f} sentences/s, one-time "
              f"{r['one_time_s']:.1f} s, host syncs/step {r['host_syncs_per_step']:.2f}", flush=True)
    if args.cpu_steps and device.type != "cpu":
        cpu = BertkitSide(model, sentences, torch.device("cpu"), None, True, args.batch_size,
                          tmp / "cpu", False)
        report["sides"]["cpu"] = measure(cpu, torch.device("cpu"), 1, args.cpu_steps, False,
                                         out.parent, "cpu")
    s = report["sides"]
    report["ratio_stock_over_bertkit_crf"] = (s["stock"]["median_step_ms"]
                                              / s["bertkit-crf"]["median_step_ms"])
    report["ratio_stock_over_bertkit_softmax"] = (s["stock"]["median_step_ms"]
                                                  / s["bertkit-softmax"]["median_step_ms"])
    if "cpu" in s:
        report["ratio_cpu_over_bertkit_crf"] = (s["cpu"]["median_step_ms"]
                                                / s["bertkit-crf"]["median_step_ms"])
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"stock / bertkit-crf step time: {report['ratio_stock_over_bertkit_crf']:.2f}x; "
          f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
