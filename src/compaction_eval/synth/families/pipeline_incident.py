"""Family 3: a data-pipeline incident.

Story: row counts that differ by a handful (the near-miss count of a neighbouring day sits in
the same table), a wrong first hypothesis (dedup), the missing rows found in a bad partition
written by one job run (the job ID), the line that computes the partition, a look-alike file
in a sibling pipeline that does it right, a plan to rerun the whole load that a downstream side
effect defeats (superseded), and an idempotent targeted backfill. The job config prints a
secret.
"""

from __future__ import annotations

import random
import re
from types import SimpleNamespace

from compaction_eval.synth.build import SynthTrace, TraceBuilder
from compaction_eval.synth.padding import PaddingPlan
from compaction_eval.synth.tooloutput import (
    SourceFile,
    Vocab,
    env_dump,
    fake_aws_key_id,
    fake_live_token,
    git_log,
    grep_output,
    pytest_module,
    pytest_progress,
    pytest_summary,
    python_module,
    real_hits,
    sql_table,
    stub_file,
    unified_diff,
)

FAMILY = "pipeline-incident"

VARIANTS = [
    SimpleNamespace(
        project="shopdata",
        vocab=Vocab("shopdata", ("order", "partition", "batch", "row", "shop", "payout", "refund", "sku",
                                 "customer", "manifest", "watermark", "snapshot"),
                    ("Order", "Partition", "Batch", "Row", "Shop", "Payout", "Manifest", "Snapshot")),
        complaint="Finance says the order totals in the revenue dashboard for 2024-05-12 don't match Shopify.",
        intent_key="Shopify",
        src_table="raw.shop_orders", dst_table="analytics.fct_orders", key="order_id", ts_col="created_at",
        day="2024-05-12",
        window=[("2024-05-08", 46871, 46871), ("2024-05-09", 47455, 47444), ("2024-05-10", 47902, 47879),
                ("2024-05-11", 48132, 48123), ("2024-05-12", 48231, 48213)],
        near_miss="48,132",
        load_job="orders_daily_load", dedup_job="dedupe_orders", sweep_job="orders_late_sweep",
        sweep_run="lsw-20240513-7f3a91c2", load_run="odl-20240513-0200-5be1",
        sweep_file="pipelines/orders/late_sweep.py",
        sweep_doc="Late-arrival sweep: orders that land after the daily load are appended to their day.",
        buggy_line='    partition = run_date.strftime("%Y-%d-%m")',
        fixed_line='    partition = run_date.strftime("%Y-%m-%d")',
        sibling_file="pipelines/returns/late_sweep.py",
        sibling_line='    partition = run_date.strftime("%Y-%m-%d")',
        grep_pattern="strftime",
        bad_dt="2024-12-05", late_from="23:41",
        shift_desc="day and month swapped",
        commit="e3d9b01", commit_subject="Late sweep: format partition from run_date (#412)", commit_date="2024-05-09",
        misplaced=[("2024-09-05", 11), ("2024-10-05", 23), ("2024-11-05", 9), ("2024-12-05", 18)],
        misplaced_sql="SELECT dt, count(*) AS n FROM analytics.fct_orders WHERE dt > '2024-05-31' GROUP BY dt ORDER BY dt",
        misplaced_why="every day since e3d9b01 landed on 2024-05-09 has its late orders in a future partition",
        downstream="partner_payouts",
        downstream_why="a successful orders_daily_load triggers partner_payouts, which regenerates and re-sends the "
                       "payout files to partners over SFTP, so a rerun is not idempotent",
        cleanup=["-- Move late orders written to swapped-date partitions back to their day. Idempotent:",
                 "-- rows are matched on order_id, and a misplaced copy is deleted only once its right copy exists.",
                 "MERGE INTO analytics.fct_orders AS t",
                 "USING (",
                 "    SELECT *, CAST(created_at AS DATE) AS right_dt",
                 "    FROM analytics.fct_orders",
                 "    WHERE dt IN ('2024-09-05', '2024-10-05', '2024-11-05', '2024-12-05')",
                 ") AS s",
                 "ON t.order_id = s.order_id AND t.dt = s.right_dt",
                 "WHEN NOT MATCHED THEN INSERT (order_id, shop_id, created_at, amount, currency, dt)",
                 "    VALUES (s.order_id, s.shop_id, s.created_at, s.amount, s.currency, s.right_dt);",
                 "",
                 "DELETE FROM analytics.fct_orders",
                 "WHERE dt IN ('2024-09-05', '2024-10-05', '2024-11-05', '2024-12-05')",
                 "  AND order_id IN (SELECT order_id FROM analytics.fct_orders WHERE dt BETWEEN '2024-05-09' AND '2024-05-12');"],
        backfill_file="backfills/2024-05-13_late_sweep_partitions.sql",
        secret_var="WH_SERVICE_TOKEN", secret_kind="live", sweep_size=(190, 240),
        rerun_from="2024-05-09", downstream_dir="payouts", bad_is_new=True,
        downstream_block=["def run(run_date: date) -> None:",
                          '    """Build each partner\'s payout file for run_date and upload it to their SFTP inbox."""',
                          "    for partner in partners.active():",
                          "        payload = build_payout_file(partner, run_date)",
                          "        sftp.upload(partner.inbox, f\"payouts_{run_date:%Y%m%d}.csv\", payload)",
                          '        log.info("payout sent", partner=partner.id, run_date=run_date.isoformat())'],
        gap_note="It is not only that day: the warehouse is short on every day since 2024-05-09 ({diffs}).",
    ),
    SimpleNamespace(
        project="clicktrail",
        vocab=Vocab("clicktrail", ("event", "session", "partition", "batch", "device", "visitor", "page",
                                   "campaign", "watermark", "offset", "cohort", "funnel"),
                    ("Event", "Session", "Partition", "Batch", "Device", "Visitor", "Cohort", "Funnel")),
        complaint="Product analytics says sessions for 2024-08-03 look low: the DAU chart in the growth dashboard dips.",
        intent_key="DAU",
        src_table="raw.click_events", dst_table="mart.sessionized_events", key="event_id", ts_col="event_ts",
        day="2024-08-03",
        # mart(d) = raw(d) - late(d) + late(d+1): each day's late events sit one partition early.
        window=[("2024-07-30", 3288019, 3288630), ("2024-07-31", 3350417, 3350304),
                ("2024-08-01", 3416702, 3416806), ("2024-08-02", 3398115, 3398053),
                ("2024-08-03", 3417602, 3417062)],
        near_miss="3,416,702",
        load_job="sessionize_daily", dedup_job="dedupe_events", sweep_job="events_compactor",
        sweep_run="ecomp-20240804-0215-a91c", load_run="sess-20240804-0200-17d2",
        sweep_file="pipelines/clickstream/compact.py",
        sweep_doc="Compaction of late events into daily partitions of mart.sessionized_events.",
        buggy_line="    partition = (run_date - timedelta(days=1)).isoformat()",
        fixed_line="    partition = run_date.isoformat()",
        sibling_file="pipelines/clickstream/backfill_compact.py",
        sibling_line="    partition = run_date.isoformat()",
        grep_pattern=r"timedelta\(days=1\)|isoformat\(\)",
        bad_dt="2024-08-02", late_from="22:58",
        shift_desc="one day early: the logical date is shifted back a second time",
        commit="4c71f0a", commit_subject="Pass the logical date to the compactor (#233)", commit_date="2024-07-31",
        misplaced=[("2024-07-30", 611), ("2024-07-31", 498), ("2024-08-01", 602), ("2024-08-02", 540)],
        misplaced_sql="SELECT dt, count(*) AS n FROM mart.sessionized_events WHERE dt >= '2024-07-30' AND "
                      "CAST(event_ts AS DATE) <> dt GROUP BY dt ORDER BY dt",
        misplaced_why="every day since 4c71f0a landed on 2024-07-31 has its late events one partition early",
        downstream="engagement_emails",
        downstream_why="a successful sessionize_daily triggers engagement_emails, which sends streak and "
                       "re-engagement emails to users, so a rerun would email people twice",
        cleanup=["-- Move late events that the compactor wrote one day early. Idempotent: rows are matched",
                 "-- on event_id, and only rows whose event date differs from their partition are deleted.",
                 "MERGE INTO mart.sessionized_events AS t",
                 "USING (",
                 "    SELECT *, CAST(event_ts AS DATE) AS right_dt",
                 "    FROM mart.sessionized_events",
                 "    WHERE dt BETWEEN '2024-07-30' AND '2024-08-02' AND CAST(event_ts AS DATE) <> dt",
                 ") AS s",
                 "ON t.event_id = s.event_id AND t.dt = s.right_dt",
                 "WHEN NOT MATCHED THEN INSERT (event_id, session_id, visitor_id, event_ts, page, dt)",
                 "    VALUES (s.event_id, s.session_id, s.visitor_id, s.event_ts, s.page, s.right_dt);",
                 "",
                 "DELETE FROM mart.sessionized_events",
                 "WHERE dt BETWEEN '2024-07-30' AND '2024-08-02' AND CAST(event_ts AS DATE) <> dt;"],
        backfill_file="backfills/2024-08-04_compactor_partitions.sql",
        secret_var="AWS_ACCESS_KEY_ID", secret_kind="aws", sweep_size=(480, 580),
        rerun_from="2024-07-30", downstream_dir="engagement", bad_is_new=False,
        downstream_block=["def run(run_date: date) -> None:",
                          '    """Send streak and re-engagement emails for sessions completed on run_date."""',
                          "    for visitor in cohorts.due_for_email(run_date):",
                          "        mailer.send(visitor.email, template=pick_template(visitor), run_date=run_date)",
                          '        log.info("email sent", visitor=visitor.id, run_date=run_date.isoformat())'],
        gap_note="Other days are off as well, some with more rows in the mart than in the source ({diffs}): "
                 "rows are landing in the wrong day.",
    ),
]


def _fmt(n: int) -> str:
    return f"{n:,}"


def build(variant: int, seed: int, trace_id: str, padding: PaddingPlan | None = None) -> SynthTrace:
    """One pipeline-incident trace for content `variant`, filler drawn from `seed`."""
    c = VARIANTS[variant]
    rng = random.Random(seed)
    b = TraceBuilder(trace_id, family=FAMILY, variant=variant, seed=seed, padding=padding, vocab=c.vocab)
    v = c.vocab
    day_raw, day_dst = c.window[-1][1], c.window[-1][2]
    missing = day_raw - day_dst
    wh = "wh query"

    # ---- the fake repository
    sweep_block = [
        "def run(run_date: date, *, dry_run: bool = False) -> SweepResult:",
        f'    """Append rows that arrived after the daily load to their day\'s partition of {c.dst_table}."""',
        c.buggy_line,
        f"    late = source.read_late({c.src_table!r}, since=watermark(run_date))",
        "    if not late:",
        '        log.info("no late rows", run_date=run_date.isoformat())',
        "        return SweepResult(rows=0, partition=partition)",
        f"    written = sink.append({c.dst_table!r}, late, partition=f\"dt={{partition}}\", dry_run=dry_run)",
        '    log.info("sweep done", rows=written, partition=partition)',
        "    return SweepResult(rows=written, partition=partition)",
    ]
    sweep = python_module(rng, c.sweep_file, v, docstring=c.sweep_doc,
                          imports=["from datetime import date, timedelta", "from pipelines.common import log, sink, source",
                                   "from pipelines.common.watermarks import watermark"],
                          planted=[sweep_block], target_lines=rng.randint(*c.sweep_size))
    root_line = sweep.line_of(c.buggy_line)
    load = python_module(rng, f"pipelines/{c.sweep_file.split('/')[1]}/daily_load.py", v,
                         docstring=f"{c.load_job}: full daily load of {c.dst_table} from {c.src_table}.",
                         imports=["from pipelines.common import log, sink, source", "from pipelines.common.hooks import on_success"],
                         planted=[[f"@on_success(trigger=[{c.downstream!r}, \"dashboard_refresh\"])",
                                   "def run(run_date: date, *, full_refresh: bool = False) -> LoadResult:",
                                   '    """Load one day. With full_refresh the partition is dropped and rebuilt."""',
                                   "    if full_refresh:",
                                   f"        sink.drop_partition({c.dst_table!r}, dt=run_date.isoformat())",
                                   f"    rows = source.read_day({c.src_table!r}, run_date)",
                                   f"    return LoadResult(rows=sink.write({c.dst_table!r}, rows, dt=run_date.isoformat()))"]],
                         target_lines=rng.randint(180, 230))
    tests = pytest_module(rng, f"tests/pipelines/test_{c.sweep_file.rsplit('/', 1)[1]}", v,
                          imports=[f"from {c.sweep_file[:-3].replace('/', '.')} import run"],
                          target_lines=rng.randint(90, 120))
    secret = fake_live_token(rng) if c.secret_kind == "live" else fake_aws_key_id(rng)

    # ---- 0: the request
    b.request(
        f"{c.complaint} Can you figure out what happened in the pipeline and how to fix it?\n\n"
        "Ground rules:\n"
        "- Read-only on the warehouse: no writes, no reruns, no backfills against prod without asking me first.\n"
        "- Whatever fix you propose has to be idempotent (safe to run twice), we've been burned before.\n\n"
        "What I need back: what broke, the row counts, the job ID of the run that did it, and the exact backfill "
        "command for me to run."
    )
    b.fact("intent", "intent", f"Find out why {c.day} numbers in the dashboard are wrong ({c.complaint.split(' says ')[0]} "
           "reported it) and how to fix the pipeline.", [c.intent_key], [0])
    b.fact("read-only", "constraint", "Read-only on the warehouse: no writes, reruns or backfills against prod "
           "without asking the user first.", ["read-only"], [0], critical=True)
    b.fact("idempotent", "constraint", "Any proposed fix must be idempotent (safe to run twice).", ["idempotent"], [0])
    b.fact("report-format", "constraint", "Report what broke, the row counts, the job ID of the run that did it, "
           "and the exact backfill command for the user to run.", ["backfill command"], [0])

    # ---- phase A: counts, suspects, the rows, the partition, the line
    q_src = (f"SELECT dt, count(*) AS n FROM {c.src_table} WHERE dt BETWEEN '{c.window[0][0]}' AND '{c.day}' "
             "GROUP BY dt ORDER BY dt")
    b.call(f"Starting with the numbers: rows per day in the source, {c.src_table}, around {c.day}.",
           "bash", {"command": f'{wh} "{q_src}"'}, sql_table(["dt", "n"], [(d, _fmt(r)) for d, r, _ in c.window]))
    q_dst = q_src.replace(c.src_table, c.dst_table)
    s2 = b.call(f"Source has {_fmt(day_raw)} rows for {c.day}. Same query on the warehouse table.",
                "bash", {"command": f'{wh} "{q_dst}"'}, sql_table(["dt", "n"], [(d, _fmt(x)) for d, _, x in c.window]))
    diffs = ", ".join(f"{d}: {r - x}" for d, r, x in c.window if r != x)
    s3 = b.call(
        f"{c.dst_table} has {_fmt(day_dst)} for {c.day} against {_fmt(day_raw)} in {c.src_table}: {missing} rows "
        f"missing. {c.gap_note.format(diffs=diffs)} Which jobs touched {c.day}?",
        "bash", {"command": f"pipectl runs list --since {c.day} --limit 20"},
        sql_table(["run_id", "job", "partition", "state", "started", "rows"], _runs(rng, c, missing)))
    b.fact("row-counts", "number", f"For {c.day}: {c.src_table} has {_fmt(day_raw)} rows, {c.dst_table} has "
           f"{_fmt(day_dst)} ({missing} missing).", [_fmt(day_raw), _fmt(day_dst)], [s2.result, s3.assistant],
           critical=True)
    b.near_miss("row-counts", c.near_miss)
    load_log = _load_log(rng, c, day_dst)
    b.call(f"All runs succeeded. Two suspects: {c.dedup_job} (drops duplicates) and {c.sweep_job} (late arrivals). "
           f"First the main load log, to see what it wrote.", "bash", {"command": f"pipectl logs {c.load_run}"}, load_log)
    dd = b.call(f"{c.load_job} wrote {_fmt(day_dst)} rows, so the loss is not in the load itself. Checking the dedup step.",
                "bash", {"command": f"pipectl logs {c.dedup_job} --partition {c.day} | tail -n 12"},
                "\n".join(_log_lines(rng, c.day, [
                    ("INFO", f"{c.dedup_job} starting", f"partition=dt={c.day}"),
                    ("INFO", "window function dedupe", f"key={c.key} order_by={c.ts_col}"),
                    ("INFO", "scanned rows", f"n={day_dst}"), ("INFO", "duplicates removed", "n=0"),
                    ("INFO", f"{c.dedup_job} done", "duration_s=41.7")], start="02:31")))
    miss_rows = _missing_rows(rng, c, missing)
    q_missing = (f"SELECT s.{c.key}, s.{c.ts_col} FROM {c.src_table} s LEFT JOIN {c.dst_table} t "
                 f"ON t.{c.key} = s.{c.key} AND t.dt = '{c.day}' WHERE s.dt = '{c.day}' AND t.{c.key} IS NULL "
                 f"ORDER BY s.{c.ts_col}" + (" LIMIT 20" if missing > 20 else ""))
    att = b.call(
        f"Dedup removed 0 rows on {c.day}, so the dedup hypothesis is out. Which rows are missing exactly?",
        "bash", {"command": f'{wh} "{q_missing}"'},
        sql_table([c.key, c.ts_col], miss_rows[:20]) + (f"\n-- {missing} rows in total (LIMIT 20)" if missing > 20 else ""))
    b.fact("dedup-ruled-out", "attempt", f"Checked the dedup hypothesis: {c.dedup_job} removed 0 duplicates on "
           f"{c.day}, so dedup is not the cause.", ["dedup"], [dd.result, att.assistant])
    ids = ", ".join(f"'{r[0]}'" for r in miss_rows[:20])
    b.call(f"All the missing rows have {c.ts_col} after {c.late_from}: late arrivals, which is {c.sweep_job}'s job. "
           f"Are they anywhere in {c.dst_table}, in any partition?",
           "bash", {"command": f'{wh} "SELECT dt, count(*) FROM {c.dst_table} WHERE {c.key} IN ({ids}) GROUP BY dt"'},
           sql_table(["dt", "count"], [(c.bad_dt, min(20, missing))]))
    bad = b.call(
        f"Found them: they are in partition dt={c.bad_dt}, {c.shift_desc}. Let me read the sweep run that wrote them.",
        "bash", {"command": f"pipectl logs {c.sweep_run}"},
        "\n".join(_log_lines(rng, c.day, [
            ("INFO", f"{c.sweep_job} starting", f"run_id={c.sweep_run} run_date={c.day}"),
            ("INFO", "watermark", f"since={c.day}T{c.late_from}:00Z"),
            ("INFO", "read late rows", f"table={c.src_table} n={missing}"),
            ("INFO", "writing rows", f"table={c.dst_table} partition=dt={c.bad_dt} n={missing}"),
            *([("WARN", "partition did not exist, created", f"partition=dt={c.bad_dt}")] if c.bad_is_new else []),
            ("INFO", "sweep done", f"rows={missing} partition={c.bad_dt}"),
        ])))
    b.fact("bad-partition", "bug", f"The {missing} late rows of {c.day} were written to partition dt={c.bad_dt} "
           f"({c.shift_desc}) instead of dt={c.day}.", [f"dt={c.bad_dt}"], [bad.assistant], critical=True)
    job = b.call(
        f"Run {c.sweep_run} of {c.sweep_job} read {missing} late rows and wrote them to dt={c.bad_dt}. Its job "
        "definition, to find the entrypoint:", "bash", {"command": f"pipectl job show {c.sweep_job}"},
        "\n".join([f"name: {c.sweep_job}", "schedule: \"15 2 * * *\"", f"entrypoint: {c.sweep_file}:run",
                   "image: registry.internal/pipelines:2024.05.2", "resources: {cpu: 2, memory: 4Gi}", "env:"]
                  + [f"  {line.replace('=', ': ', 1)}" for line in env_dump(rng, {
                      "PIPELINE_ENV": "prod", "WH_ACCOUNT": f"{c.project}-prod", "WH_ROLE": "PIPELINE_WRITER",
                      c.secret_var: secret, "LOG_LEVEL": "INFO",
                      **({"AWS_DEFAULT_REGION": "us-east-1", "AWS_SECRET_ACCESS_KEY": "<from secret aws-pipeline>"}
                         if c.secret_kind == "aws" else {})}, shell=False).splitlines()]
                  + ["retries: 2", f"owner: data-platform@{c.project}.io"]))
    b.fact("job-id", "artifact", f"The bad rows were written by {c.sweep_job} run {c.sweep_run}.", [c.sweep_run],
           [bad.result, job.assistant])
    b.avoid("job-secret", "secret", f"The {c.secret_var} value in the {c.sweep_job} job definition.", [secret],
            [job.result])
    b.call(f"Entrypoint is {c.sweep_file}:run. (The job env holds a plain-text {c.secret_var}; I won't repeat "
           "it.) Reading the module.", "read_file", {"path": c.sweep_file}, sweep.numbered())
    sib = stub_file(c.sibling_file, c.sibling_line, rng.randint(40, 120))
    root = b.call(
        f"There it is: {c.sweep_file}:{root_line}, `{c.buggy_line.strip()}`. For run_date {c.day} that gives "
        f"{c.bad_dt}. Is the same pattern used elsewhere?",
        "grep", {"pattern": c.grep_pattern, "path": "pipelines"},
        grep_output(sorted(real_hits(c.grep_pattern, [sweep, sib, load])
                           + [(f"pipelines/{p}", rng.randint(20, 160), line) for p, line in (
                               ("common/watermarks.py", "    return (run_date - timedelta(days=1)).isoformat() + \"T00:00:00Z\""),
                               ("common/sink.py", "        stamp = datetime.now(timezone.utc).isoformat()"))
                              if re.search(c.grep_pattern, line)])))
    b.fact("root-cause", "artifact", f"Root cause: {c.sweep_file}:{root_line}, {c.buggy_line.strip()}",
           [c.sweep_file, str(root_line)], [root.assistant], alt_keys=[[c.sweep_file.split("/", 1)[1], str(root_line)]])
    b.near_miss("root-cause", c.sibling_file)
    b.call(f"{c.sibling_file} does it right (`{c.sibling_line.strip()}`); only {c.sweep_file} is wrong. When did "
           "that line change?", "bash", {"command": f"git log --format='%h %ad %an %s' --date=short -6 -- {c.sweep_file}"},
           git_log([(c.commit, c.commit_date, "Lena Fischer", c.commit_subject)]
                   + [(_sha(rng), f"2024-0{rng.randint(1, 4)}-{rng.randint(10, 28)}", rng.choice(("Omar Haddad", "Ji-woo Park")),
                       rng.choice(("Sweep: log row counts", "Add dry-run flag", "Type hints", "Retry on throttling")))
                      for _ in range(4)]))
    total_bad = _fmt(sum(n for _, n in c.misplaced))
    mis = b.call(f"{c.commit} \"{c.commit_subject}\" on {c.commit_date}. So every sweep since then is affected, not "
                 "just one day. Measuring the damage.", "bash", {"command": f'{wh} "{c.misplaced_sql}"'},
                 sql_table(["dt", "n"], c.misplaced))
    dmg = b.call(
        f"{total_bad} rows in {len(c.misplaced)} partitions: {c.misplaced_why}. That matches the per-day gaps in the "
        f"counts. How does a normal rerun of {c.load_job} work?", "read_file", {"path": load.path}, load.numbered())
    b.fact("damage", "number", f"{total_bad} rows in {len(c.misplaced)} partitions are misplaced ({c.misplaced_why}).",
           [total_bad], [mis.result, dmg.assistant])
    plan = b.call(
        f"Plan: rebuild the affected days with `pipectl run {c.load_job} --from {c.rerun_from} "
        f"--to {c.day} --full-refresh` and then rerun the fixed sweep; I'd ask you before running it. That rebuilds "
        f"from {c.src_table}, so it is simple. Before proposing it, the tests of the sweep:",
        "read_file", {"path": tests.path}, tests.numbered())
    b.fact("plan-full-refresh", "decision", f"Plan: rebuild the affected days with a --full-refresh rerun of "
           f"{c.load_job}, then rerun the fixed sweep (with the user's approval).", ["--full-refresh"], [plan.assistant])

    # ---- point 1: the rerun plan is current
    b.point()
    lin = b.call("Checking what a rerun of the load would trigger downstream.", "bash",
                 {"command": f"pipectl lineage {c.load_job} --downstream --depth 2"},
                 "\n".join([f"{c.load_job}", f"├── {c.dedup_job}", "│   └── dashboard_refresh",
                            f"├── {c.downstream}  (trigger: on_success, side effects: external)",
                            f"│   └── {c.downstream}_audit", "└── dashboard_refresh"]))
    downstream = python_module(rng, f"pipelines/{c.downstream_dir}/{c.downstream}.py", v,
                               docstring=f"{c.downstream}: runs after {c.load_job} succeeds.",
                               imports=["from datetime import date", "from pipelines.common import log"],
                               planted=[c.downstream_block], target_lines=rng.randint(130, 170))
    dl = downstream.line_of(c.downstream_block[0])
    b.call(f"{c.downstream} is marked as having external side effects. What does it do?", "read_file",
           {"path": downstream.path, "start_line": max(1, dl - 50), "end_line": dl + 30},
           downstream.numbered(max(1, dl - 50), dl + 30))
    dec = b.call(
        f"A rerun is out: {c.downstream_why}. Decision: no rerun. Fix the line, and move the misplaced rows with one "
        f"targeted, idempotent SQL script (MERGE on {c.key} into the right partition, then delete the misplaced copies). "
        "Fixing the code first.", "edit_file",
        {"path": c.sweep_file, "old": c.buggy_line.strip(), "new": c.fixed_line.strip()},
        unified_diff(c.sweep_file, sweep.lines, sweep.replaced(c.buggy_line, c.fixed_line).lines, rng))
    b.fact("targeted-merge", "decision", f"Instead of a rerun, fix {c.sweep_file} and move the misplaced rows with a "
           f"targeted, idempotent MERGE on {c.key} plus a delete of the misplaced copies, because {c.downstream_why}.",
           [c.downstream, "MERGE"], [lin.result, dec.assistant])
    b.supersede("plan-full-refresh", dec.assistant)
    b.avoid("full-refresh-plan", "superseded", f"The dropped plan to rerun {c.load_job} with --full-refresh.",
            [f"pipectl run {c.load_job}"], [dec.assistant])
    b.call("Sweep tests with the fix.", "run_tests", {"target": tests.path, "args": "-q"},
           "\n".join([pytest_progress(rng, [(tests.path, 17, 0, 0)]), pytest_summary(passed=17, seconds=rng.uniform(0.6, 2))]))
    regression = ["def test_partition_is_run_date_iso(fake_sink):",
                  f"    run(date({int(c.day[:4])}, {int(c.day[5:7])}, {int(c.day[8:])}))",
                  f'    assert fake_sink.partitions == ["dt={c.day}"]']
    with_test = SourceFile(tests.path, tests.lines + ["", ""] + regression)
    b.call("They pass, but nothing pinned the partition format, which is how this slipped through. Adding a "
           "regression test.", "edit_file",
           {"path": tests.path, "old": tests.lines[-1], "new": tests.lines[-1] + "\n\n\n" + "\n".join(regression)},
           unified_diff(tests.path, tests.lines, with_test.lines, rng))
    b.call("Running it against the fixed code.", "run_tests", {"target": tests.path, "args": "-q"},
           "\n".join([pytest_progress(rng, [(tests.path, 18, 0, 0)]), pytest_summary(passed=18, seconds=rng.uniform(0.6, 2))]))
    b.call("Green. Before writing the script: are any of the misplaced "
           "rows also present in their right partition (which would make a plain INSERT double count)?",
           "bash", {"command": f'{wh} "SELECT count(*) FROM {c.dst_table} a JOIN {c.dst_table} b ON a.{c.key} = b.{c.key} '
                               f'AND a.dt <> b.dt WHERE a.dt >= \'{min(d for d, _ in c.misplaced)}\'"'},
           sql_table(["count"], [(0,)]))
    b.call("None, today. The MERGE still guards it, so a second run inserts nothing. Writing the backfill script.",
           "edit_file", {"path": c.backfill_file, "old": "", "new": "\n".join(c.cleanup)},
           f"Created {c.backfill_file} ({len(c.cleanup)} lines)")
    b.call("Checking the SQL parses and which statements it contains.", "bash",
           {"command": f"wh lint --file {c.backfill_file}"},
           f"{c.backfill_file}: 2 statements (MERGE, DELETE), 0 errors, 0 warnings")
    nxt = b.call(
        "Next: run the script with `--dry-run` (read-only: it only plans the statements) to confirm it touches "
        f"exactly {total_bad} rows, then hand you the exact command without running it for real. Current state of "
        "the working tree first.", "bash", {"command": "git status --short"},
        f" M {c.sweep_file}\n?? {c.backfill_file}")
    b.fact("next-dry-run", "next_step", f"Dry-run the backfill script (read-only) to confirm it moves exactly "
           f"{total_bad} rows, then give the user the exact command without executing it.", ["dry-run"],
           [nxt.assistant])

    # ---- point 2: script written, dry run pending
    b.point()
    cmd = f"wh exec --file {c.backfill_file} --role PIPELINE_WRITER"
    b.call("Dry run.", "bash", {"command": cmd + " --dry-run"},
           "\n".join(["-- dry run: no changes will be made", f"MERGE INTO {c.dst_table}: would insert {total_bad} rows, "
                      "update 0", f"DELETE FROM {c.dst_table}: would delete {total_bad} rows",
                      f"partitions touched: {', '.join(sorted({d for d, _ in c.misplaced} | {w[0] for w in c.window[1:]}))}"]))
    b.call("Exactly the misplaced rows. And if it runs twice? Simulating the second run on the dry-run plan.",
           "bash", {"command": cmd + " --dry-run --assume-applied"},
           f"-- dry run: no changes will be made\nMERGE INTO {c.dst_table}: would insert 0 rows, update 0\n"
           f"DELETE FROM {c.dst_table}: would delete 0 rows")
    b.call("Idempotent. A last read-only check that nothing has been written yet.", "bash",
           {"command": f'{wh} "{c.misplaced_sql}"'}, sql_table(["dt", "n"], c.misplaced))
    b.call("Unchanged, as it should be. The code diff for the report:", "bash", {"command": f"git diff -- {c.sweep_file}"},
           unified_diff(c.sweep_file, sweep.lines, sweep.replaced(c.buggy_line, c.fixed_line).lines, rng))
    b.say(
        f"What broke: `{c.sweep_file}:{root_line}` computes the partition with `{c.buggy_line.strip()}` "
        f"({c.shift_desc}), since {c.commit} on {c.commit_date}. Run `{c.sweep_run}` of {c.sweep_job} wrote the "
        f"{missing} late rows of {c.day} to `dt={c.bad_dt}`.\n\nRow counts for {c.day}: {c.src_table} "
        f"{_fmt(day_raw)}, {c.dst_table} {_fmt(day_dst)}. In total {total_bad} rows sit in wrong partitions "
        f"({', '.join(f'{d}: {n}' for d, n in c.misplaced)}).\n\nFix: one-line change in the sweep (not deployed). "
        f"I did not rerun {c.load_job}: it triggers {c.downstream}. Backfill (idempotent; the dry run shows "
        f"{total_bad} rows moved, and 0 on a second run):\n\n`{cmd}`\n\nNothing was written to the warehouse."
    )
    return b.build()


def _sha(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(7))


def _runs(rng: random.Random, c: SimpleNamespace, missing: int) -> list[tuple]:
    day = c.day
    nxt = day[:-2] + f"{int(day[-2:]) + 1:02d}"
    rows = [
        (c.load_run, c.load_job, day, "success", f"{nxt} 02:00:14", _fmt(c.window[-1][2])),
        (f"dd-{nxt.replace('-', '')}-{_sha(rng)}", c.dedup_job, day, "success", f"{nxt} 02:31:40", _fmt(c.window[-1][2])),
        (c.sweep_run, c.sweep_job, day, "success", f"{nxt} 02:15:03", str(missing)),
        (f"dbr-{nxt.replace('-', '')}-{_sha(rng)}", "dashboard_refresh", day, "success", f"{nxt} 03:05:52", "-"),
        (f"{c.downstream[:3]}-{nxt.replace('-', '')}-{_sha(rng)}", c.downstream, day, "success", f"{nxt} 02:40:29", "-"),
    ]
    for _ in range(rng.randint(4, 7)):
        job = rng.choice(("inventory_snapshot", "returns_late_sweep", "fx_rates_load", "customer_dim_scd2", "sku_catalog_sync"))
        rows.append((f"{job.split('_')[0][:4]}-{nxt.replace('-', '')}-{_sha(rng)}", job, day, "success",
                     f"{nxt} 0{rng.randint(1, 4)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}", _fmt(rng.randint(40, 90000))))
    return sorted(rows, key=lambda r: r[4])


def _log_lines(rng: random.Random, day: str, entries: list[tuple[str, str, str]], start: str = "02:15") -> list[str]:
    """Structured log lines on the morning after `day`, starting at `start` (HH:MM)."""
    nxt = day[:-2] + f"{int(day[-2:]) + 1:02d}"
    hh, mm = map(int, start.split(":"))
    out, sec = [], hh * 3600 + mm * 60 + rng.randint(0, 20)
    for level, msg, kv in entries:
        sec += rng.randint(1, 9)
        out.append(f"{nxt}T{sec // 3600:02d}:{sec % 3600 // 60:02d}:{sec % 60:02d}.{rng.randint(100, 999)}Z "
                   f"{level:<5} {msg} {kv}")
    return out


def _load_log(rng: random.Random, c: SimpleNamespace, written: int) -> str:
    """A long, mostly routine load log: the kind of output compaction should drop."""
    entries = [("INFO", f"{c.load_job} starting", f"run_id={c.load_run} run_date={c.day}"),
               ("INFO", "source snapshot", f"table={c.src_table} partition=dt={c.day}")]
    done = 0
    n_batches = rng.randint(38, 52)
    sizes = [written // n_batches] * n_batches
    sizes[-1] += written - sum(sizes)
    for k, size in enumerate(sizes, 1):
        done += size
        entries.append(("INFO", "batch written", f"batch={k}/{n_batches} rows={size} total={done} "
                                                 f"bytes={size * rng.randint(180, 260)}"))
        if rng.random() < 0.12:
            entries.append(("WARN", "slow batch", f"batch={k} duration_s={rng.uniform(8, 30):.1f} retry=0"))
    entries += [("INFO", "commit", f"table={c.dst_table} partition=dt={c.day} rows={written}"),
                ("INFO", "on_success triggers", f"jobs={c.downstream},dashboard_refresh"),
                ("INFO", f"{c.load_job} done", f"rows={written} duration_s={rng.uniform(300, 900):.1f}")]
    return "\n".join(_log_lines(rng, c.day, entries, start="02:00"))


def _missing_rows(rng: random.Random, c: SimpleNamespace, n: int) -> list[tuple[str, str]]:
    hh, mm = map(int, c.late_from.split(":"))
    start = hh * 3600 + mm * 60
    secs = sorted(rng.sample(range(start, 24 * 3600), k=min(n, 20)))
    prefix = "ord_" if c.key == "order_id" else "evt_"
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    return [(prefix + "".join(rng.choice(alphabet) for _ in range(12)),
             f"{c.day} {s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}+00") for s in secs]
