"""The CRF's log-depth scan (issue 61): it equals the sequential forward algorithm (kept here as
the reference, the package's code before the scan), its depth is log2(W), and its loss and
decoding run without host syncs or graph breaks."""

import math

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from bertkit.decoding.viterbi import viterbi_decode
from bertkit.heads.crf import LinearChainCRF, log_partition

LABELS = ["B-Chem", "B-Dis", "I-Chem", "I-Dis", "O"]  # IOB2 with 2 types: C = 5


def loop_log_partition(emissions, mask, trans, start, end):
    """Reference: the forward algorithm one word at a time (Lafferty et al., 2001, sec. 3), as
    bertkit's CRF computed it before the scan (main 2abed2c, heads/crf.py)."""
    alpha = start.unsqueeze(0) + emissions[:, 0]
    for i in range(1, emissions.shape[1]):
        nxt = torch.logsumexp(alpha.unsqueeze(2) + trans.unsqueeze(0), dim=1) + emissions[:, i]
        alpha = torch.where(mask[:, i].unsqueeze(1), nxt, alpha)
    return torch.logsumexp(alpha + end.unsqueeze(0), dim=1)


def loop_nll(crf, emissions, tags, mask):
    """Reference NLL (sum over rows) with the loop's log Z and a per-position gold score."""
    trans, start, end = crf.scores()
    gold = []
    for b in range(emissions.shape[0]):
        n = int(mask[b].sum())
        if n == 0:
            continue
        y = tags[b, :n].tolist()
        s = start[y[0]] + end[y[-1]] + sum(emissions[b, i, y[i]] for i in range(n))
        gold.append(s + sum(trans[y[i - 1], y[i]] for i in range(1, n)))
    log_z = loop_log_partition(emissions, mask, trans, start, end)
    return (log_z * mask[:, 0]).sum() - sum(gold)


def random_case(seed, B, W, C=5, dtype=torch.float64, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    em = torch.randn(B, W, C, generator=g, dtype=dtype) * scale
    lengths = torch.randint(1, W + 1, (B,), generator=g)
    lengths[0] = W  # a full row
    if B > 2:
        lengths[1] = 0  # an empty row
    mask = torch.arange(W).unsqueeze(0) < lengths.unsqueeze(1)
    tags = torch.randint(0, C, (B, W), generator=g).masked_fill(~mask, -100)
    return em, tags, mask


def random_crf(seed, dtype=torch.float64):
    torch.manual_seed(seed)
    crf = LinearChainCRF(LABELS).to(dtype)
    with torch.no_grad():
        for p in (crf.transitions, crf.start_transitions, crf.end_transitions):
            p.normal_()
    return crf


@pytest.mark.parametrize("W", [1, 2, 3, 5, 16, 17, 33, 72, 128])
def test_scan_log_partition_and_gradients_equal_the_loop(W):
    crf = random_crf(W)
    em, tags, mask = random_case(W, B=6, W=W)
    trans, start, end = crf.scores()
    assert torch.allclose(log_partition(em, mask, trans, start, end),
                          loop_log_partition(em, mask, trans, start, end), rtol=0, atol=1e-5)
    grads = []
    for fn in (crf, lambda *a: loop_nll(crf, *a)):
        e = em.clone().requires_grad_(True)
        crf.zero_grad()
        loss = fn(e, tags, mask)
        loss.backward()
        params = (crf.transitions, crf.start_transitions, crf.end_transitions)
        grads.append((loss.detach(), e.grad, *(torch.zeros_like(p) if p.grad is None
                                               else p.grad.clone() for p in params)))
    for new, ref in zip(*grads):
        assert new.dtype == torch.float64
        assert torch.allclose(new, ref, rtol=0, atol=1e-5), (new - ref).abs().max()
    # the gradient reaches the real positions only: padding and empty rows get exactly 0
    assert grads[0][1][~mask].eq(0).all() and grads[0][1][mask].abs().sum() > 0


def test_scan_equals_loop_on_many_random_lengths_in_one_batch():
    crf = random_crf(7)
    em, tags, mask = random_case(7, B=40, W=128, scale=5.0)
    assert set(mask.sum(1).tolist()) >= {0, 128}
    trans, start, end = crf.scores()
    new = log_partition(em, mask, trans, start, end)
    ref = loop_log_partition(em, mask, trans, start, end)
    assert torch.allclose(new, ref, rtol=0, atol=1e-5)
    assert torch.allclose(crf(em, tags, mask), loop_nll(crf, em, tags, mask), rtol=0, atol=1e-5)


def test_float32_loss_stays_close_and_bf16_emissions_are_computed_in_float32():
    crf = random_crf(3, torch.float32)
    em, tags, mask = random_case(3, B=8, W=72, dtype=torch.float32)
    tags = tags.clamp(min=0) % 1 + 4  # all O: a valid path, loss of a realistic size
    ref = loop_nll(crf, em.double(), tags, mask)
    out = crf(em, tags, mask)
    assert out.dtype == torch.float32 and abs(out.item() - ref.item()) < 1e-3 * abs(ref.item())
    assert crf(em.bfloat16(), tags, mask).dtype == torch.float32


class OpCounter(TorchDispatchMode):
    """Counts aten ops by name (``counts``); ``syncs`` lists the host reads and data-dependent
    ops among them: ``_local_scalar_dense`` (``item``, ``bool``, ``int``), ``nonzero``,
    ``masked_select``, boolean-mask ``index``, ``lift_fresh`` (``torch.tensor`` from Python
    data)."""

    SYNC_OPS = {"aten._local_scalar_dense.default", "aten.nonzero.default",
                "aten.masked_select.default", "aten.lift_fresh.default", "aten.equal.default",
                "aten.is_nonzero.default", "aten.unique_consecutive.default",
                "aten._unique2.default", "aten.repeat_interleave.Tensor"}

    def __init__(self):
        super().__init__()
        self.counts, self.syncs = {}, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        self.counts[name] = self.counts.get(name, 0) + 1
        boolean_index = name.startswith("aten.index") and any(
            isinstance(i, torch.Tensor) and i.dtype == torch.bool
            for i in (args[1] if len(args) > 1 and isinstance(args[1], (list, tuple)) else ()))
        if name in self.SYNC_OPS or boolean_index:
            self.syncs.append(name)
        return func(*args, **(kwargs or {}))


@pytest.fixture
def host_reads(monkeypatch):
    """Host reads that do not show as aten ops on the CPU (``tolist``, ``cpu``, ``numpy``,
    ``item``) are recorded by patching the Tensor methods."""
    seen = []
    for name in ("tolist", "cpu", "numpy", "item"):
        orig = getattr(torch.Tensor, name)

        def patched(self, *a, _orig=orig, _name=name, **k):
            seen.append(_name)
            return _orig(self, *a, **k)
        monkeypatch.setattr(torch.Tensor, name, patched)
    return seen


def test_the_sync_counter_catches_each_kind_of_host_read(host_reads):
    x = torch.randn(6)
    for fn in (lambda: x[0].item(), lambda: bool(x[0] > 0), lambda: x[x > 0], lambda: x.nonzero(),
               lambda: torch.tensor([1, 2]), lambda: x.masked_select(x > 0)):
        with OpCounter() as ops:
            fn()
        assert len(ops.syncs) == 1, ops.counts
    x.tolist(), x.cpu(), x.numpy()
    assert host_reads == ["item", "tolist", "cpu", "numpy"]


def test_crf_loss_backward_and_decode_make_no_host_sync(host_reads):
    crf = random_crf(5, torch.float32)
    em, tags, mask = random_case(5, B=8, W=40, dtype=torch.float32)
    em.requires_grad_(True)
    with OpCounter() as ops:
        loss = crf(em, tags, mask)
        loss.backward()
        crf.decode(em.detach(), mask)
    assert ops.counts["aten.logsumexp.default"] > 0  # the counter saw the loss
    assert ops.syncs == [] and host_reads == []


def test_depth_is_log2_of_the_width_not_the_width():
    """The scan's sequential depth: one log-semiring reduction (an ``amax``-shifted logsumexp) for
    the loss or one max for decoding per tree level, plus two logsumexps; the loop took W-1 + 1
    logsumexps. Counted ops, not time, so the test is exact."""
    crf = random_crf(1, torch.float32)
    em, tags, mask = random_case(1, B=4, W=128, dtype=torch.float32)
    levels = math.ceil(math.log2(127))  # 7
    with OpCounter() as ops:
        crf(em, tags, mask)
    reductions = ops.counts["aten.logsumexp.default"] + ops.counts.get("aten.amax.default", 0)
    assert reductions == levels + 2
    with OpCounter() as ops:
        crf.decode(em, mask)
    assert ops.counts.get("aten.max.dim", 0) == levels
    assert ops.counts["aten.gather.default"] == levels


def test_crf_loss_and_decode_trace_to_one_graph():
    crf = random_crf(2, torch.float32)
    em, tags, mask = random_case(2, B=4, W=24, dtype=torch.float32)
    torch._dynamo.reset()
    for fn in (lambda e, t, m: crf(e, t, m), lambda e, t, m: crf.decode(e, m)):
        report = torch._dynamo.explain(fn)(em, tags, mask)
        assert report.graph_break_count == 0 and report.graph_count == 1, report.break_reasons


@pytest.mark.slow
def test_crf_loss_compiles_fullgraph_and_matches_eager():
    crf = random_crf(4, torch.float32)
    em, tags, mask = random_case(4, B=8, W=72, dtype=torch.float32)
    torch._dynamo.reset()
    compiled = torch.compile(crf, fullgraph=True)
    e1, e2 = em.clone().requires_grad_(True), em.clone().requires_grad_(True)
    eager = crf(e1, tags, mask)
    eager.backward()
    out = compiled(e2, tags, mask)
    out.backward()
    assert torch.allclose(out, eager, rtol=1e-5) and torch.allclose(e1.grad, e2.grad, atol=1e-4)
    decode = torch.compile(viterbi_decode, fullgraph=True)
    assert torch.equal(decode(em, mask, *crf.scores()), crf.decode(em, mask))
