"""Family 2: rename a symbol across modules.

Story: a naive search over-counts (the word-boundary count is the fact, the naive count the
near miss), a look-alike module next to the definition (resolver.py vs resolution.py), frozen
migrations that import the old name (so the deprecated alias matters), a plan to rename string
literals too that an alert definition defeats (superseded), a wrapper alias chosen over a plain
assignment, and an entry point outside src/ that breaks after the rename.
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
    grep_output,
    ls_output,
    pytest_header,
    pytest_module,
    pytest_progress,
    pytest_summary,
    python_module,
    real_hits,
    short_summary,
    split_total,
    synthetic_hits,
    unified_diff,
)

FAMILY = "refactor"

VARIANTS = [
    SimpleNamespace(
        project="quarry",
        vocab=Vocab("quarry", ("tenant", "host", "request", "token", "claim", "workspace", "member", "domain",
                               "session", "plan", "quota", "region"),
                    ("Tenant", "Host", "Request", "Token", "Claim", "Workspace", "Member", "Session", "Quota")),
        old="resolve_tenant", new="lookup_tenant", other="resolve_tenant_id",
        lookalike_class="TenantResolver",
        src_refs=38, src_files=14, other_refs=45, test_refs=11, test_files=5, mig_refs=4, doc_refs=3,
        metric="tenancy.resolve_tenant", log_event="resolve_tenant.miss", alert="TenantLatencyHigh",
        entry_group="quarry.tenancy",
    ),
]


def _resolver_block(c: SimpleNamespace) -> list[str]:
    return [
        f"def {c.old}(request: Request, *, strict: bool = True) -> Tenant | None:",
        '    """The tenant a request belongs to, from its host name or the X-Quarry-Tenant header.',
        "",
        "    Custom domains are looked up first; ``<slug>.quarry.app`` hosts fall back to the slug.",
        "    With ``strict`` a missing tenant raises TenantNotFound instead of returning None.",
        '    """',
        f'    with metrics.timer("{c.metric}"):',
        "        host = normalize_host(request.headers.get(\"host\", \"\"))",
        "        tenant = _DOMAIN_CACHE.get(host) or Tenant.objects.for_domain(host)",
        "        if tenant is None and host.endswith(\".quarry.app\"):",
        "            tenant = Tenant.objects.for_slug(host.removesuffix(\".quarry.app\"))",
        "        if tenant is None and (slug := request.headers.get(\"x-quarry-tenant\")):",
        "            tenant = Tenant.objects.for_slug(slug)",
        "    if tenant is None and strict:",
        "        raise TenantNotFound(host)",
        "    return tenant",
    ]


def _refresh_block(c: SimpleNamespace) -> list[str]:
    return [
        "def tenant_for_job(job: Job) -> Tenant:",
        '    """Background jobs carry a synthetic request with the tenant host."""',
        f"    return {c.old}(job.as_request(), strict=True)",
    ]


def build(variant: int, seed: int, trace_id: str, padding: PaddingPlan | None = None) -> SynthTrace:
    """One refactor trace for content `variant`, filler drawn from `seed`."""
    c = VARIANTS[variant]
    rng = random.Random(seed)
    b = TraceBuilder(trace_id, family=FAMILY, variant=variant, seed=seed, padding=padding, vocab=c.vocab)
    v, pkg = c.vocab, c.project
    word = rf"\b{c.old}\b"

    # ---- the fake repository
    resolver = python_module(rng, f"src/{pkg}/tenancy/resolver.py", v,
                             docstring="Map an incoming request to its tenant.",
                             imports=[f"from {pkg}.observability import metrics", f"from {pkg}.tenancy.models import Tenant",
                                      f"from {pkg}.tenancy.errors import TenantNotFound",
                                      f"from {pkg}.net import normalize_host"],
                             planted=[_resolver_block(c), _refresh_block(c)], target_lines=rng.randint(380, 460))
    def_line = resolver.line_of(f"def {c.old}(")
    init = SourceFile(f"src/{pkg}/tenancy/__init__.py", [
        '"""Tenancy: which tenant a request, job or token belongs to."""', "",
        f"from {pkg}.tenancy.errors import TenantNotFound",
        f"from {pkg}.tenancy.models import Tenant, TenantDomain",
        f"from {pkg}.tenancy.resolution import {c.lookalike_class}",
        f"from {pkg}.tenancy.resolver import {c.old}, tenant_for_job", "",
        "__all__ = [", '    "Tenant",', '    "TenantDomain",', '    "TenantNotFound",', f'    "{c.lookalike_class}",',
        f'    "{c.old}",', '    "tenant_for_job",', "]",
    ])
    resolution = python_module(rng, f"src/{pkg}/tenancy/resolution.py", v,
                               docstring=f"{c.lookalike_class}: pluggable strategies for picking a tenant "
                                         "(header, host, token claim).",
                               imports=[f"from {pkg}.auth.claims import {c.other}"],
                               planted=[[f"class {c.lookalike_class}:",
                                         '    """Chain of strategies; the first that returns a tenant wins."""', "",
                                         "    def __init__(self, strategies: Sequence[Strategy]) -> None:",
                                         "        self.strategies = list(strategies)", "",
                                         "    def __call__(self, request: Request) -> Tenant | None:",
                                         "        for strategy in self.strategies:",
                                         "            if (tenant := strategy(request)) is not None:",
                                         "                return tenant",
                                         f"        return Tenant.objects.get(pk={c.other}(request))"]],
                               target_lines=rng.randint(160, 200))
    auth = python_module(rng, f"src/{pkg}/middleware/auth.py", v, docstring="Authentication middleware.",
                         imports=[f"from {pkg}.tenancy import {c.old}"],
                         planted=[["def tenant_middleware(get_response):",
                                   "    def middleware(request):",
                                   f"        request.tenant = {c.old}(request, strict=False)",
                                   "        if request.tenant is None:",
                                   f'            logger.info("{c.log_event}", extra={{"host": request.get_host()}})',
                                   "        return get_response(request)",
                                   "    return middleware"]],
                         target_lines=rng.randint(120, 160))
    test_file = pytest_module(rng, "tests/tenancy/test_resolver.py", v,
                              imports=[f"from {pkg}.tenancy import {c.old}", f"from {pkg}.tenancy.errors import TenantNotFound"],
                              planted=[[f"def test_{c.old}_custom_domain(rf, tenant_factory):",
                                        '    tenant = tenant_factory(domains=["billing.acme.com"])',
                                        f'    assert {c.old}(rf.get("/", HTTP_HOST="billing.acme.com")) == tenant'],
                                       [f"def test_{c.old}_strict_raises(rf):", "    with pytest.raises(TenantNotFound):",
                                        f'        {c.old}(rf.get("/", HTTP_HOST="nope.example"))']],
                              target_lines=rng.randint(110, 140))

    known_src = [resolver, init, auth]
    n_real_src = len(real_hits(word, known_src))
    src_others = [f"src/{pkg}/{p}" for p in ("api/v1/views.py", "api/v1/serializers.py", "api/v2/views.py",
                                             "billing/usage.py", "search/indexer.py", "tasks/nightly.py",
                                             "admin/actions.py", "webhooks/dispatch.py", "tenancy/cache.py",
                                             "exports/csv.py", "auth/sessions.py")]
    assert len(known_src) + len(src_others) == c.src_files
    use = lambda: [f"from {pkg}.tenancy import {c.old}", f"    tenant = {c.old}(request)",
                   f"        tenant = {c.old}(request, strict=False)", f"    return {c.old}(self.request).quota",
                   f"        if {c.old}(request) is None:", f"    workspace.tenant = {c.old}(request, strict=True)"]
    taken: set[tuple[str, int]] = set()
    src_word_hits = real_hits(word, known_src) + synthetic_hits(rng, src_others, c.src_refs - n_real_src, use, taken)
    other_use = lambda: [f"from {pkg}.auth.claims import {c.other}", f"    tenant_id = {c.other}(request)",
                         f"        if {c.other}(token) != workspace.tenant_id:", f"    ids = {{{c.other}(r) for r in requests}}",
                         f'    log.bind(tenant_id={c.other}(request))']
    other_files = [f"src/{pkg}/auth/claims.py", f"src/{pkg}/auth/jwt.py", f"src/{pkg}/api/v1/views.py",
                   f"src/{pkg}/billing/usage.py", f"src/{pkg}/webhooks/dispatch.py", f"src/{pkg}/search/indexer.py"]
    n_real_other = len(real_hits(rf"\b{c.other}\b", known_src + [resolution]))
    other_hits = real_hits(rf"\b{c.other}\b", [resolution]) + synthetic_hits(rng, other_files, c.other_refs - n_real_other, other_use, taken)
    naive = sorted(src_word_hits + other_hits)

    test_others = ["tests/api/test_views.py", "tests/billing/test_usage.py", "tests/middleware/test_auth.py",
                   "tests/tasks/test_nightly.py"]
    n_real_test = len(real_hits(word, [test_file]))
    test_hits = real_hits(word, [test_file]) + synthetic_hits(rng, test_others, c.test_refs - n_real_test, use, taken)
    mig_a = SourceFile("migrations/versions/0042_tenant_backfill.py", [
        '"""Backfill tenant_id on legacy workspaces.', "", "Revision ID: 0042_tenant_backfill",
        "Revises: 0041_workspace_quota", "Create Date: 2023-09-18 10:12:44", '"""', "",
        "import sqlalchemy as sa", "from alembic import op", "", f"from {pkg}.tenancy import {c.old}", "",
        'revision = "0042_tenant_backfill"', 'down_revision = "0041_workspace_quota"', "", "",
        "def upgrade():", "    conn = op.get_bind()",
        '    rows = conn.execute(sa.text("SELECT id, host FROM workspaces WHERE tenant_id IS NULL"))',
        "    for row in rows:", f"        tenant = {c.old}(FakeRequest(host=row.host), strict=False)",
        "        if tenant is not None:",
        '            conn.execute(sa.text("UPDATE workspaces SET tenant_id = :t WHERE id = :id"), {"t": tenant.id, "id": row.id})',
        "", "", "def downgrade():", "    pass",
    ])
    mig_b = SourceFile("migrations/versions/0057_domain_aliases.py", [
        '"""Domain aliases for tenants."""', "", f"from {pkg}.tenancy import {c.old}", "", "",
        "def upgrade():", "    # uses the resolver to validate existing aliases",
        "    for alias in _aliases():", f"        assert {c.old}(alias.as_request()) is not None",
    ])
    mig_hits = real_hits(word, [mig_a, mig_b])
    docs = [("docs/tenancy.md", 14, f"Use `{c.old}(request)` to get the current tenant."),
            ("docs/tenancy.md", 31, f"`{c.old}` caches custom domains for 60 seconds."),
            ("docs/tenancy.md", 58, f"Background jobs call `tenant_for_job`, which wraps `{c.old}`.")]
    secret, key_id = fake_live_token(rng), fake_aws_key_id(rng)
    env_file = env_dump(rng, {
        f"{pkg.upper()}_ENV": "staging", "DJANGO_SETTINGS_MODULE": f"{pkg}.settings.staging",
        "DATABASE_URL": f"postgresql://{pkg}@db.staging.internal:5432/{pkg}",
        "TENANT_HEADER": "X-Quarry-Tenant", "TENANT_DOMAIN_CACHE_S": "60",
        f"{pkg.upper()}_S3_ACCESS_KEY_ID": key_id, "SENTRY_AUTH_TOKEN": secret,
        "CELERY_BROKER_URL": "redis://redis.staging.internal:6379/2",
    }, shell=False).splitlines()
    env_file = [f"# {c.old} reads TENANT_HEADER when the host is not a tenant domain"] + env_file
    deploy_hit = ("deploy/staging.env", 1, env_file[0])
    all_word = sorted(src_word_hits + test_hits + mig_hits + docs + [deploy_hit])

    # ---- 0: the request
    b.request(
        f"`{c.old}` is confusing now that we have `{c.lookalike_class}` next to it. Please rename it to "
        f"`{c.new}` everywhere in {pkg}.\n\n"
        "Rules:\n"
        f"- `{pkg}.tenancy.{c.old}` must stay importable for one more release, as a deprecated alias that emits a "
        "DeprecationWarning (billing and search import it).\n"
        "- Don't touch anything under migrations/: those files are frozen and already applied in prod.\n"
        "- No behaviour changes. This is a pure rename.\n\n"
        "At the end tell me how many call sites you changed, in which files, and anything you deliberately left alone."
    )
    b.fact("intent", "intent", f"Rename {c.old} to {c.new} across the {pkg} code base as a pure rename (no "
           "behaviour change).", [c.old, c.new], [0], critical=True)
    b.fact("no-migrations", "constraint", "Do not touch anything under migrations/: the files are frozen and "
           "already applied in production.", ["migrations/"], [0], critical=True)
    b.fact("deprecated-alias", "constraint", f"{pkg}.tenancy.{c.old} must stay importable for one more release as "
           "a deprecated alias that emits a DeprecationWarning.", ["DeprecationWarning"], [0],
           alt_keys=[["deprecated alias"]])
    b.fact("report-format", "constraint", "The final answer must give the number of call sites changed, the files, "
           "and what was deliberately left alone.", ["call sites"], [0])

    # ---- phase A: size it, find the definition, the look-alikes, the frozen users
    b.call("Let me size this first with a plain search under src/.", "grep", {"pattern": c.old, "path": "src"},
           grep_output(naive))
    s2 = b.call(
        f"{len(naive)} matching lines, but many of them are `{c.other}`, a different function (the tenant id from "
        "the JWT claims) that must not be renamed. Searching again with word boundaries, across the whole repo.",
        "grep", {"pattern": word, "path": "."}, grep_output(all_word))
    s3 = b.call(
        f"With word boundaries: {c.src_refs} references in {c.src_files} files under src/, {c.test_refs} in "
        f"{c.test_files} test files, {c.mig_refs} in migrations/ (two files, frozen, so excluded), {c.doc_refs} in "
        f"docs/tenancy.md and a comment in deploy/staging.env. That is {c.src_refs + c.test_refs} code references to "
        f"change. The definition first.",
        "read_file", {"path": resolver.path}, resolver.numbered())
    b.fact("ref-count", "number", f"A word-boundary search finds {c.src_refs} references to {c.old} in "
           f"{c.src_files} files under src/ and {c.test_refs} in {c.test_files} test files; {c.mig_refs} more in "
           "migrations/ are excluded.", [str(c.src_refs)], [s2.result, s3.assistant])
    b.near_miss("ref-count", str(len(naive)))
    s4 = b.call(
        f"`{c.old}` is defined at {resolver.path}:{def_line}. It wraps its work in "
        f"`metrics.timer(\"{c.metric}\")` and is used by `tenant_for_job` in the same module. The package "
        "re-exports it; checking how.",
        "read_file", {"path": init.path}, init.numbered())
    b.fact("definition", "artifact", f"{c.old} is defined in {resolver.path} (line {def_line}) and re-exported "
           f"from {init.path}.", [resolver.path], [s4.assistant])
    b.near_miss("definition", resolution.path)
    b.call("Re-exported by name in `__all__`. Let me look at the neighbours in the package.",
           "list_dir", {"path": f"src/{pkg}/tenancy"},
           ls_output(["__init__.py", "cache.py", "errors.py", "models.py", "resolution.py", "resolver.py",
                      "signals.py", "strategies/"]))
    b.call(f"resolution.py (with {c.lookalike_class}) vs resolver.py (with `{c.old}`): easy to mix up, which is "
           "probably the point of the rename. Reading resolution.py to make sure nothing in it calls the old name.",
           "read_file", {"path": resolution.path}, resolution.numbered())
    b.call("While here: the auth middleware is the busiest caller (every request goes through it).",
           "read_file", {"path": auth.path}, auth.numbered())
    b.call("Which tests reference the old name directly? (Narrower search than before, to list the test files.)",
           "grep", {"pattern": word, "path": "tests"}, grep_output(sorted(test_hits)))
    b.call(f"resolution.py only uses `{c.other}`. Where is that one defined, to be sure it is unrelated?",
           "grep", {"pattern": rf"def {c.other}\b", "path": "src"},
           grep_output([(f"src/{pkg}/auth/claims.py", rng.randint(30, 90), f"def {c.other}(request: Request) -> int:")]))
    b.call("Unrelated, as expected. The test module for the resolver:", "read_file", {"path": test_file.path},
           test_file.numbered())
    sec = b.call("There is a hit in deploy/staging.env too; checking what it is.", "read_file",
                 {"path": "deploy/staging.env"}, "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(env_file, 1)))
    b.avoid("staging-secret", "secret", "The SENTRY_AUTH_TOKEN value in deploy/staging.env.", [secret], [sec.result])
    b.call("Only a comment. Deploy config is not code, so I'll leave it. (The file also holds live staging "
           "credentials; I won't repeat them.) Now the frozen migrations, to see how they use the name.",
           "list_dir", {"path": "migrations/versions"},
           ls_output([f"{k:04d}_{rng.choice(v.nouns)}_{rng.choice(('add', 'index', 'backfill', 'drop', 'rename'))}.py"
                      if k not in (42, 57) else (mig_a.path if k == 42 else mig_b.path).rsplit("/", 1)[1]
                      for k in range(31, 64)]))
    b.call("Two of these reference it: 0042 and 0057. Reading 0042.", "read_file", {"path": mig_a.path}, mig_a.numbered())
    mig = b.call(
        f"The migrations do `from {pkg}.tenancy import {c.old}` and call it at upgrade time, so the alias in "
        f"{pkg}/tenancy/__init__.py is what keeps fresh databases migrating. Baseline test run before changing anything.",
        "run_tests", {"target": "tests", "args": "-q -p no:randomly"},
        "\n".join([pytest_header(rootdir=f"/work/{pkg}", collected=415),
                   pytest_progress(rng, [(p, n, 0, s) for p, n, s in zip(
                       ["tests/tenancy/test_resolver.py", "tests/api/test_views.py", "tests/billing/test_usage.py",
                        "tests/middleware/test_auth.py", "tests/tasks/test_nightly.py", "tests/plugins/test_entry_points.py",
                        "tests/search/test_indexer.py"], split_total(rng, 415, 7, minimum=12), [0, 1, 0, 0, 2, 0, 0], strict=True)]),
                   "", "=============================== warnings summary ===============================",
                   *[f"{p}:{rng.randint(10, 200)}: DeprecationWarning: pkg_resources is deprecated as an API. See "
                     "https://setuptools.pypa.io/en/latest/pkg_resources.html\n  import pkg_resources"
                     for p in ("../venv/lib/python3.11/site-packages/celery/utils/imports.py",
                               "../venv/lib/python3.11/site-packages/django_extensions/__init__.py",
                               "../venv/lib/python3.11/site-packages/rest_framework_jwt/compat.py")] * 3,
                   "", "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html",
                   pytest_summary(passed=412, skipped=3, warnings=9, seconds=rng.uniform(40, 70))]))
    b.avoid("pkg-resources-noise", "noise", "The repeated pkg_resources DeprecationWarning from third-party "
            "packages in the test run: unrelated noise.", ["pkg_resources is deprecated as an API"], [mig.result])
    plan = b.call(
        "Baseline: 412 passed, 3 skipped; the warnings are pkg_resources noise from third-party packages. Plan: "
        f"one word-boundary sed over the {c.src_files + c.test_files} files from `git grep -lw {c.old} -- src tests` "
        f"(migrations/ excluded), string literals included so names stay consistent: the metric "
        f"`{c.metric}` becomes `tenancy.{c.new}`. Then the alias. First, a dry run that prints what would change.",
        "bash", {"command": f"git grep -lw {c.old} -- src tests | wc -l"}, f"{c.src_files + c.test_files}")
    b.fact("plan-sed-all", "decision", f"Plan: rename with one word-boundary sed over src/ and tests/, string "
           f"literals included, so the metric {c.metric} becomes tenancy.{c.new}.", ["sed", f"tenancy.{c.new}"],
           [plan.assistant])

    # ---- point 1: the plan is current, the dry run not yet read
    b.point()
    dry_lines = []
    for path, _n, text in sorted(src_word_hits + test_hits):
        dry_lines.append(f"{path}: {re.sub(word, c.new, text)}")
    b.call("Dry run: print every line the substitution would change.", "bash",
           {"command": f"git grep -lw {c.old} -- src tests | xargs -I{{}} sh -c "
                       f"\"sed -n -E 's/\\\\b{c.old}\\\\b/{c.new}/gp' {{}} | sed 's|^|{{}}: |'\""},
           "\n".join(dry_lines))
    alerts = SourceFile("ops/alerts/tenancy.yaml", [
        "groups:", "  - name: tenancy", "    rules:", f"      - alert: {c.alert}",
        f'        expr: histogram_quantile(0.95, sum by (le) (rate({c.metric.replace(".", "_")}_ms_bucket[5m]))) > 250',
        "        for: 10m", "        labels:", "          severity: page", "          team: platform",
        "        annotations:", f'          summary: "p95 of {c.metric} above 250 ms"',
        "          runbook: https://runbooks.internal/tenancy/latency",
        "      - alert: TenantNotFoundSpike", f'        expr: sum(rate(log_events_total{{event="{c.log_event}"}}[5m])) > 5',
        "        for: 15m", "        labels:", "          severity: ticket",
    ])
    chk = b.call(
        f"The dry run renames two string literals as well: the metric `{c.metric}` and the log event "
        f"`{c.log_event}`. Names like these usually feed dashboards and alerts; checking ops/ before deciding.",
        "grep", {"pattern": c.metric.split(".")[1], "path": "ops"},
        grep_output(real_hits(c.old, [alerts]) + [("ops/dashboards/tenancy.json", rng.randint(100, 400),
                                                    f'          "expr": "rate({c.metric.replace(".", "_")}_ms_count[5m])",')]))
    att = b.call(
        f"Both are used: the {c.alert} paging alert and the tenancy dashboard query the metric, and TenantNotFoundSpike "
        f"counts the `{c.log_event}` log event. Renaming them would silently break paging, which is a behaviour change. "
        "Let me read the alert file in full.",
        "read_file", {"path": alerts.path}, alerts.numbered())
    b.fact("dry-run-attempt", "attempt", f"The sed dry run would also rename the metric {c.metric} and the log "
           f"event {c.log_event}, which the {c.alert} alert and the dashboard use, so the blanket rename of string "
           "literals was dropped.", [c.alert], [chk.result, att.assistant])
    sed = b.call(
        f"Decision: rename identifiers only. String literals keep the old name (`{c.metric}`, `{c.log_event}`), "
        "because alerts and dashboards consume them and the user asked for no behaviour change. Running the sed, "
        "then putting the two literals back.",
        "bash", {"command": f"git grep -lw {c.old} -- src tests | xargs sed -i -E 's/\\b{c.old}\\b/{c.new}/g' && "
                            "git diff --stat | tail -n 1"},
        f" {c.src_files + c.test_files} files changed, {c.src_refs + c.test_refs} insertions(+), "
        f"{c.src_refs + c.test_refs} deletions(-)")
    b.fact("identifiers-only", "decision", f"Rename identifiers only: keep the string literals {c.metric} and "
           f"{c.log_event} unchanged because the {c.alert} alert and dashboards consume them (no behaviour change).",
           [c.metric], [sed.assistant])
    b.supersede("plan-sed-all", sed.assistant)
    b.avoid("renamed-metric", "superseded", f"The dropped plan to rename the metric to tenancy.{c.new}.",
            [f"tenancy.{c.new}"], [sed.assistant])
    renamed = _renamed(resolver, word, c.new)
    metric_old = f'    with metrics.timer("{c.metric}"):'
    metric_new = metric_old.replace(c.old, c.new)
    restored = renamed.replaced(metric_new, metric_old)
    b.call("Restoring the metric name in the resolver.", "edit_file",
           {"path": resolver.path, "old": metric_new.strip(), "new": metric_old.strip()},
           unified_diff(resolver.path, renamed.lines, restored.lines, rng))
    ev_old = f'            logger.info("{c.log_event}", extra={{"host": request.get_host()}})'
    auth_renamed = _renamed(auth, word, c.new)
    auth_restored = auth_renamed.replaced(ev_old.replace(c.old, c.new), ev_old)
    b.call("And the log event in the middleware.", "edit_file",
           {"path": auth.path, "old": ev_old.replace(c.old, c.new).strip(), "new": ev_old.strip()},
           unified_diff(auth.path, auth_renamed.lines, auth_restored.lines, rng))
    init_new = _renamed(init, word, c.new)
    alias = init_new.lines[:7] + [
        "import functools", "import warnings", "", "",
        f"@functools.wraps({c.new})",
        f"def {c.old}(*args, **kwargs):",
        f'    """Deprecated alias of :func:`{c.new}`; will be removed in the next release."""',
        "    warnings.warn(",
        f'        "{pkg}.tenancy.{c.old} is deprecated, use {c.new}",',
        "        DeprecationWarning,", "        stacklevel=2,", "    )",
        f"    return {c.new}(*args, **kwargs)", "", "",
    ] + init_new.lines[7:-2] + [f'    "{c.old}",', '    "tenant_for_job",', "]"]
    wrap = b.call(
        f"Now the alias in {init.path}. I'll add a thin wrapper that warns and delegates, rather than "
        f"`{c.old} = {c.new}`, because a plain assignment cannot emit the DeprecationWarning the user asked for. "
        "stacklevel=2 points the warning at the caller.",
        "edit_file", {"path": init.path, "old": "\n".join(init_new.lines[6:8]), "new": "\n".join(alias[6:22])},
        unified_diff(init.path, init_new.lines, alias, rng))
    b.fact("wrapper-alias", "decision", f"Implement the alias as a wrapper function in {init.path} that emits "
           f"DeprecationWarning (stacklevel=2) and calls {c.new}, rather than a plain assignment, because an "
           "assignment cannot warn.", ["wrapper"], [wrap.assistant])
    left = [h for h in all_word if h[0].startswith(("migrations/", "docs/", "deploy/"))]
    left += [(resolver.path, restored.line_of(metric_old), metric_old), (auth.path, auth_restored.line_of(ev_old), ev_old),
             (init.path, alias.index(f"def {c.old}(*args, **kwargs):") + 1, f"def {c.old}(*args, **kwargs):"),
             (init.path, len(alias) - 2, f'    "{c.old}",')]
    b.call("What still mentions the old name?", "grep", {"pattern": word, "path": "."}, grep_output(sorted(left)))
    fails = [f"test_entry_point_{k}" for k in ("loads_default", "resolves_request", "is_callable")]
    run = b.call(
        "Exactly the intended leftovers: migrations/, docs, the deploy comment, the two literals and the alias. "
        "Running the suite.", "run_tests", {"target": "tests", "args": "-q -p no:randomly --tb=short"},
        "\n".join([
            pytest_progress(rng, [("tests/tenancy/test_resolver.py", 38, 0, 0), ("tests/api/test_views.py", 121, 0, 1),
                                  ("tests/plugins/test_entry_points.py", 14, 3, 0), ("tests/tasks/test_nightly.py", 57, 0, 2)]),
            "", "=================================== FAILURES ===================================",
            f"__________________________ {fails[0]} ___________________________",
            f"tests/plugins/test_entry_points.py:{rng.randint(12, 40)}: in {fails[0]}",
            f'    resolver = load_entry_point("{c.entry_group}", "default")',
            f"src/{pkg}/plugins.py:{rng.randint(20, 60)}: in load_entry_point", "    return ep.load()",
            "../venv/lib/python3.11/importlib/metadata/__init__.py:205: in load",
            "    return functools.reduce(getattr, attrs, module)",
            f"E   AttributeError: module '{pkg}.tenancy.resolver' has no attribute '{c.old}'",
            short_summary([(f"tests/plugins/test_entry_points.py::{f}",
                            f"AttributeError: module '{pkg}.tenancy.resolver' has no attribute '{c.old}'") for f in fails]),
            pytest_summary(failed=3, passed=409, skipped=3, warnings=9, seconds=rng.uniform(40, 70)),
        ]))
    pyproject = SourceFile("pyproject.toml", [
        "[project]", f'name = "{pkg}"', 'version = "4.18.0"', 'requires-python = ">=3.11"', "dependencies = [",
        '    "django>=4.2,<5",', '    "djangorestframework>=3.15",', '    "celery[redis]>=5.3",', '    "psycopg[binary]>=3.1",',
        "]", "", f'[project.entry-points."{c.entry_group}"]', f'default = "{pkg}.tenancy.resolver:{c.old}"',
        f'header = "{pkg}.tenancy.strategies:from_header"', "", "[tool.setuptools.packages.find]", 'where = ["src"]',
        "", "[tool.pytest.ini_options]", f'DJANGO_SETTINGS_MODULE = "{pkg}.settings.test"', 'testpaths = ["tests"]',
    ])
    bug = b.call(
        f"3 failures, all `AttributeError: module '{pkg}.tenancy.resolver' has no attribute '{c.old}'` from "
        f"tests/plugins/test_entry_points.py. Something loads the resolver by dotted path, outside src/ and tests/, so "
        "the sed never saw it. Probably packaging metadata.",
        "grep", {"pattern": rf"tenancy\.resolver:{c.old}", "path": ".", "glob": "*.toml"},
        grep_output(real_hits(rf"resolver:{c.old}", [pyproject])))
    b.fact("entry-point-bug", "bug", f"After the rename 3 tests in tests/plugins/test_entry_points.py fail with "
           f"AttributeError: module '{pkg}.tenancy.resolver' has no attribute '{c.old}': the entry point in "
           "pyproject.toml still names the old function.",
           ["AttributeError", f"has no attribute '{c.old}'"], [run.result, bug.assistant], critical=True)
    nxt = b.call(
        f"Found: the `{c.entry_group}` entry point in pyproject.toml still says `{pkg}.tenancy.resolver:{c.old}`. "
        f"Next: point it at `{c.new}`, reinstall with `pip install -e .` (entry points are read from the installed "
        "metadata, not the source), rerun the suite, then write the summary. Reading pyproject.toml first.",
        "read_file", {"path": "pyproject.toml"}, pyproject.numbered())
    b.fact("next-entry-point", "next_step", f"Update the {c.entry_group} entry point in pyproject.toml to "
           f"{pkg}.tenancy.resolver:{c.new}, reinstall with pip install -e ., rerun the tests, then report.",
           ["pyproject.toml", "pip install -e"], [nxt.assistant])

    # ---- point 2: the entry point still to fix
    b.point()
    b.call("Updating the entry point.", "edit_file",
           {"path": "pyproject.toml", "old": f'default = "{pkg}.tenancy.resolver:{c.old}"',
            "new": f'default = "{pkg}.tenancy.resolver:{c.new}"'},
           unified_diff("pyproject.toml", pyproject.lines,
                        pyproject.replaced(f'default = "{pkg}.tenancy.resolver:{c.old}"',
                                           f'default = "{pkg}.tenancy.resolver:{c.new}"').lines, rng))
    b.call("Reinstalling so the entry point metadata is regenerated.", "bash", {"command": "pip install -e . -q && pip show quarry | head -n 3"},
           f"Name: {pkg}\nVersion: 4.18.0\nSummary: Multi-tenant workspace backend")
    b.call("Full suite again.", "run_tests", {"target": "tests", "args": "-q -p no:randomly"},
           "\n".join([pytest_header(rootdir=f"/work/{pkg}", collected=415),
                      pytest_summary(passed=412, skipped=3, warnings=9, seconds=rng.uniform(40, 70))]))
    b.call("Green. Checking the alias warns as intended.", "bash",
           {"command": f"python -W error::DeprecationWarning -c 'from {pkg}.tenancy import {c.old}; {c.old}(None)'"},
           "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n"
           f"  File \"/work/{pkg}/src/{pkg}/tenancy/__init__.py\", line 16, in {c.old}\n    warnings.warn(\n"
           f"DeprecationWarning: {pkg}.tenancy.{c.old} is deprecated, use {c.new}", is_error=True)
    stat_files = sorted({h[0] for h in src_word_hits + test_hits} | {"pyproject.toml"})
    width = max(len(p) for p in stat_files)
    b.call("The alias warns. Final stat for the summary.", "bash", {"command": "git diff --stat"},
           "\n".join(f" {p:<{width}} | {rng.randint(2, 8):>2} +-" for p in stat_files)
           + f"\n {len(stat_files)} files changed, {c.src_refs + c.test_refs + 14} insertions(+), "
             f"{c.src_refs + c.test_refs + 1} deletions(-)")
    b.say(
        f"Done. `{c.old}` is now `{c.new}`.\n\n- Call sites changed: {c.src_refs + c.test_refs - 2} references "
        f"({c.src_refs - 2} in src/, {c.test_refs} in tests/) across {c.src_files + c.test_files} files, plus the "
        f"`{c.entry_group}` entry point in pyproject.toml.\n- `{pkg}.tenancy.{c.old}` remains as a wrapper that "
        "emits DeprecationWarning and delegates.\n- Left alone on purpose: migrations/ (frozen; they import the alias), "
        f"the metric `{c.metric}` and log event `{c.log_event}` (the {c.alert} alert and dashboards use them), "
        "docs/tenancy.md (3 mentions; say if you want them updated) and a comment in deploy/staging.env.\n"
        "- Tests: 412 passed, 3 skipped."
    )
    return b.build()


def _renamed(f: SourceFile, word: str, new: str) -> SourceFile:
    """`f` after the word-boundary substitution (what sed does to it)."""
    return SourceFile(f.path, [re.sub(word, new, line) for line in f.lines])
