"""Failure kinds from public bug reports (issue 17, items 2, 3 and 5), one section each.

* gold dependency trees that are not trees (two roots, a cycle), skipped and counted on request;
  the ``sent_id`` named in every CoNLL-U error;
* a vocabulary build reports its own coverage ([UNK] rate, characters left out) and can apply a
  Unicode normalisation that the saved tokenizer applies again;
* no error message names an option its command lacks (``pretrain --skip-bad-lines``).
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.data.conllu import parse_conllu, read_conllu, tree_problem
from bertkit.decoding.mst import is_tree
from bertkit.errors import BertkitError
from bertkit.tasks.registry import task_names
from tests.tasks.dep.conftest import TEXT as DEP_TEXT, write_dep_dir

runner = CliRunner()


def run_cli(*args):
    res = runner.invoke(app, [str(a) for a in args])
    return res, " ".join(res.output.split())


def assert_refused(res, text: str, *needles: str) -> None:
    assert res.exit_code == 1, text
    assert "Traceback" not in text and "error:" in text, text
    for needle in needles:
        assert needle in text, (needle, text)


# --------------------------------------------------------------------------- 2. gold trees

TWO_ROOTS = ("# sent_id = two-roots\n"
             "1\tIL-2\til-2\tNN\tNN\t_\t0\troot\t_\t_\n"
             "2\tactivates\tactivates\tVBZ\tVBZ\t_\t0\troot\t_\t_\n"
             "3\tSTAT5\tstat5\tNN\tNN\t_\t2\tdobj\t_\t_\n"
             "4\t.\t.\t.\t.\t_\t2\tpunct\t_\t_\n")
CYCLE = ("# sent_id = cycle\n"
         "1\tIL-2\til-2\tNN\tNN\t_\t0\troot\t_\t_\n"
         "2\tactivates\tactivates\tVBZ\tVBZ\t_\t3\tdep\t_\t_\n"
         "3\tSTAT5\tstat5\tNN\tNN\t_\t2\tdobj\t_\t_\n"
         "4\t.\t.\t.\t.\t_\t3\tpunct\t_\t_\n")
BROKEN_RANGE = ("# sent_id = range\n"
                "1\tWe\twe\tPRP\tPRP\t_\t2\tnsubj\t_\t_\n"
                "2\tfound\tfind\tVBD\tVBD\t_\t0\troot\t_\t_\n"
                "4-5\tnf-kb\t_\t_\t_\t_\t_\t_\t_\t_\n"
                "3\tnf\tnf\tNN\tNN\t_\t2\tdobj\t_\t_\n")


def test_tree_problem_agrees_with_is_tree_on_every_head_sequence():
    """Brute force: every head sequence of 1-5 words (heads in 0..n, no self-loop)."""
    for n in range(1, 6):
        for heads in itertools.product(range(n + 1), repeat=n):
            if any(h == k + 1 for k, h in enumerate(heads)):
                continue
            assert (tree_problem(heads) is None) == is_tree(np.array(heads)), heads
    assert tree_problem([0, 0, 2, 2]) == "2 roots (words 1, 2 have HEAD 0)"
    assert tree_problem([3, 1, 2]) == "no root (no word with HEAD 0)"
    assert tree_problem([0, 3, 2, 3]).startswith("the heads form a cycle 2 -> 3 -> 2; 3 word(s)")


@pytest.mark.parametrize("block,line,message", [
    (TWO_ROOTS, 1, "gold heads are not a tree: 2 roots (words 1, 2 have HEAD 0) "
                   "(sentence sent_id=two-roots)"),
    (CYCLE, 1, "gold heads are not a tree: the heads form a cycle 2 -> 3 -> 2; 3 word(s) not "
               "reachable from the root (2, 3, 4) (sentence sent_id=cycle)"),
    (BROKEN_RANGE, 4, "multiword range 4-5 does not cover the next words "
                      "(sentence sent_id=range)"),
])
def test_bad_gold_sentences_name_file_line_and_sent_id(block, line, message):
    with pytest.raises(BertkitError) as err:
        parse_conllu(block, "g.conllu")
    assert str(err.value).startswith(f"g.conllu:{line}: {message}")
    assert "--skip-bad-sentences" in str(err.value)
    if block is not BROKEN_RANGE:  # unlabelled input (predict) has no gold tree to check
        assert len(parse_conllu(block, "g.conllu", labelled=False)) == 1


def test_out_of_sequence_word_names_sent_id_and_unlabelled_errors_name_no_flag():
    text = DEP_TEXT.replace("3\tnf\tnf", "5\tnf\tnf")
    with pytest.raises(BertkitError, match=r"^x:18: word id 5 out of sequence \(sentence "
                                           r"sent_id=c\) \(expected word id 3; or --skip-bad"):
        parse_conllu(text, "x")
    text = DEP_TEXT.replace("2\texpress\t", "7\texpress\t")
    with pytest.raises(BertkitError) as err:
        parse_conllu(text, "x", labelled=False)
    assert "word id 7 out of sequence (sentence sent_id=a)" in str(err.value)
    assert "--skip" not in str(err.value)  # predict dep has no such option


def test_skipped_sentences_are_counted_and_the_rest_kept(tmp_path):
    path = tmp_path / "mixed.conllu"
    path.write_text(TWO_ROOTS + "\n" + DEP_TEXT + "\n" + CYCLE, encoding="utf-8")
    with pytest.raises(BertkitError, match="mixed.conllu:1: gold heads are not a tree"):
        read_conllu(path)
    skipped: list = []
    sents = read_conllu(path, skipped=skipped)
    assert [s.metadata["sent_id"] for s in sents] == ["a", "b", "c"]
    assert [e.line for e in skipped] == [1, 30] and "sent_id=cycle" in str(skipped[1])
    only_bad = tmp_path / "bad.conllu"
    only_bad.write_text(TWO_ROOTS, encoding="utf-8")
    with pytest.raises(BertkitError, match="no good sentences: all 1 are malformed"):
        read_conllu(only_bad, skipped=[])


def _dep_data_with_bad_trees(tmp_path: Path) -> Path:
    bad = TWO_ROOTS + "\n" + DEP_TEXT + "\n" + CYCLE
    return write_dep_dir(tmp_path / "dep", train=bad, test=bad)


def test_finetune_and_evaluate_dep_refuse_then_skip_bad_trees(tmp_path, tiny_encoder):
    data = _dep_data_with_bad_trees(tmp_path)
    out = tmp_path / "run"
    common = ("--data", data, "--model", tiny_encoder, "--device", "cpu", "--batch-size", "2",
              "--arc-mlp", "8", "--rel-mlp", "4")
    res, text = run_cli("finetune", "dep", *common, "-o", out)
    assert_refused(res, text, "train.conllu:1:", "2 roots", "sent_id=two-roots",
                   "--skip-bad-sentences")
    assert not out.exists()
    res, text = run_cli("finetune", "dep", *common, "-o", out, "--epochs", "1",
                        "--skip-bad-sentences")
    assert res.exit_code == 0, text
    assert "skipped 4 malformed sentence(s)" in text
    results = json.loads((out / "results.json").read_text())
    assert results["skipped_sentences"]["count"] == 4  # two in train.conllu, two in test.conllu
    assert results["test"]["sentences"] == 3
    assert "sent_id=cycle" in results["skipped_sentences"]["first"][1]
    res, text = run_cli("evaluate", "dep", "--model", out, "--data", data, "--device", "cpu")
    assert_refused(res, text, "test.conllu:1:", "--skip-bad-sentences")
    metrics = tmp_path / "m.json"
    res, text = run_cli("evaluate", "dep", "--model", out, "--data", data, "--device", "cpu",
                        "--skip-bad-sentences", "--output", metrics)
    assert res.exit_code == 0, text
    scored = json.loads(metrics.read_text())
    assert scored["skipped_sentences"]["count"] == 2 and scored["sentences"] == 3


# --------------------------------------------------------------------------- 3. vocab coverage

SCIENCE = ["Cells were treated with 10 \u00b5M rapamycin at 37 \u00b0C for 24 h .",
           "The mean was 4.2 \u00b1 0.3 mg per kg in 12 patients .",
           "Crystal spacing of 3.4 \u00c5 was measured at 4 \u00b0C .",
           "Binding affinity was 25 \u00b5M \u00b1 5 \u00b5M in buffer .",
           "Samples were stored at \u221280 \u00b0C before analysis .",
           "A 1.5 \u00c5 resolution structure was solved at 100 K ."]


def _science(tmp_path: Path, lines=SCIENCE) -> Path:
    path = tmp_path / "sci.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_vocab_build_reports_its_coverage_and_warns_on_unk(tmp_path):
    from transformers import AutoTokenizer

    corpus, out = _science(tmp_path), tmp_path / "v"
    res, text = run_cli("vocab", "build", "--corpus", corpus, "--size", "1000", "--cased",
                        "--limit-alphabet", "30", "--out", out, "--no-progress")
    assert res.exit_code == 0, text
    cov = json.loads((out / "stats.json").read_text())["coverage"]
    tok = AutoTokenizer.from_pretrained(out)
    pieces = [p for line in SCIENCE for p in tok.tokenize(line)]
    assert cov["pieces"] == len(pieces) and cov["unk"] == pieces.count("[UNK]") > 0
    assert cov["unk_rate"] == pytest.approx(cov["unk"] / cov["pieces"])
    vocab = set(tok.get_vocab())
    text_chars = "".join(SCIENCE).replace(" ", "")
    expected = {c: text_chars.count(c) for c in set(text_chars)
                if c not in vocab and "##" + c not in vocab}
    assert {d["char"]: d["count"] for d in cov["left_out"]} == expected
    assert cov["characters_left_out"] == sum(expected.values())
    assert "\u00b1" in expected  # ± is rarer than the 30 characters kept
    assert {"char": "\u00b1", "codepoint": "U+00B1", "name": "PLUS-MINUS SIGN", "count": 2} \
        in cov["left_out"]
    assert f"warning: {cov['unk']} [UNK] in {cov['pieces']} pieces" in text
    assert "\u00b1 U+00B1 PLUS-MINUS SIGN x2" in text and "--limit-alphabet" in text


@pytest.mark.parametrize("algorithm", ["wordpiece", "sentencepiece"])
def test_vocab_build_full_alphabet_reports_zero_unk(tmp_path, algorithm):
    out = tmp_path / "v"
    res, text = run_cli("vocab", "build", "--corpus", _science(tmp_path), "--size", "300",
                        "--cased", "--algorithm", algorithm, "--out", out, "--no-progress")
    assert res.exit_code == 0, text
    stats = json.loads((out / "stats.json").read_text())
    assert stats["coverage"]["unk"] == 0 and stats["coverage"]["left_out"] == []
    assert stats["coverage"]["pieces"] > 50 and stats["normalize"] == "none"
    assert "coverage: 0 [UNK] in" in text and "warning: 0" not in text


def test_normalize_nfkc_is_saved_and_applied_again_at_load(tmp_path):
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    micro = ["Cells were treated with 10 \u00b5M drug at 37 \u00b0C ."] * 20  # MICRO SIGN only
    corpus = _science(tmp_path, micro)
    plain, nfkc = tmp_path / "plain", tmp_path / "nfkc"
    for out, extra in ((plain, ()), (nfkc, ("--normalize", "NFKC"))):
        res, text = run_cli("vocab", "build", "--corpus", corpus, "--size", "200", "--cased",
                            "--out", out, "--no-progress", *extra)
        assert res.exit_code == 0, text
    greek, sign, celsius = "10 \u03bcM", "10 \u00b5M", "37 \u2103"  # mu, micro sign, ℃
    tok = AutoTokenizer.from_pretrained(plain)
    assert "[UNK]" in tok.tokenize(greek) and "[UNK]" not in tok.tokenize(sign)
    tok = AutoTokenizer.from_pretrained(nfkc)  # no bertkit involved
    assert tok.tokenize(greek) == tok.tokenize(sign) and "[UNK]" not in tok.tokenize(sign)
    assert tok.tokenize(celsius) == tok.tokenize("37 \u00b0C") == ["37", "\u00b0C"]
    assert "\u03bc" in tok.get_vocab() and "\u00b5" not in tok.get_vocab()
    raw = Tokenizer.from_file(str(nfkc / "tokenizer.json"))
    assert raw.normalizer.normalize_str("\u00b5\u212b") == "\u03bc\u00c5"
    stats = json.loads((nfkc / "stats.json").read_text())
    assert stats["normalize"] == "nfkc" and stats["coverage"]["unk"] == 0
    res, text = run_cli("vocab", "build", "--corpus", corpus, "--out", tmp_path / "x",
                        "--normalize", "nfkx")  # the command line refuses it (a Choice option)
    text = " ".join(text.replace("│", " ").split())  # the usage error's box
    assert res.exit_code == 2 and "'nfkx' is not one of 'none', 'nfc', 'nfkc'" in text, text
    from bertkit.vocab.build import build_vocab  # a recipe or a caller: the library refuses it

    with pytest.raises(BertkitError, match="unknown --normalize 'nfkx'.*nfkc"):
        build_vocab([corpus], tmp_path / "x", normalize="nfkx")
    assert not (tmp_path / "x").exists()


# --------------------------------------------------------------------------- 5. named flags exist

def test_pretrain_skips_and_counts_lines_that_are_not_utf8(tmp_path, tiny_encoder):
    from tests.tasks.pretrain.conftest import write_corpus

    corpus = write_corpus(tmp_path / "corpus.txt", lines=120)
    lines = corpus.read_bytes().split(b"\n")
    lines[3] = b"caf\xe9 au lait"  # Latin-1, not UTF-8
    corpus.write_bytes(b"\n".join(lines))
    out = tmp_path / "run"
    common = ("pretrain", "--corpus", corpus, "--model", tiny_encoder, "--max-steps", "2",
              "--batch-size", "2", "--max-seq-length", "32", "--device", "cpu",
              "--cache-dir", tmp_path / "cache", "-o", out)
    res, text = run_cli(*common)
    assert_refused(res, text, "corpus.txt:4:", "not valid UTF-8", "--skip-bad-lines")
    assert not out.exists()
    res, text = run_cli(*common, "--skip-bad-lines")
    assert res.exit_code == 0, text
    assert "(1 bad lines skipped)" in text
    results = json.loads((out / "results.json").read_text())
    assert results["skipped_lines"] == {"corpus": 1, "valid": 0}
    # the skipping run's cache does not hide the bad line from a run without the option
    res, text = run_cli(*common[:-2], "-o", tmp_path / "run2")
    assert_refused(res, text, "corpus.txt:4:", "--skip-bad-lines")


# Which commands can show the messages of each module that names a flag (module -> commands);
# "module::function" narrows an entry to one function (or Class.method) of the module. A message
# whose text names a command (``bertkit vocab build --corpus``) is checked against that command
# instead. A new module whose messages name a flag must be added here: the test says so.
# Strings inside a command's own function in bertkit/cli/ map to that command without an entry.
# A registered task's package needs none either: its modules' messages may name a flag of any of
# the task's three commands (see task_package_commands). Option and command declarations
# (typer.Option, bertkit.settings.options' option/Option/Commands) are the commands' own flags.
FINETUNE = tuple(f"finetune {name}" for name in task_names())
TRAINING = FINETUNE + ("pretrain",)
INFERENCE = tuple(f"{verb} {name}" for verb in ("evaluate", "predict") for name in task_names())
STREAMING = ("predict ner", "predict cls", "predict re")  # predict through bertkit/predict
MESSAGE_COMMANDS: dict[str, tuple[str, ...]] = {
    "bertkit/bench/encoders.py": ("bench run",),
    "bertkit/bench/runner.py": ("bench run",),
    # the report explains mixed precisions by the fine-tunes' option (--precision auto)
    "bertkit/bench/report.py::markdown": ("finetune ner",),
    "bertkit/bench/report.py::_run_notes": ("finetune ner",),
    "bertkit/bench/suite.py": ("bench run",),  # the options a suite may not set
    "bertkit/cli/predict.py": STREAMING,
    "bertkit/predict/driver.py": STREAMING,
    "bertkit/predict/merge.py": STREAMING,
    "bertkit/predict/state.py": STREAMING,
    "bertkit/predict/cluster.py": STREAMING,  # predict --executor slurm --shards N
    "bertkit/jobs/executors.py": ("bench run",) + STREAMING,  # --executor, --slurm-*
    "bertkit/cli/finetune.py::_finish": FINETUNE,
    "bertkit/cli/run.py::_show_recipe": ("run",),
    "bertkit/data/conllu.py": ("finetune dep", "evaluate dep"),  # the hint only for gold input
    # a registered set not under BERTKIT_DATA (the tasks without a hub loader, or none found)
    "bertkit/data/sets.py::not_available": ("finetune cls", "finetune re", "finetune qa",
                                            "evaluate cls", "evaluate re", "evaluate qa"),
    "bertkit/data/relations.py": ("finetune re", "evaluate re", "predict re"),
    "bertkit/masking/base.py": ("pretrain",),
    "bertkit/predict/onnx_backend.py": ("predict ner",),  # --backend onnx without onnxruntime
    "bertkit/masking/span.py": ("pretrain",),
    # the collapse warning; evaluate re/cls show it too, as a hint for re-training
    "bertkit/metrics/collapse.py": ("finetune re", "finetune cls"),
    "bertkit/outputs/modelcard.py::model_card": FINETUNE,  # a capped evaluation (--max-eval-samples)
    "bertkit/workflows/recipes.py": ("run",),  # --set overrides and kept stages
    "bertkit/tasks/common.py::_stopped_run": FINETUNE,  # continue the run: finetune --resume
    "bertkit/tasks/common.py::find_saved_model": FINETUNE,  # a --seeds root: one model per seed
    "bertkit/tasks/dep/data.py": ("finetune dep", "evaluate dep"),
    "bertkit/tasks/cls/config.py": ("finetune cls",),
    "bertkit/tasks/cls/data.py": ("finetune cls",),
    "bertkit/tasks/driver.py": FINETUNE,
    "bertkit/tasks/pretrain/config.py": ("pretrain",),
    "bertkit/tasks/pretrain/model.py": ("pretrain",),
    "bertkit/tasks/pretrain/task.py": ("pretrain",),
    "bertkit/tasks/re/model.py": ("finetune re",),
    "bertkit/tasks/re/task.py": ("finetune re",),
    "bertkit/training/config.py": TRAINING,
    "bertkit/training/devices.py": TRAINING + INFERENCE,
    "bertkit/training/distributed.py": TRAINING,
    "bertkit/training/fsdp.py": TRAINING,
    "bertkit/training/logging.py": TRAINING,
    "bertkit/training/tracking.py": TRAINING,
    "bertkit/training/loop.py": TRAINING,
    "bertkit/training/nonfinite.py": TRAINING,
    "bertkit/training/display.py::warn_long_warmup": TRAINING,  # --warmup
    "bertkit/training/rundir.py": TRAINING,
    "bertkit/training/run_origin.py": TRAINING,  # --resume of another task or version
    "bertkit/vocab/build.py": ("vocab build",),
    "bertkit/vocab/build.py::check_output_dir": ("vocab build", "vocab extend"),
    # the build report: `run` shows it too, for a recipe's vocab stage (a `vocab build` flag)
    "bertkit/vocab/coverage.py::report_build": ("vocab build",),
    "bertkit/vocab/corpus.py": ("vocab build", "vocab compare", "vocab extend", "pretrain"),
    "bertkit/vocab/extend.py": ("vocab extend",),
    "bertkit/vocab/sentencepiece.py": ("vocab build",),
    "bertkit/vocab/wordpiece.py": ("vocab build",),
    "bertkit/workflows/adapt.py": ("adapt",),
    "bertkit/workflows/adapt_config.py": ("adapt",),
    "bertkit/cli/adapt.py": ("adapt",),  # its help, a module-level declaration
    "bertkit/cli/pretrain.py": ("pretrain",),
    # commands generated from settings (declared_command): the module-level help and the body
    "bertkit/cli/bench.py::": ("bench run",),
    "bertkit/cli/bench.py::_run": ("bench run",),
    "bertkit/cli/run.py::": ("run",),
    "bertkit/cli/run.py::_run": ("run",),
    "bertkit/workflows/recipe_stages.py": ("run",),
    "bertkit/workflows/scores.py": ("adapt",),
    "bertkit/workflows/task_text.py": ("adapt",),
}
# (module, flag, command) a message names although the command lacks the flag, and why that is
# right; keep this short.
ALLOWED = {
    ("bertkit/training/config.py", "--epochs", "pretrain"):
        "check_ranges' '0: use --epochs' for max_steps < 0 (only a recipe gets there); "
        "PretrainConfig refuses max_steps 0 with its own message",
}
_FLAG = r"--[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?![\w-])"
_ARGUMENT = re.compile(rf"{_FLAG}(?:=\S*)?(?:/{_FLAG})?")  # an argv token, not a message


def command_options(app) -> dict[str, set[str]]:
    """Every command of a Typer ``app`` ("finetune ner") -> the option names it accepts."""
    import typer

    out: dict[str, set[str]] = {}

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, path + [name])
        else:
            out[" ".join(path)] = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}

    walk(typer.main.get_command(app), [])
    return out


def flag_mentions(source: str) -> list[tuple[int, str, str, str]]:
    """(line, flag, text, enclosing function or "") for each ``--flag`` in a string of ``source`` that users can read:
    docstrings, ``typer.Option``/``typer.Argument`` declarations (a command's own flags) and
    argv tokens (``"--porcelain"``) are left out."""
    tree = ast.parse(source)
    owner = {}
    for top in tree.body:  # the function (or Class.method) each string sits in
        inner = [top] if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)) else \
            [f for f in getattr(top, "body", []) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for fn in inner:
            name = fn.name if fn is top else f"{top.name}.{fn.name}"
            owner.update({id(n): name for n in ast.walk(fn)})
    left_out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            left_out.add(id(node.value))  # docstrings, attribute docstrings
        if isinstance(node, ast.Call) and (getattr(node.func, "attr", None) or getattr(
                node.func, "id", None)) in ("Option", "Argument", "option", "Commands",
                                            "data_option", "model_option"):
            left_out.update(id(n) for n in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in left_out and not _ARGUMENT.fullmatch(node.value.strip()):
            found += [(node.lineno, m.group(), node.value, owner.get(id(node), ""))
                      for m in re.finditer(rf"(?<![\w-]){_FLAG}", node.value)]
    return found


def command_functions(app) -> dict[str, tuple[str, ...]]:
    """``"bertkit/cli/vocab.py::build_cli" -> ("vocab build",)`` for every command of ``app``."""
    import typer

    out: dict[str, tuple[str, ...]] = {}

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, path + [name])
        elif cmd.callback is not None:
            fn = cmd.callback
            while hasattr(fn, "__wrapped__"):
                fn = fn.__wrapped__
            key = f"{fn.__module__.replace('.', '/')}.py::{fn.__name__}"
            out[key] = out.get(key, ()) + (" ".join(path),)

    walk(typer.main.get_command(app), [])
    return out


def task_package_commands(path: str) -> tuple[str, ...]:
    """The commands of the registered task whose package holds ``path``
    (``bertkit/tasks/qa/data.py`` -> finetune/evaluate/predict qa), else ()."""
    parts = path.split("/")
    if len(parts) == 4 and parts[:2] == ["bertkit", "tasks"] and parts[2] in task_names():
        return tuple(f"{verb} {parts[2]}" for verb in ("finetune", "evaluate", "predict"))
    return ()


def missing_flags(files: dict[str, str], table: dict[str, tuple[str, ...]],
                  options: dict[str, set[str]]) -> list[str]:
    """Problems: a flag named in a module's messages that one of its commands lacks, or a module
    naming flags that ``table`` does not map to commands. ``files``: path -> source."""
    named = sorted(options, key=len, reverse=True)
    problems = []
    for path, source in sorted(files.items()):
        for line, flag, text, function in flag_mentions(source):
            own = task_package_commands(path)
            if own and f"{path}::{function}" not in table and path not in table:
                if not any(flag in options.get(c, ()) for c in own):
                    problems.append(f"{path}:{line}: no command of its task has {flag} "
                                    f"({text.strip()!r})")
                continue
            if f"{path}::{function}" not in table and path not in table:
                problems.append(f"{path}:{line} names {flag}: add {path!r} (or {path}::{function}) "
                                f"with the commands that show its messages to MESSAGE_COMMANDS")
                break
            before = text[:text.index(flag)]
            said = [c for c in named if f"bertkit {c} " in before + " "]
            for command in said[:1] or table.get(f"{path}::{function}") or table[path]:
                if command not in options:
                    problems.append(f"{path}:{line}: no command {command!r}")
                elif flag not in options[command] and (path, flag, command) not in ALLOWED:
                    problems.append(f"{path}:{line}: `{command}` has no {flag} ({text.strip()!r})")
    return problems


def test_every_flag_an_error_message_names_exists_on_its_command():
    root = Path(__file__).resolve().parents[1] / "bertkit"
    files = {str(p.relative_to(root.parent)): p.read_text(encoding="utf-8")
             for p in sorted(root.rglob("*.py"))}
    table = {**command_functions(app), **MESSAGE_COMMANDS}
    assert missing_flags(files, table, command_options(app)) == []
    stale = sorted({k.split("::")[0] for k in MESSAGE_COMMANDS}
                   - {p for p, s in files.items() if flag_mentions(s)})
    assert stale == [], f"MESSAGE_COMMANDS lists modules that name no flag: {stale}"


def test_the_flag_check_catches_a_missing_flag():
    options = command_options(app)
    corpus = (Path(__file__).resolve().parents[1] / "bertkit/vocab/corpus.py").read_text()
    files = {"bertkit/vocab/corpus.py": corpus}
    assert missing_flags(files, MESSAGE_COMMANDS, options) == []
    without = {**options, "pretrain": options["pretrain"] - {"--skip-bad-lines"}}  # the old bug
    problems = missing_flags(files, MESSAGE_COMMANDS, without)
    assert len(problems) == 1 and "`pretrain` has no --skip-bad-lines" in problems[0]
    fake = {"bertkit/x.py": 'def f():\n    """Docstring --ignored."""\n'
                            '    raise BertkitError("bad", expected="--no-such-flag or `bertkit '
                            'vocab build --size 5`")\n'}
    assert missing_flags(fake, {}, options) == [
        "bertkit/x.py:3 names --no-such-flag: add 'bertkit/x.py' (or bertkit/x.py::f) with the "
        "commands that show its messages to MESSAGE_COMMANDS"]
    assert missing_flags(fake, {"bertkit/x.py": ("pretrain",)}, options) == [
        "bertkit/x.py:3: `pretrain` has no --no-such-flag ('--no-such-flag or `bertkit vocab "
        "build --size 5`')"]


def test_a_task_package_needs_no_entry_but_its_flags_must_exist():
    options = command_options(app)
    ok = {"bertkit/tasks/qa/data.py": 'def f():\n    raise ValueError("use --max-answer-length")\n'}
    assert missing_flags(ok, MESSAGE_COMMANDS, options) == []
    bad = {"bertkit/tasks/qa/data.py": 'def f():\n    raise ValueError("use --no-such-flag")\n'}
    assert missing_flags(bad, MESSAGE_COMMANDS, options) == [
        "bertkit/tasks/qa/data.py:2: no command of its task has --no-such-flag "
        "('use --no-such-flag')"]
