"""Small messages and option values: the tag-scheme summary, a console writing to a file keeps
its lines whole, help shows small defaults one way, ``recipes NAME``, broken data links named,
a score's CI clipped to 0-1, fixed-choice options exit 2, ``pretrain --config`` sizes (issue
31)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from bertkit.errors import BertkitError

from bertkit.tasks.ner.config import NERConfig

runner = CliRunner()


# --- small leftovers --------------------------------------------------------------------------

def test_ner_summary_names_the_tag_schemes_as_text_not_a_dict():
    from bertkit.tasks.ner.task import describe_schemes

    assert describe_schemes({"train": "IOB2", "dev": "IOB2", "test": "IOB2"}) == "tags IOB2"
    assert describe_schemes({"train": "IOB1", "dev": "IOB2", "test": "IOB2"}) == \
        "tags train IOB1, dev IOB2, test IOB2 (all read as IOB2)"


def test_a_console_writing_to_a_file_does_not_wrap_lines(tmp_path):
    from bertkit.cli._app import make_console

    console = make_console()  # under pytest stdout is captured: not a terminal
    assert not console.is_terminal
    path = "/a/very/long/model/path/" + "x" * 120
    with console.capture() as capture:
        console.print(f"run directory: {path}", highlight=False)
    assert capture.get() == f"run directory: {path}\n"


def test_help_prints_small_defaults_one_way():
    """Every command's help writes a small default as 5e-5 / 1e-4, never 5e-05 or 0.0001."""
    import re
    from pathlib import Path

    from bertkit.cli._options import shown_default

    assert shown_default("lr", 5e-05) == "5e-5" and shown_default("warmup", 0.1) == "0.1"
    docs = "".join(p.read_text() for p in (Path(__file__).parents[2] / "docs" / "cli").glob("*.md"))
    assert re.findall(r"default: (\d\.\d*e-0\d|0\.000\d+)", docs) == []
    res = runner.invoke(__import__("bertkit.cli", fromlist=["app"]).app,
                        ["finetune", "ner", "--help"])
    assert "5e-5" in res.output and "5e-05" not in res.output


def test_recipes_name_prints_one_recipes_settings_and_vocab_compare_usage():
    from bertkit.cli import app

    res = runner.invoke(app, ["recipes", "chemprot-re-minilm"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("chemprot-re-minilm: ChemProt relation extraction")
    assert "bertkit finetune re" in lines and "  lr: 2e-4" in lines and "  pooling: cls" in lines
    res = runner.invoke(app, ["recipes", "no-such-recipe"])
    assert res.exit_code == 1 and "no recipe file or named recipe" in res.output
    usage = runner.invoke(app, ["vocab", "compare", "--help"]).output
    assert "compare [OPTIONS] VOCAB_A VOCAB_B" in usage and "{" not in usage


def test_broken_links_are_named_not_reported_as_no_train_file(tmp_path):
    from bertkit.data.sets import resolve_local
    from bertkit.tasks.driver import load_splits
    from bertkit.tasks.registry import get_task

    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "train.tsv").write_text("Aspirin\tB-Chemical\n")
    for split in ("dev", "test"):
        (folder / f"{split}.tsv").symlink_to(tmp_path / "gone" / f"{split}.tsv")
    with pytest.raises(BertkitError, match=r"dev.tsv is a broken link \(to .*gone/dev.tsv"):
        resolve_local(str(folder), "ner", (".tsv",))
    (folder / "train.tsv").unlink()
    (folder / "train.tsv").symlink_to(tmp_path / "gone" / "train.tsv")
    with pytest.raises(BertkitError, match="broken link") as err:
        load_splits(get_task("ner"), NERConfig(data=str(folder)))
    assert "no train file" not in str(err.value)


def test_ci95_of_a_score_is_clipped_to_0_1():
    from bertkit.tasks.driver import seed_statistics

    stats = seed_statistics([{"f1": 0.99, "loss": 0.9}, {"f1": 0.90, "loss": 0.2}])
    f1, loss = stats["f1"], stats["loss"]
    half = 12.7062 * (0.09 / 2 ** 0.5) / 2 ** 0.5  # t(0.975, 1) * std / sqrt(n) = 0.5718
    assert f1["ci95_high"] == 1.0  # 0.945 + 0.5718 clipped
    assert f1["ci95_low"] == pytest.approx(0.945 - half, rel=1e-4)
    assert loss["ci95_high"] > 1.0 and loss["ci95_low"] < 0.0  # a loss is not a score


@pytest.mark.parametrize("args", [
    ["evaluate", "ner", "--model", "m", "--data", "d", "--split", "tset"],
])
def test_fixed_choice_options_refuse_other_values_with_exit_2(args):
    from bertkit.cli import app

    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output


def test_pretrain_config_is_a_named_size_or_a_custom_one(tmp_path):
    # --config also takes layers=L,hidden=H (issue 27), so it is text checked with a message
    from bertkit.cli import app

    corpus = tmp_path / "c.txt"
    corpus.write_text("one sentence here\n")
    res = runner.invoke(app, ["pretrain", "--config", "huge", "--vocab", "v", "--corpus",
                              str(corpus), "-o", str(tmp_path / "run")])
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert "unknown --config 'huge'" in text and "tiny, small, base, large" in text
    assert "layers=L,hidden=H" in text and not (tmp_path / "run").exists()
