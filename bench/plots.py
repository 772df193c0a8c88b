"""The docs' figures and tables, drawn from the recorded results in ``bench/results/``.

Each ``bench/results/*.json`` holds figures measured by a bench script, ``rag eval`` or a CI
run (its ``about`` says what was measured and how). This script draws ``docs/img/*.svg`` from
them and writes the tables of ``docs/benchmarks.md`` and ``docs/quality.md`` between their
``<!-- table: NAME -->`` and ``<!-- end table -->`` markers, so a picture and its table cannot
disagree. Every SVG carries the series it draws in its description (JSON): the tests compare
the data, never the image bytes.

    python bench/plots.py               # rewrite docs/img/*.svg and the docs' tables
    python bench/plots.py --out DIR     # draw the figures into DIR only
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
IMAGES = ROOT / "docs" / "img"
#: The docs whose tables this script writes.
TABLE_DOCS = (
    ROOT / "docs" / "benchmarks.md",
    ROOT / "docs" / "quality.md",
    ROOT / "bench" / "results" / "LOG.md",
)
MODES = ("vector", "bm25", "hybrid")
_TABLE = re.compile(r"(<!-- table: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end table -->)", re.S)


def results() -> dict[str, Any]:
    """Every recorded result, by file stem."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(RESULTS.glob("*.json"))}


@dataclass(frozen=True)
class Panel:
    """One plot: bars (one group per category) or lines (x = categories)."""

    title: str
    kind: str  # "bars" (horizontal) or "lines"
    categories: list[Any]
    series: dict[str, list[float]]
    value_label: str
    log: bool = False
    category_label: str = ""
    width: float = 1.0  # relative to the figure's other panels


@dataclass(frozen=True)
class Figure:
    """A figure of the docs: ``docs/img/<name>.svg``."""

    name: str
    title: str
    panels: list[Panel]

    def data(self) -> dict[str, Any]:
        """What the figure draws, as JSON-ready data (stored in the SVG's description)."""
        return asdict(self)


def figures(recorded: dict[str, Any] | None = None) -> dict[str, Figure]:
    """The docs' figures, each with the series it draws, taken from the recorded results."""
    r = recorded if recorded is not None else results()
    suite, cost, loading, scale, retrieval = (
        r["suite"],
        r["question_cost"],
        r["loading"],
        r["scale"],
        r["retrieval"],
    )
    setups = suite["setups"]
    timed = [m for m in scale["measures"] if m["unit"] in ("s", "ms") and m["previous"] is not None]
    memory = [m for m in scale["measures"] if m["unit"] == "MB"]
    floors = sorted({row["floor"] for row in retrieval["rows"]})

    def by_mode(metric: str, mode: str) -> list[float]:
        rows = sorted((row for row in retrieval["rows"] if row["mode"] == mode), key=_floor)
        return [row[metric] for row in rows]

    def seconds(m: dict[str, Any], key: str) -> float:
        return m[key] / 1000 if m["unit"] == "ms" else m[key]

    def at_shipped_floor(metric: str) -> list[float]:
        return [_row(retrieval, mode, 0.3)[metric] for mode in MODES]

    return {
        f.name: f
        for f in [
            Figure(
                "test-suite",
                "make test on 2 cores",
                [
                    Panel(
                        "fresh machine, from clone to result",
                        "bars",
                        [s["label"] for s in setups],
                        {
                            "total": [s["fresh_total_s"] for s in setups],
                            "the tests": [s["fresh_suite_s"] for s in setups],
                        },
                        "seconds",
                    ),
                    Panel(
                        "the suite alone (warm)",
                        "bars",
                        [s["label"] for s in setups],
                        {"suite": [s["warm_suite_s"] for s in setups]},
                        "seconds",
                    ),
                ],
            ),
            Figure(
                "question-cost",
                f"Per question, fake model {cost['latency_ms']} ms per call, k={cost['k']}",
                [
                    Panel(
                        "wall time",
                        "bars",
                        [q["question"] for q in cost["questions"]],
                        {
                            "first, sequential design": [
                                q["baseline_s"] for q in cost["questions"]
                            ],
                            "now": [q["wall_s"] for q in cost["questions"]],
                        },
                        "seconds",
                    )
                ],
            ),
            Figure(
                "loading",
                "Loading notes",
                [
                    Panel(
                        "full load of 200 notes, instant embedder",
                        "bars",
                        [row["label"] for row in loading["partitioning"]["rows"]],
                        {
                            "full load": [
                                row["full_load_s"] for row in loading["partitioning"]["rows"]
                            ]
                        },
                        "seconds",
                    ),
                    Panel(
                        f"200 notes, embedder {loading['batch_latency_ms']} ms per batch "
                        f"({loading['recorded']})",
                        "bars",
                        [run["step"] for run in loading["runs"]],
                        {"load": [run["seconds"] for run in loading["runs"]]},
                        "seconds (log)",
                        log=True,
                    ),
                ],
            ),
            Figure(
                "scale",
                "About 100,000 chunks: in-memory BM25 (previous) and the catalog (now)",
                [
                    Panel(
                        "time",
                        "bars",
                        [m["label"] for m in timed],
                        {
                            "previous": [seconds(m, "previous") for m in timed],
                            "now": [seconds(m, "now") for m in timed],
                        },
                        "seconds (log)",
                        log=True,
                    ),
                    Panel(
                        "memory",
                        "bars",
                        [m["label"] for m in memory],
                        {
                            "previous": [m["previous"] for m in memory],
                            "now": [m["now"] for m in memory],
                        },
                        "MB",
                        width=0.5,
                    ),
                ],
            ),
            Figure(
                "retrieval",
                f"Retrieval on the labelled set ({retrieval['questions']} questions, "
                f"{retrieval['embedding_model']}, k={retrieval['k']})",
                [
                    Panel(
                        "ranking",
                        "bars",
                        list(MODES),
                        {
                            f"MRR (k={retrieval['k']})": at_shipped_floor("mrr"),
                            "hit@1": [retrieval["hit_at_1"][mode] for mode in MODES],
                        },
                        "score",
                    ),
                    Panel(
                        "answerable questions kept",
                        "lines",
                        floors,
                        {mode: by_mode("answerable_kept", mode) for mode in MODES},
                        "share",
                        category_label="relevance floor",
                    ),
                    Panel(
                        "unanswerable questions rejected",
                        "lines",
                        floors,
                        {mode: by_mode("unanswerable_rejected", mode) for mode in MODES},
                        "share",
                        category_label="relevance floor",
                    ),
                ],
            ),
        ]
    }


def _floor(row: dict[str, Any]) -> float:
    return float(row["floor"])


def _row(retrieval: dict[str, Any], mode: str, floor: float) -> dict[str, Any]:
    return next(r for r in retrieval["rows"] if r["mode"] == mode and r["floor"] == floor)


def draw(figure: Figure) -> Any:
    """A matplotlib figure drawing exactly ``figure``'s series."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure as MplFigure

    widths = [panel.width for panel in figure.panels]
    canvas = MplFigure(figsize=(min(5.5 * sum(widths) + 2.0, 16.0), 4.0), layout="constrained")
    canvas.suptitle(figure.title)
    axes = canvas.subplots(1, len(widths), squeeze=False, width_ratios=widths)[0]
    for ax, panel in zip(axes, figure.panels):
        ax.set_title(panel.title, fontsize="medium")
        if panel.kind == "bars":
            _bars(ax, panel)
        else:
            # Series that coincide stay visible: a wide pale line under thinner ones.
            for (label, values), style in zip(panel.series.items(), _LINE_STYLES):
                ax.plot(panel.categories, values, label=label, **style)
            ax.set_xticks(panel.categories)
            ax.set_xlabel(panel.category_label)
            ax.set_ylabel(panel.value_label)
            ax.set_ylim(0, 1.05)
        if len(panel.series) > 1:
            ax.legend(
                fontsize="small",
                loc="upper center",
                bbox_to_anchor=(0.5, -0.16),
                ncols=len(panel.series),
                frameon=False,
            )
    return canvas


_LINE_STYLES = (
    {"marker": "o", "linewidth": 6, "alpha": 0.35, "markersize": 10},
    {"marker": "s", "linestyle": "--", "linewidth": 1.5},
    {"marker": "^", "linestyle": "-", "linewidth": 1.5},
)


def _bars(ax: Any, panel: Panel) -> None:
    count = len(panel.series)
    height = 0.8 / count
    positions = list(range(len(panel.categories)))
    for index, (label, values) in enumerate(panel.series.items()):
        # Top to bottom in category order, the series of a group in legend order.
        offsets = [-p - (index - (count - 1) / 2) * height for p in positions]
        bars = ax.barh(offsets, values, height=height, label=label)
        ax.bar_label(bars, labels=[f"{v:g}" for v in values], fontsize="x-small", padding=2)
    ax.set_yticks([-p for p in positions], [str(c) for c in panel.categories])
    ax.set_xlabel(panel.value_label)
    if panel.log:
        ax.set_xscale("log")
    ax.margins(x=0.15)


def write_figures(folder: Path = IMAGES, recorded: dict[str, Any] | None = None) -> list[Path]:
    """Draw every figure into ``folder`` as SVG; the same data always gives the same file."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update(
        {"svg.hashsalt": "notes-rag", "svg.fonttype": "none", "font.size": 9}
    )
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for figure in figures(recorded).values():
        path = folder / f"{figure.name}.svg"
        metadata = {
            "Date": None,
            "Creator": "bench/plots.py",
            "Title": figure.title,
            "Description": json.dumps(figure.data(), sort_keys=True),
        }
        draw(figure).savefig(path, format="svg", metadata=metadata)
        written.append(path)
    return written


def svg_data(path: Path) -> dict[str, Any]:
    """The data an SVG written by ``write_figures`` says it draws (its description)."""
    from html import unescape

    match = re.search(r"<dc:description>(.*?)</dc:description>", path.read_text(), re.S)
    if match is None:
        raise ValueError(f"{path} carries no figure data")
    return json.loads(unescape(match.group(1)))


# --- tables ---------------------------------------------------------------------------------


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else repr(value)


def _minutes(seconds: int) -> str:
    return f"{seconds // 60} min {seconds % 60} s"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def tables(recorded: dict[str, Any] | None = None) -> dict[str, str]:
    """The docs' tables as markdown, by marker name."""
    r = recorded if recorded is not None else results()
    suite, cost, loading, scale, retrieval = (
        r["suite"],
        r["question_cost"],
        r["loading"],
        r["scale"],
        r["retrieval"],
    )

    def measured(m: dict[str, Any], key: str) -> str:
        if m[key] is None:
            return "—"
        note = m.get(f"{key}_note")
        text = f"{_number(m[key])} {m['unit']}"
        return f"{text} ({note})" if note else text

    overhead = cost["overhead"]
    progress = r["progress"]
    real = progress["real_model"]
    progress_runs = [
        {**run, "about": f"stand-in, {progress['step_delay_s']} s a model call: {run['about']}"}
        for run in progress["runs"]
    ] + [
        {**run, "about": f"real {real['model']}, {real['cores']} busy cores: “{run['question']}”"}
        for run in real["runs"]
    ]
    return set_tables(r) | {
        "progress": _table(
            [
                "the page",
                "first progress",
                "first stage from the graph",
                "first token",
                "sources",
                "verdict (end)",
                "latest stage shown after its report",
            ],
            [
                [
                    run["about"],
                    *(
                        f"{run[key]:.2f} s"
                        for key in (
                            "first_progress_s",
                            "first_graph_progress_s",
                            "first_token_s",
                            "sources_s",
                            "done_s",
                        )
                    ),
                    f"{run['most_late_s'] * 1000:.0f} ms",
                ]
                for run in progress_runs
            ],
        ),
        "suite": _table(
            ["`make test`, 2 cores", "fresh machine, total", "its tests", "the suite alone (warm)"],
            [
                [
                    s["setup"],
                    _minutes(s["fresh_total_s"]),
                    f"{s['fresh_tests']} tests in {s['fresh_suite_s']} s",
                    f"{s['warm_tests']} tests in {s['warm_suite_s']} s",
                ]
                for s in suite["setups"]
            ],
        ),
        "same-machine": _table(
            [
                "one machine, one day",
                "fresh machine, total",
                "the suite (fresh)",
                "the suite (warm)",
            ],
            [
                [
                    f"{run['what']} ({run['commit']}, {run['tests']:,} tests)",
                    " and ".join(_minutes(t) for t in run["fresh_total_s"]),
                    " and ".join(f"{t} s" for t in run["fresh_suite_s"]),
                    " and ".join(f"{t} s" for t in run["warm_suite_s"]),
                ]
                for run in suite["same_machine"]["runs"]
            ],
        ),
        "startup": _table(
            ["what the third row changed", "before", "after"],
            [[m["measure"], m["before"], m["after"]] for m in suite["startup"]],
        ),
        "question-cost": _table(
            [
                "question",
                "model calls",
                "stages",
                "wall s",
                "before the answer check: calls / stages / wall s",
                "first design s",
                "ratio",
            ],
            [
                [
                    q["question"],
                    str(q["calls"]),
                    str(q["stages"]),
                    f"{q['wall_s']:.2f}",
                    f"{q['previous']['calls']} / {q['previous']['stages']} / "
                    f"{q['previous']['wall_s']:.2f}",
                    f"{q['baseline_s']:.2f}",
                    f"{q['ratio']:.2f}",
                ]
                for q in cost["questions"]
            ],
        ),
        "overhead": _table(
            ["framework overhead per question", "median", "max"],
            [
                [
                    h["when"],
                    ("about " if h["approximate"] else "") + f"{_number(h['median_ms'])} ms",
                    "—" if h["max_ms"] is None else f"{_number(h['max_ms'])} ms",
                ]
                for h in overhead["history"]
            ],
        ),
        "loading": _table(
            ["step", "seconds", "embedding calls", "notes added / updated / unchanged", "chunks"],
            [
                [
                    run["step"],
                    f"{run['seconds']:.2f}",
                    str(run["embedding_calls"]),
                    f"{run['added']} / {run['updated']} / {run['unchanged']}",
                    str(run["chunks_embedded"]),
                ]
                for run in loading["runs"]
            ],
        ),
        "partitioning": _table(
            ["path", "full load", "note"],
            [
                [row["path"], f"{row['full_load_s']} s", row["note"]]
                for row in loading["partitioning"]["rows"]
            ],
        ),
        **{
            name: _table(comparison["header"], comparison["rows"])
            for name, comparison in loading.get("comparisons", {}).items()
        },
        "scale": _table(
            ["measure", "previous", "now", "target"],
            [
                [m["measure"], measured(m, "previous"), measured(m, "now"), m["target"] or "—"]
                for m in scale["measures"]
            ],
        ),
        "retrieval": _table(
            [
                "mode",
                "floor",
                f"hit@{retrieval['k']}",
                "MRR",
                "answerable kept",
                "unanswerable rejected",
            ],
            [
                [
                    row["mode"],
                    f"{row['floor']:.1f}",
                    f"{row['hit']:.3f}",
                    f"{row['mrr']:.3f}",
                    f"{row['answerable_kept']:.3f}",
                    f"{row['unanswerable_rejected']:.3f}",
                ]
                for row in retrieval["rows"]
            ],
        ),
        "retrieval-k1": _table(
            ["mode", "hit@1 (= MRR at k=1)"],
            [[mode, f"{retrieval['hit_at_1'][mode]:.3f}"] for mode in MODES],
        ),
        "retrieval-bm25s": _table(
            ["bm25 rows", "MRR", "answerable kept at 0.5", "hit@1"],
            [
                [
                    "previous in-memory `bm25s` index",
                    f"{retrieval['previous_bm25']['mrr']:.3f}",
                    f"{retrieval['previous_bm25']['answerable_kept_at_0.5']:.3f}",
                    f"{retrieval['previous_bm25']['hit_at_1']:.3f}",
                ],
                [
                    "the catalog's FTS5 index (now)",
                    f"{_row(retrieval, 'bm25', 0.5)['mrr']:.3f}",
                    f"{_row(retrieval, 'bm25', 0.5)['answerable_kept']:.3f}",
                    f"{retrieval['hit_at_1']['bm25']:.3f}",
                ],
            ],
        ),
    }


def set_tables(r: dict[str, Any]) -> dict[str, str]:
    """The quality guide's tables: every set's retrieval figures, each retrieval choice."""
    sets = r["retrieval_sets"]
    rows = sorted(sets.values(), key=lambda f: (f["mrr"], f["name"]))
    figures = [
        [
            f["name"],
            f["role"],
            str(f["notes"]),
            f"{f['answerable']}/{f['unanswerable']}",
            f"{f['mrr']:.3f} [{f['mrr_interval'][0]:.3f}, {f['mrr_interval'][1]:.3f}]",
            f"{f['hit1']:.3f}",
            f"{f['hitk']:.3f}",
            f"{f['answer_mrr']:.3f}",
            f"{f['vector_mrr']:.3f}",
            f"{f['unanswerable_rejected']:.3f} ({f['floor']})",
        ]
        for f in rows
    ]
    choices = r["retrieval_choices"]["sets"]
    labels = list(next(iter(choices.values())))

    def cell(variant: dict[str, Any]) -> str:
        low, high = variant["vs_shipped"]
        mark = " (worse)" if high < 0 else " (better)" if low > 0 else ""
        return f"{variant['mrr']:.3f}{mark}"

    runs = r.get("test_runs", [])
    tested = [
        [
            run["commit"][:7],
            run["date"],
            run["measured"],
            run["embedding_model"],
            f["name"],
            str(f["notes"]),
            f"{f['answerable']}/{f['unanswerable']}",
            f"{f['mrr']:.3f} [{f['mrr_interval'][0]:.3f}, {f['mrr_interval'][1]:.3f}]",
            f"{f['hit1']:.3f}",
            f"{f['answer_mrr']:.3f}",
            f"{f['unanswerable_rejected']:.3f}",
        ]
        for run in runs
        if run["measured"] == "retrieval"
        for f in run["sets"]
    ]
    return (
        check_tables(r)
        | evidence_tables(r)
        | {
            "retrieval-models": model_table(r),
            "test-runs": _table(
                [
                    "commit",
                    "date",
                    "measured",
                    "embedding model",
                    "set",
                    "notes",
                    "questions (ans/unans)",
                    "hybrid MRR [95 % CI]",
                    "hit@1",
                    "answer MRR",
                    "unanswerable rejected",
                ],
                tested or [["not yet measured", *[""] * 10]],
            ),
            "retrieval-sets": _table(
                [
                    "set",
                    "role",
                    "notes",
                    "questions (ans/unans)",
                    "hybrid MRR [95 % CI]",
                    "hit@1",
                    f"hit@{rows[0]['k']}",
                    "answer MRR",
                    "vector MRR",
                    "unanswerable rejected (floor)",
                ],
                figures,
            ),
            "retrieval-choices": _table(
                ["set", *labels],
                [[name, *(cell(row[label]) for label in labels)] for name, row in choices.items()],
            ),
        }
    )


#: The embedding models measured on every set, by the stem of their recorded figures.
MODEL_RECORDS = {
    "all-minilm": "retrieval_sets",
    "nomic-embed-text": "retrieval_sets_nomic",
    "multilingual-e5-small": "retrieval_sets_e5",
}


def model_table(r: dict[str, Any]) -> str:
    """Each set's hybrid and vector MRR with each embedding model, the worst set first."""
    measured = {model: r.get(stem, {}) for model, stem in MODEL_RECORDS.items()}
    names = {name: f for figures in measured.values() for name, f in figures.items()}

    def worst(name: str) -> float:
        return min(m[name]["mrr"] for m in measured.values() if name in m)

    def cell(model: str, name: str) -> str:
        f = measured[model].get(name)
        return f"{f['mrr']:.3f} ({f['vector_mrr']:.3f})" if f else "—"

    return _table(
        ["set", "role", *(f"{model}: hybrid (vector)" for model in MODEL_RECORDS)],
        [
            [name, names[name]["role"], *(cell(model, name) for model in MODEL_RECORDS)]
            for name in sorted(names, key=lambda n: (worst(n), n))
        ],
    )


def _work_cell(work: dict[str, float]) -> str:
    return f"{work['calls']}, {work['tokens']:.0f}"


def check_tables(r: dict[str, Any]) -> dict[str, str]:
    """The answer check's designs and rules (bench/check_rules.py).

    ``check_rules_removed.json``: every rule as it was, each switched off in turn (the
    measurement that removed the rules without an effect); ``check_rules.json``: the check
    as it is, its designs, bars and kept rules.
    """
    if "check_rules" not in r or "check_rules_removed" not in r:
        return {}
    now, before = r["check_rules"], r["check_rules_removed"]
    names = list(now["sets"])

    def count(got: dict[str, int]) -> str:
        return f"{got['right']}/{got['answerable']}, {got['abstained']}/{got['of']}"

    def rule_rows(record: dict[str, Any]) -> list[list[str]]:
        def effect(name: str, rule: str) -> str:
            variants = record["sets"][name]["variants"]
            base, without = variants["today's check"], variants[rule]
            right = base["right"] - without["right"]
            return f"{right:+d}, {base['abstained'] - without['abstained']:+d}"

        return [
            [
                rule,
                f"{counts['kept_right']}, {counts['caught_wrong']}",
                *(effect(n, f"without: {rule}") for n in record["sets"]),
            ]
            for rule, counts in record["tuned"].items()
        ]

    def rule_header(record: dict[str, Any]) -> list[str]:
        drafts = next(iter(record["tuned"].values()))["drafts"]
        return [
            "rule",
            f"own reports ({drafts} drafts): right kept, wrong caught",
            *(f"{n}: right, abstained" for n in record["sets"]),
        ]

    designs = [
        ["the check before this round (every rule)"]
        + [count(before["sets"][n]["variants"]["today's check"]) for n in names]
    ]
    # The designs are the variants that are not one rule switched off, in the record's order.
    compared = [d for d in now["sets"][names[0]]["variants"] if not d.startswith("without: ")]
    designs += [[d, *(count(now["sets"][n]["variants"][d]) for n in names)] for d in compared]
    designs += [
        [
            f"check calls, tokens a question ({how})",
            *(_work_cell(now["sets"][n]["work"][key]) for n in names),
        ]
        for how, key in (("whole answer", "whole"), ("claim by claim", "claims"))
    ]
    return {
        "check-designs": _table([f"{now['chat_model']} (right; abstained)", *names], designs),
        "check-rules-removed": _table(rule_header(before), rule_rows(before)),
        "check-rules": _table(rule_header(now), rule_rows(now)),
    }


def evidence_tables(r: dict[str, Any]) -> dict[str, str]:
    """The model asked about the lines that write a draft's figures (bench/evidence_check.py),
    and an extractive answer (bench/extractive_answer.py)."""
    if "evidence_check" not in r:
        return {}
    sets = r["evidence_check"]["sets"]
    wordings = [
        k
        for k, v in next(iter(sets.values())).items()
        if isinstance(v, dict) and "seconds a draft asked about" in v
    ]

    def count(got: dict[str, int]) -> str:
        done = f"{got['right']}/{got['answerable']}"
        return f"{done}, {got['abstained']}/{got['of']}" if got["of"] else done

    rows = [
        [name, count(figures["the graph"]), *(count(figures[w]) for w in wordings)]
        for name, figures in sets.items()
    ]
    rows.append(
        [
            "drafts asked about",
            "",
            *[", ".join(str(figures["drafts asked about"]) for figures in sets.values())]
            * len(wordings),
        ]
    )

    def seconds(wording: str) -> str:
        each = [figures[wording]["seconds a draft asked about"] for figures in sets.values()]
        return f"{min(each)}-{max(each)}"

    rows.append(["seconds a draft asked about", "", *(seconds(w) for w in wordings)])
    tables = {"evidence-check": _table(["set", "the default", *wordings], rows)}
    if "extractive_answer" in r:
        extracts = r["extractive_answer"]["sets"]
        tables["extractive-answer"] = _table(
            ["set", "the default", "an extractive answer", "drafts replaced"],
            [
                [
                    name,
                    count(f["the graph"]),
                    count(f["an extractive answer"]),
                    str(f["drafts replaced"]),
                ]
                for name, f in extracts.items()
            ],
        )
    return tables


def fill_tables(text: str, generated: dict[str, str]) -> str:
    """``text`` with each marked table replaced by its generated version."""

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in generated:
            raise KeyError(f"no table named {name!r} in bench/plots.py")
        return match.group(1) + generated[name] + match.group(4)

    return _TABLE.sub(replace, text)


def table_names(text: str) -> list[str]:
    """The names of the tables marked in ``text``."""
    return [m.group("name") for m in _TABLE.finditer(text)]


def write_tables(recorded: dict[str, Any] | None = None) -> None:
    """Rewrite the marked tables of the docs from the recorded results."""
    generated = tables(recorded)
    for doc in TABLE_DOCS:
        text = doc.read_text()
        updated = fill_tables(text, generated)
        if updated != text:
            doc.write_text(updated)


def main(argv: list[str] | None = None) -> int:
    """Draw the figures (and, unless ``--out`` is given, rewrite the docs' tables)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="draw the figures here, and nothing else")
    args = parser.parse_args(argv)
    for path in write_figures(args.out or IMAGES):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    if args.out is None:
        write_tables()
    return 0


if __name__ == "__main__":
    sys.exit(main())
