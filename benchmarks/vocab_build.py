"""Benchmark: build a 30K vocabulary with bertkit (both routes) and with SentencePiece directly.

Each build runs in its own Python process, so each peak memory (``ru_maxrss``) is its own;
seconds are wall-clock time of the build call alone (imports excluded), median of ``--repeat``.

    python benchmarks/vocab_build.py --data ../shared/data            # the four builds, ratios
    python benchmarks/vocab_build.py --data ../shared/data --scale-gb 1 2   # + generated corpora

The thread settings (``OMP_NUM_THREADS``, ``RAYON_NUM_THREADS``: set them to 1 on a shared
machine) and the 1-minute load average before and after are printed and saved with the results.

Builds compared, all on ``corpus/train.txt``:

* ``sentencepiece-direct``: ``SentencePieceTrainer.train(model_type="bpe", vocab_size=31000,
  character_coverage=0.9999)``, SciBERT's call, on the file;
* ``tokenizers-bare``: ``tokenizers``' ``WordPieceTrainer`` (30,000, BERT normaliser and
  pre-tokeniser) on the file, for reference;
* ``bertkit-wordpiece``: ``bertkit.vocab.build_vocab(size=30000)``, the default;
* ``bertkit-sentencepiece``: ``build_vocab(size=30000, algorithm="sentencepiece")``.

Targets (issue 3): bertkit's default within 1.5x of ``sentencepiece-direct``, the SentencePiece
route within 1.1x of it. ``--scale-gb`` writes corpora of that many GB (``train.txt`` repeated)
and builds the default vocabulary on each: the peak memory must stay flat as the corpus grows,
since it depends on the number of distinct words, not on the corpus size.

Reference:
    Beltagy et al. (2019), SciBERT, sec. 2; Kudo and Richardson (2018), SentencePiece.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
kind, corpus, out = sys.argv[1], sys.argv[2], sys.argv[3]
if kind == "sentencepiece-direct":
    import sentencepiece as spm
    t = time.perf_counter()
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=out + "/spm", model_type="bpe",
                                   vocab_size=31000, character_coverage=0.9999, minloglevel=2)
elif kind == "tokenizers-bare":
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    t = time.perf_counter()
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train([corpus], trainers.WordPieceTrainer(
        vocab_size=30000, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
        show_progress=False))
    tok.save(out + "/tokenizer.json")
else:
    from bertkit.vocab import build_vocab
    t = time.perf_counter()
    build_vocab([corpus], out + "/vocab", size=30000, algorithm=kind.split("-", 1)[1])
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

KINDS = ("sentencepiece-direct", "tokenizers-bare", "bertkit-wordpiece", "bertkit-sentencepiece")


def run_one(kind: str, corpus: Path, repo: Path) -> dict:
    """Run one build in a fresh process; return ``{"seconds", "peak_mb"}``."""
    with tempfile.TemporaryDirectory(prefix="bertkit-bench-") as out:
        env = dict(os.environ, PYTHONPATH=str(repo) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.run([sys.executable, "-c", CHILD, kind, str(corpus), out], env=env,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{kind} failed:\n{proc.stderr[-3000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(kind: str, corpus: Path, repo: Path, repeat: int) -> dict:
    """Median seconds and peak memory (MiB) over ``repeat`` runs."""
    runs = [run_one(kind, corpus, repo) for _ in range(repeat)]
    return {"seconds": round(statistics.median(r["seconds"] for r in runs), 2),
            "peak_mb": round(statistics.median(r["peak_mb"] for r in runs), 1),
            "runs": [round(r["seconds"], 2) for r in runs]}


def make_corpus(source: Path, gigabytes: float, folder: Path) -> Path:
    """Write ``source`` repeated until the file reaches ``gigabytes`` GB (10^9 bytes)."""
    path = folder / f"corpus-{gigabytes:g}GB.txt"
    target = int(gigabytes * 1e9)
    with open(path, "wb") as out:
        while out.tell() < target:
            with open(source, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 24)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("BERTKIT_DATA", "../shared/data"),
                        help="shared data root (holds corpus/train.txt)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per build (median)")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--scale-gb", type=float, nargs="*", default=[],
                        help="also build the default vocabulary on generated corpora of these sizes")
    parser.add_argument("--tmp", default=None, help="folder for generated corpora")
    parser.add_argument("--json", dest="json_out", default=None, help="write results here")
    args = parser.parse_args()

    repo = Path(__file__).resolve().parents[1]
    corpus = Path(args.data) / "corpus" / "train.txt"
    if not corpus.is_file():
        raise SystemExit(f"{corpus}: not found (set --data or BERTKIT_DATA)")
    threads = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "RAYON_NUM_THREADS")}
    print(f"corpus: {corpus} ({corpus.stat().st_size / 1e6:.1f} MB), cpus: {os.cpu_count()}, "
          f"threads: {threads}, load average before: {os.getloadavg()[0]:.2f}, "
          f"repeat: {args.repeat}", flush=True)
    results: dict = {"corpus_mb": round(corpus.stat().st_size / 1e6, 1), "builds": {},
                     "threads": threads, "load_before": round(os.getloadavg()[0], 2)}
    for kind in args.kinds:
        res = measure(kind, corpus, repo, args.repeat)
        results["builds"][kind] = res
        print(f"{kind:24s} {res['seconds']:7.2f} s  peak {res['peak_mb']:7.1f} MiB  runs {res['runs']}",
              flush=True)
    base = results["builds"].get("sentencepiece-direct")
    if base:
        for kind, target in (("bertkit-wordpiece", 1.5), ("bertkit-sentencepiece", 1.1),
                             ("tokenizers-bare", None)):
            if kind in results["builds"]:
                ratio = results["builds"][kind]["seconds"] / base["seconds"]
                results["builds"][kind]["ratio_vs_sentencepiece"] = round(ratio, 2)
                verdict = "" if target is None else (
                    f"  target <= {target}x: {'met' if ratio <= target else 'NOT met'}")
                print(f"ratio {kind} / sentencepiece-direct: {ratio:.2f}x{verdict}")
    if args.scale_gb:
        folder = Path(args.tmp or tempfile.mkdtemp(prefix="bertkit-bench-corpus-"))
        folder.mkdir(parents=True, exist_ok=True)
        results["scale"] = []
        for gb in args.scale_gb:
            big = make_corpus(corpus, gb, folder)
            res = run_one("bertkit-wordpiece", big, repo)
            row = {"gb": gb, "bytes": big.stat().st_size, "seconds": round(res["seconds"], 1),
                   "peak_mb": round(res["peak_mb"], 1),
                   "mb_per_s": round(big.stat().st_size / 1e6 / res["seconds"], 1)}
            results["scale"].append(row)
            print(f"bertkit-wordpiece on {big.stat().st_size / 1e9:.2f} GB: {row['seconds']} s "
                  f"({row['mb_per_s']} MB/s), peak {row['peak_mb']} MiB", flush=True)
            big.unlink()
    results["load_after"] = round(os.getloadavg()[0], 2)
    print(f"load average after: {results['load_after']:.2f}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
