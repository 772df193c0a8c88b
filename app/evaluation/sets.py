"""Every labelled set, side by side, each in its role: tune, validation or test.

A figure is believed only on questions no choice was made on, so each set has a role, given
by the manifest (``tests/eval_sets/sets.json``) and kept apart in the repository
(``tests/eval_sets/<role>/<name>/``):

- **tune**: anything may be looked at (per-question results, misses) while changing the code;
- **validation**: aggregate figures only, measured for every change to retrieval or to the
  answer check; a change is kept when no set gets worse beyond its noise;
- **test**: frozen. Written before any run; the manifest records the digest of its files and a
  run refuses a set that no longer matches it. Measured only with ``--test``, totals only, and
  recorded once per commit (``bench/results/test_runs.json``).

Each manifest entry may add distractors: ``"distractors": "public"`` mixes the set's notes
with the long descriptions of the Python distributions installed with the project (real
public text nobody wrote for this evaluation; markdown ones only, cut at
``PUBLIC_NOTE_CHARS``), so the expected note has to be found among unrelated ones.

Intervals: MRR's is a percentile bootstrap over the questions (2,000 resamples, fixed seed);
shares' are Wilson score intervals; both 95 %. ``compare`` judges a set worse only when the
paired bootstrap of the per-question differences puts the whole interval below zero.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from app.evaluation.answer_options import STAGES, STOPS, AnswerOptions
from app.evaluation.retrieval import (
    Labelled,
    QuestionsEmbeddedOnce,
    Ranked,
    merge_folders,
    rank_all,
)
from graph.context import Context
from graph.errors import ConfigError
from graph.index.embedding import relevance_floor
from graph.index.paths import cache_folder
from graph.index.vectorstore import collection_stemmed
from graph.models import ModelProvider
from graph.tracing import retrieval_settings

ROLES = ("tune", "validation", "test")
#: A distractor note holds at most this many characters of a distribution's description.
PUBLIC_NOTE_CHARS = 8000
#: Descriptions shorter than this are left out (a line of summary is no note).
PUBLIC_NOTE_MIN_CHARS = 1000
BOOTSTRAP_SAMPLES = 2000
Z95 = 1.959964


@dataclass(frozen=True)
class EvalSet:
    """One manifest entry."""

    name: str
    role: str
    path: Path
    """The set's JSON file (``notes``, ``questions``: see ``app.evaluation.retrieval``)."""
    distractors: str = ""
    """``public``: mixed with public text (``public_distractors``); empty: the notes alone."""
    digest: str = ""
    """For a test set: the sha256 its files had when it was frozen."""


def read_manifest(path: str | Path) -> list[EvalSet]:
    """The sets a manifest lists, in its order (paths relative to the manifest)."""
    file = Path(path)
    try:
        entries = json.loads(file.read_text())["sets"]
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"cannot read the set manifest {file}: {exc}") from exc
    sets = []
    for entry in entries:
        if entry.get("role") not in ROLES:
            raise ConfigError(f"{file}: set {entry.get('name')!r} has no role of {ROLES}")
        if entry.get("distractors", "") not in ("", "public"):
            raise ConfigError(f"{file}: set {entry['name']!r}: unknown distractors")
        sets.append(
            EvalSet(
                name=entry["name"],
                role=entry["role"],
                path=(file.parent / entry["set"]).resolve(),
                distractors=entry.get("distractors", ""),
                digest=entry.get("sha256", ""),
            )
        )
    names = [s.name for s in sets]
    if len(set(names)) != len(names):
        raise ConfigError(f"{file}: set names must be unique")
    return sets


def _notes_folders(eval_set: EvalSet) -> list[Path]:
    data = json.loads(eval_set.path.read_text())
    named = data["notes"] if isinstance(data["notes"], list) else [data["notes"]]
    return [(eval_set.path.parent / folder).resolve() for folder in named]


def set_digest(eval_set: EvalSet) -> str:
    """sha256 over the set file and every note file (by relative path and bytes)."""
    digest = hashlib.sha256(eval_set.path.read_bytes())
    for folder in _notes_folders(eval_set):
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(file.relative_to(folder).as_posix().encode() + b"\0")
            digest.update(file.read_bytes())
    return digest.hexdigest()


def public_distractors(target: Path) -> Path:
    """``target`` holding one note per installed distribution with a markdown description."""
    wanted: dict[str, str] = {}
    for dist in metadata.distributions():
        meta: Any = dist.metadata  # an email.message.Message underneath
        kind = (meta.get("Description-Content-Type") or "").split(";")[0].strip()
        text = meta.get_payload() or meta.get("Description") or ""
        name = (meta.get("Name") or "").strip().lower()
        if kind == "text/markdown" and len(text) >= PUBLIC_NOTE_MIN_CHARS and name:
            wanted[f"python-packages/{name}.md"] = str(text)[:PUBLIC_NOTE_CHARS]
    source = target.parent / f"{target.name}-source"
    source.mkdir(parents=True, exist_ok=True)
    for stale in source.rglob("*.md"):
        if f"python-packages/{stale.name}" not in wanted:
            stale.unlink()
    for relative, text in wanted.items():
        note = source / relative
        note.parent.mkdir(parents=True, exist_ok=True)
        if not note.is_file() or note.read_text() != text:
            note.write_text(text)
    return source


def questions_of(eval_set: EvalSet) -> list[Labelled]:
    """The set's questions (answerable: those with sources)."""
    data = json.loads(eval_set.path.read_text())
    return [
        Labelled(
            q["q"],
            tuple(q.get("sources", [])),
            q.get("kind", ""),
            tuple((f,) if isinstance(f, str) else tuple(f) for f in q.get("facts", [])),
        )
        for q in data["questions"]
    ]


def notes_folder(eval_set: EvalSet) -> Path:
    """The folder a set's collection is loaded from (its notes, and distractors if named)."""
    folders = _notes_folders(eval_set)
    if eval_set.distractors == "public":
        folders.append(public_distractors(cache_folder() / "eval-public-distractors"))
    if len(folders) == 1:
        return folders[0]
    key = hashlib.sha256("\n".join(map(str, folders)).encode()).hexdigest()[:12]
    return merge_folders(folders, cache_folder() / "eval-notes" / key)


# --- figures ---------------------------------------------------------------------------------


@dataclass
class SetFigures:
    """One set's retrieval figures (per-question reciprocal ranks kept for paired comparison)."""

    name: str
    role: str
    notes: int
    answerable: int
    unanswerable: int
    k: int
    floor: float
    mrr: float
    mrr_interval: tuple[float, float]
    answer_mrr: float
    """MRR of the first chunk from an expected note or holding every expected fact."""
    hit1: float
    hitk: float
    vector_mrr: float
    answerable_kept: float
    unanswerable_rejected: float
    rejected_interval: tuple[float, float]
    load_seconds: float
    stemmed: bool | None = None
    """Whether the set's collection matched BM25 words by their stem (``None``: no record)."""
    reciprocal_ranks: list[float] = field(default_factory=list)

    def totals(self) -> dict[str, Any]:
        """Everything but the per-question figures (what a test set may record)."""
        return {k: v for k, v in asdict(self).items() if k != "reciprocal_ranks"}


def reciprocal_ranks(ranked: list[Ranked]) -> list[float]:
    """1 / the rank of the first expected chunk (0 when none) per answerable question."""
    return [1 / r if (r := item.rank()) else 0.0 for item in ranked if item.item.answerable]


def bootstrap_mean_interval(values: list[float], seed: int = 0) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of the mean."""
    if not values:
        return (0.0, 0.0)
    pick = random.Random(seed)
    n = len(values)
    means = sorted(sum(pick.choices(values, k=n)) / n for _ in range(BOOTSTRAP_SAMPLES))
    return (means[int(0.025 * BOOTSTRAP_SAMPLES)], means[int(0.975 * BOOTSTRAP_SAMPLES) - 1])


def wilson_interval(successes: int, n: int) -> tuple[float, float]:
    """95 % Wilson score interval of a share."""
    if n == 0:
        return (0.0, 0.0)
    share = successes / n
    centre = (share + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(share * (1 - share) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def measure(
    eval_set: EvalSet,
    context: Context,
    embeddings: Embeddings,
    load: Callable[[Context, Path, Embeddings], Any],
) -> SetFigures:
    """Load the set's collection (timed) and rank every question in hybrid and vector mode."""
    folder = notes_folder(eval_set)
    questions = questions_of(eval_set)
    started = time.perf_counter()
    load(context, folder, embeddings)
    load_seconds = time.perf_counter() - started
    stemmed = collection_stemmed(context)
    once = QuestionsEmbeddedOnce(embeddings)
    ranked = rank_all(context, once, questions, context.retrieval_mode, context.k)
    vector = rank_all(context, once, questions, "vector", context.k)

    # Each question is held to the floor the graph holds it to (a German one's may be lower);
    # the set's floor shown is the lowest of them.
    def kept(r: Ranked) -> bool:
        return r.kept(relevance_floor(context, r.item.question))

    floor = min(
        (relevance_floor(context, r.item.question) for r in ranked),
        default=relevance_floor(context),
    )
    answerable = [r for r in ranked if r.item.answerable]
    unanswerable = [r for r in ranked if not r.item.answerable]
    rr = reciprocal_ranks(ranked)
    rejected = sum(not kept(r) for r in unanswerable)
    return SetFigures(
        name=eval_set.name,
        role=eval_set.role,
        notes=sum(1 for p in folder.rglob("*.md") if p.is_file()),
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        k=context.k,
        floor=floor,
        mrr=_mean(rr),
        mrr_interval=bootstrap_mean_interval(rr),
        answer_mrr=_mean([1 / r if (r := x.answer_rank()) else 0.0 for x in answerable]),
        hit1=_mean([1.0 if x == 1.0 else 0.0 for x in rr]),
        hitk=_mean([1.0 if x > 0 else 0.0 for x in rr]),
        vector_mrr=_mean(reciprocal_ranks(vector)),
        answerable_kept=_mean([1.0 if kept(r) else 0.0 for r in answerable]),
        unanswerable_rejected=rejected / max(1, len(unanswerable)),
        rejected_interval=wilson_interval(rejected, len(unanswerable)),
        load_seconds=round(load_seconds, 2),
        stemmed=stemmed,
        reciprocal_ranks=rr,
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def render(figures: Iterable[SetFigures], mode: str) -> str:
    """One row per set, the worst MRR first, and a line naming the worst."""
    rows = sorted(figures, key=lambda f: (f.mrr, f.name))
    if not rows:
        return "no set measured"
    k = rows[0].k
    lines = [
        f"| set | role | notes | questions (ans/unans) | {mode} MRR [95 % CI] | hit@1 | "
        f"hit@{k} | answer MRR | vector MRR | floor | answerable kept | unanswerable rejected "
        "[95 % CI] | load s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for f in rows:
        low, high = f.mrr_interval
        rlow, rhigh = f.rejected_interval
        lines.append(
            f"| {f.name} | {f.role} | {f.notes} | {f.answerable}/{f.unanswerable} | "
            f"{f.mrr:.3f} [{low:.3f}, {high:.3f}] | {f.hit1:.3f} | {f.hitk:.3f} | "
            f"{f.answer_mrr:.3f} | {f.vector_mrr:.3f} | {f.floor:.2f} | {f.answerable_kept:.3f} | "
            f"{f.unanswerable_rejected:.3f} [{rlow:.2f}, {rhigh:.2f}] | {f.load_seconds:.1f} |"
        )
    lines.append(f"worst: {rows[0].name} (MRR {rows[0].mrr:.3f})")
    return "\n".join(lines)


def paired_difference_interval(now: list[float], before: list[float]) -> tuple[float, float]:
    """95 % bootstrap interval of the mean per-question difference ``now - before``."""
    return bootstrap_mean_interval([a - b for a, b in zip(now, before)])


def compare(figures: Iterable[SetFigures], baseline: dict[str, dict[str, Any]]) -> list[str]:
    """Per set: ``worse`` (the paired interval lies below zero), ``lower within noise``, ...

    ``baseline`` maps set names to recorded figures; a set recorded with another question
    count is not comparable.
    """
    lines = []
    for f in sorted(figures, key=lambda f: f.name):
        before = baseline.get(f.name)
        if before is None or len(before.get("reciprocal_ranks", [])) != len(f.reciprocal_ranks):
            lines.append(f"{f.name}: no comparable baseline")
            continue
        low, high = paired_difference_interval(f.reciprocal_ranks, before["reciprocal_ranks"])
        change = f.mrr - before["mrr"]
        if high < 0:
            verdict = "WORSE beyond noise"
        elif change < 0:
            verdict = "lower, within noise"
        elif low > 0:
            verdict = "better beyond noise"
        else:
            verdict = "same or higher, within noise"
        lines.append(
            f"{f.name}: MRR {before['mrr']:.3f} -> {f.mrr:.3f} ({change:+.3f}; paired 95 % CI "
            f"[{low:+.3f}, {high:+.3f}]): {verdict}"
        )
    return lines


def check_frozen(eval_set: EvalSet) -> None:
    """Refuse a test set whose files changed since it was frozen."""
    if not eval_set.digest:
        raise ConfigError(f"test set {eval_set.name!r} has no recorded sha256 in the manifest")
    if set_digest(eval_set) != eval_set.digest:
        raise ConfigError(
            f"test set {eval_set.name!r} changed since it was frozen (sha256 differs): a test set "
            "is written once; add a new one instead"
        )


def selected(
    sets: list[EvalSet], roles: Iterable[str], test: bool, names: Iterable[str] = ()
) -> list[EvalSet]:
    """The sets to measure: the test sets only with ``test``, never mixed with the others.

    ``names``, when given, keeps only the sets so named (an unknown name is an error).
    """
    named = set(names)
    unknown = named - {s.name for s in sets}
    if unknown:
        raise ConfigError(f"no set named {', '.join(sorted(unknown))} in the manifest")
    if test:
        chosen = [s for s in sets if s.role == "test" and (not named or s.name in named)]
        for eval_set in chosen:
            check_frozen(eval_set)
        return chosen
    wanted = set(roles) or {"tune", "validation"}
    if "test" in wanted or any(s.role == "test" for s in sets if s.name in named):
        raise ConfigError("the test sets run only with --test (totals only, recorded once)")
    return [s for s in sets if s.role in wanted and (not named or s.name in named)]


def record_test_run(
    path: Path, commit: str, context: Context, measured: str, totals: list[dict[str, Any]]
) -> dict[str, Any]:
    """Append one test run (totals only) to ``path``: once per commit, models and measure.

    ``measured`` is ``retrieval`` or ``answers``; each of ``totals`` names its set (``name``)
    and carries the set's frozen ``sha256``.
    """
    runs = json.loads(path.read_text()) if path.is_file() else []
    models = {"embedding_model": context.embedding_model or ""}
    if measured == "answers":
        models["chat_model"] = context.chat_model
    same = [r for r in runs if r["commit"] == commit and r["measured"] == measured]
    if any(all(r.get(key) == value for key, value in models.items()) for r in same):
        raise ConfigError(
            f"the test sets' {measured} were already measured at commit {commit[:12]} with "
            f"{', '.join(models.values())}: see {path}"
        )
    entry = {
        "commit": commit,
        "date": time.strftime("%Y-%m-%d"),
        "measured": measured,
        **models,
        **retrieval_settings(context),
        "sets": totals,
    }
    runs.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(runs, indent=1) + "\n")
    return entry


def measured_commit() -> str:
    """The commit a test run measures: ``HEAD``, refused when tracked files are changed."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    )
    if status.returncode != 0 or status.stdout.strip():
        raise ConfigError("--test: measure a commit, with no uncommitted change")
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def context_for(context: Context, eval_set: EvalSet) -> Context:
    """The set's own collection: one per set, notes folders and embedding model.

    The folders are part of the name (a short digest), so a set whose notes move gets a new
    collection instead of a refusal to load another folder into the old one.
    """
    where = "\n".join([*map(str, _notes_folders(eval_set)), eval_set.distractors])
    digest = hashlib.sha256(where.encode()).hexdigest()[:8]
    parts = ["evalset", context.embedding_model or "default", eval_set.name, digest]
    name = "-".join(re.sub(r"[^A-Za-z0-9._-]+", "-", p).strip("-._") for p in parts)
    return replace(context, collection_name=name)


# --- answers ---------------------------------------------------------------------------------


@dataclass
class AnswerFigures:
    """One set's answer figures for one design (``rag eval --sets ... --answers``)."""

    name: str
    role: str
    design: str
    right: tuple[int, int]
    """Answerable questions with every fact and an expected note cited inline, of all."""
    abstained: tuple[int, int]
    """Unanswerable questions (near misses included) answered "not in your notes", of all."""
    calls_per_question: float
    tokens_per_question: float
    seconds_per_question: float
    lost: dict[str, int] = field(default_factory=dict)
    """Answerable questions lost per stage of the answer path (``answers.STAGES``)."""
    stopped: dict[str, int] = field(default_factory=dict)
    """The others, per stage that stopped them, and ``answered`` (not stopped)."""
    processed_per_question: float = 0.0
    """Prompt tokens read anew (not reused from the server's cache), per question."""

    def worst_share(self) -> float:
        """The lower of the two shares (a set with no question of a kind does not count it)."""
        shares = [n / of for n, of in (self.right, self.abstained) if of]
        return min(shares) if shares else 1.0


def answer_figures(eval_set: EvalSet, report: dict[str, Any]) -> list[AnswerFigures]:
    """Each design's figures from an answer report (``app.evaluation.answers.evaluate``)."""
    figures = []
    for design, entry in report["designs"].items():
        summary = entry["summary"]
        work = summary["work"]
        questions = max(1, summary["questions"])
        right, abstained = summary["facts_cited_inline"], summary["abstained_when_unanswerable"]
        figures.append(
            AnswerFigures(
                name=eval_set.name,
                role=eval_set.role,
                design=design,
                right=(right["n"], right["of"]),
                abstained=(abstained["n"], abstained["of"]),
                calls_per_question=round(work["calls"] / questions, 2),
                tokens_per_question=round(
                    (work["prompt_tokens"] + work["generated_tokens"]) / questions, 1
                ),
                seconds_per_question=round(work["wall_s"] / questions, 1),
                lost={k: v for k, v in summary["lost"].items() if v},
                stopped={k: v for k, v in summary["stopped"].items() if v},
                processed_per_question=round(
                    (work["prompt_tokens"] - work["cached_tokens"]) / questions, 1
                ),
            )
        )
    return figures


def _count_with_interval(count: tuple[int, int]) -> str:
    n, of = count
    if not of:
        return "-"
    low, high = wilson_interval(n, of)
    return f"{n}/{of} ({n / of:.2f}) [{low:.2f}, {high:.2f}]"


def render_answers(figures: Iterable[AnswerFigures]) -> str:
    """One row per set and design, the worst share first, and a line naming the worst."""
    rows = sorted(figures, key=lambda f: (f.worst_share(), f.name, f.design))
    if not rows:
        return "no set measured"
    lines = [
        "| set | role | design | every fact, cited inline [95 % CI] | near misses and "
        "unanswerable abstained [95 % CI] | calls/q | tokens/q | s/q |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in rows:
        lines.append(
            f"| {f.name} | {f.role} | {f.design} | {_count_with_interval(f.right)} | "
            f"{_count_with_interval(f.abstained)} | {f.calls_per_question} | "
            f"{f.tokens_per_question} | {f.seconds_per_question} |"
        )
    worst = rows[0]
    lines.append(f"worst: {worst.name}, {worst.design} ({worst.worst_share():.2f})")
    lines += [
        "",
        "Where answerable questions were lost, and where the others were stopped (or answered):",
        "| set | design | lost: "
        + " | lost: ".join(STAGES)
        + " | stopped: "
        + " | stopped: ".join(STOPS)
        + " | prompt tokens read anew/q |",
        "|---|---|" + "---|" * (2 * len(STAGES) + 2),
    ]
    for f in rows:
        counts = [f.lost.get(name, 0) for name in STAGES]
        counts += [f.stopped.get(name, 0) for name in STOPS]
        lines.append(
            f"| {f.name} | {f.design} | "
            + " | ".join(map(str, counts))
            + f" | {f.processed_per_question} |"
        )
    return "\n".join(lines)


# --- every chosen set, one after the other ---------------------------------------------------


@dataclass
class SetsRun:
    """The figures of every set run, and the context of the last (its resolved models)."""

    figures: list[Any]  # SetFigures for retrieval, AnswerFigures (one per design) for answers
    context: Context


def evaluate_sets(
    chosen: list[EvalSet],
    context: Context,
    models: ModelProvider,
    answers: AnswerOptions | None = None,
    notify: Callable[[str], None] = lambda line: None,
    progress: Callable[[int, int, str], None] = lambda done, total, note: None,
) -> SetsRun:
    """Load each set into its own collection and measure retrieval, or answers if asked.

    ``notify`` gets a line per set, and a tune set's line per question (only a tune set may be
    looked at question by question); ``progress`` an answer run's questions as they end.
    """
    from app.evaluation.answers import run_answers
    from graph.index.ingest import load_notes
    from graph.index.vectorstore import with_embedding_model

    figures: list[Any] = []
    for number, eval_set in enumerate(chosen, start=1):
        notify(f"[set {number}/{len(chosen)}] {eval_set.name} ({eval_set.role})")
        context = with_embedding_model(context_for(context, eval_set))
        embeddings = models.embeddings(context)
        if answers is None:
            figures.append(measure(eval_set, context, embeddings, load_notes))
            continue
        load_notes(context, notes_folder(eval_set), embeddings)
        lines = notify if eval_set.role == "tune" else (lambda line: None)
        report = run_answers(str(eval_set.path), answers, context, models, lines, progress)
        figures += answer_figures(eval_set, report)
    return SetsRun(figures, context)


def figures_record(figures: Iterable[Any], answers: bool) -> dict[str, Any]:
    """The figures as ``--record`` writes them: by set name (and design, for answers)."""
    return {f"{f.name}/{f.design}" if answers else f.name: asdict(f) for f in figures}
