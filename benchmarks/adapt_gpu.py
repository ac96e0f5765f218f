"""Domain adaptation of the packaged MiniLM at real size, on a lent GPU (issue 62, step 2).

M is the packaged MiniLM-L6-H384; M+D is M extended with SciVocab's whole words
(``bertkit vocab extend --vocab scivocab-uncased``, as G+D37sv was made from G) and continued on
the scientific corpus (``corpus/train.txt``); both are fine-tuned by ``bertkit bench run`` on
``benchmarks/suites/adapt-minilm.yaml`` (BC5CDR, BC5-chem, BC5-disease, JNLPBA, ChemProt, in that
order, 3 seeds; a task's 2 x 3 runs side by side on the one GPU), then ``bertkit bench report``
(ASO, bootstrap) and M+D's provenance (``bertkit.bench.release``; the weights stay behind).

Stages, in order; each has its own time limit, is skipped when already done (a rerun into the
same ``--work-dir`` goes on where the last stopped: ``bench run --resume`` keeps finished runs),
and none starts with under ``MIN_STAGE_S`` of ``--budget-s`` left:

``unpack`` (the carried data and M) -> ``extend`` -> ``calibrate`` (tokenises the corpus into the
cache and trains ``calibrate_steps`` steps: the median tokens/s of its logged windows after the
first) -> ``pretrain`` (token budget: that rate x ``--pretrain-s`` x 0.9, at most
``--max-tokens``, 37 M by default, G+D37sv's) -> ``bench-TASK`` per task (limit: what is left less ``REPORT_S``) -> ``report`` -> ``provenance``.

The device machine lacks the packaged MiniLM, seqeval, deepsig and the shared data, and what
travels (repository + carried folder) is at most 64 MiB, of which the repository is about 39.
So ``--prepare`` writes a carried folder of about 24.5 MB: the data sets and the corpus text in
one xz archive (tokenised on the device), seqeval and deepsig, and M with each weight matrix
stored as int8 at a step of its row's standard deviation / 24 (the word embeddings / 12;
values past +-127 steps kept exactly), xz-compressed: 1.9% relative error on the weights, 3.3% on MiniLM's last hidden states.
The device restores an fp32 M from it, and both M and M+D start from that restored M.

    python benchmarks/adapt_gpu.py --prepare .adapt_carry         # CPU, with BERTKIT_DATA
    python3 benchmarks/adapt_gpu.py --carry .adapt_carry $OUT/adapt   # the GPU machine
    python benchmarks/adapt_gpu.py --dry-run /tmp/adapt-dry       # CPU: tiny sizes, ~3 min
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from _carry import pack_encoder, unpack_encoder  # noqa: E402 - sibling scripts
from gpu_check import Check, Console, _now, _read_json, run_cmd  # noqa: E402

SUITE = HERE / "suites" / "adapt-minilm.yaml"
TASKS = ("bc5cdr", "bc5-chem", "bc5-disease", "jnlpba", "chemprot")
SETS = ("ner/bc5cdr", "ner/bc5-chem", "ner/bc5-disease", "ner/jnlpba", "re/chemprot")
MIN_STAGE_S, REPORT_S = 20, 40
# continued pretraining, both sizes (G+D37sv's recipe, mini-G-plus-D: token masking, linear
# decay; batch and lr for a 6 x 384 encoder on a GPU)
PRETRAIN = ["--masking", "token", "--mask-prob", "0.15", "--lr", "2e-4", "--warmup", "0.06",
            "--lr-schedule", "linear", "--weight-decay", "0.01", "--dropout", "0.1"]
FULL = {"batch": 128, "length": 128, "add": 40000, "calibrate_steps": 60, "eval_sequences": 512,
        "jobs": 6, "seeds": 3, "budget": "full", "sentences": None, "corpus_lines": None}
DRY = {"batch": 4, "length": 64, "add": 300, "calibrate_steps": 2, "eval_sequences": 8,
       "jobs": 2, "seeds": 1, "budget": "lite", "sentences": 24, "corpus_lines": 400}


# ---------------------------------------------------------------------------------------------
# the carried folder


def _first_sentences(text: str, n: int) -> str:
    """The first ``n`` blank-line separated blocks of a CoNLL-style file (``-DOCSTART-`` blocks
    not counted)."""
    blocks = [b for b in text.split("\n\n") if b.strip()]
    kept, count = [], 0
    for block in blocks:
        kept.append(block.strip("\n"))
        count += not block.lstrip("\n").startswith("-DOCSTART-")
        if count >= n:
            break
    return "\n\n".join(kept) + "\n"


def prepare(dest: Path, data_root: Path, model: str | None, sizes: dict) -> dict:
    """Write the carried folder: ``data.tar.xz`` (the five sets and ``corpus/{train,valid}.txt``,
    whole, or their first ``sentences`` / ``corpus_lines`` in a dry run), the two ``encoder-*``
    files (:func:`pack_encoder` of ``model``, default the packaged MiniLM), ``site.tar.xz``
    (seqeval for NER scores, deepsig for ASO: pure Python, not on the device image) and
    ``MANIFEST.json`` (sizes, the relative weight error, bertkit's commit).

    Raises:
        SystemExit: a data file is missing under ``data_root``.
    """
    files = [f"{s}/{split}.{'jsonl' if s.startswith('re/') else 'tsv'}" for s in SETS
             for split in ("train", "dev", "test")] + ["corpus/train.txt", "corpus/valid.txt"]
    for rel in files:
        if not (data_root / rel).is_file():
            raise SystemExit(f"--prepare: {data_root / rel} not found (set BERTKIT_DATA or --data)")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tarfile.open(dest / "data.tar.xz", "w:xz", preset=9) as tar:
        for rel in files:
            text = (data_root / rel).read_text(encoding="utf-8")
            if sizes["sentences"] and rel.endswith(".tsv"):
                text = _first_sentences(text, sizes["sentences"])
            elif sizes["sentences"] and rel.endswith(".jsonl"):
                text = "".join(text.splitlines(True)[:sizes["sentences"]])
            elif sizes["corpus_lines"]:
                text = "".join(text.splitlines(True)[:sizes["corpus_lines"]])
            blob = text.encode("utf-8")
            info = tarfile.TarInfo(rel)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    import deepsig
    import seqeval

    with tarfile.open(dest / "site.tar.xz", "w:xz", preset=9) as tar:
        for package in (seqeval, deepsig):  # pure Python, not on the device image
            tar.add(Path(package.__file__).parent, arcname=package.__name__,
                    filter=lambda info: None if "__pycache__" in info.name else info)
    if model is None:
        sys.path.insert(0, str(REPO))
        from bertkit.encoders import default_model

        model = default_model()
    encoder = pack_encoder(model, dest)
    from bertkit.outputs.provenance import git_commit

    manifest = {"made_utc": _now(), "source_data": str(data_root), "model": str(model),
                "encoder": encoder, "bertkit_commit": git_commit(),
                "bytes": sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())}
    (dest / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def tiny_model(path: Path) -> str:
    """The dry run's M: a random 2 x 32 BERT with the packaged MiniLM's tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from bertkit.encoders import default_model

    tok = AutoTokenizer.from_pretrained(default_model())
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=64)).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


# ---------------------------------------------------------------------------------------------
# the stages (on the GPU machine; on the CPU in a dry run)


def steady_rate(run: Path) -> float | None:
    """Training tokens/s of a ``bertkit pretrain`` run: the median of its logged windows after
    the first (which holds the start-up: CUDA context, the first kernels), else the whole run's
    ``results.json`` rate, else None."""
    import statistics

    rates = []
    try:
        for line in (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec.get("type") == "train" and rec.get("tokens_per_s"):
                rates.append(float(rec["tokens_per_s"]))
    except (OSError, ValueError):
        pass
    if len(rates) >= 2:
        return statistics.median(rates[1:])
    return (_read_json(run / "results.json") or {}).get("tokens_per_second")


class Adapt:
    """One run: settings, environment, the summary and its stages."""

    def __init__(self, args) -> None:
        self.args, self.dry = args, args.dry_run
        self.z = dict(DRY if self.dry else FULL)
        self.z.update({k: v for k, v in (("budget", args.finetune_budget), ("jobs", args.jobs))
                       if v is not None})
        self.out = Path(args.output).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(args.work_dir).resolve()
        (self.work / "logs").mkdir(parents=True, exist_ok=True)
        self.log = Console(self.out / "adapt.log")
        self.t0, self.budget = time.monotonic(), args.budget_s
        self.carry = Path(args.carry).resolve() if args.carry else self.work / "carry"
        self.summary = {"script": "benchmarks/adapt_gpu.py", "dry_run": self.dry,
                        "started_utc": _now(), "budget_s": self.budget, "sizes": self.z,
                        "pretrain_flags": PRETRAIN, "stages": {}}
        self.data, self.m = self.work / "data", self.work / "M"
        self.ext, self.run = self.work / "M-ext", self.work / "M-ext-sci"
        self.bench = self.work / "bench"
        site = [str(self.work / "site"), str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p]
        sys.path[:0] = site[:2]
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(site),
                    "BERTKIT_DATA": str(self.data), "BERTKIT_CACHE": str(self.work / "hf-cache"),
                    "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg"}
        if self.dry:
            self.env.setdefault("OMP_NUM_THREADS", "1")

    left = Check.left  # seconds of --budget-s left
    save = Check.save  # summary.json, written atomically

    def cmd(self, name: str, argv: list[str], limit: float) -> dict:
        rc, secs = run_cmd(argv, self.work / "logs" / f"{name}.log", self.env,
                           min(limit, max(self.left() - 5, 1)))
        return {"rc": rc, "seconds": round(secs, 1), "log": f"logs/{name}.log",
                "status": "passed" if rc == 0 else "timeout" if rc is None else "failed"}

    def bertkit(self, *argv: str) -> list[str]:
        return [sys.executable, "-m", "bertkit", *argv]

    # each stage returns its record; ``done`` tells the runner to skip it

    def unpack(self) -> dict:
        if self.dry and not self.args.carry:
            source = Path(self.args.data)
            prepare(self.carry, source, tiny_model(self.work / "tiny-M"), self.z)
        marker = self.data / ".unpacked"
        if not marker.is_file():
            with tarfile.open(self.carry / "data.tar.xz", "r:xz") as tar:
                tar.extractall(self.data, filter="data")
            with tarfile.open(self.carry / "site.tar.xz", "r:xz") as tar:
                tar.extractall(self.work / "site", filter="data")
            marker.write_text(_now() + "\n")
        if not (self.m / "config.json").is_file():
            unpack_encoder(self.carry, self.m)
        return {"status": "passed",
                "encoder": (_read_json(self.carry / "MANIFEST.json") or {}).get("encoder")}

    def extend(self) -> dict:
        res = self.cmd("extend", self.bertkit(
            "vocab", "extend", "--model", str(self.m), "--vocab", "scivocab-uncased", "--add",
            str(self.z["add"]), "--out", str(self.ext), "--overwrite"), 240)
        if (self.ext / "vocab.txt").is_file():
            res["vocab_size"] = sum(1 for _ in open(self.ext / "vocab.txt", encoding="utf-8"))
        return res

    def _pretrain_argv(self, out: Path, *extra: str) -> list[str]:
        z = self.z
        return self.bertkit(
            "pretrain", "--model", str(self.ext), "--corpus", str(self.data / "corpus" / "train.txt"),
            "--valid", str(self.data / "corpus" / "valid.txt"), *PRETRAIN,
            "--batch-size", str(z["batch"]), "--max-seq-length", str(z["length"]),
            "--max-eval-sequences", str(z["eval_sequences"]), "--cache-dir", str(self.work / "cache"),
            "--seed", "42", "--output-dir", str(out), *extra)

    def calibrate(self) -> dict:
        run = self.work / "calibrate"
        res = self.cmd("calibrate", self._pretrain_argv(
            run, "--max-steps", str(self.z["calibrate_steps"]), "--eval-steps", "100000",
            "--save-steps", "100000", "--logging-steps", "10", "--overwrite"), 300)
        res["tokens_per_second"] = steady_rate(run)
        return res

    def token_budget(self) -> tuple[int, str]:
        """Tokens for ``pretrain``: ``--max-tokens`` if given as the budget, else the calibrated
        rate x ``--pretrain-s`` x 0.9 (at most ``--max-tokens``), in whole batches."""
        per_batch = self.z["batch"] * self.z["length"]
        if self.dry:
            return 3 * per_batch, "dry run: 3 batches"
        rate = (self.summary["stages"].get("calibrate") or {}).get("tokens_per_second")
        if not rate:
            rate = self.args.assume_rate
            how = f"no calibrated rate: assumed {rate:.0f} tokens/s"
        else:
            how = f"calibrated {rate:.0f} tokens/s"
        tokens = min(self.args.max_tokens, int(rate * self.args.pretrain_s * 0.9))
        tokens = max(per_batch, tokens // per_batch * per_batch)
        return tokens, f"{how} x {self.args.pretrain_s:.0f} s x 0.9, at most {self.args.max_tokens}"

    def pretrain(self) -> dict:
        tokens, how = self.token_budget()
        started = (self.run / "checkpoints").is_dir()
        if started:  # a resumed run keeps the budget its schedule was made for
            tokens, how = (_read_json(self.work / "pretrain-budget.json") or {}).get(
                "max_tokens", tokens), f"resumed: {how}"
        else:
            (self.work / "pretrain-budget.json").write_text(json.dumps(
                {"max_tokens": tokens, "token_budget": how}) + "\n", encoding="utf-8")
        extra = ["--resume"] if started else ["--overwrite"]
        res = self.cmd("pretrain", self._pretrain_argv(
            self.run, "--max-tokens", str(tokens), "--eval-steps", "1000000",
            "--save-steps", "1000", "--save-total-limit", "1", "--logging-steps", "50", *extra),
            self.args.pretrain_s * 1.5 + 120)
        results = _read_json(self.run / "results.json") or {}
        res.update({"max_tokens": tokens, "token_budget": how, "resumed": started,
                    "results": {k: results.get(k) for k in (
                        "steps", "tokens_per_second", "train_seconds", "precision", "device",
                        "train", "valid", "valid_initial")}})
        return res

    def bench_task(self, task: str) -> dict:
        if not (self.run / "model" / "config.json").is_file():
            return {"status": "skipped", "reason": "no M+D model (pretrain did not finish)"}
        return self.cmd(f"bench-{task}", self.bertkit(
            "bench", "run", str(SUITE), "--encoder", f"M={self.m}",
            "--encoder", f"M+D={self.run / 'model'}", "--tasks", task, "--seeds",
            str(self.z["seeds"]), "--jobs", str(self.z["jobs"]), "--budget", self.z["budget"],
            "--resume", "--no-report", "-o", str(self.bench)), max(self.left() - REPORT_S, 1))

    def report(self) -> dict:
        if not (self.bench / "bench.json").is_file():
            return {"status": "skipped", "reason": "no bench run"}
        return self.cmd("report", self.bertkit("bench", "report", str(self.bench),
                                               "--baseline", "M"), REPORT_S)

    def provenance(self) -> dict:
        from bertkit.bench.release import export_encoder

        if not (self.run / "model" / "config.json").is_file():
            return {"status": "skipped", "reason": "no M+D model (pretrain did not finish)"}
        pre = self.summary["stages"].get("pretrain") or {}
        record = {"recipe": {"extend": f"bertkit vocab extend --vocab scivocab-uncased --add "
                             f"{self.z['add']}", "pretrain": PRETRAIN + [
                                 "--batch-size", self.z["batch"], "--max-seq-length", self.z["length"],
                                 "--max-tokens", pre.get("max_tokens")]},
                  "token_budget": pre.get("token_budget"),
                  "pretraining_tokens": pre.get("max_tokens"),
                  "made_by": "benchmarks/adapt_gpu.py (issue 62)",
                  "carry": self.summary.get("carry")}
        rel = export_encoder(self.run / "model", self.work / "release" / "M+D", "M+D", record,
                             overwrite=True)
        shutil.copy2(rel / "provenance.json", self.out / "provenance.json")
        return {"status": "passed", "weights_sha256": _read_json(rel / "provenance.json")["weights_sha256"]}

    # -- the whole run -----------------------------------------------------------------------

    def done(self, name: str) -> bool:
        if name == "unpack":
            return (self.data / ".unpacked").is_file() and (self.m / "config.json").is_file()
        if name == "extend":
            return (self.ext / "config.json").is_file()
        if name == "calibrate":
            return (self.work / "calibrate" / "results.json").is_file()
        if name == "pretrain":
            return (self.run / "results.json").is_file()
        return False  # bench stages resume inside bench; report and provenance are cheap

    def stage(self, name: str, fn) -> None:
        stages = self.summary["stages"]
        if self.done(name) and name in ("calibrate", "pretrain"):
            stages.setdefault(name, {}).update(status="done before", **self._rerecord(name))
            self.log(f"{name}: done before, skipped")
            return
        if self.done(name):
            stages[name] = {"status": "done before"}
            self.log(f"{name}: done before, skipped")
            return
        if self.left() < MIN_STAGE_S:
            stages[name] = {"status": "skipped", "reason": f"time budget spent ({self.budget} s)"}
            self.log(f"{name}: skipped (time budget spent)")
            return
        self.log(f"{name}: start ({self.left():.0f} s of the budget left)")
        start = time.perf_counter()
        try:
            stages[name] = fn()
        except Exception as exc:  # noqa: BLE001 - recorded; the next stage runs
            stages[name] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        stages[name].setdefault("seconds", round(time.perf_counter() - start, 1))
        self.log(f"{name}: {stages[name]['status'].upper()} in {stages[name]['seconds']:.0f} s"
                 + (f"; {stages[name]['error']}" if "error" in stages[name] else ""))
        self.save()

    def _rerecord(self, name: str) -> dict:
        if name == "calibrate":
            return {"tokens_per_second": steady_rate(self.work / "calibrate")}
        results = _read_json(self.run / "results.json") or {}
        return {**(_read_json(self.work / "pretrain-budget.json") or {}),
                "results": {k: results.get(k) for k in ("steps", "tokens_per_second", "train")}}

    def pack(self) -> None:
        """``bench.tar.gz``: the bench folder (with each run's per-item test statistics,
        ``*.items.npz``, so that ``bench report`` reruns on it for the bootstrap), the stage logs
        and the pretraining runs' small files (no weights, no ``.conll`` predictions);
        ``report.md`` beside it."""
        keep = (".log", ".json", ".jsonl", ".yaml", ".md", ".csv", ".tsv", ".txt", ".npz")
        with tarfile.open(self.out / "bench.tar.gz", "w:gz") as tar:
            for top in ("bench", "logs", "calibrate", "M-ext-sci"):
                for f in sorted((self.work / top).rglob("*")):
                    rel = f.relative_to(self.work)
                    if (f.is_file() and f.suffix in keep and f.stat().st_size < 8 * 2**20
                            and not {"model", "checkpoints"} & set(rel.parts)
                            and f.name not in ("tokenizer.json", "vocab.txt")):
                        tar.add(f, arcname=str(Path("adapt") / rel))
        if (self.bench / "report.md").is_file():
            shutil.copy2(self.bench / "report.md", self.out / "report.md")

    def go(self) -> dict:
        import platform

        self.summary["environment"] = {"python": platform.python_version(), "cpus": os.cpu_count()}
        try:
            import torch
            import transformers

            self.summary["environment"].update(
                torch=torch.__version__, transformers=transformers.__version__,
                cuda=torch.cuda.is_available(),
                device=torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu")
        except ImportError as exc:
            self.summary["environment"]["error"] = str(exc)
        plan = [("unpack", self.unpack), ("extend", self.extend), ("calibrate", self.calibrate),
                ("pretrain", self.pretrain)]
        plan += [(f"bench-{t}", lambda t=t: self.bench_task(t)) for t in self.args.tasks]
        plan += [("report", self.report), ("provenance", self.provenance)]
        for name, fn in plan:
            if name == "extend":  # after unpack, done now or before
                self.summary["carry"] = _read_json(self.carry / "MANIFEST.json")
            if name == "report":  # the report and provenance get what bench left
                self.budget = max(self.budget, time.monotonic() - self.t0 + REPORT_S)
            self.stage(name, fn)
        self.summary["finished_utc"] = _now()
        self.save()
        self.pack()
        statuses = {k: v.get("status") for k, v in self.summary["stages"].items()}
        self.log(f"done in {time.monotonic() - self.t0:.0f} s: {statuses}")
        return self.summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("output", nargs="?", help="Output folder (summary.json, adapt.log, "
                    "bench.tar.gz, report.md, provenance.json).")
    ap.add_argument("--prepare", metavar="DIR", help="Write the carried folder DIR and exit (CPU).")
    ap.add_argument("--carry", metavar="DIR", help="The folder --prepare made.")
    ap.add_argument("--data", default=os.environ.get("BERTKIT_DATA", str(REPO.parent / "shared" / "data")),
                    help="Shared data, read by --prepare and the dry run.")
    ap.add_argument("--dry-run", action="store_true",
                    help="CPU, tiny model, data slices, 1 seed, lite budget: checks the script.")
    ap.add_argument("--budget-s", type=float, default=400.0, help="Total time budget in seconds.")
    ap.add_argument("--pretrain-s", type=float, default=120.0,
                    help="Seconds of continued pretraining the token budget is set for.")
    ap.add_argument("--max-tokens", type=int, default=37_000_000,
                    help="Most pretraining tokens (G+D37sv's 37 M).")
    ap.add_argument("--assume-rate", type=float, default=160_000.0,
                    help="Tokens/s when calibration gave none (MiniLM on the H200, issue 47).")
    ap.add_argument("--tasks", default=",".join(TASKS), help="Comma-separated suite tasks, in order.")
    ap.add_argument("--finetune-budget", choices=("full", "lite"),
                    help="bench run --budget (default full; lite in a dry run): lite caps each "
                         "task at 2,000 training examples x 2 epochs.")
    ap.add_argument("--jobs", type=int, help="Fine-tunes side by side (default 6: a task's "
                    "2 encoders x 3 seeds at once; 2 in a dry run).")
    ap.add_argument("--work-dir", default="/tmp/adapt_gpu_work",
                    help="Where runs are written; a rerun into it skips finished stages.")
    args = ap.parse_args(argv)
    args.tasks = [t for t in args.tasks.split(",") if t]
    if args.prepare:
        sys.path.insert(0, str(REPO))
        manifest = prepare(Path(args.prepare), Path(args.data), None, FULL)
        print(json.dumps(manifest, indent=2))
        print(f"carry it: add '/{Path(args.prepare).name}/' to .git/info/exclude and name it in the "
              f"device run's carry list")
        return 0
    if not args.output:
        ap.error("the output folder is needed (or --prepare DIR)")
    if not args.dry_run and not args.carry:
        ap.error("--carry DIR (made by --prepare) is needed on the GPU machine")
    summary = Adapt(args).go()
    return 0 if all(v.get("status") in ("passed", "done before")
                    for v in summary["stages"].values()) else 1  # a skipped stage counts too


if __name__ == "__main__":
    sys.exit(main())
