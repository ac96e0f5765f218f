import numpy as np
import pytest

from bertkit.errors import BertkitError
from bertkit.tasks.cls.data import Columns, TextExample, check_known_labels, read_examples
from bertkit.tasks.cls.encoding import collate, encode, head_tail, pool_logits
from tests.tasks.cls.conftest import TEXTS, write_cls_dir

LONG = " ".join(f"w{i}" for i in range(60))


def test_head_tail_keeps_both_ends_and_reports(tokenizer):
    ex = [TextExample(LONG, label="a"), TextExample("short text", label="b")]
    items = encode(ex, tokenizer, {"a": 0, "b": 1}, max_length=16)
    assert len(items) == 2 and [x.shortened for x in items] == [True, False]
    full = tokenizer(LONG, add_special_tokens=False)["input_ids"]
    ids = items[0].input_ids.tolist()
    assert len(ids) == 16 and ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
    assert ids[1:-1] == head_tail(full, 14) == full[:3] + full[-11:]
    assert items[1].label == 1 and items[0].first == 16


def test_windows_cover_the_text_and_average(tokenizer):
    ex = [TextExample(LONG, label="a"), TextExample("short", label="a")]
    items = encode(ex, tokenizer, {"a": 0}, max_length=18, long_text="windows")
    first = [x for x in items if x.example == 0]
    assert len(first) > 2 and all(len(x.input_ids) <= 18 for x in items)
    full = tokenizer(LONG, add_special_tokens=False)["input_ids"]
    covered = set()
    for x in first:
        covered.update(x.input_ids[1:-1].tolist())
    assert covered == set(full)  # every piece in some window
    logits = np.arange(len(items) * 2, dtype=np.float32).reshape(-1, 2)
    pooled = pool_logits(logits, np.array([x.example for x in items]), 2)
    assert np.allclose(pooled[0], logits[:len(first)].mean(0)) and np.allclose(pooled[1], logits[-1])


def test_pairs_get_token_types(tokenizer):
    ex = [TextExample("a cat", "a dog sat", "yes")]
    items = encode(ex, tokenizer, {"yes": 0}, max_length=32)
    batch = collate(items, tokenizer.pad_token_id)
    ids, types = batch["input_ids"][0].tolist(), batch["token_type_ids"][0].tolist()
    sep = tokenizer.sep_token_id
    assert ids.count(sep) == 2 and types[:ids.index(sep) + 1] == [0] * (ids.index(sep) + 1)
    assert types[-1] == 1 and batch["labels"].tolist() == [0]


def test_multi_label_indicators(tokenizer):
    ex = [TextExample("x", label=["b", "a"]), TextExample("y", label=[])]
    batch = collate(encode(ex, tokenizer, {"a": 0, "b": 1}, 16, multi_label=True),
                    tokenizer.pad_token_id)
    assert batch["labels"].tolist() == [[1.0, 1.0], [0.0, 0.0]]


def test_csv_and_tsv_with_named_columns(tmp_path):
    for ext in ("csv", "tsv"):
        d = write_cls_dir(tmp_path / ext, ext=ext)
        xs = read_examples(d / f"train.{ext}", Columns(text="sentence", label="intent")).examples
        assert [(x.text, x.label) for x in xs] == list(TEXTS) and xs[0].line == 2


def test_unknown_dev_label_is_refused_with_its_line():
    xs = [TextExample("a", label="Uses", file="dev.jsonl", line=1),
          TextExample("b", label="Future", file="dev.jsonl", line=2)]
    with pytest.raises(BertkitError, match=r"dev.jsonl:2: label 'Future' in dev"):
        check_known_labels(xs, ["Uses"], "dev")
