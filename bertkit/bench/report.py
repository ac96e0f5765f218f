"""``bertkit bench report DIR``: a fold over the stage result files (as MTEB's leaderboard is a
fold over its results files) into tables, tests against a baseline, contamination counts, a plot.

Writes ``report.md``, ``report.json`` (everything in the tables, each stage's settings and the
paths of its test predictions, which the bootstrap reads) and ``report.png``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from bertkit.bench import stats
from bertkit.bench.floors import describe, floor_reason, zero_shot_reason
from bertkit.bench.manifest import load_manifest, load_stage
from bertkit.bench.declarations import declared_families, suite_metric
from bertkit.errors import BertkitError
from bertkit.io import write_json, write_text


def collect(out: Path) -> tuple[dict, dict[str, dict[str, list[dict]]]]:
    """``(bench.json, {encoder: {task: [seed stage records, by seed]}})``.

    Raises:
        BertkitError: ``out`` is not a folder or holds no bench run, a result file cannot be
            read, or a stage record is out of its place (:func:`_check_place`).
    """
    manifest_file = Path(out) / "bench.json"
    if not Path(out).is_dir():
        raise BertkitError("no such folder", file=out,
                           expected="the -o folder of a bertkit bench run")
    if not manifest_file.is_file():
        raise BertkitError("no bench run here (no bench.json)", file=out,
                           expected="the -o folder of a bertkit bench run")
    manifest = load_manifest(manifest_file)
    found: dict[str, dict[str, list[dict]]] = {e: {} for e in manifest["encoders"]}
    metrics = {t["name"]: t["metric"] for t in manifest["suite"].get("tasks", [])
               if isinstance(t, dict) and t.get("metric")}
    for path in sorted((Path(out) / "stages").glob("*/*/seed-*.json")):
        record = load_stage(path)
        _check_place(record, path, metrics)
        found.setdefault(record["encoder"], {}).setdefault(record["task"], []).append(record)
    for tasks in found.values():
        for records in tasks.values():
            records.sort(key=lambda r: r["seed"])
    return manifest, found


def _check_place(record: dict, path: Path, metrics: dict[str, str]) -> None:
    """A stage record must say what its place says (``stages/ENCODER/TASK/seed-N.json``) and
    carry the suite's metric for its task: a record copied or edited into the wrong place
    would otherwise count towards another encoder, task or seed.

    Raises:
        BertkitError: naming the file, the field and what its place expects.
    """
    want = {"encoder": path.parent.parent.name, "task": path.parent.name,
            "seed": path.stem.removeprefix("seed-")}
    for key, value in want.items():
        if str(record[key]) != value:
            raise BertkitError(f"stage record: {key} {record[key]!r}, but its folder and name "
                               f"say {value}", file=path,
                               expected=f"{key} {value} (a record in another stage's place "
                                        f"would count there)")
    task = record["task"]
    if task in metrics and record["metric"] != metrics[task]:
        raise BertkitError(f"stage record: metric {record['metric']!r}, but the suite in "
                           f"bench.json gives {task} {metrics[task]!r}: the suite was edited "
                           f"after this stage ran", file=path,
                           expected=f"the suite's metric for {task}: {metrics[task]} (rerun "
                                    f"bench run with the suite as it was, or remove "
                                    f"{path.parent} and bench run again to rerun that task's "
                                    f"stages)")


def _run_dir(record: dict, out: Path) -> Path:
    """A stage's run folder: stored relative to the results folder (absolute in older results:
    then looked up under ``out/runs`` when the stored path is gone)."""
    run = Path(record["run"])
    if not run.is_absolute():
        return Path(out) / run
    if run.is_dir():
        return run
    return Path(out) / "runs" / record["encoder"] / record["task"] / run.name


def _item_stats(record: dict, out: Path):
    """The stage's per-test-item statistics ``[N, K]``: its ``.items.npz`` beside the result
    file, else read from its run's predictions; None where neither is there."""
    import numpy as np

    from bertkit.bench.runner import item_statistics

    spec = suite_metric(record["task_kind"], record["metric"])
    if spec.stats is None:
        return None
    if record.get("items"):
        stage = Path(out) / "stages" / record["encoder"] / record["task"] / record["items"]
        try:
            with np.load(stage) as z:
                return z["items"]
        except (OSError, ValueError, KeyError):
            pass
    run = _run_dir(record, out)
    try:
        results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return item_statistics(spec, run, results)


def compare(a: list[dict], b: list[dict], folder: Path) -> dict:
    """An encoder's seed records against the baseline's on one task: the difference of means,
    almost stochastic order, the paired bootstrap over test items, the verdict. ``folder``: the
    results folder (the stages' item statistics, or their runs' predictions).

    Where the metric has a bootstrap but a seed's test predictions are gone (a results folder
    moved without its ``runs/`` from before the statistics were kept with the stages), the
    comparison says so (``bootstrap_note``) and its verdict is marked "(no bootstrap)" rather
    than silently differing from the full test's.
    """
    sa, sb = stats.summary([r["score"] for r in a]), stats.summary([r["score"] for r in b])
    res = {"delta": sa["mean"] - sb["mean"], "eps_min": None, "bootstrap": None}
    if len(a) >= 2 and len(b) >= 2:
        hi, lo = (a, b) if sa["mean"] >= sb["mean"] else (b, a)
        res["eps_min"] = stats.aso([r["score"] for r in hi], [r["score"] for r in lo])
    spec = suite_metric(a[0]["task_kind"], a[0]["metric"])
    ia, ib = [_item_stats(r, folder) for r in a], [_item_stats(r, folder) for r in b]
    missing = [f"{r['encoder']} seed {r['seed']}" for r, x in zip(a + b, ia + ib) if x is None]
    if spec.score is not None and spec.stats is not None and not missing:
        try:
            boot = stats.paired_bootstrap(ia, ib, spec.score)
            res["bootstrap"] = {k: (v * spec.scale if k != "p" else v)  # points, as the rest
                                for k, v in boot.items()}
        except ValueError as exc:
            res["bootstrap_note"] = str(exc)
    elif spec.stats is not None:
        res["bootstrap_note"] = "test predictions missing for " + ", ".join(missing)
    p = res["bootstrap"]["p"] if res["bootstrap"] else None
    res["verdict"] = stats.verdict(sa, sb, res["eps_min"], p)
    if min(len(a), len(b)) < 2:  # one seed has no spread to be outside of
        res["verdict"] = "none (fewer than 2 seeds)"
    if spec.stats is not None and res["bootstrap"] is None:
        res["verdict"] += " (no bootstrap)"
    return res


def build(out: Path, baseline: str | None = None) -> dict:
    """The report as data (what ``report.json`` holds).

    Raises:
        BertkitError: no bench run in ``out``, ``baseline`` is not one of its encoders, or a
            task's test text cannot be counted (:func:`bertkit.bench.contamination.count`).
    """
    manifest, found = collect(out)
    suite = manifest["suite"]
    tasks = {t["name"]: t for t in suite["tasks"]}
    listed = manifest["encoders"]
    # stage folders of encoders bench.json does not list (stages copied in from another run):
    # reported from their stage records, and said so
    unlisted = [e for e in found if e not in listed and any(found[e].values())]
    encoders = list(listed) + unlisted
    if baseline is not None and baseline not in encoders:
        raise BertkitError(f"no encoder {baseline!r} in this bench run", file=out,
                           expected="one of " + ", ".join(encoders))
    baseline = baseline or encoders[0]
    report = {"suite": suite["name"], "budget": manifest["budget"],
              "protocol": manifest["protocol"], "note": manifest.get("note", ""),
              "seeds": suite.get("seeds") or [],
              "baseline": baseline, "encoders": {}, "missing": suite.get("missing", []),
              "references": suite.get("references", []), "comparisons": {},
              "contamination": {}, "unlisted": unlisted, "no_corpora": []}
    for enc in encoders:
        report["encoders"][enc] = _encoder(enc, listed, found, suite)
        corpora = tuple(listed.get(enc, {}).get("corpora") or ())
        if enc in listed and not corpora:
            report["no_corpora"].append(enc)
        if corpora:
            report["contamination"][enc] = _contamination(tasks, corpora)
    report["mixed_precision"] = mixed_precision(report["encoders"])
    for enc in encoders:
        if enc != baseline:
            report["comparisons"][enc] = _comparisons(report, found, enc, baseline, tasks, out)
    return report


def _seed_records(records: list[dict]) -> dict:
    """One encoder's entry for one task: the summary of its seed scores and, per seed, its
    settings, predictions, precision and the floors it sits at."""
    return {**stats.summary([r["score"] for r in records]),
            "scores": [r["score"] for r in records],
            "seeds": [r["seed"] for r in records],
            "overrides": records[0]["overrides"],
            "dataset_defaults": sorted(k for k, v in records[0].get("sources", {}).items()
                                       if v == "data-set default"),
            "predictions": [r["run"] for r in records],
            "items": [r.get("items") for r in records],
            "precisions": [r.get("precision") for r in records],
            # per seed: why its score is a constant prediction's, or None
            "floors": [floor_reason(r) for r in records],
            # per seed: below the encoder's zero-shot score, or None
            "below_zero_shot": [zero_shot_reason(r) for r in records]}


def _encoder(enc: str, listed: dict, found: dict, suite: dict) -> dict:
    """An encoder's part of the report: its tasks, family means, suite score and what is
    missing from it (tasks without results, tasks short of seeds, families)."""
    families = {t["name"]: t["family"] for t in suite["tasks"]}
    per_task = {name: _seed_records(records) for name in families
                if (records := found.get(enc, {}).get(name, []))}
    means = {t: v["mean"] for t, v in per_task.items()}
    fam = stats.family_means(means, families)
    wanted = set(families.values()) | {m["family"] for m in suite.get("missing", [])}
    return {
        "model": (listed[enc]["model"] if enc in listed else
                  next(r for rs in found[enc].values() for r in rs).get("model", "?")),
        "tasks": per_task, "families": fam,
        "suite_score": stats.suite_score(means, families) if means else None,
        "families_missing": sorted(wanted - set(fam)),
        "tasks_without_results": [t for t in families if t not in per_task],
        # a task scored on fewer seeds than the suite asks counts fully in its family mean:
        # named, so the suite score reads as partial
        "tasks_short_of_seeds": {t: v["n"] for t, v in per_task.items()
                                 if v["n"] < len(suite.get("seeds") or [])}}


def _contamination(tasks: dict[str, dict], corpora: tuple[str, ...]) -> dict[str, dict]:
    """``{task: count}`` of the suite's tasks whose test split is found here."""
    from bertkit.bench import contamination

    return {name: contamination.count(t["task"], f, corpora) for name, t in tasks.items()
            if (f := contamination.task_test_file(t["task"], t["data"])) is not None}


def _comparisons(report: dict, found: dict, enc: str, baseline: str, tasks: dict,
                 out: Path) -> dict[str, dict]:
    """``enc`` against ``baseline`` on each task both have results for (:func:`compare`); not
    judged where both sit at a constant prediction's level or either has seen the test text."""
    compared = {name: compare(found[enc][name], found[baseline][name], out) for name in tasks
                if found.get(enc, {}).get(name) and found.get(baseline, {}).get(name)}
    for name, c in compared.items():
        if all(all(report["encoders"][e]["tasks"][name]["floors"]) for e in (enc, baseline)):
            # every seed of both at a constant prediction's level: the run failed on both
            c["verdict"] = "none (both at a constant prediction's level)"
        seen = [f"{e}: {k['found']:,} of {k['of']:,}" for e in (enc, baseline)
                if (k := report["contamination"].get(e, {}).get(name))
                and k["found"] and k["found"] >= 0.01 * k["of"]]
        if seen:  # the encoder has seen the test text: shown, not a claim
            c["contaminated"] = seen
            c["verdict"] = (f"not judged: contaminated ({'; '.join(seen)} test examples in "
                            f"the pretraining corpora); the tests say {c['verdict']}")
    return compared


def mixed_precision(encoders: dict) -> dict[str, dict[str, dict[str, int]]]:
    """Tasks whose runs computed in more than one precision, across seeds or encoders:
    ``{task: {encoder: {precision: runs}}}``. ``--precision auto`` resolves per machine (bf16
    on a CPU with AMX-BF16 or a CUDA GPU, fp32 elsewhere: :func:`bertkit.training.devices.
    auto_dtype`), so a suite resumed on another machine can mix them; stages recorded before
    the precision was kept (None) are left out."""
    from collections import Counter

    out: dict[str, dict[str, dict[str, int]]] = {}
    tasks = {t for e in encoders.values() for t in e["tasks"]}
    for task in sorted(tasks):
        counts = {enc: dict(Counter(p for p in e["tasks"][task].get("precisions", []) if p))
                  for enc, e in encoders.items() if task in e["tasks"]}
        if len({p for c in counts.values() for p in c}) > 1:
            out[task] = {enc: c for enc, c in counts.items() if c}
    return out


def _pm(v: dict | None) -> str:
    """``mean ± sd (n=N)``; one seed has no spread: ``mean (n=1)``."""
    if not v:
        return "-"
    return f"{v['mean']:.2f} (n=1)" if v["n"] == 1 else \
        f"{v['mean']:.2f} ± {v['sd']:.2f} (n={v['n']})"


def _partial(e: dict) -> bool:
    """An encoder's suite score leaves out tasks (no results yet) or counts some on fewer
    seeds than the suite asks."""
    return bool(e.get("tasks_without_results") or e.get("tasks_short_of_seeds"))


def _num(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def markdown(r: dict) -> str:
    """``report.md``: the tables of :func:`build`'s report."""
    names = sorted({t for e in r["encoders"].values() for t in e["tasks"]} |
                   {t for ref in r["references"] for t in ref["scores"]})
    lite = f"\n**{r['note']}**\n" if r["note"] else ""
    lines = [f"# bench {r['suite']}", "", f"budget {r['budget']}, protocol {r['protocol']} "
             "(fixed: one recipe per task for every encoder; dev-grid: each encoder's own dev "
             "choice from the grid), baseline " + r["baseline"], lite,
             "## Per task: test score in points, mean ± sd over seeds (n)", lite,
             "| encoder | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for enc, e in r["encoders"].items():
        lines.append(f"| {enc} | " + " | ".join(_pm(e["tasks"].get(t)) for t in names) + " |")
    lines += _family_table(r, lite) + _run_notes(r) + _leaderboard(r, names, lite)
    for enc, tasks in r["comparisons"].items():
        lines += _comparison_table(r, enc, tasks, lite)
    return "\n".join(lines + _closing_notes(r)) + "\n"


def _family_table(r: dict, lite: str) -> list[str]:
    """The families and suite score table, and the note on partial suite scores."""
    fams = sorted({f for e in r["encoders"].values() for f in e["families"]})
    lines = ["", "## Families and suite score (BLURB: the mean of the family means)", lite,
             "| encoder | " + " | ".join(fams) + " | suite score | families missing | "
             "tasks without results (or short of seeds) |", "|---" * (len(fams) + 4) + "|"]
    n_seeds = len(r.get("seeds") or [])
    for enc, e in r["encoders"].items():
        gaps = e.get("tasks_without_results", []) + [
            f"{t} ({n} of {n_seeds} seeds)" for t, n in e.get("tasks_short_of_seeds", {}).items()]
        lines.append(f"| {enc} | " + " | ".join(_num(e["families"].get(f)) for f in fams) +
                     f" | {_num(e['suite_score'])} | {', '.join(e['families_missing']) or '-'} | "
                     f"{', '.join(gaps) or '-'} |")
    if any(_partial(e) for e in r["encoders"].values()):
        lines += ["", "A family mean is over the family's tasks with results, each counted fully "
                  "whatever its number of seeds: where a task has no results yet, or fewer seeds "
                  "than the suite's, its family and the suite score are partial and not "
                  "comparable with another encoder's or the published ones."]
    return lines


def _seed_notes(r: dict, key: str) -> str:
    """``enc on task, N of M seeds: ...`` per encoder and task with a seed flagged in ``key``."""
    flagged = [(enc, t, c[key]) for enc, e in r["encoders"].items()
               for t, c in e["tasks"].items() if any(c.get(key) or [])]
    return "; ".join(f"{enc} on {t}, " + describe(fl, r["encoders"][enc]["tasks"][t]["seeds"])
                     for enc, t, fl in flagged)


def _run_notes(r: dict) -> list[str]:
    """Notes under the family table: mixed precisions, runs at a constant prediction's level
    or below the zero-shot score, the suite's sets not available here."""
    lines = []
    if r.get("mixed_precision"):
        lines += ["", "Computed in more than one precision (`--precision auto` is bf16 on a CPU "
                  "with AMX-BF16 or a CUDA GPU, fp32 elsewhere; a suite resumed on another "
                  "machine mixes them): " + "; ".join(
                      f"{t} (" + ", ".join(f"{enc}: " + ", ".join(f"{p} x{n}" for p, n in
                                                                 sorted(c.items()))
                                           for enc, c in by.items()) + ")"
                      for t, by in r["mixed_precision"].items()) + ". Differences between "
                  "those runs include the precision's."]
    if floors := _seed_notes(r, "floors"):
        lines += ["", "At a constant prediction's level, judged on the task's metric (not learnt: "
                  "the score says how the run failed, not how good the encoder is; a "
                  "comparison where every seed of both sides sits there is not judged): " +
                  floors + "."]
    if below := _seed_notes(r, "below_zero_shot"):
        lines += ["", "Below the encoder's zero-shot score (the cosine of its pooled embeddings, "
                  "no training: fine-tuning made it worse than it came): " + below + "."]
    if r["missing"]:
        families = declared_families()
        lines += ["", "Not available here (the suite score averages the families without "
                  "them): " + "; ".join(f"{m['name']} ({families[m['family']]}"
                                       f"{': ' + m['reason'] if m.get('reason') else ''})"
                                       for m in r["missing"])]
    return lines


def _leaderboard(r: dict, names: list[str], lite: str) -> list[str]:
    """This run's encoders and the published rows by suite score, sources as numbered notes."""
    lines = ["", "## Leaderboard (reference rows: published, labelled by model size)", lite,
             "| model | size | " + " | ".join(names) + " | suite score |",
             "|---" * (len(names) + 3) + "|"]
    rows = [(e["suite_score"] or -1, f"| {enc} | this run | " + " | ".join(
        _num(e["tasks"].get(t, {}).get("mean")) for t in names) + f" | {_num(e['suite_score'])}"
        f"{' (partial)' if _partial(e) else ''} |") for enc, e in r["encoders"].items()]
    sources = list(dict.fromkeys(ref["source"] for ref in r["references"]))
    for ref in r["references"]:  # the source as a numbered note: labels stay short
        score = ref.get("suite_score")
        mark = sources.index(ref["source"]) + 1
        rows.append((score or -1, f"| {ref['model']} [{mark}] | {ref['size']} | " +
                     " | ".join(_num(ref["scores"].get(t)) for t in names) +
                     f" | {_num(score)}{' (published, all its tasks)' if score else ''} |"))
    lines += [row for _, row in sorted(rows, key=lambda x: -x[0])]
    if sources:
        lines += [""] + [f"[{i}] {src}  " for i, src in enumerate(sources, 1)]
    return lines


def _comparison_table(r: dict, enc: str, tasks: dict, lite: str) -> list[str]:
    """``enc`` against the baseline: one row per task, then what the tests mean."""
    lines = ["", f"## {enc} against {r['baseline']}", lite,
             "| task | difference | ASO eps_min | bootstrap 95% interval | p | verdict |",
             "|---|---|---|---|---|---|"]
    for t, c in tasks.items():
        b = c["bootstrap"]
        lines.append(f"| {t} | {c['delta']:+.2f} | {_num(c['eps_min'])} | " +
                     (f"{b['low']:+.2f} .. {b['high']:+.2f} | {b['p']:.3f}" if b
                      else "- | -") + f" | {c['verdict']} |")
    lines.append("")
    lines += [f"No bootstrap on {t}: {c['bootstrap_note']}." for t, c in tasks.items()
              if c.get("bootstrap_note")]
    lines.append(f"ASO: almost stochastic order (Dror et al. 2019, deepsig), eps_min of the "
                 f"higher side over the other, < {stats.ASO_THRESHOLD} supports it; bootstrap: "
                 f"{stats.BOOTSTRAP_SAMPLES} paired resamples of test items (seed means); "
                 "'none': the difference is inside the seed spread or not supported.")
    return lines


def _closing_notes(r: dict) -> list[str]:
    """Unlisted encoders, settings not from the suite, contamination, encoders without corpora."""
    lines = []
    if r.get("unlisted"):
        lines += ["", f"Stage results of encoders not listed in this folder's bench.json "
                  f"(copied in from another run) are reported from their stage files, without "
                  f"a contamination check: {', '.join(r['unlisted'])}."]
    own = [(enc, t, c["dataset_defaults"]) for enc, e in r["encoders"].items()
           for t, c in e["tasks"].items() if c.get("dataset_defaults")]
    if own:
        lines += ["", "## Settings not from the suite", "",
                  "The packaged encoder trains with its data set's dev-chosen recipe where the "
                  "suite's recipe names no value (as `bertkit finetune` does), so under `fixed` "
                  "these runs differ from the other encoders' in: " + "; ".join(
                      f"{enc} on {t}: {', '.join(keys)}" for enc, t, keys in own)]
    if r["contamination"]:
        lines += ["", "## Contamination: test sentences found verbatim in the encoder's "
                  "pretraining corpora", "", "| encoder | task | found | of | flag |",
                  "|---|---|---|---|---|"]
        for enc, tasks in r["contamination"].items():
            for t, c in tasks.items():
                flag = "**contaminated**" if c["found"] and c["found"] >= 0.01 * c["of"] else ""
                lines.append(f"| {enc} | {t} | {c['found']} | {c['of']} | {flag} |")
    if r.get("no_corpora"):
        lines += ["", "No pretraining corpus recorded (initial weights, or an encoder bertkit "
                  "did not pretrain), so no contamination to count: " +
                  ", ".join(r["no_corpora"]) + "."]
    return lines


def write_report(out: Path, baseline: str | None = None) -> dict:
    """Build the report and write ``report.md``, ``report.json`` and ``report.png`` in ``out``."""
    from bertkit.bench.plot import plot_seeds

    r = build(out, baseline)
    write_json(Path(out) / "report.json", r)
    write_text(Path(out) / "report.md", markdown(r))
    plot_seeds(r, Path(out) / "report.png")
    return r
