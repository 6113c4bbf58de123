"""The run store: one SQLite file (standard library) a CI cache can keep between nights.

A run is identified by the digest of its result files, so adding the same run twice changes
nothing. What makes two runs comparable is stored beside its figures: the corpus fingerprint,
the compaction settings, the model, and the tiers (who wrote the answers: stand-in, API or
recorded; who decided the verdicts: matcher or judge). A file that is not this store (another
program's database, a truncated copy) is refused with one line and never written to.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem

SCHEMA = "compaction-eval/history@1"
SQLITE_MAGIC = b"SQLite format 3\x00"
# the documents a run directory may hold, in the order they are indexed
RUN_FILES = ("results.json", "horizon.json", "decay.json", "probes.json")

_DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    name TEXT,
    created TEXT NOT NULL,
    git_commit TEXT,
    model TEXT,
    answers TEXT NOT NULL,
    verdicts TEXT NOT NULL,
    settings TEXT NOT NULL,
    corpus TEXT NOT NULL,
    path TEXT
);
CREATE TABLE figures (
    run TEXT NOT NULL REFERENCES runs(id),
    suite TEXT NOT NULL,
    subject TEXT NOT NULL,
    category TEXT NOT NULL,
    metric TEXT NOT NULL,
    value REAL,
    lo REAL,
    hi REAL,
    n INTEGER,
    PRIMARY KEY (run, suite, subject, category, metric)
);
CREATE INDEX figures_by_subject ON figures (suite, subject, category, metric);
"""


@dataclass(frozen=True)
class Run:
    """One indexed run: what it measured and what it may be compared with."""

    id: str
    name: str | None
    created: str
    git_commit: str | None
    model: str | None
    answers: str
    verdicts: str
    settings: str
    corpus: str
    path: str | None

    @property
    def comparable_key(self) -> tuple[str, ...]:
        """Runs with the same key measure the same thing the same way."""
        return (self.corpus, self.settings, self.model or "", self.answers, self.verdicts)


def _bad(path: Path, message: str) -> ContractError:
    return ContractError([Problem(str(path), "", message)])


@contextmanager
def open_store(path: Path | str, *, create: bool = False) -> Iterator[sqlite3.Connection]:
    """Open the store at `path` (created when missing and `create`), checked before use.

    Raises:
        ContractError: the file is missing (and not `create`), not a regular file, not SQLite,
            damaged, or another program's database. The file is left as it was.
    """
    path = Path(path)
    if path.exists() or path.is_symlink():
        if path.is_symlink() or not path.is_file():
            raise _bad(path, "not a regular file (a history database is one SQLite file)")
        with path.open("rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
        if head != SQLITE_MAGIC:
            raise _bad(path, "not a SQLite database (refusing to touch it)")
        conn = _connect(path, "rw")
        try:
            _check(conn, path)
            yield conn
            conn.commit()
        except sqlite3.DatabaseError as exc:
            raise _bad(path, f"damaged history database: {exc}") from None
        finally:
            conn.close()
        return
    if not create:
        raise _bad(path, "no history database here (`history add` creates one)")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = _connect(path, "rwc")
    try:
        conn.executescript(_DDL)
        conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA,))
        conn.commit()
        yield conn
        conn.commit()
    finally:
        conn.close()


def _connect(path: Path, mode: str) -> sqlite3.Connection:
    # a URI so that `mode=rw` never creates a file where a wrong path was given
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def _check(conn: sqlite3.Connection, path: Path) -> None:
    try:
        ok = conn.execute("PRAGMA quick_check").fetchone()[0]
        if ok != "ok":
            raise _bad(path, f"damaged history database: {ok}")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        schema = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() if "meta" in tables else None
    except sqlite3.DatabaseError as exc:
        raise _bad(path, f"damaged history database: {exc}") from None
    if schema is None or schema[0] != SCHEMA or not {"runs", "figures"} <= tables:
        raise _bad(path, f"not a {SCHEMA} database (another program's file?); refusing to write to it")


# ----------------------------------------------------------------------------- indexing


def tiers(results: dict[str, Any]) -> tuple[str, str]:
    """(who wrote the answers, who decided the verdicts) of a run's document."""
    model = str(results.get("model") or "")
    if results.get("offline_stand_in"):
        answers = "stand-in"
    elif model.startswith("recorded/"):
        answers = "recorded"
    else:
        answers = "api"
    config = results.get("config") or {}
    verdicts = str(results.get("tier") or ("judge" if config.get("judge_model") else "matcher"))
    return answers, verdicts


def corpus_fingerprint(results: dict[str, Any]) -> str:
    """The run's corpus fingerprint (`corpus.fingerprint`, a digest of its traces and labels),
    else a digest of what its samples were asked: (trace, point, fact id and category)."""
    recorded = (results.get("corpus") or {}).get("fingerprint")
    if isinstance(recorded, str) and recorded:
        return recorded
    asked = sorted(
        (str(s.get("trace")), int(s.get("point") or 0), tuple(sorted((str(f.get("id")), str(f.get("category"))) for f in s.get("facts", []))))
        for s in results.get("samples", [])
    )
    return "samples:" + hashlib.sha256(json.dumps(asked).encode()).hexdigest()[:16]


def _settings(doc: dict[str, Any]) -> str:
    config = doc.get("config") or {}
    keep = {k: config.get(k) for k in ("compaction", "judge_model", "epochs")}
    if keep["compaction"] is None:
        keep["compaction"] = {k: config.get(k) for k in ("budget", "keep_last", "shape", "focus")}
    return json.dumps(keep, sort_keys=True)


def _ci(value: Any) -> tuple[float | None, float | None]:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return _num(value[0]), _num(value[1])
    return None, None


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if x == x else None  # NaN is no figure


Figure = tuple[str, str, str, str, float | None, float | None, float | None, int | None]


def figures_of(docs: dict[str, dict[str, Any]]) -> list[Figure]:
    """(suite, subject, category, metric, value, lo, hi, n) for every figure the documents hold.
    `category` is '' for a whole-prompt figure."""
    out: list[Figure] = []
    results = docs.get("results.json")
    if results:
        for p in results.get("prompts", []):
            name = str(p.get("prompt"))
            for metric in ("recall", "precision", "context_recall"):
                lo, hi = _ci(p.get(f"{metric}_ci"))
                out.append(("recall", name, "", metric, _num(p.get(metric)), lo, hi, p.get("samples")))
            for cat, row in (p.get("recall_by_category") or {}).items():
                lo, hi = _ci(row.get("ci"))
                out.append(("recall", name, cat, "recall", _num(row.get("mean")), lo, hi, row.get("n")))
    horizon = docs.get("horizon.json")
    if horizon:
        for c in horizon.get("configs", []):
            name = str(c.get("config"))
            lo, hi = _ci(c.get("completion_ci"))
            out.append(("horizon", name, "", "completion", _num(c.get("completion_rate")), lo, hi, len(c.get("samples") or [])))
            for metric in ("input_tokens", "cost_usd"):
                out.append(("horizon", name, "", metric, _num(c.get(metric)), None, None, None))
    decay = docs.get("decay.json")
    if decay:
        for p in decay.get("prompts", []):
            name = str(p.get("prompt"))
            for row in p.get("survival", []):
                lo, hi = _ci(row.get("ci"))
                out.append(("decay", name, "", f"survival@{row.get('k')}", _num(row.get("survival")), lo, hi, None))
    probes = docs.get("probes.json")
    if probes:
        for p in probes.get("prompts", []):
            name = str(p.get("prompt"))
            lo, hi = _ci(p.get("accuracy_ci"))
            out.append(("probes", name, "", "accuracy", _num(p.get("accuracy")), lo, hi, len(p.get("samples") or [])))
    return out


def read_run_files(run_dir: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """(digest of the run's documents, the documents by file name)."""
    from compaction_eval.contracts.runfiles import read_results
    from compaction_eval.contracts.traces import parse_json_text

    run_dir = Path(run_dir)
    if not any((run_dir / name).is_file() for name in RUN_FILES):
        raise _bad(run_dir, f"not a run directory (none of {', '.join(RUN_FILES)})")
    digest = hashlib.sha256()
    docs: dict[str, dict[str, Any]] = {}
    for name in RUN_FILES:
        path = run_dir / name
        if not path.is_file():
            continue
        raw = path.read_bytes()
        digest.update(name.encode() + b"\0" + hashlib.sha256(raw).digest())
        doc = read_results(run_dir) if name == "results.json" else parse_json_text(raw.decode("utf-8", "replace"), str(path))
        if not isinstance(doc, dict):
            raise _bad(path, "expected a JSON object")
        docs[name] = doc
    return digest.hexdigest(), docs


def add_run(conn: sqlite3.Connection, run_dir: Path | str, read: tuple[str, dict[str, dict[str, Any]]] | None = None) -> tuple[str, bool]:
    """Index the run in `run_dir` (`read`: its `read_run_files`, when already read); (its id,
    whether it was new). Adding it again is a no-op."""
    run_dir = Path(run_dir)
    rid, docs = read or read_run_files(run_dir)
    if conn.execute("SELECT 1 FROM runs WHERE id = ?", (rid,)).fetchone():
        return rid, False
    first = next(name for name in RUN_FILES if name in docs)
    head = docs[first]
    answers, verdicts = tiers(head)
    model = head.get("model") or head.get("agent")
    created = str(head.get("created") or "")
    if not created:  # older files: when the file was written is when the run ended
        created = datetime.fromtimestamp((run_dir / first).stat().st_mtime, timezone.utc).isoformat(timespec="seconds")
    # no commit here: `open_store` commits once when the caller is done, and rolls back on an
    # error, so one command adds all its runs or none (and syncs to disk once)
    conn.execute(
        "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (rid, head.get("run"), created, head.get("git_commit"), model, answers, verdicts, _settings(head),
         corpus_fingerprint(head), str(run_dir.resolve())),
    )
    conn.executemany("INSERT OR REPLACE INTO figures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [(rid, *f) for f in figures_of(docs)])
    return rid, True


def runs(conn: sqlite3.Connection) -> list[Run]:
    """Every run, oldest first."""
    rows = conn.execute("SELECT * FROM runs ORDER BY created, id").fetchall()
    return [Run(**{k: r[k] for k in r.keys()}) for r in rows]


def series_rows(conn: sqlite3.Connection, *, suite: str, subject: str, category: str, metric: str) -> dict[str, tuple]:
    """Run id -> (value, lo, hi, n) of one figure."""
    rows = conn.execute(
        "SELECT run, value, lo, hi, n FROM figures WHERE suite = ? AND subject = ? AND category = ? AND metric = ?",
        (suite, subject, category, metric),
    ).fetchall()
    return {r["run"]: (r["value"], r["lo"], r["hi"], r["n"]) for r in rows}


def subjects(conn: sqlite3.Connection, *, suite: str = "recall", metric: str = "recall") -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT subject FROM figures WHERE suite = ? AND metric = ? ORDER BY subject",
                                       (suite, metric))]


def categories(conn: sqlite3.Connection, subject: str, *, suite: str = "recall", metric: str = "recall") -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT category FROM figures WHERE suite = ? AND subject = ? AND metric = ? AND category != '' ORDER BY category",
        (suite, subject, metric))]
