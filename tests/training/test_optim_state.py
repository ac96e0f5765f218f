"""Resuming keeps the AdamW kernel this run chose (``load_optimizer_state``): a checkpoint
written with the fused kernel (a CPU or GPU run) resumed with the unfused one (FSDP-sharded
parameters), and one written unfused resumed with the fused kernel. ``Optimizer.load_state_dict``
alone takes ``fused`` from the checkpoint."""

import torch
from torch import nn

from bertkit.training.optim import build_optimizer, load_optimizer_state, parameter_groups


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 1))


def _stepped(fused: bool) -> torch.optim.AdamW:
    model = _model()
    opt = torch.optim.AdamW(parameter_groups(model, 0.01), lr=1e-3, fused=fused)
    model(torch.ones(2, 4)).sum().backward()
    opt.step()
    return opt


def test_fused_checkpoint_resumed_with_the_unfused_kernel():
    saved = _stepped(fused=True).state_dict()  # as a CPU or CUDA run writes it
    model = _model()
    opt = build_optimizer(model, 1e-3, 0.01, torch.device("cpu"), sharded=True)  # unfused
    plain = build_optimizer(_model(), 1e-3, 0.01, torch.device("cpu"), sharded=True)
    plain.load_state_dict(saved)
    assert all(g["fused"] for g in plain.param_groups)  # what torch alone does
    load_optimizer_state(opt, saved)
    assert not any(g["fused"] for g in opt.param_groups)
    first = next(iter(model.parameters()))
    assert opt.state[first]["step"].device.type == "cpu" and float(opt.state[first]["step"]) == 1.0
    assert torch.equal(opt.state[first]["exp_avg"], saved["state"][0]["exp_avg"])
    model(torch.ones(2, 4)).sum().backward()
    opt.step()
    assert float(opt.state[first]["step"]) == 2.0


def test_unfused_checkpoint_resumed_with_the_fused_kernel():
    saved = _stepped(fused=False).state_dict()  # as an FSDP run (or an older bertkit on a CPU) writes it
    model = _model()
    opt = torch.optim.AdamW(parameter_groups(model, 0.01), lr=1e-3, fused=True)  # as on CUDA
    load_optimizer_state(opt, saved)
    assert all(g["fused"] for g in opt.param_groups)
    steps = [opt.state[p]["step"] for g in opt.param_groups for p in g["params"]]
    assert all(s.dtype == torch.float32 and float(s) == 1.0 for s in steps)
    model(torch.ones(2, 4)).sum().backward()
    opt.step()
    assert all(float(opt.state[p]["step"]) == 2.0 for g in opt.param_groups for p in g["params"])
