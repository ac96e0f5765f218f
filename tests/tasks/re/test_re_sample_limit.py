"""--max-train-samples never narrows RE's relation labels (they come from the whole train file)."""

from rich.console import Console

from bertkit.tasks.driver import load_splits
from bertkit.tasks.re import REConfig
from bertkit.tasks.re.model import unwrap
from bertkit.tasks.re.task import RETask
from bertkit.training.devices import make_runtime
from tests.tasks.re.conftest import PAIRS, write_re_dir


def test_labels_from_the_whole_train_file_under_max_train_samples(tmp_path, tiny_encoder):
    d = write_re_dir(tmp_path / "d")  # ACTIVATOR first at train line 4
    cfg = REConfig(data=str(d), model=tiny_encoder, device="cpu", max_train_samples=2)
    task = RETask()
    data = load_splits(task, cfg)
    assert [ex.label for ex in data.splits["train"]] == ["INHIBITOR", "SUBSTRATE"]
    assert len(data.full_train) == len(PAIRS)
    console = Console(record=True, width=200)
    prepared = task.prepare(cfg, tiny_encoder, data, make_runtime("cpu", "fp32"), console)
    config = unwrap(prepared.model).config
    assert [config.id2label[i] for i in range(3)] == ["ACTIVATOR", "INHIBITOR", "SUBSTRATE"]
    assert "data: 2/6/6 pairs (train/dev/test); 3 labels" in prepared.summary
    assert "not in train" not in console.export_text()  # dev's ACTIVATOR is a training label
