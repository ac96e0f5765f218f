"""Domain adaptation in miniature (issue 27, phase 2): the SciBERT, DAPT, TAPT and SpanBERT
claims reproduced on encoders bertkit pretrains itself, stage by stage.

Superseded (issue 43) by ``benchmarks/reproduce.py``: the encoders are now recipes
(``recipes/pretrain/mini*.yaml``) and the fine-tuning the ``mini`` suite of ``bertkit bench``.
This script is kept unchanged as the record of how ``results/reproduce/`` was produced
(its stage names and command lines are those JSONs').

Every encoder has the same architecture and two-phase recipe and the same pretraining token
budget (``--tokens``, default 37 M). Phase A is ``plateau_curves.CONFIGS[RECIPE]``
(configuration l of phase 1b: 2 x 128, 8 k WordPiece vocabulary built on the pretraining corpus,
token masking at 30% validated at 15%, lr 1e-3, warm-up 100, constant rate, batch 64 x 64, no
dropout, fp32) for 72% of the budget (26.6 M tokens, ~70 minutes on one thread); phase B
(``PHASE_B``) continues at 128 positions (batch 32 x 128, a fresh warm-up of 100 steps, linear
decay) for the rest (10.4 M, ~27 minutes), as BERT's 128-then-512 schedule did:

- R: random initialisation (the scientific vocabulary; one optimiser step at lr 1e-12, so the
  weights are those of the initialisation), the floor;
- G: vocabulary on ``corpus-general/train.txt``, pretrained from scratch on it;
- S: vocabulary on ``corpus/train.txt`` (same size), pretrained from scratch on it (SciBERT);
- GvS (optional): G's vocabulary, pretrained on the scientific corpus (BaseVocab vs SciVocab);
- G+D: G continued on the scientific corpus for ``--continue-tokens`` tokens (DAPT), against
- G+G: G continued on the general corpus for the same tokens (Gururangan et al.'s control);
- G+T: G continued on each task's own training text (``bertkit adapt --task-text task``, TAPT)
  and fine-tuned in the same command;
- S-span: as S with span masking and the span-boundary objective (SpanBERT).

Stages (each one or two ``bertkit`` command lines; ``plan`` prints them in order with their
estimated cost):

    python benchmarks/reproduce_v1.py plan
    python benchmarks/reproduce_v1.py run pretrain-G --max-minutes 110
    python benchmarks/reproduce_v1.py run pretrain-G --max-minutes 110   # resumes (--resume)
    python benchmarks/reproduce_v1.py run intrinsic-G finetune-G-ner ...
    python benchmarks/reproduce_v1.py merge

A stage counts as done when its result JSON in ``--results`` (default: the committed
``results/reproduce/``) says it finished, whatever ``--work`` holds: to reproduce every stage from
scratch, give ``--results`` a new directory (``merge`` then writes ``reproduce.md`` there).

``run`` runs the named stages whose result is missing (a finished one is skipped), first any
dependency whose heavy output is gone from ``--work`` (/tmp may be wiped between sessions: an
encoder is rebuilt deterministically from its settings and seed). A pretraining stopped at
``--max-minutes`` (SIGTERM: bertkit checkpoints and stops) continues with ``--resume`` on the
next ``run``. Each stage writes ``results/reproduce/<stage>.json`` (metrics only, never weights)
with the command lines and the machine's load; ``merge`` writes ``results/reproduce/reproduce.md``: the
encoders x tasks table (mean and sd over seeds 1, 2, 3), the intrinsic MLM table and the verdict
of each of the issue's goals ("met", "not met" or "not measured yet").

Fine-tuning recipe: chosen on dev for G and reused unchanged for every encoder. Stage
``recipe-TASK`` fine-tunes G on seed 1 at each learning rate of ``LR_GRID`` (bertkit's other
defaults: 3 epochs, linear decay) and keeps the best dev score; every fine-tuning stage of that
task waits for it and reads the choice (``--recipe-lr ner=1e-4`` fixes one by hand instead).

Weights never leave ``--work``; on a new machine a later stage that needs G trains G again
(same settings and seed, one thread: the same encoder; the stage JSON records whether the
rebuilt curve ends at the recorded valid loss). So run an encoder's fine-tuning stages in the
session that pretrains it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _interleave import load_average  # noqa: E402  (benchmarks/ is not a package)
from plateau_curves import CONFIGS, CORPUS_FILES, _flags, crossing, curve  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "reproduce"
MERGED = RESULTS / "reproduce.md"
# The pretraining recipe, in two phases like BERT's own (Devlin et al. 2019, §A.2: 90% of the
# steps at 128 positions, then 512). Phase A (the "-seq64" stage): plateau_curves configuration
# l, sequences of 64 (the phase-1b run that took G off the plateau), for SHORT_TOKENS of the
# budget. Phase B: continued at 128 positions (the fine-tuning windows; positions 64-127 are
# never trained in phase A) with a fresh warm-up and a linear decay to 0 (PHASE_B).
RECIPE = "l-g2x128-mask30-seq64"
PHASE_B = {"max_seq_length": 128, "batch_size": 32, "max_eval_sequences": 128,
           "lr_schedule": "linear"}
TOKENS = 37_000_000  # both phases (session 1's one-phase budget: 37.3 M tokens, 95 minutes)
SHORT_TOKENS = 26_624_000  # phase A at the default TOKENS: 6,500 steps of 64 x 64 (72%)
TOKENS_PER_S = 37.3e6 / (95 * 60)  # phase 1: 37.3 M tokens in 95 min on one thread (2 x 128)
SEEDS = "1,2,3"
CONTINUE_FRACTION = 3  # G+D and G+G continue G for tokens // 3 by default (DAPT is a short phase)
LR_GRID = (5e-5, 1e-4, 3e-4, 1e-3, 3e-3)  # the fine-tuning learning rates tried on dev for G
# (3e-3 added after session 1 chose 1e-3, the top of the grid then, for all three tasks)
RECIPE_SEED = "1"  # the dev choice is made on one seed (seeds 1, 2, 3 then report)

# task -> (bertkit finetune command, data set, selection metric, minutes per seed of the 2 x 128
# encoder on one thread: session 3's three-seed stages took 4.7-5.8, 4.4-5.1 and 5.8-6.3 min)
TASKS = {"ner": ("ner", "bc5cdr", "f1", 1.8),
         "re": ("re", "chemprot", "micro_f1", 1.6),
         "cls": ("cls", "scicite", "macro_f1", 2.0)}
OPTIONAL_TASKS = {"qa": ("qa", "covid-qa", "f1", 60.0)}  # ~46 k full windows an epoch
TASK_NAMES = {"ner": "BC5CDR NER", "re": "ChemProt RE", "cls": "SciCite cls", "qa": "COVID-QA"}
TAPT_EPOCHS = 10  # bertkit adapt's default

# encoder -> how it is made: vocabulary corpus, pretraining corpus, masking, parent encoder
ENCODERS = {
    "R": dict(vocab="scientific", corpus="scientific", random=True),
    "G": dict(vocab="general", corpus="general"),
    "S": dict(vocab="scientific", corpus="scientific"),
    "G+D": dict(parent="G", corpus="scientific"),
    "G+G": dict(parent="G", corpus="general"),
    "G+T": dict(parent="G", tapt=True),
    "S-span": dict(vocab="scientific", corpus="scientific", masking="span"),
}
OPTIONAL_ENCODERS = {"GvS": dict(vocab="general", corpus="scientific")}
PRETRAINED = ("G", "S", "G+D", "G+G", "G+T", "S-span")


class Stage:
    """One stage: its command lines (argv lists, ``{python}`` for the interpreter), the stages it
    needs, its estimated minutes on this machine, and the heavy output (under ``--work``) that
    later stages read (None: nothing needed later). A plain class, not a dataclass: the script
    is also loaded by file path (tests), outside ``sys.modules``."""

    def __init__(self, name: str, kind: str, commands: list[list[str]],
                 deps: list[str] | None = None, minutes: float = 0.0,
                 output: Path | None = None, info: dict | None = None):
        self.name, self.kind, self.commands = name, kind, commands  # kind: vocab, pretrain, ...
        self.deps, self.minutes, self.output, self.info = deps or [], minutes, output, info or {}


def _stem(encoder: str) -> str:
    """A file-name form of an encoder name (``G+D`` -> ``G-plus-D``)."""
    return encoder.replace("+", "-plus-")


def _recipe_yaml(command: str, settings: dict) -> str:
    """A one-command bertkit recipe (YAML) with these settings."""
    lines = ["description: written by benchmarks/reproduce.py", f"command: {command}", "settings:"]
    lines += [f"  {k}: {json.dumps(v)}" for k, v in settings.items()]
    return "\n".join(lines) + "\n"


def model_dir(work: Path, encoder: str) -> Path:
    """The pretrained model folder of an encoder (``bertkit pretrain``'s ``model/``)."""
    return work / "pretrain" / _stem(encoder) / "model"


def grid_stage(name: str, kind: str, enc: str, task: str, spec: tuple, work: Path,
               settings: dict, device: list[str]) -> "Stage":
    """The stage fine-tuning ``enc`` on ``task`` once per rate of ``LR_GRID`` (seed
    ``RECIPE_SEED``; dev scores only, test unread): ``kind`` "recipe" (G: the dev choice) or
    "grid" (another encoder: the sensitivity check). ``spec``: the task's ``TASKS`` entry."""
    command, dataset, metric, per_seed = spec
    runs = [work / "recipe" / f"{_stem(enc)}-{task}-lr{rate:g}" for rate in LR_GRID]
    return Stage(
        name, kind,
        [["{python}", "-m", "bertkit", "finetune", command, "--data", dataset, "--model",
          str(model_dir(work, enc)), "--max-length", str(settings["max_seq_length"]),
          "--lr", f"{rate:g}", "--seeds", RECIPE_SEED, *device, "-o", str(run),
          "--overwrite"] for rate, run in zip(LR_GRID, runs)],
        [f"pretrain-{enc}"], len(LR_GRID) * per_seed, None,
        {"encoder": enc, "task": task, "data": dataset, "metric": metric,
         "grid": list(LR_GRID), "summaries": [str(r / "summary.json") for r in runs]})


def build_plan(work: Path, tokens: int = TOKENS, continue_tokens: int | None = None,
               recipe_lr: dict[str, float] | None = None, optional: bool = False,
               data: Path | None = None, sensitivity: bool = False) -> dict[str, Stage]:
    """Every stage of the experiment, in running order.

    Args:
        work: heavy outputs (vocabularies, runs, fine-tuned models; not committed).
        tokens: pretraining token budget of every from-scratch encoder.
        continue_tokens: G+D's and G+G's continued-pretraining budget (default ``tokens //
            3``: domain-adaptive pretraining is a short phase after the general one; Gururangan
            et al. 2020, §3, continue RoBERTa for 12.5 k steps).
        recipe_lr: task -> fine-tuning peak learning rate, fixed by hand; a task not given gets
            a ``recipe-TASK`` stage that fine-tunes G at each rate of ``LR_GRID`` on one seed and
            keeps the best on dev, and its fine-tuning stages wait for it (``{lr:TASK}`` in their
            command lines until then).
        optional: also the GvS encoder and the COVID-QA task.
        data: ``$BERTKIT_DATA`` (for the valid files of the intrinsic stage).
        sensitivity: also a ``grid-ENC-TASK`` stage per other encoder and task: the recipe's
            grid on that encoder (seed 1, dev only), to show how much the protocol's one rate
            (G's choice, reused unchanged) costs each encoder; it chooses nothing.
    Returns:
        ``{stage name: Stage}``, dependencies before dependants.
    """
    short = CONFIGS[RECIPE]  # phase A
    settings = {**short, **PHASE_B}  # phase B, continued pretraining and fine-tuning lengths
    short_tokens = round(tokens * SHORT_TOKENS / TOKENS)
    data = data_root(data)
    continue_tokens = continue_tokens or tokens // CONTINUE_FRACTION
    recipe_lr = recipe_lr or {}
    encoders = {**ENCODERS, **(OPTIONAL_ENCODERS if optional else {})}
    tasks = {**TASKS, **(OPTIONAL_TASKS if optional else {})}
    size = settings["vocab_size"]
    device = ["--precision", "fp32", "--device", "cpu"]
    stages: dict[str, Stage] = {}
    for corpus in ("general", "scientific"):
        out = work / f"vocab-{corpus}-{size}"
        stages[f"vocab-{corpus}"] = Stage(
            f"vocab-{corpus}", "vocab",
            [["{python}", "-m", "bertkit", "vocab", "build", "--corpus",
              str(data / CORPUS_FILES[corpus]), "--size", str(size), "--out", str(out),
              "--no-progress", "--overwrite"]], minutes=1.0, output=out / "vocab.txt")

    def pretrain_flags(budget: int | None, phase: dict, **override) -> list[str]:
        """A phase's ``bertkit pretrain`` flags (plateau_curves._flags) at a token budget
        (None: no --max-tokens)."""
        flags = {k: v for k, v in phase.items() if k not in ("max_tokens", "config")}
        if budget is not None:
            override = {"max_tokens": budget, **override}
        return _flags(flags, **override)

    def pretrain_stage(name: str, enc: str, run: Path, cmd: list[str], deps: list[str],
                       budget: int) -> None:
        cmd = cmd + ["--seed", "42", *device, "-o", str(run), "--overwrite"]
        stages[name] = Stage(name, "pretrain", [cmd], deps,
                             round(budget / TOKENS_PER_S / 60 + 1, 1), run / "model",
                             {"encoder": enc, "tokens": budget, "run": str(run)})

    for enc, how in encoders.items():
        if how.get("tapt"):
            continue
        run = work / "pretrain" / _stem(enc)
        valid = ["--valid", how.get("corpus", "scientific")]  # each its own text (intrinsic: both)
        pretrain = ["{python}", "-m", "bertkit", "pretrain"]
        if how.get("parent"):
            pretrain_stage(f"pretrain-{enc}", enc, run,
                           [*pretrain, "--model", str(model_dir(work, how["parent"])),
                            "--corpus", how["corpus"], *valid,
                            *pretrain_flags(continue_tokens, settings)],
                           [f"pretrain-{how['parent']}"], continue_tokens)
            continue
        vocab = stages[f"vocab-{how['vocab']}"].output.parent
        scratch = [*pretrain, "--config", short["config"], "--vocab", str(vocab),
                   "--corpus", how["corpus"], *valid]
        if how.get("random"):  # the initialisation: one step at a negligible rate
            pretrain_stage(f"pretrain-{enc}", enc, run,
                           scratch + pretrain_flags(None, short, lr=1e-12, max_steps=1),
                           [f"vocab-{how['vocab']}"], 0)
            continue
        masking = how.get("masking", "token")
        sbo = ["--sbo"] if masking == "span" else []
        first = work / "pretrain" / f"{_stem(enc)}-seq64"
        pretrain_stage(f"pretrain-{enc}-seq64", enc, first,
                       scratch + pretrain_flags(short_tokens, short, masking=masking) + sbo,
                       [f"vocab-{how['vocab']}"], short_tokens)
        pretrain_stage(f"pretrain-{enc}", enc, run,
                       [*pretrain, "--model", str(first / "model"), "--corpus", how["corpus"],
                        *valid, *pretrain_flags(tokens - short_tokens, settings,
                                                masking=masking), *sbo],
                       [f"pretrain-{enc}-seq64"], tokens - short_tokens)
    for enc, how in encoders.items():
        if how.get("tapt"):
            continue
        commands = []
        for valid in ("scientific", "general"):
            valid_file = data / CORPUS_FILES[valid].replace("train.txt", "valid.txt")
            out = work / "intrinsic" / f"{_stem(enc)}-{valid}"
            # results.json's valid_initial: the valid MLM loss before the single step
            commands.append(["{python}", "-m", "bertkit", "pretrain", "--model",
                             str(model_dir(work, enc)), "--corpus", str(valid_file), "--valid",
                             str(valid_file), "--masking", "token", "--mask-prob",
                             f"{settings['valid_mask_prob']:g}", "--max-steps", "1", "--lr",
                             "1e-12", "--seed", "42", *device, "-o", str(out), "--overwrite"])
        stages[f"intrinsic-{enc}"] = Stage(f"intrinsic-{enc}", "intrinsic", commands,
                                           [f"pretrain-{enc}"], 2.0, None, {"encoder": enc})
    for task, (command, dataset, metric, per_seed) in tasks.items():
        recipe_deps = []
        if task in recipe_lr:
            lr = ["--lr", f"{recipe_lr[task]:g}"]
        else:  # the dev choice for G: one seed per rate of the grid, the best dev score wins
            lr, recipe_deps = ["--lr", f"{{lr:{task}}}"], [f"recipe-{task}"]
            stages[f"recipe-{task}"] = grid_stage(f"recipe-{task}", "recipe", "G", task,
                                                  tasks[task], work, settings, device)
        if sensitivity:  # the same grid on every other encoder: a check, not a choice
            for enc, how in encoders.items():
                if enc != "G" and not how.get("tapt"):
                    stages[f"grid-{enc}-{task}"] = grid_stage(
                        f"grid-{enc}-{task}", "grid", enc, task, tasks[task], work, settings,
                        device)
        for enc, how in encoders.items():
            out = work / "finetune" / f"{_stem(enc)}-{task}"
            info = {"encoder": enc, "task": task, "data": dataset, "metric": metric,
                    "lr": recipe_lr.get(task), "summary": str(out / "summary.json")}
            if how.get("tapt"):
                # TAPT continues G with G's phase-B recipe (30% masking, warm-up 100, linear
                # decay, no dropout, 128 positions) and fine-tunes at 128 positions like every other
                # encoder: adapt's --pretrain-recipe and --finetune-recipe, written by run_stage
                pre, fine = work / "recipes" / "tapt-pretrain.yaml", work / "recipes" / f"tapt-{task}.yaml"
                cmd = ["{python}", "-m", "bertkit", "adapt", "--task", command, "--data", dataset,
                       "--model", str(model_dir(work, how["parent"])), "--task-text", "task",
                       "--tapt-epochs", str(TAPT_EPOCHS), "--masking", "token",
                       "--pretrain-lr", f"{settings['lr']:g}", "--pretrain-recipe", str(pre),
                       "--finetune-recipe", str(fine), *lr, "--seeds", SEEDS, *device,
                       "-o", str(out), "--overwrite"]
                info["summary"] = str(out / "finetune" / "summary.json")
                info["files"] = {str(pre): _recipe_yaml("pretrain", {
                    "mask_prob": settings["mask_prob"], "valid_mask_prob": settings["valid_mask_prob"],
                    "warmup": settings["warmup"], "lr_schedule": settings["lr_schedule"],
                    "dropout": settings["dropout"], "batch_size": settings["batch_size"],
                    "max_seq_length": settings["max_seq_length"]}),
                    str(fine): _recipe_yaml(f"finetune {command}",
                                            {"max_length": settings["max_seq_length"]})}
                stages[f"finetune-{enc}-{task}"] = Stage(
                    f"finetune-{enc}-{task}", "tapt", [cmd],
                    [f"pretrain-{how['parent']}", *recipe_deps], 3 * per_seed + 15, None, info)
                continue
            # windows of the positions the encoders were pretrained on (128; positions
            # 128-511 of a from-scratch model are never trained), for every encoder alike
            cmd = ["{python}", "-m", "bertkit", "finetune", command, "--data", dataset, "--model",
                   str(model_dir(work, enc)), "--max-length", str(settings["max_seq_length"]),
                   *lr, "--seeds", SEEDS, *device, "-o", str(out), "--overwrite"]
            stages[f"finetune-{enc}-{task}"] = Stage(
                f"finetune-{enc}-{task}", "finetune", [cmd], [f"pretrain-{enc}", *recipe_deps],
                3 * per_seed, None, info)
    return stages


def data_root(data: Path | None = None) -> Path:
    """``$BERTKIT_DATA`` (``data`` when given; else ``./data``), absolute, so a stage's command
    lines run from any folder."""
    return Path(data or os.environ.get("BERTKIT_DATA", "data")).expanduser().absolute()


def render(cmd: list[str], data: Path | None = None) -> str:
    """A command line as a shell would take it (``{python}`` as ``python``; a path under
    ``data`` as ``$BERTKIT_DATA/...``, so a printed plan names no machine's folders)."""
    root = f"{data}/" if data else None
    words = []
    for a in cmd:
        if a == "{python}":
            words.append("python")
        elif root and a.startswith(root):
            words.append("$BERTKIT_DATA/" + shlex.quote(a[len(root):]))
        else:
            words.append(shlex.quote(a))
    return " ".join(words)


def print_plan(stages: dict[str, Stage]) -> None:
    """Print every stage, its dependencies, its estimated minutes and its command lines (data
    paths as ``$BERTKIT_DATA/...`` when that is set to an absolute folder, which the shell
    expands the same from any folder; else absolute: :func:`render`)."""
    env = os.environ.get("BERTKIT_DATA")
    data = Path(env).expanduser() if env and Path(env).expanduser().is_absolute() else None
    total = left = 0.0
    for s in stages.values():
        total += s.minutes
        done = finished(s)
        left += 0.0 if done else s.minutes
        print(f"## {s.name}{' (done)' if done else ''}  ~{s.minutes:.0f} min  "
              f"needs: {', '.join(s.deps) or '-'}")
        for cmd in s.commands:
            print("   " + render(cmd, data))
    print(f"# left ~{left / 60:.1f} h of ~{total / 60:.1f} h on one thread")
    print(f"# (done): a finished result in {RESULTS}; --results NEW_DIR runs every stage afresh")


def _result_path(name: str) -> Path:
    return RESULTS / f"{name}.json"


def _recorded(name: str) -> dict | None:
    """The stage's result JSON as written (None: none yet)."""
    path = _result_path(name)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def finished(stage: Stage) -> bool:
    """Has the stage written a finished result?"""
    return bool((_recorded(stage.name) or {}).get("finished", False))


def _run_command(cmd: list[str], max_minutes: float | None, log: Path,
                 cache: Path | None = None) -> str | None:
    """Run one command line on one thread (tokenised corpora cached in ``cache``), SIGTERM at
    ``max_minutes``; returns how it was stopped (None: it ended by itself). Raises SystemExit on
    a non-zero exit that was not our SIGTERM."""
    argv = [sys.executable if a == "{python}" else a for a in cmd]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "RAYON_NUM_THREADS": "1"}
    if cache is not None:
        env["BERTKIT_CACHE"] = str(cache)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as out:
        out.write(f"$ {render(cmd)}\n")
        out.flush()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.time() + 60 * max_minutes if max_minutes else None
        stopped = None
        while True:
            try:
                proc.wait(timeout=30)
                break
            except subprocess.TimeoutExpired:
                if deadline and time.time() > deadline and stopped is None:
                    proc.send_signal(signal.SIGTERM)  # bertkit checkpoints and stops
                    stopped = f"SIGTERM after {max_minutes} minutes"
    if proc.returncode != 0 and stopped is None:
        raise SystemExit(f"{render(cmd)} failed with exit {proc.returncode}; see {log}")
    return stopped


def _write(name: str, result: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = _result_path(name)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    print(f"wrote {path}")
    return path


def _points(summary: dict, metric: str, split: str) -> dict | None:
    """``{mean, sd, values}`` in points (x100) of one split's metric in a ``--seeds`` summary."""
    stats = (summary.get("metrics") or {}).get(split, {}).get(metric)
    if not stats:
        return None
    values = [100 * v for v in stats["values"]]
    return {"mean": round(statistics.mean(values), 2),
            "sd": round(statistics.stdev(values), 2) if len(values) > 1 else 0.0,
            "values": [round(v, 2) for v in values]}


def chosen_lr(task: str) -> float:
    """The learning rate the finished ``recipe-TASK`` stage chose on dev for G.

    Raises:
        SystemExit: the stage has not finished.
    """
    result = _recorded(f"recipe-{task}") or {}
    if not result.get("finished"):
        raise SystemExit(f"recipe-{task} has not finished: no learning rate chosen for {task}")
    return result["chosen_lr"]


def resolve(cmd: list[str]) -> tuple[list[str], float | None]:
    """A command line with its ``{lr:TASK}`` placeholder replaced by the dev choice, and that
    rate (None: the command had none)."""
    out, lr = [], None
    for arg in cmd:
        if arg.startswith("{lr:") and arg.endswith("}"):
            lr = chosen_lr(arg[4:-1])
            arg = f"{lr:g}"
        out.append(arg)
    return out, lr


def _final_loss(points: list[dict]) -> float | None:
    return points[-1]["loss"] if points else None


def run_stage(stage: Stage, stages: dict[str, Stage], work: Path, max_minutes: float | None) -> bool:
    """Run a stage (its missing dependencies first); returns whether it finished.

    A finished pretraining whose model is gone from ``--work`` (a new machine) is trained
    again from the same settings and seed; its result then records whether the rebuilt curve
    ends at the recorded valid loss (``rebuild``), the check that the encoder is the same one."""
    for dep in stage.deps:
        d = stages[dep]
        if not finished(d) or (d.output is not None and not d.output.exists()):
            if not run_stage(d, stages, work, max_minutes):
                print(f"{stage.name}: waits for {dep}")
                return False
    log = work / "logs" / f"{stage.name}.log"
    before = load_average()
    previous = _recorded(stage.name)  # a finished stage run again: a rebuild
    previous = previous if previous and previous.get("finished") else None
    for path, text in stage.info.get("files", {}).items():  # recipes its commands read
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    resolved = [resolve(c) for c in stage.commands]
    commands = [c for c, _ in resolved]
    lr = next((rate for _, rate in resolved if rate is not None), None)
    if stage.kind == "pretrain":
        run = Path(stage.info["run"])
        if (run / "checkpoints").is_dir() or (run / "results.json").is_file():
            # continue it (a finished run with the same settings: bertkit writes nothing and
            # exits 0, and its curve is read; other settings: bertkit refuses, naming them)
            commands[0] = [a for a in commands[0] if a != "--overwrite"] + ["--resume"]
    started = time.time()
    stopped = None
    for cmd in commands:
        stopped = _run_command(cmd, max_minutes, log, work / "cache")
        if stopped:
            break
    result = {"stage": stage.name, "kind": stage.kind, "commands": [render(c) for c in commands],
              "finished": stopped is None, "stopped": stopped,
              "wall_minutes": round((time.time() - started) / 60, 1), "load_before": before,
              "load_after": load_average(),
              **{k: v for k, v in stage.info.items() if k != "files"}}
    if lr is not None:
        result["lr"] = lr
    if stage.kind == "vocab":
        result["vocab_size"] = len(stage.output.read_text(encoding="utf-8").splitlines())
    elif stage.kind == "pretrain":
        points, final = curve(Path(stage.info["run"]), [])
        result["finished"] = result["finished"] and bool(final)
        result["points"] = [{k: p[k] for k in ("step", "tokens", "seconds", "loss", "accuracy")}
                            for p in points]
        result["train_tokens"] = final.get("train_tokens", points[-1]["tokens"] if points else 0)
        result["parameters"] = final.get("parameters")
        if previous is not None and result["finished"]:
            before_loss, after_loss = _final_loss(previous.get("points", [])), _final_loss(points)
            same = (before_loss is not None and after_loss is not None
                    and abs(before_loss - after_loss) <= 1e-4 * abs(before_loss))
            result["rebuild"] = {"recorded_final_loss": before_loss, "final_loss": after_loss,
                                 "same": same}
            if not same:
                print(f"{stage.name}: WARNING the rebuilt encoder ends at valid loss {after_loss}, "
                      f"the recorded run at {before_loss}: not the same encoder")
    elif stage.kind == "intrinsic" and stopped is None:
        for cmd, valid in zip(commands, ("scientific", "general")):
            out = Path(cmd[cmd.index("-o") + 1])
            v = json.loads((out / "results.json").read_text(encoding="utf-8"))["valid_initial"]
            result[valid] = {"loss": round(v["loss"], 4), "accuracy": round(v["accuracy"], 4),
                             "perplexity": round(math.exp(v["loss"]), 1)}
    elif stage.kind in ("recipe", "grid") and stopped is None:
        grid = []
        for rate, summary in zip(stage.info["grid"], stage.info["summaries"]):
            summary = json.loads(Path(summary).read_text(encoding="utf-8"))
            grid.append({"lr": rate, "dev": _points(summary, stage.info["metric"], "dev")})
        best = max(grid, key=lambda g: g["dev"]["mean"] if g["dev"] else -1.0)
        result["results"] = grid  # dev only: test is not read
        result["chosen_lr" if stage.kind == "recipe" else "best_lr"] = best["lr"]
    elif stage.kind in ("finetune", "tapt") and stopped is None:
        summary = json.loads(Path(stage.info["summary"]).read_text(encoding="utf-8"))
        result["test"] = _points(summary, stage.info["metric"], "test")
        result["dev"] = _points(summary, stage.info["metric"], "dev")
    _write(stage.name, result)
    return result["finished"]


# ---------------------------------------------------------------------------------------------
# merge: the tables and the goal verdicts

def _load(results: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(results.glob("*.json"))}


def score(results: dict[str, dict], encoder: str, task: str) -> dict | None:
    """The test ``{mean, sd, values}`` (points) of an encoder on a task, None if not measured."""
    r = results.get(f"finetune-{encoder}-{task}")
    return r.get("test") if r and r.get("finished") else None


def outside(a: dict, b: dict) -> bool:
    """Do the two mean +- sd intervals not overlap?"""
    return a["mean"] - a["sd"] > b["mean"] + b["sd"] or b["mean"] - b["sd"] > a["mean"] + a["sd"]


def beats(a: dict | None, b: dict | None, margin: float) -> bool | None:
    """Does ``a`` beat ``b`` by at least ``margin`` points, outside both spreads (None: one is
    not measured)?"""
    if a is None or b is None:
        return None
    return a["mean"] - b["mean"] >= margin and outside(a, b)


PLATEAU_ACCURACY = 0.20  # masked-token accuracy (15%) below which an encoder has not left the
# unigram-plus-copy plateau (10-13% with these vocabularies: benchmarks/README.md, phase 1)
WIDE = {"ner": 10.0, "re": 5.0, "cls": 5.0, "qa": 5.0}  # "a wide margin" (10+ on BC5CDR)


def goals(results: dict[str, dict], tasks=tuple(TASKS)) -> list[tuple[str, str, str]]:
    """The issue's goals: ``(goal, verdict, evidence)``, the verdict one of "met", "not met",
    "not measured yet" or "reported" (SpanBERT's claim is reported per task, not gated)."""
    out = []

    def verdict(checks: list[bool | None], need: int | None = None) -> str:
        known = [c for c in checks if c is not None]
        need = len(checks) if need is None else need
        if sum(known) >= need:
            return "met"
        if sum(known) + (len(checks) - len(known)) < need:
            return "not met"
        return "not measured yet"

    def diff(a, b) -> str:
        return "-" if a is None or b is None else (
            f"{a['mean']:.2f} ± {a['sd']:.2f} vs {b['mean']:.2f} ± {b['sd']:.2f} "
            f"({a['mean'] - b['mean']:+.2f})")

    checks, lines = [], []
    for enc in PRETRAINED:
        for task in tasks:
            a, r = score(results, enc, task), score(results, "R", task)
            c = beats(a, r, WIDE[task])
            checks.append(c)
            if c is not None:  # every measured pair, the failures marked
                lines.append(f"{enc} vs R on {task}: {a['mean'] - r['mean']:+.2f}"
                             + ("" if c else f" (short: {diff(a, r)})"))
    out.append(("Pretraining works: every pretrained encoder beats R by a wide margin "
                "(10 points on BC5CDR, 5 elsewhere) outside the spreads", verdict(checks),
                "; ".join(lines) + f" ({sum(c is not None for c in checks)} of {len(checks)} "
                                   "pairs measured)"))
    checks = [beats(score(results, "S", t), score(results, "G", t), 2.0) for t in ("ner", "re")]
    sci = [results.get(f"intrinsic-{e}", {}).get("scientific") for e in ("S", "G")]
    mlm = ("-" if None in sci else
           f"scientific valid MLM loss S {sci[0]['loss']:.3f} vs G {sci[1]['loss']:.3f}")
    sci_verdict = verdict(checks)
    own = results.get("intrinsic-G", {}).get("general")  # G on its own corpus's valid text
    if sci_verdict != "not measured yet" and own and own["accuracy"] < PLATEAU_ACCURACY:
        sci_verdict = "not shown: G did not leave the plateau"
        mlm += (f"; G's masked-token accuracy on its own corpus {100 * own['accuracy']:.1f}% "
                f"(< {100 * PLATEAU_ACCURACY:.0f}%: the unigram-plus-copy plateau), so S vs G "
                "compares a trained encoder with an untrained one, not two domains")
    out.append(("SciBERT: S beats G by >= 2 points on BC5CDR and ChemProt, outside both spreads",
                sci_verdict, "; ".join(f"{t}: {diff(score(results, 'S', t), score(results, 'G', t))}"
                                       for t in ("ner", "re")) + f"; {mlm}"))
    dapt_tasks = [t for t in tasks if t != "qa"]
    checks = [beats(score(results, "G+D", t), score(results, "G+G", t), 1.0) for t in dapt_tasks]
    tapt = "; ".join(f"TAPT {t}: {diff(score(results, 'G+T', t), score(results, 'G', t))}"
                     for t in dapt_tasks)
    out.append(("DAPT: G+D beats G+G by >= 1 point on at least two of three tasks, outside the "
                "spreads", verdict(checks, need=2),
                "; ".join(f"{t}: {diff(score(results, 'G+D', t), score(results, 'G+G', t))}"
                          for t in dapt_tasks) + f"; {tapt}"))
    pairs = [(t, score(results, "S-span", t), score(results, "S", t)) for t in tasks]
    measured = [p for p in pairs if p[1] is not None and p[2] is not None]
    out.append(("SpanBERT: span + SBO against token masking (S-span vs S), per task",
                "reported" if len(measured) == len(pairs) else "not measured yet",
                "; ".join(f"{t}: {diff(a, b)}{' outside spreads' if a and b and outside(a, b) else ''}"
                          for t, a, b in pairs)))
    return out


def merge(results_dir: Path = RESULTS, out: Path = MERGED, optional: bool = True) -> str:
    """Write the merged tables and goal verdicts of the stage JSONs in ``results_dir``."""
    results = _load(results_dir)
    tasks = {**TASKS, **OPTIONAL_TASKS} if optional else TASKS
    encoders = {**ENCODERS, **OPTIONAL_ENCODERS} if optional else ENCODERS
    lines = ["# Domain adaptation in miniature (issue 27, phase 2)", "",
             "Test scores in points, mean ± sd over seeds 1, 2, 3 (sample sd); - : not measured yet.",
             "", "| encoder | " + " | ".join(TASK_NAMES[t] for t in tasks) + " |",
             "|---|" + "---|" * len(tasks)]
    for enc in encoders:
        cells = []
        for task in tasks:
            s = score(results, enc, task)
            cells.append("-" if s is None else f"{s['mean']:.2f} ± {s['sd']:.2f}")
        lines.append(f"| {enc} | " + " | ".join(cells) + " |")
    lrs = {t: results.get(f"finetune-G-{t}", {}).get("lr") for t in tasks}  # G's recipe
    other = sorted(name for name, r in results.items() if name.startswith("finetune-")
                   and r.get("task") in lrs and r.get("lr") != lrs[r["task"]])
    lines += ["", "Fine-tuning learning rate: " + ", ".join(
        f"{t} {lr:g}" if lr else f"{t} not chosen yet"
        for t, lr in lrs.items()) + (f"; not at G's rate: {', '.join(other)}" if other else "")]
    recipes = {t: results[f"recipe-{t}"] for t in tasks
               if results.get(f"recipe-{t}", {}).get("finished")}
    if recipes:
        grid = sorted({g["lr"] for r in recipes.values() for g in r["results"]})
        lines += ["", f"## Fine-tuning recipe: dev score of G at each learning rate (seed "
                      f"{RECIPE_SEED}, 3 epochs; * the choice, reused for every encoder)", "",
                  "| task | " + " | ".join(f"{lr:g}" for lr in grid) + " |",
                  "|---|" + "---|" * len(grid)]
        for t, r in recipes.items():
            dev = {g["lr"]: g["dev"] for g in r["results"]}
            cells = ["-" if not dev.get(lr) else
                     f"{dev[lr]['mean']:.2f}{' *' if lr == r['chosen_lr'] else ''}" for lr in grid]
            lines.append(f"| {TASK_NAMES[t]} | " + " | ".join(cells) + " |")
        edge = [TASK_NAMES[t] for t, r in recipes.items()
                if r["chosen_lr"] in (min(g["lr"] for g in r["results"]),
                                      max(g["lr"] for g in r["results"]))]
        if edge:
            lines += ["", f"At the edge of the grid ({', '.join(edge)}): a rate beyond it was "
                          "not tried, so the choice may not be the best on dev."]
    lines += sensitivity_table(results, tasks, recipes)
    lines += ["",
        "## Intrinsic: valid MLM loss (perplexity, masked-token accuracy at 15%)", "",
        "| encoder | corpus/valid.txt | corpus-general/valid.txt | pretraining tokens |",
        "|---|---|---|---|"]
    for enc in encoders:
        r = results.get(f"intrinsic-{enc}", {})
        cells = ["-" if not r.get(v) else
                 f"{r[v]['loss']:.3f} ({r[v]['perplexity']:.0f}, {100 * r[v]['accuracy']:.1f}%)"
                 for v in ("scientific", "general")]
        phases = [results.get(f"pretrain-{enc}-seq64", {}), results.get(f"pretrain-{enc}", {})]
        tok = sum(t for t in (p.get("train_tokens") for p in phases) if t is not None) \
            if phases[1].get("train_tokens") is not None else None  # both phases
        base = f"{enc.split('+')[0]} + " if "+" in enc else ""  # continued: G+D = G + its tokens
        lines.append(f"| {enc} | {cells[0]} | {cells[1]} | "
                     f"{'-' if tok is None else f'{base}{tok / 1e6:.1f} M'} |")
    lines += pretraining_curves(results, encoders)
    lines += ["", "## Goals", "", "| goal | verdict | measured |", "|---|---|---|"]
    for goal, verdict, evidence in goals(results, tuple(t for t in tasks if t != "qa")):
        lines.append(f"| {goal} | {verdict} | {evidence} |")
    text = "\n".join(lines) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return text


def sensitivity_table(results: dict[str, dict], tasks, recipes: dict[str, dict]) -> list[str]:
    """The merged report's learning-rate sensitivity: the dev score (seed 1) of each encoder
    with a finished ``grid-ENC-TASK`` stage at each rate of the grid, G's row from its
    ``recipe-TASK``; ``*`` marks the protocol's rate (G's choice), ``+`` the encoder's own best.
    Empty when no grid stage has finished."""
    rows = []
    for t in tasks:
        grids = {r["encoder"]: r for name, r in results.items()
                 if name.startswith("grid-") and r.get("task") == t and r.get("finished")}
        if not grids:
            continue
        if t in recipes:
            grids = {"G": recipes[t], **grids}
        chosen = recipes.get(t, {}).get("chosen_lr")
        for enc, r in grids.items():
            dev = {g["lr"]: g["dev"] for g in r["results"] if g["dev"]}
            best = max(dev, key=lambda lr: dev[lr]["mean"])
            cells = [("-" if lr not in dev else f"{dev[lr]['mean']:.2f}"
                      + (" *" if lr == chosen else "") + (" +" if lr == best else ""))
                     for lr in LR_GRID]
            at_chosen = dev.get(chosen)
            cost = ("-" if at_chosen is None else
                    f"{dev[best]['mean'] - at_chosen['mean']:.2f}")
            rows.append(f"| {TASK_NAMES[t]} | {enc} | " + " | ".join(cells) + f" | {cost} |")
    if not rows:
        return []
    return ["", f"## Learning-rate sensitivity: dev score of each encoder at each rate (seed "
                f"{RECIPE_SEED}, 3 epochs; * G's choice, used for every encoder; + the "
                "encoder's own best; cost: its best minus its score at G's choice)", "",
            "| task | encoder | " + " | ".join(f"{lr:g}" for lr in LR_GRID) + " | cost |",
            "|---|---|" + "---|" * len(LR_GRID) + "---|", *rows]


def pretraining_curves(results: dict[str, dict], encoders) -> list[str]:
    """The merged report's "leaving the plateau" table: for each pretrained encoder and phase
    (64 positions, then 128; a continued encoder has one), the valid set its curve was measured
    on (the ``--valid`` of its command, masked at 15%, sequences of the phase's length), its last
    accuracy there and the tokens of the phase at which it first reached 20% and 35%
    (interpolated between evaluations, :func:`plateau_curves.crossing`)."""
    rows = []
    for enc in encoders:
        if ENCODERS.get(enc, {}).get("random"):  # R: not pretrained
            continue
        stages = [(f"pretrain-{enc}-seq64", "A: 64"), (f"pretrain-{enc}", "B: 128")]
        if f"pretrain-{enc}-seq64" not in results:
            stages = [(f"pretrain-{enc}", "128")]
        for name, phase in stages:
            r = results.get(name, {})
            if not r.get("points"):
                continue
            argv = r["commands"][-1].split()
            valid = argv[argv.index("--valid") + 1] if "--valid" in argv else "-"
            cells = []
            for threshold in (0.20, 0.35):
                c = crossing(r["points"], threshold)
                cells.append(f"{c['tokens'] / 1e6:.1f} M" if c else "not reached")
            last = r["points"][-1]
            rows.append(f"| {enc} | {phase} | {valid} | {last['tokens'] / 1e6:.1f} M | "
                        f"{100 * last['accuracy']:.1f}% | {cells[0]} | {cells[1]} |")
    if not rows:
        return []
    return ["", "## Pretraining curves: tokens to leave the plateau (validation at 15% masking "
                "during pretraining, at each phase's sequence length)", "",
            "| encoder | phase: positions | validated on | tokens | last accuracy | 20% at | "
            "35% at |", "|---|---|---|---|---|---|---|", *rows]


def _recipe_lr(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        task, _, lr = item.partition("=")
        if task not in {**TASKS, **OPTIONAL_TASKS} or not lr:
            raise SystemExit(f"--recipe-lr {item}: expected TASK=LR with TASK one of "
                             f"{', '.join({**TASKS, **OPTIONAL_TASKS})}")
        out[task] = float(lr)
    return out


def use_results(results: Path) -> None:
    """Read and write stage results in ``results`` (the merged table in the same folder:
    ``results/reproduce/reproduce.md`` for the default, else ``<results>/reproduce.md``)."""
    global RESULTS, MERGED
    RESULTS, MERGED = results, results / "reproduce.md"


def main() -> None:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("action", choices=("plan", "run", "merge"))
    ap.add_argument("stages", nargs="*", help="run: stage names (see plan)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/reproduce"),
                    help="vocabularies, runs and models (not committed)")
    ap.add_argument("--tokens", type=int, default=TOKENS,
                    help="pretraining token budget of every from-scratch encoder")
    ap.add_argument("--continue-tokens", type=int,
                    help="G+D and G+G continued-pretraining tokens (default --tokens // 3)")
    ap.add_argument("--recipe-lr", action="append", default=[], metavar="TASK=LR",
                    help="fine-tuning peak learning rate of a task (the dev choice for G)")
    ap.add_argument("--optional", action="store_true",
                    help="also the GvS encoder and COVID-QA")
    ap.add_argument("--sensitivity", action="store_true",
                    help="also grid-ENC-TASK: the recipe's learning-rate grid on every other "
                         "encoder (dev only; chooses nothing)")
    ap.add_argument("--max-minutes", type=float, help="run: SIGTERM a command after M minutes")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="stage result JSONs: a stage finished here is done and skipped "
                         "(default: the committed results; a new directory runs all afresh; "
                         "merge writes reproduce.md there)")
    args = ap.parse_args()
    use_results(args.results)
    stages = build_plan(args.work, args.tokens, args.continue_tokens, _recipe_lr(args.recipe_lr),
                        args.optional, sensitivity=args.sensitivity)
    if args.action == "plan":
        print_plan(stages)
    elif args.action == "merge":
        print(merge(RESULTS, MERGED))
    else:
        unknown = [s for s in args.stages if s not in stages]
        if unknown or not args.stages:
            ap.error(f"give stage names from `plan` (unknown: {', '.join(unknown) or 'none given'})")
        for name in args.stages:
            if finished(stages[name]):
                print(f"{name}: finished, skipped")
                continue
            run_stage(stages[name], stages, args.work, args.max_minutes)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # `plan | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
