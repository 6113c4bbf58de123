"""Family 5: a support thread where the human changes their mind.

Story: the user asks for a background-job design (Celery + email link); the agent investigates
(timeout error, row counts with a near-miss account of a similar name, a look-alike view module)
and starts on that plan; the user then scraps it (no worker capacity before Q3) and asks for a
streaming response under new constraints. The first streaming attempt fails for a reason buried
in settings; keyset pagination works. The superseded plan is an avoid item, and a worker env dump
prints a secret.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

from compaction_eval.synth.build import SynthTrace, TraceBuilder
from compaction_eval.synth.padding import PaddingPlan
from compaction_eval.synth.tooloutput import (
    SourceFile,
    Vocab,
    env_dump,
    fake_live_token,
    grep_output,
    ls_output,
    pytest_module,
    pytest_progress,
    pytest_summary,
    python_module,
    python_traceback,
    real_hits,
    sql_table,
    unified_diff,
)

FAMILY = "support-thread"

VARIANTS = [
    SimpleNamespace(
        project="tally",
        vocab=Vocab("tally", ("transaction", "account", "category", "ledger", "export", "statement", "payee",
                              "budget", "tag", "receipt", "balance", "currency"),
                    ("Transaction", "Account", "Category", "Ledger", "Export", "Statement", "Payee", "Budget")),
        customer="Northwind Logistics", account="acct_8f2KQ7", rows=212406,
        near_customer="Northwind Traders", near_account="acct_8f2KQ1", near_rows=212460,
        url="/api/exports/transactions.csv", ticket="#4471",
        view_file="src/tally/exports/views.py", lookalike="src/tally/api/views/exports.py",
        task_name="export_transactions_csv_task", email_fn="send_export_ready_email",
    ),
]

OLD_VIEW = [
    "@login_required",
    "def export_transactions_csv(request: HttpRequest) -> HttpResponse:",
    '    """All transactions of the current account as CSV (used by the web app and the mobile app)."""',
    "    account = request.user.current_account",
    "    rows = (",
    "        Transaction.objects.filter(account=account)",
    '        .select_related("category", "payee")',
    '        .order_by("booked_at", "id")',
    "    )",
    "    buffer = io.StringIO()",
    "    writer = csv.writer(buffer)",
    "    writer.writerow(HEADER)",
    "    for tx in rows:",
    "        writer.writerow(tx.as_csv_row())",
    '    response = HttpResponse(buffer.getvalue(), content_type="text/csv")',
    "    response[\"Content-Disposition\"] = 'attachment; filename=\"transactions.csv\"'",
    "    return response",
]

ITER_VIEW = [
    "@login_required",
    "def export_transactions_csv(request: HttpRequest) -> StreamingHttpResponse:",
    '    """All transactions of the current account as CSV, streamed row by row."""',
    "    account = request.user.current_account",
    "    rows = (",
    "        Transaction.objects.filter(account=account)",
    '        .select_related("category", "payee")',
    '        .order_by("booked_at", "id")',
    "        .iterator(chunk_size=2000)",
    "    )",
    "    writer = csv.writer(Echo())",
    "    lines = itertools.chain([writer.writerow(HEADER)], (writer.writerow(tx.as_csv_row()) for tx in rows))",
    '    response = StreamingHttpResponse(lines, content_type="text/csv")',
    "    response[\"Content-Disposition\"] = 'attachment; filename=\"transactions.csv\"'",
    "    return response",
]

KEYSET_VIEW = [
    "@login_required",
    "def export_transactions_csv(request: HttpRequest) -> StreamingHttpResponse:",
    '    """All transactions of the current account as CSV, streamed in keyset-paginated batches.',
    "",
    "    Server-side cursors are disabled (PgBouncer in transaction mode), so each batch is its own",
    "    short query: WHERE (booked_at, id) > last key ORDER BY booked_at, id LIMIT EXPORT_BATCH.",
    '    """',
    "    account = request.user.current_account",
    "    writer = csv.writer(Echo())",
    "",
    "    def lines():",
    "        yield writer.writerow(HEADER)",
    "        last = None",
    "        while True:",
    '            batch = Transaction.objects.filter(account=account).select_related("category", "payee")',
    "            if last is not None:",
    "                batch = batch.filter(Q(booked_at__gt=last[0]) | Q(booked_at=last[0], id__gt=last[1]))",
    '            batch = list(batch.order_by("booked_at", "id")[:EXPORT_BATCH])',
    "            if not batch:",
    "                return",
    "            for tx in batch:",
    "                yield writer.writerow(tx.as_csv_row())",
    "            last = (batch[-1].booked_at, batch[-1].id)",
    "",
    '    response = StreamingHttpResponse(lines(), content_type="text/csv")',
    "    response[\"Content-Disposition\"] = 'attachment; filename=\"transactions.csv\"'",
    "    return response",
]


def build(variant: int, seed: int, trace_id: str, padding: PaddingPlan | None = None) -> SynthTrace:
    """One support-thread trace for content `variant`, filler drawn from `seed`."""
    c = VARIANTS[variant]
    rng = random.Random(seed)
    b = TraceBuilder(trace_id, family=FAMILY, variant=variant, seed=seed, padding=padding, vocab=c.vocab)
    v, pkg = c.vocab, c.project
    rows = f"{c.rows:,}"

    view = python_module(rng, c.view_file, v, docstring="Download endpoints: CSV and PDF exports of an account.",
                         imports=["import csv", "import io", "from django.contrib.auth.decorators import login_required",
                                  "from django.http import HttpRequest, HttpResponse", f"from {pkg}.ledger.models import Transaction",
                                  f"from {pkg}.exports.columns import HEADER"],
                         planted=[OLD_VIEW], target_lines=rng.randint(240, 300))
    view_line = view.line_of("def export_transactions_csv(")
    look = python_module(rng, c.lookalike, v, docstring="DRF viewsets for export jobs (JSON API, not the CSV download).",
                         target_lines=rng.randint(150, 200))
    settings = SourceFile(f"src/{pkg}/settings/base.py", _settings(rng))
    tests = pytest_module(rng, "tests/exports/test_views.py", v, imports=[f"from {pkg}.exports.views import export_transactions_csv"],
                          target_lines=rng.randint(90, 120))
    celery_py = SourceFile(f"src/{pkg}/celery.py", [
        '"""Celery app. Workers: `celery -A tally worker -Q default,invoicing`."""', "", "import os", "",
        "from celery import Celery", "", 'os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tally.settings.prod")', "",
        'app = Celery("tally")', 'app.config_from_object("django.conf:settings", namespace="CELERY")',
        "app.autodiscover_tasks()", "", "app.conf.task_routes = {",
        '    "tally.invoicing.tasks.*": {"queue": "invoicing"},', '    "*": {"queue": "default"},', "}",
    ])
    secret = fake_live_token(rng)

    # ---- 0: the request, with the plan the user will later drop
    b.request(
        f"Support ticket {c.ticket}: {c.customer} can't export their transactions: the CSV download at {c.url} "
        "just times out for them. It's the big accounts (a couple hundred thousand rows).\n\n"
        "I'd like this done as a background job with Celery: they click export, we build the CSV in a task and "
        "email them a link when it's ready. Please investigate and implement.\n\n"
        f"Keep the endpoint URL {c.url} as it is: the mobile app hardcodes it. When you're done, summarise what you "
        "changed and the before/after timings."
    )
    b.fact("intent", "intent", f"Make the transactions CSV export work for large accounts (ticket {c.ticket}, "
           f"{c.customer}), whose downloads time out.", [c.ticket], [0], alt_keys=[[c.customer]])
    b.fact("celery-plan", "decision", "Build the export as a Celery background task that writes the CSV and emails "
           "the user a download link (the user's initial plan).", ["Celery"], [0])
    b.fact("keep-url", "constraint", f"Keep the endpoint URL {c.url} unchanged: the mobile app hardcodes it.", [c.url],
           [0], critical=True)
    b.fact("summary-format", "constraint", "The final reply summarises what changed and the before/after timings.",
           ["before/after"], [0])

    # ---- phase A: the failing view, the numbers, the Celery groundwork
    b.call("Starting with the view behind the URL.", "grep", {"pattern": "transactions.csv", "path": "src"},
           grep_output([(f"src/{pkg}/urls.py", rng.randint(20, 60),
                         '    path("api/exports/transactions.csv", export_views.export_transactions_csv, name="export-transactions-csv"),'),
                        (f"src/{pkg}/exports/views.py", view.line_of("Content-Disposition"), "    response[\"Content-Disposition\"] = 'attachment; filename=\"transactions.csv\"'")]))
    b.call(f"It is `export_transactions_csv` in {c.view_file}.", "read_file", {"path": c.view_file}, view.numbered())
    art = b.call(
        f"`export_transactions_csv` ({c.view_file}:{view_line}) builds the whole CSV in a StringIO and returns it in one "
        "HttpResponse: nothing is sent until every row is formatted, and the whole file sits in memory. What do "
        "the production logs say for the ticket?", "bash",
        {"command": f"kubectl logs deploy/{pkg}-web --since=48h | grep -B3 -A14 'export_transactions_csv' | tail -n 40"},
        "\n".join([f"2024-06-1{rng.randint(0, 9)}T1{rng.randint(0, 9)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}Z ERROR "
                   f"django.request Internal Server Error: {c.url}",
                   python_traceback([
                       ("/app/.venv/lib/python3.11/site-packages/django/db/backends/utils.py", 105, "_execute",
                        "return self.cursor.execute(sql, params)"),
                       (f"/app/src/{pkg}/exports/views.py", view.line_of("    for tx in rows:"), "export_transactions_csv",
                        "for tx in rows:"),
                       ("/app/.venv/lib/python3.11/site-packages/django/db/models/query.py", 400, "__iter__",
                        "self._fetch_all()")],
                       "django.db.utils.OperationalError: canceling statement due to statement timeout"),
                   f"2024-06-1{rng.randint(0, 9)}T1{rng.randint(0, 9)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}Z WARNING "
                   f"gunicorn.error Worker timeout (pid:{rng.randint(100, 999)}) url={c.url}"]))
    b.fact("view", "artifact", f"The export is export_transactions_csv in {c.view_file} (line {view_line}).",
           [c.view_file], [art.assistant])
    b.near_miss("view", c.lookalike)
    big = [(c.near_customer, c.near_account, c.near_rows), (c.customer, c.account, c.rows)] + [
        (n, f"acct_{''.join(rng.choice('0123456789ABCDEFGHJKMNPQRSTVWXYZ') for _ in range(6))}", rng.randint(120000, 205000))
        for n in ("Fabrikam Freight", "Contoso Retail", "Tailspin Toys", "Wingtip Outfitters", "Litware Labs")]
    big.sort(key=lambda r: -r[2])
    bug = b.call(
        "`django.db.utils.OperationalError: canceling statement due to statement timeout` while iterating the "
        "queryset, followed by a gunicorn worker timeout. Which accounts are big enough to hit it?", "bash",
        {"command": "python manage.py dbshell --database replica -- -c \"SELECT a.name, a.public_id, count(*) FROM "
                    "ledger_transaction t JOIN accounts_account a ON a.id = t.account_id GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 7\""},
        sql_table(["name", "public_id", "count"], [(n, i, f"{r:,}") for n, i, r in big]))
    b.fact("timeout-error", "bug", "The export fails with django.db.utils.OperationalError: canceling statement due "
           "to statement timeout while iterating the queryset (then a gunicorn worker timeout).",
           ["OperationalError", "canceling statement due to statement timeout"], [art.result, bug.assistant],
           critical=True)
    tm = b.call(
        f"{c.customer} ({c.account}) has {rows} transactions. Careful: {c.near_customer} ({c.near_account}) is a "
        f"different customer with {c.near_rows:,}. Timing the current export for {c.account} against a staging "
        "snapshot:", "bash", {"command": f"python manage.py time_export --account {c.account} --settings {pkg}.settings.staging"},
        f"account={c.account} rows={c.rows} first_byte_s=74.18 elapsed_s=74.21 peak_rss_mb=1913\n"
        "note: staging has no statement_timeout; production cancels at 30 s")
    cel = b.call("74.2 s to first byte and 1.9 GB peak, against production's 30 s statement timeout and the load "
                 "balancer in front. Now the Celery side for the requested design.", "read_file",
                 {"path": celery_py.path}, celery_py.numbered())
    b.fact("before-numbers", "number", f"{c.customer} ({c.account}) has {rows} transactions; the current export "
           "takes 74.2 s before the first byte and peaks at 1.9 GB.", [rows, "74.2"],
           [bug.result, tm.assistant, tm.result, cel.assistant])
    b.near_miss("before-numbers", f"{c.near_rows:,}")
    b.call("Queues `default` and `invoicing`. Settings:", "read_file", {"path": settings.path}, settings.numbered())
    models = python_module(rng, f"src/{pkg}/ledger/models.py", v, docstring="Ledger models: transactions and their categories.",
                           imports=["from django.db import models"],
                           planted=[["class Transaction(models.Model):",
                                     '    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="transactions")',
                                     "    booked_at = models.DateTimeField(db_index=True)",
                                     "    amount = models.DecimalField(max_digits=14, decimal_places=2)",
                                     '    category = models.ForeignKey("Category", null=True, on_delete=models.SET_NULL)',
                                     '    payee = models.ForeignKey("Payee", null=True, on_delete=models.SET_NULL)',
                                     "", "    class Meta:",
                                     '        indexes = [models.Index(fields=["account", "booked_at", "id"])]', "",
                                     "    def as_csv_row(self) -> list[str]:",
                                     "        return [self.booked_at.isoformat(), str(self.id), str(self.amount),",
                                     '                self.category.name if self.category else "", self.payee.name if self.payee else ""]']],
                           target_lines=rng.randint(220, 280))
    b.call("How is a transaction row built, and is there an index for ordering by (account, booked_at, id)?",
           "read_file", {"path": models.path}, models.numbered())
    b.call("What does the exports package already contain?", "list_dir", {"path": f"src/{pkg}/exports"},
           ls_output(["__init__.py", "columns.py", "pdf.py", "serializers.py", "urls.py", "views.py"]))
    b.call(f"And {c.lookalike}, which sounds related:", "read_file", {"path": c.lookalike}, look.numbered())
    wenv = b.call(
        "That is the JSON API for PDF statement jobs, not the CSV download. How are the workers configured (queues, "
        "concurrency)?", "bash", {"command": f"kubectl exec deploy/{pkg}-worker -- env | sort"},
        env_dump(rng, {"CELERY_BROKER_URL": f"redis://redis-master.{pkg}.svc:6379/0", "CELERY_CONCURRENCY": "4",
                       "CELERY_QUEUES": "default,invoicing", "DJANGO_SETTINGS_MODULE": f"{pkg}.settings.prod",
                       f"{pkg.upper()}_EMAIL_API_KEY": secret, "AWS_STORAGE_BUCKET_NAME": f"{pkg}-prod-files",
                       "WEB_CONCURRENCY": "3"}, home="/app"))
    b.avoid("worker-secret", "secret", f"The {pkg.upper()}_EMAIL_API_KEY value printed by the worker env dump.",
            [secret], [wenv.result])
    b.call("4 worker processes on `default,invoicing`. (The env also prints an email API key; I won't repeat it.) "
           "How are emails sent today?", "grep", {"pattern": "def send_", "path": f"src/{pkg}/emails.py"},
           grep_output([(f"src/{pkg}/emails.py", n, f"def send_{w}(user: User, **context) -> None:") for n, w in
                        sorted(zip(rng.sample(range(20, 220), 5), ("invoice_reminder", "statement_ready", "password_reset",
                                                                      "welcome", "budget_alert"), strict=True))]))
    b.call("The tests of the export view, before changing anything:", "read_file", {"path": tests.path}, tests.numbered())
    b.call("And their current state.", "run_tests", {"target": "tests/exports", "args": "-q"},
           "\n".join([pytest_progress(rng, [("tests/exports/test_views.py", 14, 0, 0), ("tests/exports/test_pdf.py", 9, 0, 0)]),
                      pytest_summary(passed=23, seconds=rng.uniform(2, 6))]))
    tasks = SourceFile(f"src/{pkg}/exports/tasks.py", [
        '"""Background CSV exports: build the file, upload it, email a link."""', "",
        "from celery import shared_task", "", f"from {pkg}.emails import {c.email_fn}",
        f"from {pkg}.exports.csvfile import write_transactions_csv", f"from {pkg}.storage import upload_private", "", "",
        '@shared_task(queue="default", acks_late=True, time_limit=900)',
        f"def {c.task_name}(account_id: int, user_id: int) -> str:",
        '    key = f"exports/{account_id}/transactions-{uuid4().hex}.csv"',
        "    with tempfile.NamedTemporaryFile(\"w+\", suffix=\".csv\") as fh:",
        "        write_transactions_csv(account_id, fh)",
        "        url = upload_private(fh.name, key, expires_s=7 * 24 * 3600)",
        f"    {c.email_fn}(user_id, url=url)",
        "    return key",
    ])
    plan = b.call(
        f"Plan, following your design: a Celery task `{c.task_name}` in {tasks.path} writes the CSV to a temp file, "
        f"uploads it to the private bucket, and `{c.email_fn}` mails a 7-day link; the view at {c.url} enqueues it "
        "and returns 202. Starting with the task.", "edit_file", {"path": tasks.path, "old": "", "new": tasks.text()},
        f"Created {tasks.path} ({len(tasks.lines)} lines)")
    b.fact("celery-task-plan", "decision", f"Agent's implementation plan for the Celery design: task {c.task_name} in "
           f"{tasks.path}, upload to the private bucket, email a 7-day link via {c.email_fn}, view returns 202.",
           [c.task_name], [plan.assistant])

    # ---- point 1: the Celery plan is current
    b.point()
    b.say(
        "Before I wire the view, two questions:\n1. Link expiry: is 7 days OK, or should it follow the statement "
        "links (48 h)?\n2. The workers run 4 processes on `default,invoicing`; month-end invoicing already keeps them "
        "busy, so exports could queue behind it for a while. Is that acceptable, or should I ask ops for a separate "
        "`exports` queue?"
    )
    change = b.user(
        "Actually, scratch the Celery plan. Ops just told me we can't add any worker capacity before Q3, and the "
        "workers are already saturated with invoicing. Can you make the export stream instead?\n\n"
        "Two things: it has to survive the load balancer's 60-second idle timeout (so bytes need to keep flowing), "
        "and it must not hold the whole result in memory. Same URL as before, obviously."
    )
    b.supersede("celery-plan", change)
    b.supersede("celery-task-plan", change)
    b.avoid("celery-design", "superseded", f"The dropped Celery design ({c.task_name}, emailed link).",
            [c.task_name], [change])
    b.fact("no-new-workers", "constraint", "No new worker capacity before Q3 (workers are saturated with invoicing): "
           "the export must be a streaming response, not a background job.", ["Q3"], [change], critical=True)
    b.fact("stream-limits", "constraint", "The streamed export must survive the load balancer's 60-second idle "
           "timeout (bytes keep flowing) and must not hold the whole result in memory.", ["idle timeout"], [change])
    b.call("Understood, dropping the task file.", "bash", {"command": f"rm {tasks.path} && git status --short"},
           "")
    b.call("Re-reading the view around the function before rewriting it.", "read_file",
           {"path": c.view_file, "start_line": view_line - 30, "end_line": view_line + 40},
           view.numbered(view_line - 30, view_line + 40))
    it_view = view.replaced_lines(OLD_VIEW, ITER_VIEW)
    b.call("First version: StreamingHttpResponse over `queryset.iterator(chunk_size=2000)` with a csv writer on an "
           "Echo pseudo-buffer, so rows go out as they are fetched.", "edit_file",
           {"path": c.view_file, "old": "\n".join(OLD_VIEW), "new": "\n".join(ITER_VIEW)},
           unified_diff(c.view_file, view.lines, it_view.lines, rng))
    t1 = b.call("Timing it on the same account.", "bash",
                {"command": f"python manage.py time_export --account {c.account} --settings {pkg}.settings.staging"},
                f"account={c.account} rows={c.rows} first_byte_s=58.90 elapsed_s=61.02 peak_rss_mb=1741 max_gap_s=58.90")
    dsc = settings.line_of("DISABLE_SERVER_SIDE_CURSORS")
    g = b.call(
        "Barely better: 58.9 s to the first byte and still 1.7 GB. `.iterator()` should have streamed from a "
        "server-side cursor. Unless those are off:", "grep", {"pattern": "DISABLE_SERVER_SIDE_CURSORS|CONN_MAX_AGE|pgbouncer",
                                                               "path": f"src/{pkg}/settings"},
        grep_output(real_hits("DISABLE_SERVER_SIDE_CURSORS|CONN_MAX_AGE|pgbouncer", [settings])))
    ks_view = view.replaced_lines(OLD_VIEW, KEYSET_VIEW)
    dec = b.call(
        f"That's it: settings/base.py:{dsc} sets `DISABLE_SERVER_SIDE_CURSORS = True` because the database sits behind "
        "PgBouncer in transaction mode, so psycopg2 fetches the whole result client-side and `.iterator()` only "
        "chunks the Python objects. Decision: keyset pagination instead: each batch of 5,000 rows is its own short "
        "query (WHERE (booked_at, id) > last key), streamed as soon as it is fetched. It works under transaction "
        "pooling, keeps memory flat and never runs a statement near the 30 s timeout.", "edit_file",
        {"path": c.view_file, "old": "\n".join(ITER_VIEW), "new": "\n".join(KEYSET_VIEW)},
        unified_diff(c.view_file, it_view.lines, ks_view.lines, rng))
    b.fact("iterator-attempt", "attempt", "Streaming with queryset.iterator(chunk_size=2000) failed to help (58.9 s "
           "to first byte, 1.7 GB) because DISABLE_SERVER_SIDE_CURSORS = True (PgBouncer transaction mode) makes "
           "psycopg2 fetch the whole result.", ["DISABLE_SERVER_SIDE_CURSORS"], [t1.result, g.result, dec.assistant])
    b.fact("keyset-decision", "decision", "Use keyset pagination (batches of 5,000 by (booked_at, id)) inside the "
           "streaming generator instead of server-side cursors, because PgBouncer transaction pooling disables them; "
           "each batch is a short query.", ["keyset"], [dec.assistant])
    b.call("EXPORT_BATCH needs to exist.", "edit_file",
           {"path": settings.path, "old": "DISABLE_SERVER_SIDE_CURSORS = True", "new": "DISABLE_SERVER_SIDE_CURSORS = True\nEXPORT_BATCH = 5000"},
           unified_diff(settings.path, settings.lines, settings.replaced_lines(
               ["DISABLE_SERVER_SIDE_CURSORS = True"], ["DISABLE_SERVER_SIDE_CURSORS = True", "EXPORT_BATCH = 5000"]).lines, rng))
    t2 = b.call("Timing again.", "bash",
                {"command": f"python manage.py time_export --account {c.account} --settings {pkg}.settings.staging"},
                f"account={c.account} rows={c.rows} first_byte_s=0.31 elapsed_s=38.40 peak_rss_mb=96 max_gap_s=1.20 "
                f"batches={-(-c.rows // 5000)}")
    after = b.call(
        "First byte after 0.31 s, the whole file in 38.4 s, peak 96 MB, and never more than 1.2 s between chunks, "
        "far inside the 60 s idle timeout. The existing tests:", "run_tests", {"target": "tests/exports", "args": "-q"},
        "\n".join([pytest_progress(rng, [("tests/exports/test_views.py", 14, 0, 0), ("tests/exports/test_pdf.py", 9, 0, 0)]),
                   pytest_summary(passed=23, seconds=rng.uniform(2, 6))]))
    b.fact("after-numbers", "number", "With keyset streaming: first byte after 0.31 s, full export in 38.4 s, peak "
           "96 MB, max gap between chunks 1.2 s.", ["38.4", "0.31"], [t2.result, after.assistant])
    nxt = b.call(
        "Green, but nothing covers streaming or batch boundaries. Next: add a test that exports more than one batch "
        "(with EXPORT_BATCH patched small) and checks row count and order, run the whole suite, then send you the "
        "summary with the before/after numbers. Looking at the test helpers first.", "grep",
        {"pattern": "def make_transactions|def account_with", "path": "tests"},
        grep_output([("tests/factories.py", rng.randint(40, 120), "def make_transactions(account, n: int, **kwargs):"),
                     ("tests/conftest.py", rng.randint(10, 60), "def account_with(db, n_transactions: int = 0):")]))
    b.fact("next-test", "next_step", "Add a test that streams more than one batch (EXPORT_BATCH patched small) and "
           "checks row count and order, run the whole suite, then send the summary with before/after numbers.",
           ["EXPORT_BATCH"], [nxt.assistant])

    # ---- point 2: the streaming view works; test and summary pending
    b.point()
    new_test = ["", "", "@pytest.mark.django_db", "def test_export_streams_across_batches(client, account_with, settings):",
                "    settings.EXPORT_BATCH = 3", "    account = account_with(n_transactions=10)",
                "    client.force_login(account.owner)", f'    response = client.get("{c.url}")',
                "    body = b\"\".join(response.streaming_content).decode()", "    lines = body.splitlines()",
                "    assert len(lines) == 11  # header + 10 rows",
                "    assert lines[1:] == sorted(lines[1:], key=lambda l: (l.split(\",\")[0], int(l.split(\",\")[1])))"]
    b.call("Adding the test.", "edit_file", {"path": tests.path, "old": tests.lines[-1], "new": tests.lines[-1] + "\n".join(new_test)},
           unified_diff(tests.path, tests.lines, tests.lines + new_test, rng))
    b.call("Whole suite.", "run_tests", {"target": "tests", "args": "-q"},
           "\n".join([pytest_progress(rng, [("tests/exports/test_views.py", 15, 0, 0), ("tests/exports/test_pdf.py", 9, 0, 0),
                                            ("tests/ledger/test_models.py", 88, 0, 1), ("tests/invoicing/test_tasks.py", 61, 0, 0)]),
                      pytest_summary(passed=172, skipped=1, seconds=rng.uniform(20, 40))]))
    b.call("All green. Lint:", "bash", {"command": f"ruff check src/{pkg} tests"}, "All checks passed!")
    b.call("Final diff summary:", "bash", {"command": "git diff --stat"},
           f" {c.view_file}        | 38 ++++++++++++++++++++++++++-----------\n src/{pkg}/settings/base.py        |  1 +\n"
           " tests/exports/test_views.py     | 13 +++++++++++++\n 3 files changed, 40 insertions(+), 12 deletions(-)")
    b.say(
        f"Done: the export at {c.url} (same URL) now streams instead of building the file in memory.\n\n"
        f"- `{c.view_file}`: `export_transactions_csv` is a StreamingHttpResponse over keyset-paginated batches of "
        "5,000 rows. `.iterator()` alone did not help because `DISABLE_SERVER_SIDE_CURSORS = True` (PgBouncer).\n"
        "- `settings/base.py`: `EXPORT_BATCH = 5000`.\n- A test that streams across batch boundaries.\n\n"
        f"Timings for {c.customer} ({c.account}, {rows} rows), before -> after: first byte 74.2 s -> 0.31 s, total "
        "74.2 s -> 38.4 s, peak memory 1.9 GB -> 96 MB; the largest gap between chunks is 1.2 s, well inside the "
        "60 s idle timeout. No Celery task or worker capacity needed."
    )
    return b.build()


def _settings(rng: random.Random) -> list[str]:
    """settings/base.py of the project, with the line that defeats `.iterator()` in the middle."""
    apps = ["django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
            "django.contrib.messages", "django.contrib.staticfiles", "rest_framework", "tally.accounts", "tally.ledger",
            "tally.exports", "tally.invoicing", "tally.budgets"]
    lines = ['"""Base settings shared by every environment."""', "", "from pathlib import Path", "", "import environ", "",
             "env = environ.Env()", "BASE_DIR = Path(__file__).resolve().parents[2]", "",
             'SECRET_KEY = env("DJANGO_SECRET_KEY")', 'DEBUG = env.bool("DJANGO_DEBUG", default=False)',
             'ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=[])', "", "INSTALLED_APPS = ["]
    lines += [f'    "{a}",' for a in apps] + ["]", "", "MIDDLEWARE = ["]
    lines += [f'    "{m}",' for m in ("django.middleware.security.SecurityMiddleware",
                                      "django.contrib.sessions.middleware.SessionMiddleware",
                                      "django.middleware.common.CommonMiddleware", "django.middleware.csrf.CsrfViewMiddleware",
                                      "django.contrib.auth.middleware.AuthenticationMiddleware",
                                      "tally.accounts.middleware.CurrentAccountMiddleware")]
    lines += ["]", "", "DATABASES = {", '    "default": env.db("DATABASE_URL"),', '    "replica": env.db("REPLICA_URL"),', "}",
              "# The database is reached through PgBouncer in transaction pooling mode (pgbouncer.ini: pool_mode =",
              "# transaction): named cursors do not survive between statements, so Django must not use them.",
              'DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True',
              "DISABLE_SERVER_SIDE_CURSORS = True",
              'DATABASES["default"]["CONN_MAX_AGE"] = 0', "",
              'CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="redis://localhost:6379/0")',
              "CELERY_TASK_ACKS_LATE = True", f"CELERY_WORKER_PREFETCH_MULTIPLIER = {rng.choice((1, 2))}", "",
              'DEFAULT_FILE_STORAGE = "storages.backends.s3boto3.S3Boto3Storage"',
              'AWS_STORAGE_BUCKET_NAME = env("AWS_STORAGE_BUCKET_NAME", default="")', "",
              "LANGUAGE_CODE = \"en-us\"", "TIME_ZONE = \"UTC\"", "USE_TZ = True", "",
              "REST_FRAMEWORK = {", '    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.CursorPagination",',
              f'    "PAGE_SIZE": {rng.choice((50, 100))},', "}", "",
              "LOGGING = {", '    "version": 1,', '    "handlers": {"console": {"class": "logging.StreamHandler"}},',
              '    "root": {"handlers": ["console"], "level": "INFO"},', "}"]
    return lines
