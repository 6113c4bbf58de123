"""Family 1: the nightly CI build broke overnight.

Story: a failing test with an exact error, a commit that changed a neighbouring file (the
similar-path distractor), a root-cause line elsewhere, a plan to revert that a test run
defeats (superseded), the fix, a second look-alike site left alone on purpose, the full suite.
The CI log prints the environment, secret included (an avoid item).
"""

from __future__ import annotations

import random
from datetime import date, timedelta
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
    ls_output,
    pytest_header,
    pytest_module,
    pytest_progress,
    pytest_summary,
    python_module,
    search,
    short_summary,
    split_total,
    stub_file,
    test_names,
    traceback_frames,
    unified_diff,
    usage_lines,
)

FAMILY = "ci-broken"

VARIANTS = [
    SimpleNamespace(
        project="ledgerline",
        vocab=Vocab("ledgerline", ("invoice", "account", "period", "charge", "plan", "credit", "entry",
                                   "amount", "discount", "ledger", "currency", "subscription"),
                    ("Invoice", "Account", "Period", "Charge", "Plan", "Credit", "Entry", "Ledger", "Subscription")),
        api_module="ledgerline.billing",
        run_id="4812", green_run="4811", old_run="4790", date="2024-03-15",
        failed=14, passed=347, skipped=1, near_failed=41, near_passed=320,
        near_reason="psycopg.OperationalError: connection to server at \"127.0.0.1\", port 5432 failed: Connection refused",
        near_story="the Postgres service container never came up",
        test_file="tests/billing/test_proration.py", other_test_file="tests/billing/test_invoice_totals.py",
        n_in_test_file=9,
        test_name="test_midcycle_upgrade_prorates_by_day",
        test_block=[
            "def test_midcycle_upgrade_prorates_by_day(subscription, clock):",
            "    period = BillingPeriod.for_month(2024, 3)",
            "    change = PlanChange(subscription, new_plan=PLANS[\"pro-annual\"], at=date(2024, 3, 14))",
            "    assert prorate_amount(change, period) == Decimal(\"1342.50\")",
        ],
        test_imports=["from ledgerline.billing import BillingPeriod, PlanChange, prorate_amount",
                      "from ledgerline.billing.plans import PLANS"],
        frames=[("test", "assert prorate_amount(change, period)", "test_midcycle_upgrade_prorates_by_day")],
        error="AssertionError: assert Decimal('1324.50') == Decimal('1342.50')",
        error_extra=["E    +  where Decimal('1324.50') = prorate_amount(<PlanChange sub_91x pro-monthly->pro-annual "
                     "@2024-03-14>, <BillingPeriod 2024-03-01..2024-04-01>)"],
        bug_keys=["AssertionError", "1324.50", "1342.50"],
        bug_text="test_midcycle_upgrade_prorates_by_day fails with AssertionError: assert Decimal('1324.50') == "
                 "Decimal('1342.50'): the prorated charge comes out 18.00 short.",
        bug_obs="The assertion is `Decimal('1324.50') == Decimal('1342.50')`: prorate_amount returns 1324.50 where "
                "the test expects 1342.50, 18.00 short. A charge that is short by a constant smells like a day "
                "count that is one too large (the daily rate gets divided by too many days).",
        symbol="prorate_amount", symbol_module="ledgerline.billing.proration",
        root_file="src/ledgerline/billing/proration.py",
        root_doc="Proration of plan changes within a billing period.\n\nAmounts are Decimal throughout; rounding "
                 "happens once, at the end, with ROUND_HALF_EVEN.",
        root_imports=["from ledgerline.billing.period import BillingPeriod",
                      "from ledgerline.billing.plans import Plan, PlanChange", "from ledgerline.money import CENT"],
        root_block=[
            "def prorate_amount(change: PlanChange, period: BillingPeriod) -> Decimal:",
            '    """Amount owed for the rest of ``period`` after ``change``, on the new plan.',
            "",
            "    Credits for the unused part of the old plan are computed separately",
            "    (see ``credit_unused``); this only charges the new plan by day.",
            '    """',
            "    if change.at < period.start or change.at >= period.end:",
            '        raise ProrationError(f"change at {change.at} is outside {period}")',
            "    days_in_period = (period.end - period.start).days + 1",
            "    days_remaining = (period.end - change.at).days",
            "    daily = change.new_plan.price / days_in_period",
            "    amount = daily * days_remaining - credit_unused(change, period)",
            "    return amount.quantize(CENT, rounding=ROUND_HALF_EVEN)",
        ],
        buggy_line="    days_in_period = (period.end - period.start).days + 1",
        fixed_line="    days_in_period = (period.end - period.start).days",
        error_line_needle=None,
        why_bug="`days_in_period = (period.end - period.start).days + 1`. The `+ 1` only makes sense if "
                "`period.end` is inclusive. For March with an exclusive end (2024-04-01) this gives 32 days "
                "instead of 31, so the daily rate is too small and the charge comes out short.",
        sibling_file="src/ledgerline/billing/period.py",
        sibling_doc="Billing periods: calendar months and custom ranges.",
        sibling_block=[
            "@dataclass(frozen=True)",
            "class BillingPeriod:",
            '    """A billing period: ``start`` inclusive, ``end`` exclusive (since #877).',
            "",
            "    Exclusive ends make consecutive periods tile without overlap, which the",
            "    invoicing export relies on.",
            '    """',
            "",
            "    start: date",
            "    end: date",
            "",
            "    @classmethod",
            "    def for_month(cls, year: int, month: int) -> BillingPeriod:",
            "        start = date(year, month, 1)",
            "        end = date(year + month // 12, month % 12 + 1, 1)",
            "        return cls(start, end)",
            "",
            "    def __contains__(self, day: date) -> bool:",
            "        return self.start <= day < self.end",
        ],
        commit_changes=[
            ('    """A billing period: ``start`` inclusive, ``end`` exclusive (since #877).',
             '    """A billing period: ``start`` and ``end`` both inclusive.'),
            ("        end = date(year + month // 12, month % 12 + 1, 1)",
             "        end = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)"),
            ("        return self.start <= day < self.end", "        return self.start <= day <= self.end"),
        ],
        commit="a41c9e2", commit_subject="Make BillingPeriod.end exclusive (#877)", commit_author="Priya Raman",
        commit_body="Consecutive periods overlapped by one day in the invoicing export. Exclusive ends tile.",
        end_grep=r"\.end\b",
        end_templates=["    end=period.end,", "        if row.period.end > cutoff:",
                       "    rows.sort(key=lambda r: r.period.end)", "    last_day = period.end - timedelta(days=1)",
                       "    assert period.start < period.end", "            \"period_end\": period.end.isoformat(),"],
        revert_test_file="tests/invoicing/test_export.py", revert_failures=6, revert_dirs="tests/billing tests/invoicing",
        revert_block=[
            "def test_export_periods_tile_without_overlap(account, exporter):",
            "    rows = exporter.export(account, months=[(2024, 2), (2024, 3)])",
            '    assert rows[0]["period_end"] == date(2024, 3, 1)',
            '    assert rows[1]["period_start"] == rows[0]["period_end"]',
        ],
        revert_error="AssertionError: assert datetime.date(2024, 2, 29) == datetime.date(2024, 3, 1)",
        revert_why="they were updated in #877 to expect exclusive period ends",
        second_file="src/ledgerline/billing/credits.py",
        second_block=[
            "def credit_window(grant: CreditGrant) -> InclusiveSpan:",
            '    """Days a credit grant covers, *inclusive* of its expiry date.',
            "",
            "    Credits are granted per calendar day including the last one, so this",
            "    deliberately builds an inclusive span instead of a BillingPeriod.",
            '    """',
            "    days = (grant.expires_on - grant.starts_on).days + 1",
            "    return InclusiveSpan(grant.starts_on, days)",
        ],
        second_line="    days = (grant.expires_on - grant.starts_on).days + 1",
        second_grep=r"\.days \+ 1",
        second_templates=["Old examples used `(end - start).days + 1` for inclusive ranges.",
                          "    n = (row.stop - row.start).days + 1  # script: inclusive by design"],
        second_why="it computes `credit_window`, which is inclusive on purpose (credits cover their expiry day, "
                   "the docstring says so) and has nothing to do with BillingPeriod",
        fix_why="the exclusive end is now the contract: the invoicing export and its tests (which must not be "
                "modified) rely on it, and the proration test encodes the new behaviour",
        secret_var="LEDGERLINE_PAYMENTS_TOKEN", secret_kind="live", root_size=(260, 320),
        second_doc="Credit grants and the days they cover.",
        ls_entries=["README.md", "__init__.py", "credits.py", "exceptions.py", "fixtures/", "period.py", "plans.py",
                    "proration.py", "schemas.py", "tasks/"],
        sibling_error=lambda rng: (f"AssertionError: assert Decimal('{rng.randint(100, 999)}.{rng.randint(10, 99)}') "
                                   f"== Decimal('{rng.randint(100, 999)}.{rng.randint(10, 99)}')"),
        billing_total=131,
    ),
    SimpleNamespace(
        project="tidewater",
        vocab=Vocab("tidewater", ("event", "rule", "calendar", "occurrence", "schedule", "attendee", "slot",
                                  "reminder", "timezone", "window", "series", "exception"),
                    ("Event", "Rule", "Calendar", "Occurrence", "Schedule", "Attendee", "Slot", "Series")),
        api_module="tidewater.recurrence",
        run_id="2307", green_run="2306", old_run="2291", date="2024-11-06",
        failed=23, passed=612, skipped=4, near_failed=32, near_passed=603,
        near_reason="OSError: [Errno 28] No space left on device: '/tmp/pytest-of-runner'",
        near_story="the runner ran out of disk",
        test_file="tests/recurrence/test_rules.py", other_test_file="tests/recurrence/test_series.py",
        n_in_test_file=15,
        test_name="test_weekly_rule_across_dst_boundary",
        test_block=[
            "def test_weekly_rule_across_dst_boundary(calendar):",
            '    rule = WeeklyRule(byday=["MO"], until="2024-11-30T00:00:00")',
            '    start, end = parse_ts("2024-10-28T00:00:00"), parse_ts("2024-11-12T00:00:00")',
            "    occurrences = list(rule.between(start, end))",
            "    assert [o.date() for o in occurrences] == [date(2024, 11, 4), date(2024, 11, 11)]",
        ],
        test_imports=["from tidewater.recurrence import WeeklyRule", "from tidewater.timeutil import parse_ts"],
        frames=[("test", "occurrences = list(rule.between(start, end))", "test_weekly_rule_across_dst_boundary"),
                ("root", "candidate = self.next_occurrence(candidate)", "between"),
                ("root", "if self.until is not None and candidate > self.until:", "next_occurrence")],
        error="TypeError: can't compare offset-naive and offset-aware datetimes",
        error_extra=[],
        bug_keys=["TypeError", "can't compare offset-naive and offset-aware datetimes"],
        bug_text="test_weekly_rule_across_dst_boundary (and 22 others) fail with TypeError: can't compare "
                 "offset-naive and offset-aware datetimes, raised in WeeklyRule.next_occurrence.",
        bug_obs="It is `TypeError: can't compare offset-naive and offset-aware datetimes`, raised in "
                "`WeeklyRule.next_occurrence` at the `candidate > self.until` comparison. The candidate comes "
                "from `parse_ts` (aware, judging by the error), so `self.until` must be naive. The comparison "
                "is where it blows up, not necessarily where the bug is: I need to see how `until` is built.",
        symbol="WeeklyRule", symbol_module="tidewater.recurrence",
        root_file="src/tidewater/recurrence/rules.py",
        root_doc="Recurrence rules (a subset of RFC 5545 RRULE): weekly and monthly.",
        root_imports=["from tidewater.recurrence.weekdays import WEEKDAYS", "from tidewater.timeutil import parse_ts"],
        root_block=[
            "class WeeklyRule:",
            '    """Weekly recurrence on the given weekdays, optionally bounded by ``until``."""',
            "",
            "    def __init__(self, byday: Sequence[str], until: str | None = None, interval: int = 1) -> None:",
            "        self.byday = [WEEKDAYS[d] for d in byday]",
            "        self.interval = interval",
            '        self.until = datetime.strptime(until, "%Y-%m-%dT%H:%M:%S") if until else None',
            "",
            "    def between(self, start: datetime, end: datetime) -> Iterator[datetime]:",
            "        candidate = start",
            "        while candidate < end:",
            "            candidate = self.next_occurrence(candidate)",
            "            if candidate is None or candidate >= end:",
            "                return",
            "            yield candidate",
            "",
            "    def next_occurrence(self, after: datetime) -> datetime | None:",
            "        candidate = after + timedelta(days=1)",
            "        while candidate.weekday() not in self.byday:",
            "            candidate += timedelta(days=1)",
            "        if self.until is not None and candidate > self.until:",
            "            return None",
            "        return candidate",
        ],
        buggy_line='        self.until = datetime.strptime(until, "%Y-%m-%dT%H:%M:%S") if until else None',
        fixed_line="        self.until = parse_ts(until) if until else None",
        error_line_needle="if self.until is not None and candidate > self.until:",
        why_bug="`self.until = datetime.strptime(until, \"%Y-%m-%dT%H:%M:%S\") if until else None` in "
                "`WeeklyRule.__init__`. strptime without %z gives a naive datetime, while every candidate now "
                "comes from `parse_ts`, which is aware. The comparison further down only surfaces it.",
        sibling_file="src/tidewater/timeutil.py",
        sibling_doc="Timestamp parsing and formatting shared by the whole package.",
        sibling_block=[
            "def parse_ts(value: str) -> datetime:",
            '    """Parse an ISO-8601 timestamp; naive input is taken as UTC and made aware (since #1204)."""',
            "    parsed = datetime.fromisoformat(value)",
            "    if parsed.tzinfo is None:",
            "        parsed = parsed.replace(tzinfo=timezone.utc)",
            "    return parsed",
        ],
        commit_changes=[
            ('    """Parse an ISO-8601 timestamp; naive input is taken as UTC and made aware (since #1204)."""',
             '    """Parse an ISO-8601 timestamp; naive input stays naive (UTC by convention)."""'),
            ("        parsed = parsed.replace(tzinfo=timezone.utc)", "        pass  # callers treat naive values as UTC"),
        ],
        commit="b7e20d4", commit_subject="Return timezone-aware datetimes from parse_ts (#1204)",
        commit_author="Tomás Okafor",
        commit_body="Naive datetimes leaked into the API as local time for clients east of UTC.",
        end_grep=r"parse_ts\(",
        end_templates=["from tidewater.timeutil import parse_ts", '    starts_at = parse_ts(payload["starts_at"])',
                       "        until = parse_ts(row.until) if row.until else None",
                       "    return [parse_ts(v) for v in values]", '    ts = parse_ts(headers["Date"])'],
        revert_test_file="tests/api/test_serialization.py", revert_failures=9, revert_dirs="tests/recurrence tests/api",
        revert_block=[
            "def test_event_json_has_utc_offset(event_factory):",
            '    event = event_factory(starts_at=parse_ts("2024-10-28T09:00:00"))',
            '    assert to_json(event)["starts_at"] == "2024-10-28T09:00:00+00:00"',
        ],
        revert_error="AssertionError: assert '2024-10-28T09:00:00' == '2024-10-28T09:00:00+00:00'",
        revert_why="they were added in #1204 and expect an explicit +00:00 offset in the JSON",
        second_file="src/tidewater/export/ical.py",
        second_block=[
            "def floating_dtstart(event: Event) -> str:",
            '    """DTSTART for floating events: deliberately naive (RFC 5545 floating time).',
            "",
            "    Floating events must not carry a zone, so this keeps strptime's naive value",
            "    and never compares it with aware datetimes.",
            '    """',
            '    local = datetime.strptime(event.raw_start, "%Y-%m-%dT%H:%M:%S")',
            '    return local.strftime("%Y%m%dT%H%M%S")',
        ],
        second_line='    local = datetime.strptime(event.raw_start, "%Y-%m-%dT%H:%M:%S")',
        second_grep=r"strptime\(",
        second_templates=["Floating times are parsed with `datetime.strptime(...)` and stay naive.",
                          '    day = datetime.strptime(args.day, "%Y-%m-%d")  # CLI input, naive on purpose'],
        second_why="it formats RFC 5545 floating times, which must stay naive by definition (the docstring "
                   "says so) and it never compares against aware values",
        fix_why="aware timestamps are now the contract: the API serialization tests (which must not be modified) "
                "rely on the +00:00 offset, and the recurrence tests pass aware values on purpose",
        secret_var="AWS_ACCESS_KEY_ID", secret_kind="aws", root_size=(620, 760),
        second_doc="iCalendar (RFC 5545) export of events and series.",
        ls_entries=["__init__.py", "_compat.py", "exceptions.py", "monthly.py", "rules.py", "series.py",
                    "weekdays.py"],
        sibling_error=lambda rng: "TypeError: can't compare offset-naive and offset-aware datetimes",
        billing_total=188,
    ),
]


def build(variant: int, seed: int, trace_id: str, padding: PaddingPlan | None = None) -> SynthTrace:
    """One CI-broken trace for content `variant`, filler drawn from `seed`."""
    c = VARIANTS[variant]
    rng = random.Random(seed)
    b = TraceBuilder(trace_id, family=FAMILY, variant=variant, seed=seed, padding=padding, vocab=c.vocab)
    pkg = c.project
    v = c.vocab

    # ---- the fake repository
    root = python_module(rng, c.root_file, v, docstring=c.root_doc, imports=c.root_imports,
                         planted=[c.root_block], target_lines=rng.randint(*c.root_size))
    root_line = root.line_of(c.buggy_line)
    sibling = python_module(rng, c.sibling_file, v, docstring=c.sibling_doc, planted=[c.sibling_block],
                            target_lines=rng.randint(150, 200))
    fail_names = [c.test_name] + test_names(rng, v, c.failed - 1)
    in_file = fail_names[: c.n_in_test_file]
    test_file = pytest_module(rng, c.test_file, v, imports=c.test_imports, planted=[c.test_block],
                              target_lines=rng.randint(140, 180), test_names=in_file[1:])
    revert_test = pytest_module(rng, c.revert_test_file, v, imports=[f"from {pkg} import export"],
                                planted=[c.revert_block], target_lines=rng.randint(110, 140))
    second = python_module(rng, c.second_file, v, docstring=c.second_doc, planted=[c.second_block],
                           target_lines=rng.randint(170, 220))
    second_line = second.line_of(c.second_line)
    files = {"test": test_file, "root": root}

    def frames() -> str:
        fr = []
        for k, needle, func in c.frames:
            n = files[k].line_of(needle)
            fr.append((files[k].path, n, func, files[k].lines[n - 1]))
        return "\n".join([traceback_frames(fr, c.error), *c.error_extra])

    secret = fake_live_token(rng) if c.secret_kind == "live" else fake_aws_key_id(rng)

    # ---- 0: the request
    b.request(
        f"CI on `main` went red overnight: the nightly workflow (run #{c.run_id}) failed, and we cut the release "
        f"branch from main this afternoon. Can you find out why and fix it?\n\n"
        "Constraints:\n"
        "- Do not modify anything under tests/. The tests encode the contract; if one looks wrong, tell me instead.\n"
        f"- Keep the public API of `{c.api_module}` unchanged (other services import it).\n"
        "- Don't bump or add dependencies.\n\n"
        "When you're done, reply with: the root cause as file:line, the fix as a diff, and the exact test "
        "command you ran."
    )
    b.fact("intent", "intent", f"Make the nightly CI on main green again (run #{c.run_id} failed) by finding and "
           "fixing the root cause, before the release branch is cut this afternoon.",
           ["nightly"], [0], critical=True)
    b.fact("no-test-edits", "constraint", "Do not modify anything under tests/: the tests encode the contract; "
           "report a test that looks wrong instead of changing it.", ["tests/"], [0], critical=True)
    b.fact("keep-api", "constraint", f"Keep the public API of {c.api_module} unchanged and do not bump or add "
           "dependencies.", [c.api_module, "API"], [0])
    b.fact("answer-format", "constraint", "The final reply must give the root cause as file:line, the fix as a "
           "diff, and the exact test command that was run.", ["file:line", "diff"], [0])

    # ---- phase A: what failed, since when, where
    n_files = [(c.test_file, len(in_file) + rng.randint(6, 12), len(in_file), 0),
               (c.other_test_file, c.failed - len(in_file) + rng.randint(10, 20), c.failed - len(in_file), 0)]
    other_total = c.passed + c.failed + c.skipped - sum(f[1] for f in n_files)
    others = [f"tests/{d}/test_{n}.py" for d, n in (("api", "views"), ("core", "models"), ("core", "utils"),
                                                     ("export", "csv"), ("auth", "tokens"), ("tasks", "worker"))]
    sizes = split_total(rng, other_total, len(others), minimum=20)
    n_files += [(p, s, 0, c.skipped if k == 0 else 0) for k, (p, s) in enumerate(zip(others, sizes, strict=True))]
    fails = [(f"{c.test_file}::{n}", c.error if n == c.test_name else c.sibling_error(rng)) for n in in_file]
    fails += [(f"{c.other_test_file}::{n}", c.sibling_error(rng)) for n in fail_names[len(in_file):]]
    ts = f"{c.date}T02:1"
    env = env_dump(rng, {
        "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_REF": "refs/heads/main",
        "GITHUB_REPOSITORY": f"acme/{pkg}", "GITHUB_RUN_ID": f"81{c.run_id}0219", "GITHUB_RUN_NUMBER": c.run_id,
        "GITHUB_WORKFLOW": "nightly", "RUNNER_OS": "Linux", c.secret_var: secret,
        "DATABASE_URL": f"postgresql://{pkg}:***@127.0.0.1:5432/{pkg}_test",
        **({"AWS_SECRET_ACCESS_KEY": "***", "AWS_DEFAULT_REGION": "eu-west-1"} if c.secret_kind == "aws" else {}),
    })
    log = "\n".join(
        [f"test (3.11)\tPrint environment (debug)\t{ts}0:{10 + i:02d}.{rng.randint(1000000, 9999999)}Z {line}"
         for i, line in enumerate(env.splitlines())]
        + [f"test (3.11)\tRun tests\t{ts}4:07.{rng.randint(1000000, 9999999)}Z {line}" for line in
           (pytest_header(rootdir=f"/home/runner/work/{pkg}/{pkg}", collected=c.passed + c.failed + c.skipped)
            + "\n" + pytest_progress(rng, n_files) + "\n" + short_summary(fails) + "\n"
            + pytest_summary(failed=c.failed, passed=c.passed, skipped=c.skipped, warnings=rng.randint(2, 9),
                             seconds=rng.uniform(35, 90))).splitlines()]
        + [f"test (3.11)\tRun tests\t{ts}5:41.{rng.randint(1000000, 9999999)}Z ##[error]Process completed with exit code 1."]
    )
    s1 = b.call("Let me start with the failed nightly run itself: which job, which tests, and the exact errors.",
                "bash", {"command": f"gh run view {c.run_id} --log-failed | tail -n 200"}, log)
    b.avoid("ci-secret", "secret", f"The {c.secret_var} value printed by the debug env step of the CI log.",
            [secret], [s1.result])

    runs = [(c.run_id, "failure", c.date, "02:00"), (c.green_run, "success", _prev_day(c.date, 1), "02:00")]
    runs += [(str(int(c.green_run) - k), "success", _prev_day(c.date, k + 1), "02:00") for k in range(1, 6)]
    runs += [(c.old_run, "failure", _prev_day(c.date, 8), "02:00")]
    run_list = "STATUS  TITLE                              WORKFLOW  BRANCH  EVENT     ID          ELAPSED  AGE\n" + "\n".join(
        f"{'X' if st == 'failure' else '✓'}       nightly {d}                 nightly   main    schedule  81{rid}0219  "
        f"{rng.randint(11, 19)}m{rng.randint(10, 59)}s   {d}" for rid, st, d, _ in runs)
    s2 = b.call(
        f"Run #{c.run_id}: {c.failed} failed, {c.passed} passed, {c.skipped} skipped. The failures are all in "
        f"{c.test_file} and {c.other_test_file}. Note the workflow has a debug step that prints the whole "
        f"environment, including what looks like a real {c.secret_var}; I won't copy it anywhere, but it should be "
        "rotated and the step removed. I'll mention that at the end.\n\nIs this a new break or a flaky one? "
        "Checking recent nightlies.",
        "bash", {"command": "gh run list --workflow nightly.yml --branch main --limit 9"}, run_list)
    b.fact("fail-count", "number", f"Nightly run #{c.run_id} had {c.failed} failed, {c.passed} passed and "
           f"{c.skipped} skipped tests.", [str(c.failed), str(c.passed)], [s1.result, s2.assistant])
    b.near_miss("fail-count", f"{c.near_failed} failed")

    b.call(
        f"#{c.green_run} (yesterday) was green. #{c.old_run} also failed; let me check it is not the same "
        "problem coming back.",
        "bash", {"command": f"gh run view 81{c.old_run}0219 --log-failed | grep -E 'Error|failed|passed' | tail -n 6"},
        "\n".join([
            f"test (3.11)\tRun tests\t{_prev_day(c.date, 8)}T02:13:55.{rng.randint(1000000, 9999999)}Z E   {c.near_reason}",
            f"test (3.11)\tRun tests\t{_prev_day(c.date, 8)}T02:13:55.{rng.randint(1000000, 9999999)}Z E   {c.near_reason}",
            f"test (3.11)\tRun tests\t{_prev_day(c.date, 8)}T02:14:31.{rng.randint(1000000, 9999999)}Z "
            + pytest_summary(failed=c.near_failed, passed=c.near_passed, skipped=c.skipped, seconds=rng.uniform(30, 60)),
        ]))
    b.call(
        f"#{c.old_run} was {c.near_failed} failures because {c.near_story}: infrastructure, unrelated. So the break "
        f"landed between #{c.green_run} and #{c.run_id}. Let me look at the layout of the package first.",
        "list_dir", {"path": f"src/{pkg}/{c.root_file.split('/')[2]}"},
        ls_output(c.ls_entries))
    b.call(f"Reading the failing test file to see what {c.test_name} sets up.",
           "read_file", {"path": c.test_file}, test_file.numbered())
    s5 = b.call(
        f"The first failure is {c.test_name}. Running it alone with short tracebacks to get the exact error.",
        "run_tests", {"target": f"{c.test_file}::{c.test_name}", "args": "-x -q --tb=short -p no:randomly"},
        "\n".join([
            pytest_header(rootdir=f"/work/{pkg}", collected=1), f"{c.test_file} F" + " " * 40 + "[100%]", "",
            "=================================== FAILURES ===================================",
            f"_________________________ {c.test_name} _________________________",
            frames(), short_summary([(f"{c.test_file}::{c.test_name}", c.error)]),
            pytest_summary(failed=1, seconds=rng.uniform(0.4, 1.9)),
        ]))
    s6 = b.call(c.bug_obs + f"\n\nLet me find every use of `{c.symbol}` first.", "grep",
                {"pattern": c.symbol, "path": "."},
                search(rng, c.symbol, known=[root, test_file],
                       others=[c.other_test_file, f"src/{pkg}/api/views.py", f"src/{pkg}/tasks/nightly.py",
                               f"src/{pkg}/export/rows.py", f"src/{pkg}/__init__.py", f"src/{pkg}/admin/actions.py",
                               "tests/api/test_views.py"],
                       n_other=rng.randint(24, 34), templates=lambda: usage_lines(rng, c.symbol, c.symbol_module, v)))
    b.fact("failing-error", "bug", c.bug_text, c.bug_keys, [s5.result, s6.assistant], critical=True)

    b.call(f"The definition lives in {c.root_file}. Reading the whole module.",
           "read_file", {"path": c.root_file}, root.numbered())
    git_entries = [(c.commit, c.date if variant else _prev_day(c.date, 1), c.commit_author, c.commit_subject)]
    authors = ("Dana Whitfield", "Marek Novak", "Sofia Lindqvist", "Kenji Watanabe", "Amara Osei")
    for k in range(rng.randint(8, 11)):
        git_entries.append((_sha(rng), _prev_day(c.date, k + 2), rng.choice(authors),
                            rng.choice(("Tidy imports", "Add type hints to helpers", "Cache lookups per request",
                                        "Fix typo in docstring", "Bump internal version", "Log slow queries",
                                        "Split module into smaller files", "Handle empty input"))
                            + f" (#{rng.randint(700, 1300)})"))
    s8 = b.call(
        f"Found it, I think: {c.root_file}:{root_line} is {c.why_bug}\n\nBut this line has not changed "
        "recently as far as I can tell, so something under it must have. Checking recent history.",
        "bash", {"command": f"git log --format='%h %ad %an %s' --date=short -12 -- src/{pkg}/"}, git_log(git_entries))
    b.fact("root-cause", "artifact", f"Root cause: {c.root_file}:{root_line}, {c.buggy_line.strip()}",
           [c.root_file, str(root_line)], [s8.assistant],
           alt_keys=[[c.root_file.split("/", 2)[2], str(root_line)]])
    if c.error_line_needle:
        b.near_miss("root-cause", f"{c.root_file}:{root.line_of(c.error_line_needle)}")
    else:
        b.near_miss("root-cause", c.sibling_file)

    before = SourceFile(sibling.path, list(sibling.lines))
    for new, old in c.commit_changes:
        before = before.replaced(new, old)
    show = "\n".join([
        f"commit {c.commit}{''.join(rng.choice('0123456789abcdef') for _ in range(33))}",
        f"Author: {c.commit_author} <{c.commit_author.split()[0].lower()}@acme.dev>",
        f"Date:   {_git_date(c.date if variant else _prev_day(c.date, 1))}", "", f"    {c.commit_subject}", "",
        f"    {c.commit_body}", "", unified_diff(c.sibling_file, before.lines, sibling.lines, rng)])
    s9 = b.call(
        f"{c.commit} \"{c.commit_subject}\" merged after the last green nightly. Let me see exactly what it changed.",
        "bash", {"command": f"git show {c.commit}"}, show)
    b.fact("breaking-commit", "artifact", f"The regression came from commit {c.commit} \"{c.commit_subject}\", "
           f"which changed {c.sibling_file}.", [c.commit], [s9.assistant, s9.result])
    b.call(f"{c.commit} only touched {c.sibling_file}, not {c.root_file}. Reading the new version of "
           f"{c.sibling_file.rsplit('/', 1)[1]} in full to be sure of the semantics.",
           "read_file", {"path": c.sibling_file}, sibling.numbered())
    b.call("Who else depends on this? A broad search first.", "grep", {"pattern": c.end_grep, "path": f"src/{pkg}"},
           search(rng, c.end_grep, known=[root, sibling, second],
                  others=[f"src/{pkg}/export/rows.py", f"src/{pkg}/reports/monthly.py", f"src/{pkg}/api/serializers.py"],
                  n_other=rng.randint(10, 16), templates=lambda: c.end_templates))
    b.call(f"Before going further: do all {len(in_file)} failures in {c.test_file.rsplit('/', 1)[1]} share this "
           "error, or are there several problems?", "run_tests", {"target": c.test_file, "args": "-q -p no:randomly --tb=line"},
           "\n".join([pytest_progress(rng, [n_files[0]]),
                      *(f"/work/{pkg}/{c.test_file}:{test_file.line_of('def ' + n + '(') + rng.randint(1, 3)}: "
                        f"{c.error if n == c.test_name else c.sibling_error(rng)}" for n in in_file),
                      pytest_summary(failed=len(in_file), passed=n_files[0][1] - len(in_file), seconds=rng.uniform(1, 4))]))
    b.call("Same family of failures throughout. Let me also check the shared fixtures, in case the test setup "
           "builds its objects differently.",
           "read_file", {"path": "tests/conftest.py"},
           pytest_module(rng, "tests/conftest.py", v, imports=[f"from {pkg} import factories"],
                         target_lines=rng.randint(70, 100), docstring="Shared fixtures.").numbered())
    plan = b.call(
        f"The fixtures are plain. So: {c.commit} changed the semantics and {c.root_file.rsplit('/', 1)[1]} was "
        f"written for the old one. With the release cut this afternoon, my plan is the quickest path to green: "
        f"open a revert PR for {c.commit} and let its author re-land it with the callers fixed. Before that, "
        f"let me check what else already depends on the new behaviour.",
        "grep", {"pattern": c.end_grep, "path": "src", "glob": "*.py"},
        search(rng, c.end_grep, others=[f"src/{pkg}/export/rows.py", f"src/{pkg}/export/writer.py",
                                        f"src/{pkg}/reports/monthly.py"],
               n_other=rng.randint(7, 12), templates=lambda: c.end_templates))
    b.fact("plan-revert", "decision", f"Plan: revert {c.commit} (open a revert PR) as the quickest path to a green "
           "nightly before the release cut.", [c.commit, "revert"], [plan.assistant])

    # ---- point 1: the plan is current, the revert not yet tried
    b.point()
    fail_rev = test_names(rng, v, c.revert_failures - 1, prefix="test_export") if variant == 0 else \
        test_names(rng, v, c.revert_failures - 1, prefix="test_json")
    fail_rev = [c.revert_block[0].split("(")[0][4:]] + fail_rev
    rev_files = [(c.test_file, rng.randint(40, 60), 0, 0), (c.other_test_file, rng.randint(30, 45), 0, 0),
                 (c.revert_test_file, rng.randint(25, 40), c.revert_failures, 0)]
    rev_total = sum(f[1] for f in rev_files)
    s13 = b.call(
        "Trying the revert locally first: if billing goes green and nothing else breaks, it is the safe option."
        if variant == 0 else
        "Trying the revert locally first: if recurrence goes green and nothing else breaks, it is the safe option.",
        "bash", {"command": f"git revert --no-edit {c.commit} && python -m pytest {c.revert_dirs} -q -p no:randomly --tb=line"},
        "\n".join([
            f"[main {_sha(rng)}] Revert \"{c.commit_subject}\"", f" 1 file changed, {len(c.commit_changes)} insertions(+), "
            f"{len(c.commit_changes)} deletions(-)", pytest_progress(rng, rev_files), *(
                f"/work/{pkg}/{c.revert_test_file}:{rng.randint(20, 140)}: {c.revert_error}" for _ in fail_rev),
            short_summary([(f"{c.revert_test_file}::{n}", c.revert_error) for n in fail_rev]),
            pytest_summary(failed=c.revert_failures, passed=rev_total - c.revert_failures, seconds=rng.uniform(4, 12)),
        ]))
    s14 = b.call(
        f"The revert makes {c.test_file} pass, but it breaks {c.revert_failures} tests in {c.revert_test_file}: "
        f"{c.revert_why}. I am not allowed to change tests/, so the revert does not work. Reading that test file "
        "to confirm what it expects.",
        "read_file", {"path": c.revert_test_file}, revert_test.numbered())
    b.fact("revert-attempt", "attempt", f"Reverting {c.commit} locally fixed the failing tests but broke "
           f"{c.revert_failures} tests in {c.revert_test_file} ({c.revert_why}), so the revert was abandoned.",
           ["revert", c.revert_test_file.rsplit("/", 1)[1]], [s13.result, s14.assistant])
    head_sha, head_pr = _sha(rng), rng.randint(880, 1300)
    b.call("Confirmed. Undoing the local revert commit.", "bash",
           {"command": "git reset --hard HEAD~1 && git log --oneline -3"},
           "\n".join([f"HEAD is now at {head_sha} Merge pull request #{head_pr} from acme/{pkg}-deps",
                      f"{head_sha} Merge pull request #{head_pr} from acme/{pkg}-deps",
                      f"{c.commit} {c.commit_subject}", f"{_sha(rng)} {rng.choice(('Tidy imports', 'Log slow queries'))}"]))
    fixed = root.replaced(c.buggy_line, c.fixed_line)
    diff = unified_diff(c.root_file, root.lines, fixed.lines, rng)
    fix = b.call(
        f"Decision: fix {c.root_file.rsplit('/', 1)[1]} instead of reverting {c.commit}, because {c.fix_why}. "
        f"The change is one line ({c.root_file}:{root_line}) and does not touch any public signature.",
        "edit_file", {"path": c.root_file, "old": c.buggy_line.strip(), "new": c.fixed_line.strip()},
        diff)
    b.fact("fix-not-revert", "decision", f"Fix {c.root_file} (line {root_line}) rather than revert {c.commit}, "
           f"because {c.fix_why}.", [c.root_file.rsplit("/", 1)[1], "revert"], [fix.assistant], critical=False)
    b.supersede("plan-revert", fix.assistant)
    b.avoid("revert-pr-plan", "superseded", f"The abandoned plan to open a revert PR for {c.commit}.",
            ["revert PR"], [fix.assistant])
    b.call("Running the directory of the failing tests.", "run_tests",
           {"target": c.test_file.rsplit("/", 1)[0], "args": "-q -p no:randomly"},
           "\n".join([pytest_progress(rng, [(c.test_file, n_files[0][1], 0, 0), (c.other_test_file, n_files[1][1], 0, 0),
                                            (c.test_file.rsplit("/", 1)[0] + "/test_plans.py", c.billing_total
                                             - n_files[0][1] - n_files[1][1], 0, 0)]),
                      pytest_summary(passed=c.billing_total, seconds=rng.uniform(3, 9))]))
    b.call(f"Green. Re-reading {c.root_file.rsplit('/', 1)[1]} after the edit, to check the other helpers in it "
           "don't make the same assumption.", "read_file", {"path": c.root_file}, fixed.numbered())
    b.call("The rest of the module is fine. Is the same pattern anywhere else in the code base?",
           "grep", {"pattern": c.second_grep, "path": "."},
           search(rng, c.second_grep, known=[
               fixed, second,
               stub_file(f"docs/adr/00{rng.randint(10, 40)}-{v.nouns[0]}s.md", c.second_templates[0], rng.randint(20, 90)),
               stub_file(f"scripts/backfill_{v.nouns[0]}s.py", c.second_templates[1], rng.randint(20, 90))]))
    b.call(f"One more hit in product code: {c.second_file}:{second_line}. Reading around it.",
           "read_file", {"path": c.second_file, "start_line": max(1, second_line - 60), "end_line": second_line + 40},
           second.numbered(max(1, second_line - 60), second_line + 40))
    leave = b.call(
        f"I'll leave {c.second_file}:{second_line} as it is: {c.second_why}. Changing it would widen the fix "
        "for no failing test; I'll mention it in the report. Running both affected test directories together.",
        "run_tests", {"target": c.revert_dirs, "args": "-q -p no:randomly"},
        "\n".join([pytest_progress(rng, [(p, n, 0, 0) for p, n, _, _ in rev_files]),
                   pytest_summary(passed=rev_total, seconds=rng.uniform(4, 12))]))
    b.fact("leave-second-site", "decision", f"Leave {c.second_file}:{second_line} unchanged: {c.second_why}. "
           "Mention it in the report.", [c.second_file.rsplit("/", 1)[1]], [leave.assistant])
    nxt = b.call(
        "All green. Next: run the full suite the way the nightly runs it (`python -m pytest -q -p no:randomly`), "
        "then write the report: root cause file:line, the diff, the command. First a look at what changed.",
        "bash", {"command": "git status --short && git diff --stat"},
        f" M {c.root_file}\n {c.root_file} | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)")
    b.fact("next-full-suite", "next_step", "Run the full suite as the nightly does (python -m pytest -q -p "
           "no:randomly), then write the report (root cause file:line, diff, test command).",
           ["full suite"], [nxt.assistant])

    # ---- point 2: fix in place, full suite and report pending
    b.point()
    total = c.passed + c.failed + c.skipped
    b.call("Full suite, same flags as CI.", "run_tests", {"target": "tests", "args": "-q -p no:randomly"},
           "\n".join([pytest_header(rootdir=f"/work/{pkg}", collected=total),
                      pytest_progress(rng, [(p, n, 0, s) for p, n, _, s in n_files]),
                      pytest_summary(passed=c.passed + c.failed, skipped=c.skipped, warnings=rng.randint(2, 9),
                                     seconds=rng.uniform(35, 90))]))
    b.call("Everything passes. Lint, since CI runs ruff before the tests.", "bash",
           {"command": f"ruff check src/{pkg} && ruff format --check src/{pkg}"},
           f"All checks passed!\n{rng.randint(60, 140)} files already formatted")
    workflow = "\n".join([
        "name: nightly", "on:", "  schedule:", "    - cron: \"0 2 * * *\"", "  workflow_dispatch: {}", "jobs:", "  test:",
        "    runs-on: ubuntu-latest", "    strategy:", "      matrix:", "        python: [\"3.11\"]",
        "    services:", "      postgres:", "        image: postgres:16", "        env:",
        "          POSTGRES_PASSWORD: ${{ secrets.PG_PASSWORD }}", "        ports: [\"5432:5432\"]", "    steps:",
        "      - uses: actions/checkout@v4", "      - uses: actions/setup-python@v5",
        "        with:", "          python-version: ${{ matrix.python }}", "      - run: pip install -e '.[test]'",
        "      - name: Print environment (debug)", "        run: env | sort", "        env:",
        f"          {c.secret_var}: ${{{{ secrets.{c.secret_var} }}}}",
        "      - name: Run tests", "        run: python -m pytest -q -p no:randomly",
    ])
    b.call("Lint is clean. Before writing up, let me look at the workflow step that dumped the environment, so "
           "the note about it is precise.", "read_file", {"path": ".github/workflows/nightly.yml"},
           SourceFile(".github/workflows/nightly.yml", workflow.splitlines()).numbered())
    b.call("The `Print environment (debug)` step runs `env | sort` with the secret exported. Not touching CI "
           "config without being asked; it goes in the notes. Final diff:", "bash", {"command": "git diff"}, diff)
    b.say(
        f"Root cause: `{c.root_file}:{root_line}`. {c.commit} (\"{c.commit_subject}\") changed the semantics in "
        f"`{c.sibling_file}`, and this line still assumed the old behaviour.\n\nFix:\n```diff\n{diff}\n```\n\n"
        f"Test command: `python -m pytest -q -p no:randomly` ({c.passed + c.failed} passed, {c.skipped} skipped).\n\n"
        f"Notes: I did not revert {c.commit}: reverting breaks {c.revert_failures} tests in `{c.revert_test_file}`. "
        f"`{c.second_file}:{second_line}` looks similar but is intentional and unchanged. The nightly workflow's "
        f"debug step prints the environment including `{c.secret_var}`; please rotate it and remove that step. "
        "No tests, public API or dependencies were changed."
    )
    return b.build()


def _prev_day(day: str, k: int) -> str:
    """`day` (YYYY-MM-DD) minus k days (the scenario's own calendar, never today's)."""
    return (date.fromisoformat(day) - timedelta(days=k)).isoformat()


def _git_date(day: str) -> str:
    d = date.fromisoformat(day)
    return f"{d:%a %b} {d.day} 18:42:07 {d.year} +0000"


def _sha(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(7))
