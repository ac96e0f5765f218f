"""Every benchmark log or JSON that the READMEs, docs, recipes and package name exists, and the
scripts name no file in the old flat ``benchmarks/results/`` (each benchmark has its folder)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
# ``benchmarks/results/x`` or ``results/x`` (relative to benchmarks/), not inside another path
PATH = re.compile(r"(?<![\w/.-])(?:benchmarks/)?results/[^\s`)\]'\"]*")
PLACEHOLDER = re.compile(r"[<>$]")  # results/<name>.log, ..._seed$s.json: a pattern, not a file
DOCS = ["README.md", "benchmarks/README.md", "docs/*.md", "recipes/**/*.yaml", "bertkit/**/*.py",
        "bertkit/**/*.yaml"]


def expand(text: str) -> list[str]:
    """Shell-style brace expansion: ``a{1,2}.{json,log}`` -> four names."""
    m = re.search(r"\{([^{}]*)\}", text)
    if not m:
        return [text]
    return [x for part in m.group(1).split(",")
            for x in expand(text[:m.start()] + part + text[m.end():])]


def named(path: Path) -> list[str]:
    """The results paths ``path`` names (trailing punctuation stripped), relative to ``results/``.

    A bare ``results/x`` counts only in benchmarks/README.md (relative to benchmarks/); elsewhere
    it is something else (an MLflow metric ``results/test/f1``), and only
    ``benchmarks/results/x`` names a log."""
    found = []
    bare_ok = path == ROOT / "benchmarks" / "README.md"
    for m in PATH.finditer(path.read_text(encoding="utf-8")):
        ref = m.group(0).rstrip(".,;:")
        if not bare_ok and not ref.startswith("benchmarks/"):
            continue
        ref = ref.removeprefix("benchmarks/").removeprefix("results/")
        if ref and not PLACEHOLDER.search(ref):
            found.append(ref)
    return found


def test_expand():
    assert expand("a_{1,2}.{json,log}") == ["a_1.json", "a_1.log", "a_2.json", "a_2.log"]
    assert expand("plain.log") == ["plain.log"]


def test_every_results_path_in_the_docs_exists():
    files = sorted({p for pattern in DOCS for p in ROOT.glob(pattern)})
    assert any(p.name == "README.md" for p in files)
    missing, checked = [], 0
    for doc in files:
        for ref in named(doc):
            for name in expand(ref):
                checked += 1
                hits = list(RESULTS.glob(name)) if "*" in name else [RESULTS / name]
                if not hits or not all(h.exists() for h in hits):
                    missing.append(f"{doc.relative_to(ROOT)}: results/{name}")
    assert checked > 100  # the READMEs name their logs: a regex that finds nothing would pass
    assert not missing, "\n".join(missing)


def test_scripts_name_no_flat_results_file():
    """A script's default or example path is in a benchmark's folder, never directly in results/."""
    flat = []
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        for ref in named(script):
            if "/" not in ref:
                flat.append(f"{script.name}: results/{ref}")
    assert not flat, "\n".join(flat)


def test_results_has_no_loose_files():
    assert not [p.name for p in RESULTS.iterdir() if p.is_file()]


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_anchor():
    assert anchor("GPU check (one H200, issue 47)") == "gpu-check-one-h200-issue-47"
    assert anchor("Extractive QA: the stock `run_qa.py` recipe") == "extractive-qa-the-stock-run_qapy-recipe"


def test_links_of_the_readmes_resolve():
    """Every section link (``#anchor``) and relative file link of README.md and
    benchmarks/README.md names a heading or a file that exists (the index and the results table)."""
    bench = ROOT / "benchmarks" / "README.md"
    headings = {anchor(h) for h in re.findall(r"^#+ (.+)$", bench.read_text(encoding="utf-8"), re.M)}
    bad, links = [], 0
    for doc in (ROOT / "README.md", bench):
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://")):
                continue
            links += 1
            path, _, frag = target.partition("#")
            where = (doc.parent / path).resolve() if path else doc
            if path and not where.exists():
                bad.append(f"{doc.name}: {target} (no such file)")
            elif frag and where == bench and frag not in headings:
                bad.append(f"{doc.name}: {target} (no such section)")
    assert links > 60
    assert not bad, "\n".join(bad)
