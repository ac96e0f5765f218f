"""Review fixes: --seeds from a recipe as a list or an int, the --seeds summary naming the metric
the run chose, and evaluate --split dev after --split-from-dev."""

import json

import pytest
from typer.testing import CliRunner

from bertkit.cli import app
from bertkit.config import build_config
from bertkit.errors import BertkitError
from bertkit.recipes import run_settings
from bertkit.tasks.ner import NERConfig

runner = CliRunner()


@pytest.mark.parametrize("text, seeds", [("seeds: [1, 2, 3]", "1,2,3"), ("seeds: 7", "7"),
                                         ("seeds: '1,2'", "1,2"), ("seeds: [4]", "4")])
def test_recipe_seeds_as_a_list_an_int_or_text(tmp_path, text, seeds):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(text + "\n")
    cfg = run_settings(NERConfig, "finetune ner", {}, recipe)
    assert cfg.seeds == seeds
    cfg.validate()  # parse_seeds accepts what was kept


@pytest.mark.parametrize("value", [["a", 2], [True], [], 1.5])
def test_recipe_seeds_of_another_kind_are_refused_naming_the_file(tmp_path, value):
    with pytest.raises(BertkitError, match=r"r\.yaml.*option 'seeds' has the value .*a list of "
                                           r"integers or one integer"):
        build_config(NERConfig, {"seeds": value}, source=str(tmp_path / "r.yaml"))


def test_seeds_summary_names_the_metric_the_run_selected_by(tmp_path, ner_dir, tiny_encoder):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("seeds: [1]\nepochs: 1\nbatch_size: 2\n")
    out = tmp_path / "seeds"
    res = runner.invoke(app, ["finetune", "ner", "--data", str(ner_dir), "--model", tiny_encoder,
                              "-o", str(out), "--device", "cpu", "--metric", "token-macro",
                              "--recipe", str(recipe)])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seeds"] == [1]
    assert summary["select_metric"] == "token_macro_f1"  # not NER's default, f1
    run = json.loads((out / "seed-1" / "results.json").read_text())
    assert run["select_metric"] == "token_macro_f1"
    assert "selected by dev token_macro_f1" in " ".join(res.output.split())
