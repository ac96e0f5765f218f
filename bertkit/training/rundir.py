"""The run directory: refuse to mix two runs, check it is writable before training starts, and
write into it from one process only (:class:`RunWriter`)."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from bertkit.errors import BertkitError
from bertkit.training.devices import is_main_process


class RunWriter:
    """Writes files into a run directory on the main process (rank 0) and does nothing elsewhere.

    A multi-process run (``torchrun``) must write each output once. Code that writes through a
    ``RunWriter`` needs no ``if is_main_process():`` guard: on other ranks every method returns
    without touching the disk (``atomic`` yields None there). Every write is atomic
    (:mod:`bertkit.io`): a killed run leaves the old file or the new one, never half of one.

    Example::

        out = RunWriter(run_dir)
        out.write_text("config.yaml", dump_yaml(settings))
        out.write_json("results.json", results)
        out.save("model", lambda tmp: model.save_pretrained(tmp))  # a whole folder, atomically

    Args:
        root: the run directory (created on first write, rank 0 only).
        main: whether this process writes; default :func:`~bertkit.training.devices.is_main_process`.
    """

    def __init__(self, root: str | Path, main: bool | None = None) -> None:
        self.root = Path(root).expanduser()
        self.main = is_main_process() if main is None else main

    def __repr__(self) -> str:
        return f"RunWriter({str(self.root)!r}, main={self.main})"

    def path(self, name: str | Path) -> Path:
        """``root / name`` (for reading or naming a file; nothing is written)."""
        return self.root / name

    def mkdir(self, name: str | Path = "") -> Path:
        """Create ``root / name`` (and parents) on rank 0; returns the path on every rank."""
        target = self.root / name
        if self.main:
            target.mkdir(parents=True, exist_ok=True)
        return target

    def write_text(self, name: str | Path, text: str) -> Path:
        """Write UTF-8 ``text`` to ``root / name`` atomically (rank 0 only); returns the path.

        Raises:
            BertkitError: the target is a directory (:func:`bertkit.io.write_text`).
        """
        from bertkit.io import write_text

        target = self.root / name
        if self.main:
            write_text(target, text)
        return target

    def write_json(self, name: str | Path, data: Any) -> Path:
        """Write ``data`` as indented JSON to ``root / name`` atomically (rank 0 only)."""
        from bertkit.io import write_json

        target = self.root / name
        if self.main:
            write_json(target, data)
        return target

    @contextlib.contextmanager
    def atomic(self, name: str | Path) -> Iterator[Path | None]:
        """Yield a temporary path that replaces ``root / name`` (a file or a whole folder, such as
        ``model/``) when the block ends without error; None off rank 0 (write nothing then)."""
        if not self.main:
            yield None
            return
        from bertkit.io import atomic_path

        with atomic_path(self.root / name) as tmp:
            yield tmp

    def save(self, name: str | Path, write: Callable[[Path], Any]) -> Path:
        """Call ``write(tmp)`` on rank 0 and move ``tmp`` onto ``root / name`` atomically (e.g.
        ``out.save("model", lambda tmp: model.save_pretrained(tmp))``); returns the final path."""
        with self.atomic(name) as tmp:
            if tmp is not None:
                write(tmp)
        return self.root / name

    def torch_save(self, name: str | Path, obj: Any) -> Path:
        """``torch.save(obj)`` to ``root / name`` atomically (rank 0 only)."""
        import torch

        return self.save(name, lambda tmp: torch.save(obj, tmp))

RUN_MARKERS = ("results.json", "metrics.jsonl", "checkpoints", "model")
"""What makes a directory hold a run. A directory with only ``config.yaml``/``environment.json``
is a run that failed while starting (bad data, a model that did not load): it may be reused."""

RUN_FILES = ("config.yaml", "environment.json", "results.json", "metrics.jsonl", "checkpoints",
             "model", "tensorboard", "mlflow.json", "curves.png", "test_predictions.*",
             "test_confusion.*")
"""What a run writes in its directory: ``--overwrite`` removes these (and nothing else) first, so
the new run never mixes with the old one's checkpoints, metrics or results."""

RESUME_MAY_CHANGE = frozenset({
    "device", "logging_steps", "save_steps", "save_total_limit", "eval_batch_size", "report_to",
    "skip_nonfinite", "resume", "overwrite", "output_dir"})
"""Settings a ``--resume`` may change: they affect where and how often things are written or
shown, never the trained weights. Any other difference from the saved ``config.yaml`` is refused
(but :data:`BUDGET_SETTINGS`, see :func:`budget_may_change`)."""

BUDGET_SETTINGS = frozenset({"max_steps", "max_tokens", "epochs"})
"""The training budget: a ``--resume`` may change it when the rate at each step does not depend
on it (:func:`budget_may_change`), to stop a run earlier or let it run longer."""


def budget_may_change(saved: dict, now: dict) -> bool:
    """Whether a resumed run may have another budget (:data:`BUDGET_SETTINGS`) than the saved one
    and still continue it exactly: both have a constant rate after a warm-up given in steps (a
    count >= 1, or none), so the rate of every step is the same for any budget (a decaying rate,
    or a warm-up given as a ratio of the run, would change with it). The data order and masks of
    an epoch depend only on the seed and the epoch, never on the budget."""
    def fixed(cfg: dict) -> bool:
        warmup = cfg.get("warmup")
        return cfg.get("lr_schedule") == "constant" and isinstance(warmup, (int, float)) \
            and (warmup == 0 or warmup >= 1)
    return fixed(saved) and fixed(now) and saved.get("warmup") == now.get("warmup")


class RunComplete(BertkitError):
    """``--resume`` of a run that already finished (its ``results.json`` is written): there is
    nothing to continue, and nothing is written. The CLI prints the message and exits 0."""

    def __init__(self, path: Path) -> None:
        super().__init__("the run is complete (results.json written): nothing to resume, "
                         "nothing written; --overwrite trains it again", file=path, exit_code=0)
        self.path = Path(path)


class RunStopped(BertkitError):
    """A run stopped by SIGINT/SIGTERM after saving ``checkpoints/step_<step>``: the message names
    the checkpoint and the command that continues the run (``how``; default: the same command
    with ``--resume --output-dir RUN_DIR``). A workflow running the stage (``bertkit adapt``,
    ``bertkit run``) re-raises it with its own command (:meth:`continue_with`). Exit code 130
    (SIGINT) or 143 (SIGTERM)."""

    def __init__(self, signal_name: str | None, step: int, ckpt_dir: Path, run_dir: Path,
                 how: str | None = None) -> None:
        self.signal_name, self.step = signal_name, step
        self.ckpt_dir, self.run_dir = Path(ckpt_dir), Path(run_dir)
        self.how = how or f"the same command with --resume --output-dir {run_dir}"
        super().__init__(f"stopped by {signal_name or 'a signal to another process'} at step "
                         f"{step}; checkpoint saved in {ckpt_dir}; to continue, run {self.how}",
                         exit_code=143 if signal_name == "SIGTERM" else 130)

    def continue_with(self, how: str) -> "RunStopped":
        """The same stop, naming ``how`` as the command that continues it."""
        return RunStopped(self.signal_name, self.step, self.ckpt_dir, self.run_dir, how)


def default_run_dir(task: str, data: str) -> Path:
    """``runs/<task>-<data name>-<YYYYmmdd-HHMMSS>`` under the current directory."""
    name = Path(data).name or "data"
    return Path("runs") / f"{task}-{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def _holds_run(path: Path) -> bool:
    if not path.is_dir():
        return False
    for marker in RUN_MARKERS:
        target = path / marker
        if target.is_dir() and any(target.iterdir()):
            return True
        if target.is_file() and target.stat().st_size > 0:
            return True
    return False


def resumable(folder: str | Path) -> bool:
    """The one resume rule (``--resume``, ``--seeds`` with ``--resume``, ``bertkit run`` and
    ``bertkit adapt`` stages): the run in ``folder`` can be continued when it has a complete
    step checkpoint (``checkpoints/step_N``) or it finished (``results.json``), or, for a
    ``--seeds`` run, one of its ``seed-N`` folders can. A run stopped before its first checkpoint
    has nothing to continue from and starts again."""
    from bertkit.training.checkpoint import list_checkpoints

    folder = Path(folder).expanduser()
    return (folder / "results.json").is_file() or bool(list_checkpoints(folder / "checkpoints")) \
        or any(resumable(p) for p in folder.glob("seed-*") if p.is_dir())


def last_checkpoint_of_stopped_run(folder: str | Path) -> Path | None:
    """The last complete step checkpoint of a run in ``folder`` that stopped before it finished
    (no ``results.json``), which ``--resume`` continues; None for a finished run or one with no
    checkpoint (the rule of :func:`resumable`, for one run folder)."""
    from bertkit.training.checkpoint import list_checkpoints

    folder = Path(folder).expanduser()
    if (folder / "results.json").is_file():
        return None
    checkpoints = list_checkpoints(folder / "checkpoints")
    return checkpoints[-1] if checkpoints else None


def _remove_run_files(path: Path) -> None:
    """Delete the files of :data:`RUN_FILES` in ``path`` (for ``--overwrite``)."""
    import shutil

    for pattern in RUN_FILES:
        for target in path.glob(pattern):
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()


def _read_saved(saved_file: Path) -> dict | None:
    """A run's ``config.yaml`` as a dict; None if there is none.

    Raises:
        BertkitError: it cannot be read as YAML.
    """
    import yaml

    if not saved_file.is_file():
        return None
    try:
        return yaml.safe_load(saved_file.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BertkitError(f"cannot read the saved settings: {exc}", file=saved_file,
                           expected="the config.yaml that bertkit wrote for this run") from None


def check_resume_settings(path: Path, settings: dict, defaults: dict | None = None) -> None:
    """Refuse to resume the run in ``path`` with settings other than its saved ``config.yaml``.

    A resumed run continues the saved one exactly (same data order, schedule and model), so only
    the settings in :data:`RESUME_MAY_CHANGE` may differ (the CLI starts a resumed run from the
    saved settings, :func:`saved_settings`, so only flags given explicitly can differ).
    ``settings`` is the dict the task writes as ``config.yaml``; a run without one is not checked.
    ``defaults``: the config's field defaults; a setting the saved run lacks (added by a later
    bertkit) is accepted at its default, the behaviour the saved run had before it existed.

    Raises:
        BertkitError: naming every setting that differs, with its saved and new value.
    """
    saved_file = Path(path).expanduser() / "config.yaml"
    diffs = settings_differences(path, settings, defaults)
    if diffs:
        import yaml

        from bertkit.settings.layers import dump_yaml
        from bertkit.training.run_origin import refuse_other_version

        refuse_other_version(path, _read_saved(saved_file) or {},
                             yaml.safe_load(dump_yaml(settings)), defaults)
        raise BertkitError("--resume with settings that differ from the saved run: "
                           + "; ".join(diffs), file=saved_file,
                           expected="the saved run's settings (a resumed run continues exactly "
                                    "where it stopped), or a new --output-dir for a new run")


def settings_differences(path: Path, settings: dict, defaults: dict | None = None) -> list[str]:
    """The settings (but :data:`RESUME_MAY_CHANGE`, and :data:`BUDGET_SETTINGS` where
    :func:`budget_may_change`) in which ``settings`` differ from the saved
    ``config.yaml`` of the run in ``path``, each as ``"key: saved X, now Y"``; [] when they agree
    or there is no ``config.yaml``. ``defaults``: as :func:`check_resume_settings`.

    Raises:
        BertkitError: the saved file cannot be read as YAML.
    """
    import yaml

    from bertkit.settings.layers import dump_yaml

    saved = _read_saved(Path(path).expanduser() / "config.yaml")
    if saved is None:
        return []
    now = yaml.safe_load(dump_yaml(settings))
    defaults = yaml.safe_load(dump_yaml(defaults)) if defaults else {}  # same form as now
    may_change = RESUME_MAY_CHANGE | (BUDGET_SETTINGS if budget_may_change(saved, now) else set())
    return [f"{key}: saved {saved.get(key)!r}, now {now.get(key)!r}"
            for key in list(now) + [k for k in saved if k not in now]
            if key not in may_change and saved.get(key) != now.get(key)
            and not (key not in saved and key in defaults and now.get(key) == defaults[key])]


def saved_settings(output_dir: str | Path | None, fields) -> dict | None:
    """The saved ``config.yaml`` of the run in ``output_dir`` as a config layer for ``--resume``:
    its values for ``fields`` (a dataclass's field names) but ``resume``/``overwrite``/``output_dir``,
    so a resumed run needs no flags but ``--resume --output-dir`` (flags given on top may change
    only :data:`RESUME_MAY_CHANGE`). None if there is no such file.

    Raises:
        BertkitError: the file cannot be read as YAML.
    """
    saved = _read_saved(Path(output_dir).expanduser() / "config.yaml") if output_dir else None
    if saved is None:
        return None
    fields = set(fields)
    return {k: v for k, v in saved.items()
            if k in fields and k not in ("resume", "overwrite", "output_dir")}


def check_run_dir(path: Path, resume: bool, overwrite: bool,
                  settings: dict | None = None, defaults: dict | None = None,
                  command: str | None = None) -> None:
    """The checks of :func:`prepare_run_dir` that need no writing, to run before any loading.

    ``settings``: with ``resume``, the new run's config, checked by :func:`check_resume_settings`
    (``defaults``: the config's field defaults, see there). ``command`` (``"finetune ner"``):
    with ``resume``, a run written by another command (:func:`saved_command`) is refused first.

    Raises:
        BertkitError: as :func:`prepare_run_dir`, except for write failures; on ``resume``, a
            run of another command, or settings that differ from the saved run's (naming both
            bertkit versions when another version wrote it).
        RunComplete: ``resume`` of a run whose ``results.json`` exists (exit status 0).
    """
    path = Path(path).expanduser()
    if not is_main_process():  # rank 0 checks and writes; the others must not race it
        if resume and not overwrite and (path / "results.json").is_file():
            raise RunComplete(path)  # every rank stops alike (a read, no race)
        return
    if path.exists() and not path.is_dir():
        raise BertkitError("output path exists and is not a directory", file=path)
    if resume and overwrite:
        raise BertkitError("--resume and --overwrite together", file=path,
                           expected="--resume to continue the run there, or --overwrite to "
                                    "replace it with a new one")
    holds_run = _holds_run(path)
    if resume and not holds_run:
        raise BertkitError("--resume given but there is no run to resume", file=path,
                           expected="the --output-dir of an earlier run")
    if holds_run and not (resume or overwrite):
        raise BertkitError("output directory already holds a run", file=path,
                           expected="--resume to continue it, --overwrite to replace it, "
                                    "or another --output-dir")
    if resume and command and holds_run:
        from bertkit.training.run_origin import refuse_other_command

        refuse_other_command(path, command)
    if resume and settings is not None:
        check_resume_settings(path, settings, defaults)
    if resume and (path / "results.json").is_file():
        raise RunComplete(path)


def prepare_run_dir(path: Path, resume: bool, overwrite: bool) -> Path:
    """Create ``path`` (or check it for ``resume``) and make sure files can be written there.

    With ``overwrite``, the earlier run's files (:data:`RUN_FILES`) are removed first.

    Raises:
        BertkitError: the directory holds another run (without ``resume``/``overwrite``),
            ``resume`` with no run there, or it cannot be written (read-only, full disk).
        RunComplete: ``resume`` of a finished run (nothing is written).
    """
    path = Path(path).expanduser()
    if not is_main_process():
        return path
    check_run_dir(path, resume, overwrite)
    if overwrite and not resume and path.is_dir():
        _remove_run_files(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-test-") as handle:
            handle.write(b"\0" * 65536)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise BertkitError(f"cannot write to the output directory: {exc.strerror}", file=path) from None
    return path


def checkpoint_bytes(model) -> int:
    """Rough size of one training checkpoint of ``model``: fp32 weights plus AdamW's two moment
    tensors, plus the saved model (bytes)."""
    params = sum(p.numel() for p in model.parameters())
    return params * 4 * 4


def check_free_space(path: Path, need_bytes: int) -> None:
    """Refuse to start when the disk holding ``path`` has less than ``need_bytes`` free.

    Raises:
        BertkitError: not enough free space (both sizes given in MiB).
    """
    import shutil

    free = shutil.disk_usage(Path(path).expanduser()).free
    if free < need_bytes:
        raise BertkitError(f"only {free / 2**20:.0f} MiB free on the output disk; a checkpoint "
                           f"and the saved model need about {need_bytes / 2**20:.0f} MiB",
                           file=path, expected="free disk space or another --output-dir")
