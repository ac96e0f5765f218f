"""`bertkit adapt`: the task text of each reader, the settings checks, the workflow end to end
(tiny BERT; resumed stages; --compare), bad input, and a reduced-budget run on the shared data."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.errors import BertkitError
from bertkit.workflows.adapt import AdaptConfig, adapt
from bertkit.workflows.scores import task_metrics
from bertkit.workflows.scores import mean_sd, score_summary
from bertkit.workflows.task_text import task_text_lines
from tests.conftest import write_ner_dir

runner = CliRunner()

RE_LINES = [
    {"text": "<< Aspirin >> inhibits [[ COX-1 ]] strongly .", "label": "CPR:4"},
    {"text": "[[ Aspirin ]] inhibits << COX-1 >> strongly .", "label": "false"},  # same sentence
    {"text": "Low doses of [[ warfarin ]] raise << INR >> .", "label": "CPR:3"},
]
CONLLU = """# text = Cells divide .
1\tCells\tcell\tNNS\tNNS\t_\t2\tnsubj\t_\t_
2\tdivide\tdivide\tVBP\tVBP\t_\t0\troot\t_\t_
3\t.\t.\t.\t.\t_\t2\tpunct\t_\t_

1\tIL-2\til-2\tNN\tNN\t_\t2\tnsubj\t_\t_
2\tbinds\tbind\tVBZ\tVBZ\t_\t0\troot\t_\t_

"""


def _re_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(x) + "\n" for x in RE_LINES)
    for split in ("train", "dev", "test"):
        (root / f"{split}.jsonl").write_text(text, encoding="utf-8")
    return root


def test_ner_task_text_is_the_training_sentences_without_tags(tmp_path):
    data = write_ner_dir(tmp_path / "ner", dev="Other\tO\n", test="Other\tO\n")
    lines = task_text_lines(f"ner:{data}")
    assert lines == ["Aspirin induced renal failure .",
                     "Cisplatin causes nephrotoxicity in rats .", "No entities here"]
    assert task_text_lines(str(data / "train.tsv")) == lines  # a CoNLL file directly
    # --max-train-samples: the first N training sentences, as fine-tuning reads them
    assert task_text_lines(f"ner:{data}", max_examples=2) == lines[:2]


def test_relation_task_text_strips_markers_and_repeats(tmp_path):
    data = _re_dir(tmp_path / "re")
    lines = task_text_lines(f"re:{data}")
    assert lines == ["Aspirin inhibits COX-1 strongly .", "Low doses of warfarin raise INR ."]
    assert task_text_lines(str(data / "train.jsonl")) == lines
    # N relation examples, then their shared sentences merged (RE_LINES' first two share one)
    assert task_text_lines(f"re:{data}", max_examples=2) == lines[:1]
    assert not any(m in " ".join(lines) for m in ("<<", ">>", "[[", "]]"))


def test_conllu_task_text_and_genia_style_split(tmp_path):
    path = tmp_path / "x.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    assert task_text_lines(str(path)) == ["Cells divide .", "IL-2 binds"]
    data = tmp_path / "dep"  # no train.conllu: train = dev less every 10th sentence, as finetune
    data.mkdir()
    blocks = [f"1\tword{k}\t_\tNN\tNN\t_\t0\troot\t_\t_\n" for k in range(20)]
    (data / "dev.conllu").write_text("\n".join(blocks) + "\n", encoding="utf-8")
    (data / "test.conllu").write_text(blocks[0] + "\n", encoding="utf-8")
    lines = task_text_lines(f"dep:{data}")
    assert len(lines) == 18 and "word9" not in lines and "word19" not in lines


def test_plain_text_file_and_bad_specs(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("One sentence here .\n\nAnother  one .\nOne sentence here .\n", encoding="utf-8")
    assert task_text_lines(str(path)) == ["One sentence here .", "Another one ."]
    with pytest.raises(BertkitError, match="neither TASK:DATA nor a file"):
        task_text_lines("pos:scicite")
    with pytest.raises(BertkitError, match="neither a directory nor a registered"):
        task_text_lines("ner:no-such-set")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"tokens": ["no", "spans"], "label": "x"}\n', encoding="utf-8")
    with pytest.raises(BertkitError, match="bad.jsonl"):
        task_text_lines(str(bad))


def test_settings_are_checked_before_anything_runs(tmp_path):
    with pytest.raises(BertkitError, match="nothing to adapt"):
        adapt(AdaptConfig(output_dir=str(tmp_path / "a")))
    with pytest.raises(BertkitError, match="--seeds is '1,1'"):
        AdaptConfig(task_text="task", seeds="1,1").validate()
    with pytest.raises(BertkitError, match="--task is 'pos'"):
        AdaptConfig(task="pos", task_text="task").validate()
    assert AdaptConfig(seeds="3, 1").seed_list() == [3, 1]
    assert not (tmp_path / "a").exists()


def test_mean_sd_and_score_summary():
    assert mean_sd([1.0]) == (1.0, 0.0)
    m, sd = mean_sd([80.0, 82.0, 84.0])
    assert m == pytest.approx(82.0) and sd == pytest.approx(2.0)
    s = score_summary([("micro_f1", "test micro-F1"), ("macro_f1", "test macro-F1")],
                      [{"test": {"micro_f1": 0.5, "macro_f1": 0.25}},
                       {"test": {"micro_f1": 0.7, "macro_f1": 0.25}}])
    assert s["micro_f1"]["mean"] == pytest.approx(60.0)
    assert s["micro_f1"]["sd"] == pytest.approx(14.142, abs=1e-3)
    assert s["macro_f1"]["values"] == [25.0, 25.0]


def _args(encoder, data, out, *extra):
    return ["adapt", "--model", encoder, "--data", str(data), "--task-text", "task",
            "--max-seq-length", "8", "--pretrain-batch-size", "2", "--masking", "token",
            "--tapt-epochs", "1", "--epochs", "1", "--batch-size", "2", "--device", "cpu",
            "--cache-dir", str(out.parent / "cache"), "-o", str(out), *extra]


def test_adapt_tapt_reads_the_same_max_train_samples(tiny_encoder, ner_dir, tmp_path):
    out = tmp_path / "run"
    res = runner.invoke(app, _args(tiny_encoder, ner_dir, out, "--max-train-samples", "1"))
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stages"]["task_text"]["sentences"] == 1
    assert summary["stages"]["task_text"]["max_examples"] == 1
    assert (out / "pretrain" / "task_text.txt").read_text() == "Aspirin induced renal failure .\n"
    assert "1 document " in " ".join(res.output.split()) or "1 document;" in res.output
    # another sample rewrites the text in place: the finished TAPT read other text, so it is
    # refused by the one rule of stages (naming the text and --overwrite), not kept from before
    res = runner.invoke(app, _args(tiny_encoder, ner_dir, out, "--max-train-samples", "2"))
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert "stage TAPT pretraining finished with other settings:" in text
    assert "text: the text it reads changed since" in text and "--overwrite" in text
    res = runner.invoke(app, _args(tiny_encoder, ner_dir, out, "--max-train-samples", "2",
                                   "--overwrite"))
    assert res.exit_code == 0, res.output
    from bertkit.workflows.stages import text_fingerprint

    tapt = json.loads((out / "pretrain" / "tapt" / "stage.json").read_text())["settings"]
    assert tapt["text"] == text_fingerprint(str(out / "pretrain" / "task_text.txt"))
    assert json.loads((out / "summary.json").read_text())["stages"]["task_text"]["sentences"] == 2


def test_adapt_end_to_end_resumes_and_compares(tiny_encoder, ner_dir, tmp_path):
    out = tmp_path / "run"
    res = runner.invoke(app, _args(tiny_encoder, ner_dir, out, "--compare"))
    assert res.exit_code == 0, res.output
    assert "baseline (unadapted)" in res.output and "test entity F1" in res.output
    summary = json.loads((out / "summary.json").read_text())
    tapt = summary["stages"]["tapt"]
    # 15 words -> 24 pieces with [SEP] ends: 4 sequences of 6 + 2 specials; batch 2 -> 2 steps
    assert tapt["sequences_per_epoch"] >= 2 and tapt["steps"] == -(-tapt["sequences_per_epoch"] // 2)
    assert summary["model"] == str(out / "pretrain" / "tapt" / "model")
    assert (out / "pretrain" / "task_text.txt").read_text().splitlines()[0] == \
        "Aspirin induced renal failure ."
    ft = json.loads((out / "finetune" / "results.json").read_text())
    assert ft["model"] == summary["model"]
    base = json.loads((out / "baseline" / "results.json").read_text())
    assert base["model"] == tiny_encoder
    diff = summary["adapted"]["f1"]["mean"] - summary["baseline"]["f1"]["mean"]
    assert summary["difference"]["f1"] == pytest.approx(diff)
    mtime = (out / "finetune" / "results.json").stat().st_mtime
    res = runner.invoke(app, _args(tiny_encoder, ner_dir, out, "--compare"))  # all done: skipped
    assert res.exit_code == 0, res.output
    assert res.output.count("finished earlier, skipped") == 3
    assert (out / "finetune" / "results.json").stat().st_mtime == mtime
    # another device (a setting --resume may change) keeps every finished stage too
    res = runner.invoke(app, _args(tiny_encoder, ner_dir, out, "--compare", "--device", "auto"))
    assert res.exit_code == 0, res.output
    assert res.output.count("finished earlier, skipped") == 3
    # a changed pretraining setting is refused by the one rule of stages, naming it; nothing
    # is replaced
    before = (out / "summary.json").read_text()
    res = runner.invoke(app, _args(tiny_encoder, ner_dir, out, "--compare", "--pretrain-lr",
                                   "1e-3"))
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())  # rich wraps lines
    assert "stage TAPT pretraining finished with other settings: lr: 0.0001 -> 0.001" in text
    assert "--overwrite to run every stage again" in text
    assert (out / "finetune" / "results.json").stat().st_mtime == mtime
    assert (out / "summary.json").read_text() == before  # the earlier summary kept whole


@pytest.mark.slow
def test_adapt_seeds_run_as_the_drivers_seeds_and_resume_by_its_rule(tiny_encoder, ner_dir,
                                                                     tmp_path):
    """Several --seeds: one fine-tuning stage running the driver's --seeds (finetune/seed-N,
    summary.json); a stopped seed continues and finished ones are kept (rundir.resumable)."""
    out = tmp_path / "run"
    res = runner.invoke(app, _args(tiny_encoder, ner_dir, out, "--seeds", "1,2"))
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    runs = [json.loads((out / "finetune" / f"seed-{s}" / "results.json").read_text())
            for s in (1, 2)]
    assert summary["adapted"]["f1"]["values"] == pytest.approx(
        [100 * r["test"]["f1"] for r in runs])
    assert json.loads((out / "finetune" / "summary.json").read_text())["seeds"] == [1, 2]
    # seed 2 lost its results (as if stopped after its last checkpoint): rerun keeps seed 1
    kept = (out / "finetune" / "seed-1" / "results.json").stat().st_mtime
    (out / "finetune" / "seed-2" / "results.json").unlink()
    stage = json.loads((out / "finetune" / "stage.json").read_text())
    (out / "finetune" / "stage.json").write_text(json.dumps({**stage, "results": None}))
    res = runner.invoke(app, _args(tiny_encoder, ner_dir, out, "--seeds", "1,2"))
    assert res.exit_code == 0, res.output
    assert (out / "finetune" / "seed-1" / "results.json").stat().st_mtime == kept
    assert (out / "finetune" / "seed-2" / "results.json").is_file()
    assert "seed 1 (1 of 2): finished earlier, kept" in " ".join(res.output.split())


def test_cli_bad_input_is_one_line_and_exit_1(tmp_path):
    res = runner.invoke(app, ["adapt", "--task-text", "nope", "-o", str(tmp_path / "r")])
    assert res.exit_code == 1 and "neither TASK:DATA nor a file" in res.output
    assert "Traceback" not in res.output
    res = runner.invoke(app, ["adapt", "-o", str(tmp_path / "r")])
    assert res.exit_code == 1 and "nothing to adapt" in res.output
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    res = runner.invoke(app, ["adapt", "--task-text", "task", "--data", str(tmp_path), "-o", str(other)])
    assert res.exit_code == 1 and "holds something other than an adapt run" in res.output


def test_shipped_recipe_builds_an_adapt_config():
    from bertkit.settings.layers import build_config
    from bertkit.workflows.recipes import load_recipe

    cfg = build_config(AdaptConfig, load_recipe("bc5cdr-tapt", "adapt"))
    assert cfg.task_text == "ner:bc5cdr" and cfg.seed_list() == [1, 2, 3] and cfg.compare
    cfg.check_ranges()


@pytest.mark.integration
def test_adapt_reduced_budget_on_bc5cdr(tmp_path):
    """DAPT (2 steps on a corpus slice) then TAPT (1 epoch on 200 BC5CDR training sentences),
    fine-tuning 1 epoch on 200 sentences, and the unadapted baseline."""
    data = Path(os.environ["BERTKIT_DATA"])
    corpus = tmp_path / "corpus.txt"
    with open(data / "corpus" / "train.txt", encoding="utf-8") as f:
        corpus.write_text("".join(next(f) for _ in range(300)), encoding="utf-8")
    text = tmp_path / "tapt.txt"
    text.write_text("\n".join(task_text_lines("ner:bc5cdr")[:200]) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    res = runner.invoke(app, [
        "adapt", "--task", "ner", "--data", "bc5cdr", "--corpus", str(corpus),
        "--task-text", str(text), "--pretrain-steps", "2", "--pretrain-batch-size", "16",
        "--tapt-epochs", "1", "--masking", "token", "--max-train-samples", "200",
        "--max-eval-samples", "200", "--epochs", "1", "--lr", "2e-4", "--batch-size", "8",
        "--compare",
        "--device", "cpu", "--cache-dir", str(tmp_path / "cache"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stages"]["dapt"]["steps"] == 2
    assert summary["stages"]["tapt"]["steps"] >= 2
    tapt = yaml.safe_load((out / "pretrain" / "tapt" / "config.yaml").read_text())
    assert tapt["model"] == str(out / "pretrain" / "dapt" / "model")  # DAPT, then TAPT
    for side in ("adapted", "baseline"):
        assert 5.0 < summary[side]["f1"]["mean"] <= 100.0  # untrained: ~0


def test_run_stage_skips_done_stages_and_refuses_changed_ones(tmp_path):
    from bertkit.workflows.stages import SettingsChanged, run_stage

    calls = []

    def run():
        calls.append(1)
        return {"score": len(calls)}

    assert run_stage("s", tmp_path, {"lr": 1e-4}, run, overwrite=False) == {"score": 1}
    # an option bertkit gained since (absent from the record) is read at its default
    assert run_stage("s", tmp_path, {"lr": 1e-4, "prefetch": 2}, run, False,
                     defaults={"prefetch": 2}) == {"score": 1}
    with pytest.raises(SettingsChanged, match=r"stage s finished with other settings: "
                                              r"prefetch: 2 -> 4"):
        run_stage("s", tmp_path, {"lr": 1e-4, "prefetch": 4}, run, False,
                  defaults={"prefetch": 2})
    with pytest.raises(SettingsChanged, match=r"lr: 0.0001 -> 0.001") as refused:
        run_stage("s", tmp_path, {"lr": 1e-3}, run, False)  # changed: refused
    assert [c.key for c in refused.value.changes] == ["lr"] and calls == [1]
    assert json.loads((tmp_path / "stage.json").read_text())["settings"] == {"lr": 1e-4}
    assert run_stage("s", tmp_path, {"lr": 1e-3}, run, overwrite=True) == {"score": 2}
    assert json.loads((tmp_path / "stage.json").read_text())["settings"] == {"lr": 1e-3}


def test_input_fingerprint_follows_the_producing_stage(tmp_path):
    from bertkit.workflows.stages import input_fingerprint, run_stage

    assert input_fingerprint(tmp_path / "elsewhere" / "model") is None
    run_stage("s", tmp_path, {"lr": 1}, lambda: {"loss": 1.0}, False)
    first = input_fingerprint(tmp_path / "model")
    assert first and first == input_fingerprint(tmp_path / "model")
    run_stage("s", tmp_path, {"lr": 2}, lambda: {"loss": 2.0}, True)  # --overwrite
    assert input_fingerprint(tmp_path / "model") not in (None, first)
