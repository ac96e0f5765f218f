"""Question + context windows: overlap, question cap, labels (also at a window's edges)."""

import numpy as np

from bertkit.tasks.qa.data import QAExample
from bertkit.tasks.qa.encoding import encode, label_windows

LONG = " ".join(f"word{i}" for i in range(120)) + " the answer is ACE2 receptor here ."


def _example(question="Which receptor?", context=LONG, answer="ACE2 receptor"):
    start = context.index(answer)
    return QAExample("q", question, context, [answer], [start])


def test_windows_overlap_by_doc_stride_and_cover_the_context(tokenizer):
    ex = _example()
    f = encode([ex], tokenizer, max_length=64, doc_stride=16, max_question_length=16)
    assert len(f) > 3 and (f.example == 0).all()
    ctx_ids = [f.input_ids[i][f.ctx_start[i]:f.ctx_end[i] + 1] for i in range(len(f))]
    for a, b in zip(ctx_ids, ctx_ids[1:]):  # doc_stride is the overlap (Hugging Face meaning)
        assert list(a[-16:]) == list(b[:16])
    every = tokenizer(ex.context, add_special_tokens=False)["input_ids"]
    step = len(ctx_ids[0]) - 16
    rebuilt = list(ctx_ids[0]) + [t for c in ctx_ids[1:] for t in c[16:]]
    assert rebuilt == every and step > 0
    # exactly the windows that hold the whole answer are labelled; the others point at [CLS]
    labelled = np.flatnonzero(f.start_positions > 0)
    assert len(labelled) >= 1 and (f.end_positions[f.start_positions == 0] == 0).all()
    for i in labelled:
        offs = f.offsets[i]
        a, b = offs[f.start_positions[i], 0], offs[f.end_positions[i], 1]
        assert ex.context[a:b] == "ACE2 receptor"
        assert f.ctx_start[i] <= f.start_positions[i] <= f.end_positions[i] <= f.ctx_end[i]


def test_long_question_capped_not_crashing(tokenizer):
    ex = _example(question="why " * 200 + "?")
    f = encode([ex], tokenizer, max_length=64, doc_stride=16, max_question_length=10)
    assert f.questions_cut == 1
    assert all(f.ctx_start[i] == 1 + 10 + 1 for i in range(len(f)))  # [CLS] q(10) [SEP]


def test_labels_at_first_and_last_context_piece_and_outside():
    # one window: [CLS] q [SEP] c0 c1 c2 [SEP]; context pieces at chars [0,3) [4,7) [8,11)
    offsets = np.array([[[0, 0], [0, 1], [0, 0], [0, 3], [4, 7], [8, 11], [0, 0]]] * 4)
    ctx = np.array([[False, False, False, True, True, True, False]] * 4)
    start = np.array([0, 8, 4, 9])   # first piece; last piece; middle to last; past the window
    end = np.array([3, 11, 11, 14])
    s, e = label_windows(offsets, ctx, start, end)
    assert s.tolist() == [3, 5, 4, 0] and e.tolist() == [3, 5, 5, 0]
    s, e = label_windows(offsets, ctx, np.array([-1] * 4), np.array([-1] * 4))
    assert s.tolist() == [0] * 4 and e.tolist() == [0] * 4


def test_unanswerable_and_short_context_one_window(tokenizer):
    ex = QAExample("u", "Who?", "Short context here.", [], [])
    f = encode([ex], tokenizer)
    assert len(f) == 1 and f.start_positions.tolist() == [0] and f.end_positions.tolist() == [0]


def _features_for_sampling(n_answerable=40, n_null_each=9, n_unanswerable=5):
    """Hand-built features: each answerable question has 1 answer window + ``n_null_each`` null
    windows; each unanswerable question 2 (null) windows."""
    from bertkit.tasks.qa.encoding import Features

    example, start, answerable = [], [], []
    for q in range(n_answerable):
        example += [q] * (1 + n_null_each)
        start += [5] + [0] * n_null_each
        answerable += [True] * (1 + n_null_each)
    for q in range(n_answerable, n_answerable + n_unanswerable):
        example += [q, q]
        start += [0, 0]
        answerable += [False, False]
    F = len(example)
    lengths = np.random.default_rng(0).integers(20, 60, F)
    ids = [np.ones(n, dtype=np.int64) for n in lengths]
    zeros = np.zeros(F, dtype=np.int64)
    return Features(ids, None, [np.zeros((n, 2), dtype=np.int64) for n in lengths],
                    np.asarray(example), zeros, zeros, np.asarray(start), np.asarray(start),
                    0, np.asarray(answerable))


def test_null_window_subsampling_keeps_answers_and_unanswerable_windows():
    from bertkit.tasks.qa.encoding import kept_windows, null_windows

    f = _features_for_sampling()
    null = null_windows(f)
    assert null.sum() == 40 * 9  # neither answer windows nor unanswerable questions' windows
    assert kept_windows(f, 1.0, seed=3, epoch=0).tolist() == list(range(len(f)))
    keep = kept_windows(f, 0.25, seed=3, epoch=0)
    assert set(np.flatnonzero(~null)) <= set(keep.tolist())  # 40 answer + 10 no-answer windows
    share = np.isin(np.flatnonzero(null), keep).mean()
    assert 0.17 < share < 0.33  # 360 draws at 0.25: sd 0.023
    again = kept_windows(f, 0.25, seed=3, epoch=0)
    other = kept_windows(f, 0.25, seed=3, epoch=1)
    assert again.tolist() == keep.tolist()  # a resumed run draws the same
    assert other.tolist() != keep.tolist()  # a fresh draw every epoch


def test_window_batches_cover_the_kept_windows_once_and_resume_exactly():
    from bertkit.tasks.qa.encoding import WindowBatches, kept_windows

    f = _features_for_sampling()
    wb = WindowBatches(f, batch_size=8, seed=3, pad_id=0, group=4, null_window_rate=0.25)
    for epoch in (0, 1):
        keep = kept_windows(f, 0.25, 3, epoch)
        plan = wb.plan(epoch)
        assert wb.num_batches(epoch) == len(plan) == -(-len(keep) // 8)
        assert sorted(np.concatenate(plan).tolist()) == keep.tolist()
        batches = list(wb.iter_batches(epoch))
        tail = list(wb.iter_batches(epoch, start=3))
        assert len(batches) == len(plan)
        for a, b in zip(batches[3:], tail):
            assert all((a[k] == b[k]).all() for k in a)
    # rate 1: the batches of the unsampled path (every window once)
    full = WindowBatches(f, batch_size=8, seed=3, pad_id=0, group=4)
    assert sorted(np.concatenate(full.plan(0)).tolist()) == list(range(len(f)))


def test_encode_marks_windows_of_answerable_questions(tokenizer):
    from bertkit.tasks.qa.encoding import null_windows

    f = encode([_example(), QAExample("u", "Who?", LONG, [], [])], tokenizer, max_length=64,
               doc_stride=16, max_question_length=16)
    assert f.answerable.tolist() == (f.example == 0).tolist()
    null = null_windows(f)
    assert (null == ((f.example == 0) & (f.start_positions == 0))).all()
    assert 0 < null.sum() < (f.example == 0).sum()


def test_an_epoch_of_null_windows_only_still_trains_one():
    from bertkit.tasks.qa.encoding import kept_windows

    f = _features_for_sampling(n_answerable=2, n_null_each=3, n_unanswerable=0)
    f.start_positions[:] = 0  # no window holds its answer
    sizes = {len(kept_windows(f, 1e-9, seed=s, epoch=0)) for s in range(5)}
    assert sizes == {1}
