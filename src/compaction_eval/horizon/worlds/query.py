"""Family `query`: analyse query results and report figures from an early and a late result.

Answer: one region's revenue total in the first quarter (early query), its refunds in the
third (mid) and its total in the last quarter (late), and a figure computed from all three.
The request says which region and which database to use: both live only in the request.
"""

from __future__ import annotations

import re

from compaction_eval.horizon.worlds.content import WORDS, rng_for
from compaction_eval.horizon.worlds.model import PlanStep, World

SYSTEM = (
    "You are a data analyst with SQL access. Investigate with the tools, then call "
    "submit(answer) once with the final answer."
)
FORMAT = "REPORT region=<region> first=<first> last=<last> refunds=<refunds> net_growth=<net_growth>"
CONSTRAINT = 'Query only the read replica: pass db="replica" to every query.'
REGIONS = ["north", "south", "east", "west", "central", "coastal"]
YEAR = 2025


def _sales_sql(q: int) -> str:
    return f"SELECT quarter, region, product, revenue FROM sales WHERE quarter = '{YEAR}-Q{q}'"


REFUNDS_SQL = f"SELECT quarter, region, reason, amount FROM refunds WHERE quarter = '{YEAR}-Q3'"
FILLER_SQL = [
    "SELECT id, name, segment, country FROM customers ORDER BY id",
    "SELECT day, currency, rate FROM fx_rates ORDER BY day",
    "SELECT sku, product, list_price FROM catalog ORDER BY sku",
    "SELECT ts, service, latency_ms FROM api_latency ORDER BY ts",
]


def make(index: int, size: str, lines: int, window: int) -> World:
    wid = f"query-{index + 1:02d}"
    rng = rng_for(wid)
    region = REGIONS[index % len(REGIONS)]
    products = [f"{a}-{b}" for a, b in (rng.sample(WORDS, 2) for _ in range(max(4, lines // len(REGIONS))))]

    tables: dict[str, str] = {}
    totals: dict[int, dict[str, int]] = {}
    for quarter in range(1, 5):
        rows = ["| quarter | region | product | revenue |", "|---|---|---|---|"]
        totals[quarter] = {}
        for r in REGIONS:
            values = [rng.randrange(1_000, 90_000) for _ in products]
            rows += [f"| {YEAR}-Q{quarter} | {r} | {p} | {v} |" for p, v in zip(products, values, strict=True)]
            totals[quarter][r] = sum(values)
            rows.append(f"| {YEAR}-Q{quarter} | {r} | TOTAL | {totals[quarter][r]} |")
        tables[_sales_sql(quarter)] = "\n".join(rows) + f"\n({len(rows) - 2} rows)"
    refund_rows = ["| quarter | region | reason | amount |", "|---|---|---|---|"]
    refunds: dict[str, int] = {}
    for r in REGIONS:
        amounts = [rng.randrange(100, 9_000) for _ in range(max(3, lines // 12))]
        refund_rows += [f"| {YEAR}-Q3 | {r} | {rng.choice(WORDS)} | {a} |" for a in amounts]
        refunds[r] = sum(amounts)
        refund_rows.append(f"| {YEAR}-Q3 | {r} | REFUNDS TOTAL | {refunds[r]} |")
    tables[REFUNDS_SQL] = "\n".join(refund_rows) + f"\n({len(refund_rows) - 2} rows)"
    fillers = FILLER_SQL[: 1 + index % len(FILLER_SQL)]
    for sql in fillers:
        tables[sql] = "\n".join(
            f"| {n} | {rng.choice(WORDS)}-{rng.choice(WORDS)} | {rng.choice(WORDS)} | {rng.randrange(1, 99999)} |" for n in range(lines)
        ) + f"\n({lines} rows)"
    tables["SHOW TABLES"] = "sales\nrefunds\ncustomers\nfx_rates\ncatalog\napi_latency"

    def q(sql: str, yields: tuple[str, ...] = (), evidence: str | None = None) -> PlanStep:
        return PlanStep("query", {"sql": sql}, yields, evidence)

    plan = [
        q("SHOW TABLES"),
        q(_sales_sql(1), ("first",), rf"\| {YEAR}-Q1 \| \w+ \| TOTAL \|"),
        *[q(s) for s in fillers[:1]],
        q(_sales_sql(2)),
        q(REFUNDS_SQL, ("refunds",), r"\| REFUNDS TOTAL \|"),
        q(_sales_sql(3)),
        *[q(s) for s in fillers[1:]],
        q(_sales_sql(4), ("last",), rf"\| {YEAR}-Q4 \| \w+ \| TOTAL \|"),
    ]
    first, last, refund = totals[1][region], totals[4][region], refunds[region]
    request = (
        f"Finance wants the revenue development for region {region} over {YEAR}: report its total revenue in "
        f"{YEAR}-Q1 (first), its total in {YEAR}-Q4 (last), its refunds total in {YEAR}-Q3, and "
        "net_growth = last - first - refunds.\n"
        f"Constraint: {CONSTRAINT}\n"
        f"Answer format (one line, exactly): {FORMAT}\n"
        "Numbers are plain integers. Submit it with the submit tool."
    )
    return World(
        id=wid, family="query", size=size, context_window=window, system=SYSTEM, request=request,
        files={}, plan=plan, tables=tables, required_db="replica",
        expected={"region": region, "first": str(first), "last": str(last), "refunds": str(refund),
                  "net_growth": str(last - first - refund)},
        answer_format=FORMAT, constraint=CONSTRAINT, extract=extract,
        planted={"first": "early", "refunds": "mid", "last": "late"},
    )


def extract(text: str, request_visible: bool) -> dict[str, str | None]:
    """The region comes from the request; the figures from the TOTAL rows of that region."""
    m = re.search(r"revenue development for region (\w+)", text)
    region = m.group(1) if m else None
    found: dict[str, str | None] = {"region": region, "first": None, "last": None, "refunds": None, "net_growth": None}
    if region is None:
        return found
    for name, pattern in (
        ("first", rf"\| {YEAR}-Q1 \| {region} \| TOTAL \| (\d+) \|"),
        ("last", rf"\| {YEAR}-Q4 \| {region} \| TOTAL \| (\d+) \|"),
        ("refunds", rf"\| {YEAR}-Q3 \| {region} \| REFUNDS TOTAL \| (\d+) \|"),
    ):
        hits = re.findall(pattern, text)
        found[name] = hits[-1] if hits else None
    if found["refunds"] is not None and found["first"] is not None and found["last"] is not None:
        found["net_growth"] = str(int(found["last"]) - int(found["first"]) - int(found["refunds"]))
    return found
