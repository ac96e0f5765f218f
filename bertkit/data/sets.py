"""The dataset registry: named sets resolve under ``$BERTKIT_DATA``, else from the hub, else fail.

Layout under the data root: ``<task>/<name>/{train,dev,test}.<ext>`` (``ner/bc5cdr/train.tsv``).
A directory given instead of a name must hold ``train``, ``dev`` and ``test`` files with one of the
task's extensions (``dev`` may also be called ``valid`` or ``validation``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bertkit.data.published import CONTAMINATION, PUBLISHED, Contamination, Published
from bertkit.errors import BertkitError

SPLITS = ("train", "dev", "test")
_SPLIT_ALIASES = {"train": ("train",), "dev": ("dev", "valid", "validation", "devel"),
                  "test": ("test",)}


@dataclass(frozen=True)
class DatasetEntry:
    """A registered data set: its task, name, hub id (for machines with a network) and source.

    ``recipe`` names the recipe (``recipes/finetune/<recipe>.yaml``) whose settings were chosen
    on this set's dev split for the packaged encoder: ``finetune`` uses them as the set's
    defaults when that encoder is trained and no recipe or flag says otherwise
    (:func:`bertkit.workflows.command_settings.dataset_defaults`); "" for none. ``license`` is the set's licence as
    the Hub writes it (``cc-by-4.0``), written on model cards (:mod:`bertkit.outputs.modelcard`); "" for
    unknown.

    ``metric`` is the headline ``results.json`` test key the papers report for the set (``f1``,
    ``micro_f1``, ``pearson``, ...; "" for the task's own). ``score_range`` is a similarity
    set's declared score scale, ``(low, high)`` (BIOSSES 0-4); a pair outside it is refused
    (:mod:`bertkit.tasks.sim.data`); None where the set declares none. ``published`` (test scores of the
    papers) and ``contamination`` (dev/test sentences also in a pretraining corpus) come from
    :mod:`bertkit.data.published`, which holds them as one table.
    """

    task: str
    name: str
    hub_id: str
    description: str
    recipe: str = ""
    license: str = ""
    metric: str = ""
    score_range: tuple[float, float] | None = None

    @property
    def published(self) -> tuple[Published, ...]:
        """The papers' test scores (:data:`bertkit.data.published.PUBLISHED`)."""
        return PUBLISHED.get((self.task, self.name), ())

    @property
    def contamination(self) -> Contamination | None:
        """Dev/test sentences also in a pretraining corpus, or None where not counted."""
        return CONTAMINATION.get((self.task, self.name))


_REGISTRY: dict[tuple[str, str], DatasetEntry] = {}


def register(entry: DatasetEntry) -> DatasetEntry:
    """Add ``entry`` to the registry (one per task and name)."""
    _REGISTRY[(entry.task, entry.name)] = entry
    return entry


def registered(task: str) -> list[str]:
    """The registered set names for ``task``, sorted."""
    return sorted(name for t, name in _REGISTRY if t == task)


for _name, _hub, _desc, _license in [
    # BC5CDR as redistributed by Crichton et al. (2017): CC BY 4.0
    ("bc5cdr", "tner/bc5cdr", "BioCreative V CDR: Chemical and Disease (Li et al., 2016)",
     "cc-by-4.0"),
    ("ncbi-disease", "ncbi/ncbi_disease", "NCBI Disease corpus (Dogan et al., 2014)", ""),
    # BLURB's split (Gu et al., 2021): dev/test from MTL-Bioinformatics-2016, train rebuilt
    ("jnlpba", "jnlpba/jnlpba", "JNLPBA 2004: protein, DNA, RNA, cell line, cell type (Kim et "
                                "al., 2004), BLURB's split", "cc-by-3.0"),
    ("bc2gm", "spyysalo/bc2gm_corpus", "BioCreative II gene mention (Smith et al., 2008), "
                                       "BLURB's split", "cc-by-4.0"),
    ("bc5-chem", "", "BC5CDR chemicals only (BLURB's BC5-chem; Li et al., 2016)", "cc-by-4.0"),
    ("bc5-disease", "", "BC5CDR diseases only (BLURB's BC5-disease; Li et al., 2016)",
     "cc-by-4.0"),
    # SciERC entities as released with SciBERT (IOB1 converted to IOB2); no licence stated
    ("sciie", "", "SciERC entities, 6 types (Luan et al., 2018), SciBERT's release", ""),
    # EBM-NLP PICO spans as released with SciBERT: 4 columns (token POS _ tag), IO tags I-PAR,
    # I-INT, I-OUT read as IOB1 runs -> IOB2 (bertkit.data.tagging); SciBERT reports token-level
    # macro-F1 (finetune ner --metric token-macro)
    ("ebmnlp", "", "EBM-NLP PICO: participants, interventions, outcomes (Nye et al., 2018)", ""),
]:
    register(DatasetEntry("ner", _name, _hub, _desc,
                          recipe={"bc5cdr": "bc5cdr-ner-minilm", "sciie": "sciie-ner-minilm",
                                  "bc5-chem": "bc5-chem-ner-minilm",
                                  "bc5-disease": "bc5-disease-ner-minilm",
                                  "bc2gm": "bc2gm-ner-minilm",
                                  "jnlpba": "jnlpba-ner-minilm"}.get(_name, ""),
                          license=_license,
                          metric="token_macro_f1" if _name == "ebmnlp" else "f1"))

# sentence classification: cls/<name>/{train,dev,test}.jsonl (``text``, ``label``) under
# BERTKIT_DATA; the hub ids are where the sets live on the Hugging Face hub (read with the
# ``datasets`` library where a network exists: bertkit.tasks.cls.data)
for _name, _hub, _desc in [
    ("scicite", "allenai/scicite", "SciCite citation intent, 3 labels (Cohan et al., 2019)"),
    ("acl-arc", "", "ACL-ARC citation intent, 6 labels (Jurgens et al., 2018), SciBERT's "
                    "release"),
    ("paper-field", "", "Paper Field: MAG titles -> field of study, 7 labels (SciBERT's "
                        "release)"),
]:
    register(DatasetEntry("cls", _name, _hub, _desc, recipe=f"{_name}-cls-minilm",
                          metric="macro_f1"))
# HoC: one abstract a line, ``label`` a list (multi-label: CLSConfig turns --multi-label on for
# it); BLURB's metric is micro-F1 over the abstracts' hallmark indicators (bertkit.metrics.cls
# hoc_f1). PubMedQA: ``text`` the question, ``text_pair`` the contexts, yes/no/maybe.
register(DatasetEntry("cls", "hoc", "", "Hallmarks of Cancer: abstracts -> 10 hallmarks, "
                                        "multi-label (Baker et al., 2016); split by PMID (ours)",
                      recipe="hoc-cls-minilm", license="gpl-3.0", metric="hoc_f1"))
register(DatasetEntry("cls", "pubmedqa", "", "PubMedQA PQA-L: question + abstract -> yes/no/maybe "
                                             "(Jin et al., 2019), BLURB's setting",
                      recipe="pubmedqa-cls-minilm", license="mit", metric="accuracy"))
MULTI_LABEL_SETS = ("hoc",)  # registered cls sets whose labels are lists

# sentence-pair similarity (regression): sim/<name>/{train,dev,test}.jsonl (``text``,
# ``text_pair``, ``score``) under BERTKIT_DATA only; BLURB reports Pearson
register(DatasetEntry("sim", "biosses", "", "BIOSSES: biomedical sentence-pair similarity, "
                                            "score 0-4 (Sogancioglu et al., 2017), BLURB's split",
                      recipe="biosses-sim-minilm", license="gpl-3.0", metric="pearson",
                      score_range=(0.0, 4.0)))

# dependency parsing: dep/<name>/{train,dev,test}.conllu under BERTKIT_DATA only (no hub loader);
# the shared GENIA release has no train.conllu: bertkit.tasks.dep.data trains on dev.conllu less
# every tenth sentence (held out for model selection) and reports on test.conllu
register(DatasetEntry("dep", "genia", "", "GENIA treebank in UD (SciBERT's release); dev/test "
                                          "only"))

# relation extraction: re/<name>/{train,dev,test}.jsonl under BERTKIT_DATA only (no hub loader)
register(DatasetEntry("re", "chemprot", "", "ChemProt (Krallinger et al., 2017), SciBERT's "
                                            "entity-marker release (Beltagy et al., 2019)",
                     recipe="chemprot-re-minilm", license="apache-2.0",  # SciBERT's release
                     metric="micro_f1"))
# SciERC relations (SciBERT's release, 7 labels, no negative): SciBERT reports macro-F1. Its
# name is the folder's (re/sciie), as ner/sciie's: a set is named within its task.
register(DatasetEntry("re", "sciie", "", "SciERC relations, 7 labels (Luan et al., 2018), "
                                         "SciBERT's entity-marker release", recipe="sciie-re-minilm",
                      metric="macro_f1"))
# DDI 2013: 4 interaction types + negative ``false``; BLURB's headline is micro-F1 over the four
# types, ``false`` left out (finetune re detects it as the negative label)
register(DatasetEntry("re", "ddi", "", "DDI 2013 drug-drug interactions: mechanism, effect, "
                                       "advise, int + false (Herrero-Zazo et al., 2013); dev "
                                       "split by document (ours)",
                      recipe="ddi-re-minilm", license="cc-by-nc-4.0", metric="micro_f1"))


# extractive QA: qa/<name>/{train,dev,test}.json (SQuAD JSON) under BERTKIT_DATA only (no hub
# loader); squad and squad-v2 are the official dev sets split by article (the official train
# sets are not available offline)
for _name, _desc, _license in [
    ("squad", "SQuAD v1.1 (Rajpurkar et al., 2016), the official dev set split by article",
     "cc-by-sa-4.0"),
    ("squad-v2", "SQuAD 2.0 (Rajpurkar et al., 2018), with unanswerable questions; the official "
                 "dev set split by article as squad", "cc-by-sa-4.0"),
    ("covid-qa", "COVID-QA (Moller et al., 2020): questions over whole scientific papers",
     "apache-2.0"),
]:
    register(DatasetEntry("qa", _name, "", _desc, license=_license,
                          recipe="squad-qa-minilm" if _name == "squad" else ""))


# coreference: coref/<name>/{train,dev,test}/*.conll (CoNLL-2012, one document a file) under
# BERTKIT_DATA only; litbank's split is fold 0 of the official ten (Bamman et al., 2020)
register(DatasetEntry("coref", "litbank", "", "LitBank (Bamman et al., 2020): coreference in "
                                               "100 English fiction excerpts, singletons annotated",
                      license="cc-by-4.0"))


def canonical_data(data: str) -> str:
    """``data`` as recorded in a run: an existing directory as its absolute path (so a resumed
    run from another working directory names the same files), a registered name unchanged."""
    path = Path(data).expanduser()
    return str(path.resolve()) if path.is_dir() else data


def data_root() -> Path | None:
    """The data root from ``$BERTKIT_DATA``, or None when unset."""
    root = os.environ.get("BERTKIT_DATA")
    return Path(root).expanduser() if root else None


def _split_file(directory: Path, split: str, extensions: tuple[str, ...]) -> Path | None:
    """The one file of ``split`` in ``directory``; None if there is none.

    Raises:
        BertkitError: several candidates (``train.tsv`` and ``train.conll``): which is meant?
            A candidate that is a broken symbolic link (named with its missing target).
    """
    names = [directory / f"{stem}{ext}" for stem in _SPLIT_ALIASES[split] for ext in extensions]
    broken = [p for p in names if p.is_symlink() and not p.exists()]
    if broken:  # a link whose target is gone: say so, not "no such file"
        raise BertkitError(f"{broken[0].name} is a broken link (to {os.readlink(broken[0])}, "
                           f"which does not exist)", file=broken[0],
                           expected=f"the link pointing at an existing {split} file")
    found = [p for p in names if p.is_file()]
    if len(found) > 1:
        raise BertkitError(f"{len(found)} {split} files: " + ", ".join(p.name for p in found),
                           file=directory, expected=f"one {split} file (move the others away)")
    return found[0] if found else None


def resolve_local(data: str, task: str, extensions: tuple[str, ...],
                  splits: tuple[str, ...] = SPLITS) -> dict[str, Path] | None:
    """Find the split files of ``data`` (a directory or a registered name) on disk.

    Returns:
        ``{split: path}`` for each requested split, or None when ``data`` is a registered name
        that is not under the data root (the caller may then try the hub).

    Raises:
        BertkitError: ``data`` is neither an existing directory nor a registered name, or the
            directory lacks a requested split or has two files for it.
    """
    path = Path(data).expanduser()
    if path.is_dir():
        directory = path
    elif (task, data) in _REGISTRY:
        root = data_root()
        if root is None or not (root / task / data).is_dir():
            return None
        directory = root / task / data
    else:
        names = ", ".join(registered(task)) or "none"
        raise BertkitError(
            f"'{data}' is neither a directory nor a registered {task} data set",
            expected=f"a directory with train/dev/test files or one of: {names}")
    files = {}
    for split in splits:
        found = _split_file(directory, split, extensions)
        if found is None:
            raise BertkitError(
                f"no {split} file", file=directory,
                expected=f"{split} file named " + " or ".join(
                    f"{s}{e}" for s in _SPLIT_ALIASES[split] for e in extensions))
        files[split] = found
    return files


def missing_message(task: str, name: str, layout: str) -> str:
    """The message for a registered set found neither under the data root nor on the hub."""
    root = data_root()
    where = f"BERTKIT_DATA={root} has no {task}/{name}/" if root else "BERTKIT_DATA is not set"
    return (f"data set '{name}' is not available offline: {where}. Set BERTKIT_DATA to a folder "
            f"holding {layout}, or run where the Hugging Face hub can be reached")


def not_available(task: str, name: str, layout: str, note: str = "") -> BertkitError:
    """The error for a registered set not under the data root, for a task that reads it only
    from there (or whose hub loader found nothing): names the root and the layout expected.

    Args:
        note: added to what is expected (e.g. `` (the set's description)``).
    """
    root = data_root()
    where = f"BERTKIT_DATA={root} has no {task}/{name}/" if root else "BERTKIT_DATA is not set"
    return BertkitError(f"data set '{name}' is not available: {where}",
                        expected=f"BERTKIT_DATA pointing at a folder holding {layout}, or "
                                 f"--data DIRECTORY{note}")


def entry(task: str, name: str) -> DatasetEntry | None:
    """The registry entry for ``name``, or None."""
    return _REGISTRY.get((task, name))


# Pretraining corpora: ``--corpus NAME`` / ``--valid NAME`` of ``bertkit pretrain`` resolve to
# ``$BERTKIT_DATA/<folder>/train.txt`` and ``valid.txt``: the scientific corpus (the stand-in
# for SciBERT's papers) and the general one (English Wikipedia, the analogue of BERT's).
CORPORA = {
    "scientific": ("corpus", "biomedical and computer-science sentences, one a line"),
    "general": ("corpus-general", "English Wikipedia paragraphs, blank line between articles"),
}
CORPUS_SPLITS = {"train": "train.txt", "valid": "valid.txt"}


def split_paths(spec: str) -> list[str]:
    """The paths of a comma-separated ``spec``, where a path may itself hold commas: the longest
    run of comma-joined parts that names an existing file or directory is one path (``Smith,
    J. notes.txt``), otherwise each part is one (surrounding spaces removed).

    >>> split_paths("a.txt, b.txt,")
    ['a.txt', 'b.txt']
    """
    parts = spec.split(",")
    out, i = [], 0
    while i < len(parts):
        j = next((j for j in range(len(parts), i + 1, -1)
                  if Path(",".join(parts[i:j]).strip()).expanduser().exists()), i + 1)
        path = ",".join(parts[i:j]).strip()
        if path:
            out.append(path)
        i = j
    return out


def resolve_corpus(spec: str, split: str = "train") -> str:
    """Each registered corpus name in a comma-separated ``spec`` replaced by its ``split`` file
    under ``$BERTKIT_DATA`` (:data:`CORPORA`); paths are left as they are: with
    ``BERTKIT_DATA=/data``, ``scientific,extra.txt`` and ``valid`` give
    ``/data/corpus/valid.txt,extra.txt``. A path holding commas stays one path
    (:func:`split_paths`).

    Raises:
        BertkitError: a registered name with ``$BERTKIT_DATA`` unset or without that file.
    """
    out = []
    for part in split_paths(spec):
        if part in CORPORA and not Path(part).exists():
            root = data_root()
            path = (root / CORPORA[part][0] / CORPUS_SPLITS[split]) if root else None
            if path is None or not path.is_file():
                where = f"BERTKIT_DATA={root} has no {path}" if root else "BERTKIT_DATA is not set"
                raise BertkitError(f"corpus '{part}' is not available: {where}",
                                   expected=f"BERTKIT_DATA pointing at a folder holding "
                                            f"{CORPORA[part][0]}/{CORPUS_SPLITS[split]}")
            part = str(path)
        out.append(part)
    return ",".join(out)


def corpus_names() -> str:
    """The registered corpus names with what they hold, for messages: ``scientific (...), ...``."""
    return ", ".join(f"{name} ({desc})" for name, (_, desc) in CORPORA.items())
