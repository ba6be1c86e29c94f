"""Result documents -> report sections: kind inference and one tolerant adapter per kind.

Every ``--json`` output of fairprobe is a document ``{"schema": "fairprobe/1", "kind": ...,
"provenance": {...}, ...}``. Documents written before that contract (no ``schema``) get their kind
inferred from their keys (:func:`infer_kind`); the demo's composite document is split into its
parts. Each adapter reads what is present and says plainly what is missing: a field that a
figure needs but the result does not carry becomes a note in the report, never an invented value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from fairprobe import metrics as _metrics
from fairprobe.report._read import Doc, extra_assumptions, fmt, get, mapping, non_numbers
from fairprobe.report.document import Provenance, Section, Table, polarity
from fairprobe.report.jsonio import RESULT_KINDS
from fairprobe.report.kinds.audit import adapt_audit
from fairprobe.report.kinds.collab import (
    adapt_collab_nodes,
    adapt_collab_simulate,
    adapt_collab_sweep,
)
from fairprobe.report.kinds.discover import adapt_discover
from fairprobe.report.kinds.profile import adapt_profile
from fairprobe.report.kinds.proxy import adapt_proxy
from fairprobe.report.kinds.radius import adapt_radius
from fairprobe.report.kinds.sequential import adapt_sequential
from fairprobe.report.kinds.twosource import adapt_twosource, adapt_twosource_plan

__all__ = ["KINDS", "adapt", "infer_kind", "provenance_of", "split_document"]

#: The kinds of result documents (one list, the writer's).
KINDS = RESULT_KINDS

def infer_kind(doc: Doc) -> str | None:
    """The kind of a result document: its ``kind`` field, or inferred from a legacy shape."""
    kind = doc.get("kind")
    if isinstance(kind, str) and kind in KINDS:
        return kind
    if kind == "fairprobe.audit" or ("metric" in doc and "budget" in doc and "paid" in doc):
        return "audit"
    if {"audit", "sequential"} <= doc.keys() or {"audit", "radius"} <= doc.keys():
        return "demo"
    if "radius" in doc and ("phi" in doc or "assessment" in doc):
        return "radius"
    if ("outcome" in doc or "outcomes" in doc) and (
        {"boundaries", "path", "example_path", "mean_queries", "outcome_per_repeat"} & doc.keys()
    ):
        return "sequential"
    if "detectors" in doc and ("di_a" in doc or "verdict" in doc):
        return "twosource"
    if "pareto" in doc or ("n_max" in doc and ("p_manip" in doc or "frontier" in doc)):
        return "twosource-plan"
    if "runs" in doc and "config" in doc:
        runs = doc.get("runs")
        cfg = doc.get("config") or {}
        if isinstance(cfg, Mapping) and "case" in cfg and "attackers" in cfg:
            return "collab-simulate"
        if isinstance(runs, list):
            return "collab-sweep"
    if "nodes" in doc and ("verdict" in doc or "rounds" in doc):
        return "collab-nodes"
    if "accuracy" in doc and ("disparate_impact" in doc or _metrics.DI.short in doc):
        return "platform-info"
    return None

def _one_or_several(
    block: Any, kind: str, label: Callable[[str], str]
) -> Iterator[tuple[str, Doc, str]]:
    """A demo's block of ``kind``: one document of that kind, or several by name (labelled)."""
    if not isinstance(block, Mapping):
        return
    if infer_kind(block) == kind:
        yield (kind, block, "")
        return
    for name, part in block.items():
        if isinstance(part, Mapping):
            yield (kind, part, label(str(name)))


def split_document(doc: Doc, source: str) -> Iterator[tuple[str, Doc, str]]:
    """``(kind, part, label)`` for each part of a document; composite documents give several."""
    kind = infer_kind(doc)
    if kind != "demo":
        yield (kind or "unknown", doc, "")
        return
    yield from _one_or_several(doc.get("audit"), "audit", lambda name: name.replace("_", " "))
    if isinstance(doc.get("radius"), Mapping):
        yield ("radius", doc["radius"], "")
    yield from _one_or_several(doc.get("sequential"), "sequential", lambda name: f"{name} access")
    for key in ("twosource", "collab", "collab_simulate"):
        part = doc.get(key)
        if isinstance(part, Mapping):
            yield (infer_kind(part) or "unknown", part, "")

_PROVENANCE_ORDER = (
    "model",
    "model_identity",
    "backend",
    "endpoint",
    "created",
    "time",
    "started",
    "finished",
    "command",
    "argv",
    "seed",
    "seeds",
    "queries",
    "paid",
    "cached",
    "unparsed",
    "refused",
    "truncated",
    "by_group",
    "data",
    "dataset",
    "fairprobe_version",
    "version",
    "python",
    "platform",
    "host",
)

def _flatten(d: Any, prefix: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    if isinstance(d, Mapping) and depth < 3:
        for k, v in d.items():
            yield from _flatten(v, f"{prefix}{k}.", depth + 1)
    elif isinstance(d, list) and all(not isinstance(x, Mapping | list) for x in d):
        yield (prefix.rstrip("."), ", ".join(fmt(x) for x in d) if d else "none")
    elif isinstance(d, list):
        yield (prefix.rstrip("."), f"{len(d)} entries")
    else:
        yield (prefix.rstrip("."), fmt(d) if not isinstance(d, str) else d)

def provenance_of(doc: Doc, source: str, kind: str) -> Provenance:
    """Provenance rows: the document's ``provenance`` (whatever keys it has), else legacy fields."""
    prov = doc.get("provenance")
    items: list[tuple[str, str]] = []
    tables: list[Table] = []
    if isinstance(prov, Mapping) and prov:
        items, tables = _contract_provenance(prov)
    else:
        items.append(("provenance", "not recorded (result written before the provenance "
                                    "contract); fields below are read from the result itself"))
        nested = _nested_backend(doc)
        if nested and not isinstance(doc.get("backend"), str):
            items.append(("model", nested))
        for label, path in (
            ("model", ("backend",)),
            ("model", ("config", "case")),
            ("seed", ("seed",)),
            ("seed", ("config", "seed")),
            ("queries drawn", ("queried",)),
            ("queries paid", ("paid",)),
            ("queries from the cache", ("cached",)),
            ("unparsed answers", ("unparsed",)),
            ("queries paid", ("queries_paid",)),
            ("queries from the cache", ("queries_cached",)),
            ("queries paid", ("queries", "total")),
        ):
            v = get(doc, *path)
            if v is not None and not isinstance(v, Mapping | list):
                items.append((label, fmt(v) if not isinstance(v, str) else v))
    schema = doc.get("schema") if isinstance(doc.get("schema"), str) else None
    return Provenance(source=source, kind=kind, schema=schema, items=items, tables=tables)


def _nested_backend(doc: Mapping[str, Any], depth: int = 0) -> str | None:
    """The first ``backend`` identity inside a legacy composite result (e.g. the demo's)."""
    for v in doc.values():
        if isinstance(v, Mapping):
            if isinstance(v.get("backend"), str):
                return str(v["backend"])
            if depth < 1 and (found := _nested_backend(v, depth + 1)):
                return found
    return None


_OUTCOME_COLS = ("asked", "paid", "cached", "ok", "unparsed", "refused", "truncated")


def _answers_line(d: Mapping[str, Any]) -> str:
    parts = [f"{fmt(d[k])} {k if k != 'cached' else 'from the cache'}"
             for k in _OUTCOME_COLS if k in d and k != "asked"]
    return (f"{fmt(d['asked'])} asked: " if "asked" in d else "") + ", ".join(parts)


def _contract_provenance(
    prov: Mapping[str, Any],
) -> tuple[list[tuple[str, str]], list[Table]]:
    """Rows (and the per-group answers table) of a ``fairprobe.provenance`` block; keys it does
    not know are flattened after the known ones."""
    items: list[tuple[str, str]] = []
    tables: list[Table] = []
    done = set()
    backend = prov.get("backend")
    if isinstance(backend, Mapping):
        ident = backend.get("identity")
        items.append(("model", str(ident) if ident else "n/a"))
        for k, v in backend.items():
            if k != "identity" and v is not None:
                items.append((f"model {k.replace('_', ' ')}",
                              v if isinstance(v, str) else fmt(v) if not isinstance(
                                  v, Mapping | list) else ", ".join(
                                  f"{a}={b}" for a, b in (v.items() if isinstance(v, Mapping)
                                                          else enumerate(v)))))
        done.add("backend")
    for key, label in (("created_utc", "time (UTC)"), ("seed", "seed")):
        if key in prov:
            items.append((label, fmt(prov[key]) if not isinstance(prov[key], str)
                          else prov[key]))
            done.add(key)
    if isinstance(prov.get("command"), list):
        import shlex

        items.append(("command", shlex.join(str(a) for a in prov["command"])))
        done.add("command")
    answers = mapping(prov.get("answers"))
    if answers:
        total = mapping(answers.get("total"))
        if total:
            items.append(("queries", _answers_line(total)))
        by_group = mapping(answers.get("by_group"))
        if by_group:
            tables.append(Table(
                caption="Answers per group: asked, paid, from the cache, and their outcomes",
                header=["group", *[c if c != "cached" else "from the cache"
                                   for c in _OUTCOME_COLS]],
                rows=[[str(g), *[fmt(get(v, c)) if get(v, c) is not None else "n/a"
                                 for c in _OUTCOME_COLS]] for g, v in by_group.items()],
            ))
        for k, v in answers.items():
            if k not in ("total", "by_group") and v is not None:
                items.append((f"answers: {k.replace('_', ' ')}", fmt(v)))
        done.add("answers")
    pool = mapping(prov.get("query_pool"))
    if pool:
        desc = ", ".join(
            f"{k} {fmt(v) if not isinstance(v, str | list) else v if isinstance(v, str) else len(v)}"
            for k, v in pool.items() if k not in ("sha256", "columns"))
        if pool.get("sha256"):
            desc += f", sha256 {str(pool['sha256'])[:16]}..."
        items.append(("query pool", desc.strip(", ")))
        if isinstance(pool.get("columns"), list):
            items.append(("query pool columns", ", ".join(map(str, pool["columns"]))))
        done.add("query_pool")
    notes = prov.get("notes")
    if isinstance(notes, list):
        for n in notes:
            items.append(("note", str(n)))
        done.add("notes")
    keys = sorted((k for k in prov if k not in done),
                  key=lambda k: (_PROVENANCE_ORDER.index(k) if k in _PROVENANCE_ORDER else 99, k))
    for k in keys:
        if prov[k] is None:
            continue
        for name, value in _flatten(prov[k], f"{k}."):
            items.append((name.replace("_", " "), value))
    return items, tables

def adapt_generic(doc: Doc, source: str, label: str, kind: str) -> Section:
    facts = [(k.replace("_", " "), fmt(v) if not isinstance(v, str) else v)
             for k, v in doc.items()
             if k not in ("schema", "kind", "provenance") and not isinstance(v, Mapping | list)]
    title = {"platform-info": "Platform model"}.get(kind, f"Result ({kind})")
    verdict = doc.get("verdict") if isinstance(doc.get("verdict"), str) else None
    return Section(kind, title, source, verdict,
                   f"{title}: {len(facts)} recorded values (no figure for this kind).",
                   title.lower(), facts, [], [], extra_assumptions(doc), [])

_ADAPTERS: dict[str, Callable[[Doc, str, str], Section]] = {
    "audit": adapt_audit,
    "sequential": adapt_sequential,
    "radius": adapt_radius,
    "discover": adapt_discover,
    "twosource": adapt_twosource,
    "twosource-plan": adapt_twosource_plan,
    "collab-simulate": adapt_collab_simulate,
    "collab-sweep": adapt_collab_sweep,
    "collab-nodes": adapt_collab_nodes,
    "proxy": adapt_proxy,
    "profile": adapt_profile,
}

def adapt(kind: str, doc: Doc, source: str, label: str = "") -> Section:
    """The report section of one result (part) of a given kind.

    Values read where a number belongs that are text, lists or objects, and a fairness verdict
    that no recorded estimate backs, become warnings of the section (the stored verdict is
    shown as recorded, and flagged as not checked).
    """
    fn = _ADAPTERS.get(kind)
    with non_numbers() as bad:
        section = adapt_generic(doc, source, label, kind) if fn is None else fn(doc, source, label)
    if bad:
        shown = ", ".join(dict.fromkeys(bad[:5]))
        section.warnings.append(
            f"{len(bad)} value{'s' if len(bad) != 1 else ''} where a number belongs "
            f"{'are' if len(bad) != 1 else 'is'} not a number ({shown}); "
            f"{'they are' if len(bad) != 1 else 'it is'} left out, and the stored verdict "
            f"{section.verdict!r} is shown as recorded, not checked.")
    unbacked = unbacked_verdict(kind, doc)
    if unbacked:
        section.warnings.append(unbacked)
    section.notes[:0] = [f"Warning: {w}" for w in section.warnings]
    return section


def unbacked_verdict(kind: str, doc: Doc) -> str | None:
    """A warning when an audit states a fair/unfair verdict but records no finite estimate."""
    if kind != "audit":
        return None
    parts = [v for v in mapping(doc.get("summaries")).values() if isinstance(v, Mapping)]
    if not parts and isinstance(doc.get("metric"), Mapping):
        parts = [doc["metric"]]
    missing = [str(p.get("metric", "metric")) for p in parts
               if polarity(str(p.get("verdict"))) in (-1, 1)
               and not isinstance(p.get("estimate"), int | float)]
    if not missing:
        return None
    return (f"the verdict of {', '.join(missing[:3])} is not backed by a recorded estimate "
            f"(null or missing); it is shown as recorded, not checked.")
