"""The stock side of the benchmarks: Hugging Face ``Trainer`` set up as its example scripts
(``run_glue.py``, ``run_ner.py``, ``run_qa.py``) run it, so every ``*_vs_stock.py`` compares
against the same stock settings: no checkpoints, no evaluation during training, no logging or
progress bar in the timed loop, the CPU unless CUDA is there.
"""

from __future__ import annotations

from typing import Any


def stock_training_args(out: str, seed: int = 42, batch_size: int | None = None,
                        eval_batch_size: int | None = None, lr: float | None = None,
                        epochs: float | None = None, **extra: Any):
    """The stock ``TrainingArguments``: with ``batch_size``/``lr``/``epochs`` for training,
    without them for prediction only; ``extra`` adds or overrides arguments
    (``train_sampling_strategy="group_by_length"``)."""
    import torch
    from transformers import TrainingArguments

    given = {"per_device_train_batch_size": batch_size, "per_device_eval_batch_size":
             eval_batch_size, "learning_rate": lr, "num_train_epochs": epochs}
    return TrainingArguments(**{
        "output_dir": out, "seed": seed, "report_to": [], "save_strategy": "no",
        "eval_strategy": "no", "logging_steps": 10**6, "disable_tqdm": True,
        "use_cpu": not torch.cuda.is_available(),
        **{k: v for k, v in given.items() if v is not None}, **extra})
