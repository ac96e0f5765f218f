"""A bench results folder's ``bench.json``: what a rerun into the same folder must match (the
suite by name, budget, protocol, each encoder's weights by fingerprint), and the comparison of
a finished stage's stored settings with a rerun's."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

from bertkit.bench.encoders import Encoder
from bertkit.bench.suite import Suite, as_dict
from bertkit.errors import BertkitError

LITE_NOTE = "lite: not comparable with the published numbers"

# what a stage record must hold, and of which type (bench run writes them: runner.run_one)
STAGE_KEYS = {"encoder": str, "task": str, "task_kind": str, "metric": str, "seed": int,
              "run": str, "score": (int, float), "overrides": dict, "test": dict}
STAGE_OPTIONAL = {"settings": dict, "fingerprint": str, "items": str, "precision": str,
                  "device": str, "dev_score": (int, float), "collapse": str, "data_files": dict}


def _read_json(path: Path, what: str) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BertkitError(f"unreadable {what} ({type(exc).__name__})", file=path,
                           expected=f"a JSON {what} written by bertkit bench run") from None


def load_manifest(path: Path) -> dict:
    """Read a results folder's ``bench.json``.

    Raises:
        BertkitError: not JSON, or not an object with ``suite``, ``encoders`` (objects),
            ``budget`` and ``protocol``; an encoder entry without its ``model`` and
            ``fingerprint`` (strings) or with ``corpora`` that are not a list of strings.
    """
    data = _read_json(path, "bench.json")
    if not (isinstance(data, dict) and isinstance(data.get("suite"), dict)
            and isinstance(data.get("encoders"), dict)
            and all(isinstance(data.get(k), str) for k in ("budget", "protocol"))):
        raise BertkitError("bench.json lacks its suite, encoders, budget or protocol", file=path,
                           expected="the bench.json that bertkit bench run wrote")
    for name, enc in data["encoders"].items():
        corpora = enc.get("corpora", []) if isinstance(enc, dict) else None
        if not (isinstance(enc, dict)
                and all(isinstance(enc.get(k), str) for k in ("model", "fingerprint"))
                and isinstance(corpora, list) and all(isinstance(c, str) for c in corpora)):
            raise BertkitError(f"bench.json: encoder {name!r} is {enc!r}", file=path,
                               expected="an object with model and fingerprint (strings) and "
                                        "corpora (a list of paths), as bertkit bench run "
                                        "writes it")
    return data


def load_stage(path: Path) -> dict:
    """Read a stage record (``stages/ENCODER/TASK/seed-N.json`` or ``grid-*.json``).

    Raises:
        BertkitError: not JSON, not an object, a key missing or of another type, a score
            that is not a finite number, or an unknown metric.
    """
    from bertkit.bench.declarations import suite_metric

    data = _read_json(path, "stage record")
    if not isinstance(data, dict):
        raise BertkitError("a stage record is a JSON object", file=path,
                           expected="the stage record that bertkit bench run wrote")
    for key, kind in [*STAGE_KEYS.items(), *STAGE_OPTIONAL.items()]:
        value = data.get(key)
        if value is None and key in STAGE_OPTIONAL:
            continue
        if not isinstance(value, kind) or isinstance(value, bool):
            raise BertkitError(f"stage record: {key!r} is {value!r}", file=path,
                               expected=f"{key} as bertkit bench run writes it "
                                        f"({getattr(kind, '__name__', 'a number')})")
    if not math.isfinite(data["score"]):
        raise BertkitError(f"stage record: score {data['score']!r}", file=path,
                           expected="a finite test score")
    try:  # the metric as the record's task declares it
        suite_metric(data["task_kind"], data["metric"])
    except BertkitError as exc:
        raise BertkitError(f"stage record: metric {data['metric']!r} of task "
                           f"{data['task_kind']!r}: {exc.message}", file=path,
                           expected=exc.expected) from None
    return data


def manifest(suite: Suite, encoders: list[Encoder], budget: str, protocol: str) -> dict:
    """``bench.json``: what a rerun into the same folder must match."""
    from bertkit import __version__

    return {"suite": as_dict(suite), "budget": budget, "protocol": protocol,
            "encoders": {e.name: asdict(e) for e in encoders}, "bertkit": __version__,
            "note": LITE_NOTE if budget == "lite" else ""}


def differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """``key: old -> new`` for each setting that differs (nested dicts flattened)."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} -> {b!r}")
    return out


def portable(settings: dict) -> dict:
    """A stage's settings without the encoder's path: the encoder is the same one where its
    fingerprint is (a results folder continued from another checkout or machine names it by
    another path)."""
    return {k: v for k, v in settings.items() if k != "model"}


def check_manifest(out: Path, new: dict) -> None:
    """Refuse a results folder that holds another bench run's suite (by name), budget, protocol
    or an encoder name with other weights (new encoders, seeds and tasks may be added).

    Raises:
        BertkitError: naming each difference.
    """
    path = out / "bench.json"
    if not path.is_file():
        if out.is_dir() and any(out.iterdir()):
            raise BertkitError("the results folder is not empty and holds no bench run",
                               file=out, expected="a new or empty folder, or a bench run's")
        return
    old = load_manifest(path)
    diffs = [d for d in differences({k: old.get(k) for k in ("budget", "protocol")},
                                     {k: new[k] for k in ("budget", "protocol")})]
    was_suite = (old.get("suite") or {}).get("name")
    if was_suite != new["suite"]["name"]:
        diffs.insert(0, f"suite: {was_suite!r} -> {new['suite']['name']!r}")
    for name, enc in new["encoders"].items():
        was = old.get("encoders", {}).get(name)
        if was and was["fingerprint"] != enc["fingerprint"]:
            diffs.append(f"encoder {name}: {was['model']} ({was['fingerprint'][:12]}) -> "
                         f"{enc['model']} ({enc['fingerprint'][:12]}): other weights")
    if diffs:
        raise BertkitError("this results folder holds a bench run with other settings: " +
                           "; ".join(diffs), file=path,
                           expected="the same settings, or another -o folder")
