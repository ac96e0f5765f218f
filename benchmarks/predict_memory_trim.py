"""Peak and after-chunk RSS of ``bertkit predict ner`` with and without ``malloc_trim`` after each
chunk (issue 48: memory flat whatever the input size). Prints the RSS after every chunk.

    OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/predict_memory_trim.py off INPUT MODEL
    OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/predict_memory_trim.py on INPUT MODEL

``off`` replaces :func:`bertkit.predict.driver.release_memory` by a no-op (the driver before
the fix); ``on`` runs it. INPUT: one sentence a line (the first 20,000 lines of the scientific
corpus in results/predict_stream/predict_memory_trim.log); chunks of 2,000 sentences; the output
goes to ``/tmp/predict-trim-{on,off}.conll`` (the two are compared by the caller).
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bertkit.predict.driver as driver  # noqa: E402
from bertkit._entry import main as bertkit_main  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=("on", "off"), help="on: malloc_trim after each chunk.")
    p.add_argument("input", help="One sentence a line.")
    p.add_argument("model", help="Saved NER run or model folder.")
    args = p.parse_args()
    mode, inp, model = args.mode, args.input, args.model
    trim = driver.release_memory

    def after_chunk() -> None:
        if mode == "on":
            trim()
        rss = int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 2**20
        hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"rss {rss:.0f} MiB  hwm {hwm:.0f} MiB", flush=True)

    driver.release_memory = after_chunk
    sys.argv = ["bertkit", "predict", "ner", "-m", model, "-i", inp, "-o",
                f"/tmp/predict-trim-{mode}.conll", "--device", "cpu", "--chunk-size", "2000"]
    try:
        bertkit_main()
    except SystemExit as stop:
        if stop.code:
            raise


if __name__ == "__main__":
    main()
