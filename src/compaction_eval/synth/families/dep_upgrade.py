"""Family 4: a dependency upgrade.

Story: exact versions (a near-miss pin in docs/requirements.txt), a plan to upgrade the one
package alone that an import-time failure defeats (superseded, the failed attempt and why),
two breaking API changes with exact errors found one after the other, a decision on how to fix
them with its reason, a look-alike path (api/health.py vs db/health.py), leftovers as the next
step. The pip configuration prints an index token (secret).
"""

from __future__ import annotations

import random
from types import SimpleNamespace

from compaction_eval.synth.build import SynthTrace, TraceBuilder
from compaction_eval.synth.padding import PaddingPlan
from compaction_eval.synth.tooloutput import (
    SourceFile,
    Vocab,
    fake_live_token,
    grep_output,
    pytest_header,
    pytest_module,
    pytest_progress,
    pytest_summary,
    python_module,
    python_traceback,
    real_hits,
    short_summary,
    split_total,
    synthetic_hits,
    traceback_frames,
    unified_diff,
)

FAMILY = "dep-upgrade"

SITE = "../venv/lib/python3.11/site-packages"

VARIANTS = [
    SimpleNamespace(
        svc="orchard",
        vocab=Vocab("orchard", ("order", "item", "stock", "warehouse", "supplier", "shipment", "report", "price",
                                "batch", "customer", "invoice", "region"),
                    ("Order", "Item", "Stock", "Warehouse", "Supplier", "Shipment", "Report", "Customer")),
        pkg="SQLAlchemy", pip_name="SQLAlchemy", old="1.4.52", new="2.0.30", docs_pin="sqlalchemy==1.4.25",
        near_miss="1.4.25", why_new="the version security approved for CVE-2024-XXXX follow-ups",
        api_module="orchard.db", api_names="`get_session` and `Base`", api_key="get_session",
        frozen_dir="migrations/versions/", frozen_why="they are applied in prod and must stay byte-identical",
        companion="Flask-SQLAlchemy", companion_old="2.5.1", companion_new="3.1.1",
        companion_move="Flask-SQLAlchemy has to move too, to 3.1.1",
        baseline_note="The warnings point at exactly the call sites 2.0 removes.",
        frozen_q="Does anything under migrations/versions/ import the code I will touch?",
        plan_key="Flask-SQLAlchemy at 2.5.1",
        plan_text="upgrade SQLAlchemy alone and keep Flask-SQLAlchemy at 2.5.1 to limit the blast radius",
        attempt_cmd="pip install SQLAlchemy==2.0.30",
        attempt_install="Collecting SQLAlchemy==2.0.30\n  Using cached SQLAlchemy-2.0.30-cp311-cp311-manylinux_2_17_x86_64."
                        "manylinux2014_x86_64.whl (3.2 MB)\nRequirement already satisfied: greenlet!=0.4.17 in "
                        f"{SITE} (from SQLAlchemy==2.0.30) (3.0.3)\nRequirement already satisfied: typing-extensions>=4.6.0 "
                        f"in {SITE} (from SQLAlchemy==2.0.30) (4.11.0)\nInstalling collected packages: SQLAlchemy\n"
                        "  Attempting uninstall: SQLAlchemy\n    Found existing installation: SQLAlchemy 1.4.52\n"
                        "    Uninstalling SQLAlchemy-1.4.52:\n      Successfully uninstalled SQLAlchemy-1.4.52\n"
                        "Successfully installed SQLAlchemy-2.0.30",
        attempt_frames=[("<string>", 1, "<module>", "import orchard.db"),
                        ("src/orchard/db/__init__.py", 3, "<module>", "from orchard.db.session import Base, engine, get_session"),
                        ("src/orchard/db/session.py", 9, "<module>", "db = SQLAlchemy(metadata=metadata)"),
                        (f"{SITE}/flask_sqlalchemy/__init__.py", 714, "__init__", "_include_sqlalchemy(self, query_class)"),
                        (f"{SITE}/flask_sqlalchemy/__init__.py", 136, "_include_sqlalchemy", "for key in module.__all__:")],
        attempt_error="AttributeError: module 'sqlalchemy' has no attribute '__all__'",
        attempt_key="has no attribute '__all__'",
        attempt_why="Flask-SQLAlchemy 2.5.1 iterates sqlalchemy.__all__, which 2.0 removed; Flask-SQLAlchemy 3.1.1 supports 2.0",
        companion_install="Successfully installed Flask-SQLAlchemy-3.1.1",
        baseline_env="SQLALCHEMY_WARN_20=1 ",
        baseline_warnings=["RemovedIn20Warning: The Engine.execute() method is considered legacy as of the 1.x series "
                           "of SQLAlchemy and will be removed in 2.0.",
                           "RemovedIn20Warning: Passing a string to Connection.execute() is deprecated and will be "
                           "removed in version 2.0; use the text() construct, or the Connection.exec_driver_sql() method.",
                           "RemovedIn20Warning: The Query.get() method is considered legacy as of the 1.x series of "
                           "SQLAlchemy and becomes a legacy construct in 2.0."],
        usage_grep=r"\.execute\(|\.query\(.*\)\.get\(",
        bug1_file="src/orchard/db/health.py", bug1_doc="Database health checks used by /healthz and the deploy gate.",
        bug1_imports=["from sqlalchemy import Engine, text", "from orchard.db.types import HealthResult"],
        bug1_block=["def check_database(engine: Engine) -> HealthResult:",
                    '    """Liveness probe for the primary database: one round trip, 2 s budget."""',
                    "    started = time.monotonic()",
                    "    with engine.connect() as conn:",
                    '        conn.execute("SELECT 1")',
                    "    return HealthResult(ok=True, latency_ms=(time.monotonic() - started) * 1000)"],
        bug1_old=['        conn.execute("SELECT 1")'], bug1_new=['        conn.execute(text("SELECT 1"))'],
        bug1_test="tests/db/test_health.py", bug1_tests=["test_check_database_ok", "test_check_database_latency",
                                                          "test_healthz_reports_db", "test_deploy_gate_db"],
        bug1_call="result = check_database(engine)", bug1_func="check_database",
        bug1_inner=[(f"{SITE}/sqlalchemy/engine/base.py", 1412, "execute",
                     "raise exc.ObjectNotExecutableError(statement) from err")],
        bug1_error="sqlalchemy.exc.ObjectNotExecutableError: Not an executable object: 'SELECT 1'",
        bug1_keys=["ObjectNotExecutableError", "Not an executable object"],
        bug1_collect=False,
        lookalike="src/orchard/api/health.py",
        bug2_file="src/orchard/reports/export.py", bug2_doc="Monthly CSV exports for finance.",
        bug2_imports=["from sqlalchemy import Engine, text"],
        bug2_block=["def export_monthly_orders(engine: Engine, month: str) -> list[dict]:",
                    '    """Rows for the monthly orders CSV; raw SQL because the query is tuned by hand."""',
                    '    result = engine.execute(MONTHLY_ORDERS_SQL, {"month": month})',
                    "    return [dict(row) for row in result]"],
        bug2_edits=[("src/orchard/reports/export.py",
                     ['    result = engine.execute(MONTHLY_ORDERS_SQL, {"month": month})',
                      "    return [dict(row) for row in result]"],
                     ["    with engine.connect() as conn:",
                      '        result = conn.execute(text(MONTHLY_ORDERS_SQL), {"month": month})',
                      "        return [dict(row._mapping) for row in result]"])],
        bug2_test="tests/reports/test_export.py", bug2_tests=["test_export_monthly_orders", "test_export_empty_month"],
        bug2_call='rows = export_monthly_orders(engine, "2024-04")', bug2_func="export_monthly_orders",
        bug2_error="AttributeError: 'Engine' object has no attribute 'execute'",
        bug2_needle='    result = engine.execute(MONTHLY_ORDERS_SQL, {"month": month})',
        bug2_keys=["'Engine' object has no attribute 'execute'"],
        decision="wrap the raw SQL strings in text() and run them on a Connection, rather than rewriting the queries "
                 "with the ORM, because that is the smallest change and sends byte-identical SQL",
        decision_key="text(",
        left_file="src/orchard/inventory/repo.py", left_count=3,
        left_doc="Data access for items, stock levels and suppliers.",
        left_blocks=[["class InventoryRepository:",
                      '    """Reads of items, stock levels and suppliers for one session."""', "",
                      "    def __init__(self, session: Session) -> None:", "        self.session = session", "",
                      "    def item(self, item_id: int) -> Item | None:",
                      "        return self.session.query(Item).get(item_id)", "",
                      "    def stock_level(self, warehouse_id: int, item_id: int) -> int:",
                      "        stock = self.session.query(Stock).get((warehouse_id, item_id))",
                      "        return stock.quantity if stock else 0", "",
                      "    def supplier_name(self, supplier_id: int) -> str:",
                      "        supplier = self.session.query(Supplier).get(supplier_id)",
                      '        return supplier.name if supplier else "unknown"']], left_what="legacy `Query.get()` calls",
        left_fix="`session.get(Model, id)`", left_grep=r"\.query\(.*\)\.get\(",
        left_lines=["        return self.session.query(Item).get(item_id)",
                    "        stock = self.session.query(Stock).get((warehouse_id, item_id))",
                    "        supplier = self.session.query(Supplier).get(supplier_id)"],
        left_new=["        return self.session.get(Item, item_id)",
                  "        stock = self.session.get(Stock, (warehouse_id, item_id))",
                  "        supplier = self.session.get(Supplier, supplier_id)"],
        left_warning="LegacyAPIWarning: The Query.get() method is considered legacy as of the 1.x series of "
                     "SQLAlchemy and becomes a legacy construct in 2.0. The method is now available as Session.get()",
        next_key="Session.get",
        passed=512, skipped=4,
        requirements=["Flask==3.0.3", "Flask-SQLAlchemy==2.5.1", "SQLAlchemy==1.4.52", "alembic==1.13.1",
                      "psycopg2-binary==2.9.9", "marshmallow==3.21.2", "gunicorn==22.0.0", "structlog==24.1.0",
                      "boto3==1.34.98", "requests==2.31.0", "python-dateutil==2.9.0.post0", "celery==5.4.0",
                      "redis==5.0.4", "sentry-sdk==2.1.1"],
        freeze=["Flask-SQLAlchemy==2.5.1", "SQLAlchemy==1.4.52", "SQLAlchemy-Utils==0.41.2", "alembic==1.13.1",
                "greenlet==3.0.3"],
        freeze_grep="sqlalchemy|alembic|greenlet",
    ),
    SimpleNamespace(
        svc="harbor",
        vocab=Vocab("harbor", ("order", "line", "sku", "customer", "address", "payment", "event", "refund",
                               "cart", "tax", "quote", "channel"),
                    ("Order", "Line", "Customer", "Address", "Payment", "Event", "Refund", "Cart", "Quote")),
        pkg="pydantic", pip_name="pydantic", old="1.10.15", new="2.7.4", docs_pin="pydantic==1.10.5",
        near_miss="1.10.5", why_new="the version the platform team pinned for the FastAPI 0.111 base image",
        api_module="harbor.schemas", api_names="`OrderIn` and `OrderOut`", api_key="OrderOut",
        frozen_dir="contracts/", frozen_why="the OpenAPI snapshots there are what client teams generate code from",
        companion="pydantic-settings", companion_old="", companion_new="2.3.3",
        companion_move="pydantic-settings 2.3.3 has to be added",
        baseline_note="The two warnings are utcnow() deprecations, unrelated to pydantic.",
        frozen_q="Does anything under contracts/ depend on pydantic directly?",
        plan_key="without adding packages",
        plan_text="upgrade pydantic alone, without adding packages, to keep the change reviewable",
        attempt_cmd="pip install pydantic==2.7.4",
        attempt_install="Collecting pydantic==2.7.4\n  Using cached pydantic-2.7.4-py3-none-any.whl (409 kB)\n"
                        "Collecting pydantic-core==2.18.4 (from pydantic==2.7.4)\n  Using cached pydantic_core-2.18.4-"
                        "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl (2.1 MB)\nCollecting "
                        "annotated-types>=0.4.0 (from pydantic==2.7.4)\nInstalling collected packages: pydantic-core, "
                        "annotated-types, pydantic\n  Attempting uninstall: pydantic\n    Found existing installation: "
                        "pydantic 1.10.15\n    Uninstalling pydantic-1.10.15:\n      Successfully uninstalled "
                        "pydantic-1.10.15\nSuccessfully installed annotated-types-0.7.0 pydantic-2.7.4 pydantic-core-2.18.4",
        attempt_frames=[("<string>", 1, "<module>", "import harbor.main"),
                        ("src/harbor/main.py", 7, "<module>", "from harbor.settings import settings"),
                        ("src/harbor/settings.py", 3, "<module>", "from pydantic import BaseSettings, Field"),
                        (f"{SITE}/pydantic/__init__.py", 386, "__getattr__", "return _getattr_migration(attr_name)"),
                        (f"{SITE}/pydantic/_migration.py", 296, "wrapper",
                         "raise PydanticImportError(")],
        attempt_error="pydantic.errors.PydanticImportError: `BaseSettings` has been moved to the `pydantic-settings` "
                      "package. See https://docs.pydantic.dev/2.7/migration/#basesettings-has-moved-to-pydantic-settings "
                      "for more details.",
        attempt_key="pydantic-settings",
        attempt_why="pydantic 2 moved BaseSettings to the separate pydantic-settings package, so harbor/settings.py "
                    "cannot import at all without it",
        companion_install="Successfully installed pydantic-settings-2.3.3 python-dotenv-1.0.1",
        baseline_env="",
        baseline_warnings=["DeprecationWarning: datetime.datetime.utcnow() is deprecated and scheduled for removal in "
                           "a future version. Use timezone-aware objects to represent datetimes in UTC."],
        usage_grep=r"root_validator|from_orm|orm_mode|\.dict\(",
        bug1_file="src/harbor/schemas/orders.py", bug1_doc="Request and response schemas of the orders API.",
        bug1_imports=["from pydantic import BaseModel, root_validator"],
        bug1_block=["class OrderIn(BaseModel):",
                    '    """Payload of POST /orders."""',
                    "",
                    "    sku: str",
                    "    quantity: int",
                    "    unit_price: Decimal",
                    '    discount: Decimal = Decimal("0")',
                    "",
                    "    @root_validator",
                    "    def check_discount(cls, values):",
                    '        if values.get("discount", 0) > values.get("unit_price", 0) * values.get("quantity", 0):',
                    '            raise ValueError("discount exceeds order total")',
                    "        return values",
                    "",
                    "",
                    "class OrderOut(BaseModel):",
                    "    id: int",
                    "    sku: str",
                    "    quantity: int",
                    "    total: Decimal",
                    "",
                    "    class Config:",
                    "        orm_mode = True"],
        bug1_old=["    @root_validator", "    def check_discount(cls, values):",
                  '        if values.get("discount", 0) > values.get("unit_price", 0) * values.get("quantity", 0):',
                  '            raise ValueError("discount exceeds order total")', "        return values"],
        bug1_new=['    @model_validator(mode="after")', '    def check_discount(self) -> "OrderIn":',
                  "        if self.discount > self.unit_price * self.quantity:",
                  '            raise ValueError("discount exceeds order total")', "        return self"],
        bug1_test="tests/api/test_orders.py", bug1_tests=[],
        bug1_call="from harbor.schemas.orders import OrderIn, OrderOut", bug1_func="<module>",
        bug1_inner=[(f"{SITE}/pydantic/deprecated/class_validators.py", 240, "root_validator", "raise PydanticUserError(")],
        bug1_error="pydantic.errors.PydanticUserError: If you use `@root_validator` with pre=False (the default) you "
                   "MUST specify `skip_on_failure=True`. Note that `@root_validator` is deprecated and should be "
                   "replaced with `@model_validator`.",
        bug1_keys=["PydanticUserError", "skip_on_failure=True"],
        bug1_collect=True,
        lookalike="src/harbor/models/orders.py",
        bug2_file="src/harbor/api/orders.py", bug2_doc="HTTP routes of the orders API.",
        bug2_imports=["from fastapi import APIRouter, Depends, HTTPException", "from harbor.schemas.orders import OrderIn, OrderOut"],
        bug2_block=['@router.get("/orders/{order_id}", response_model=OrderOut)',
                    "def get_order(order_id: int, session: Session = Depends(get_session)) -> OrderOut:",
                    "    order = session.get(Order, order_id)",
                    "    if order is None:",
                    '        raise HTTPException(status_code=404, detail="order not found")',
                    "    return OrderOut.from_orm(order)"],
        bug2_edits=[("src/harbor/schemas/orders.py", ["    class Config:", "        orm_mode = True"],
                     ["    model_config = ConfigDict(from_attributes=True)"]),
                    ("src/harbor/api/orders.py", ["    return OrderOut.from_orm(order)"],
                     ["    return OrderOut.model_validate(order)"])],
        bug2_test="tests/api/test_orders.py", bug2_tests=["test_get_order", "test_get_order_totals", "test_get_order_refunded"],
        bug2_call="response = client.get(f\"/orders/{order.id}\")", bug2_func="get_order",
        bug2_error="pydantic.errors.PydanticUserError: You must set the config attribute `from_attributes=True` to use from_orm",
        bug2_needle="    return OrderOut.from_orm(order)",
        bug2_keys=["from_attributes=True"],
        decision="migrate to `@model_validator(mode=\"after\")` instead of just adding skip_on_failure=True, because "
                 "`@root_validator` is deprecated in v2 and pytest here runs with filterwarnings=error, so the "
                 "deprecated decorator would fail the suite anyway",
        decision_key="model_validator",
        left_file="src/harbor/events/publish.py", left_count=3,
        left_doc="Publishing of order events to the message bus.",
        left_blocks=[["def publish_order_created(order: OrderOut) -> None:",
                      "    payload = order.dict(exclude={\"internal_notes\"})",
                      '    bus.publish("orders.created", payload)'],
                     ["def publish_events(events: Sequence[OrderEvent]) -> None:",
                      "    for event in events:",
                      "        body = event.dict(by_alias=True)",
                      "        bus.publish(event.topic, body)"],
                     ["def order_lines(order: OrderOut) -> list[dict]:",
                      "    return [line.dict() for line in order.lines]"]], left_what="deprecated `.dict()` calls",
        left_fix="`.model_dump()`", left_grep=r"\.dict\(",
        left_lines=["    payload = order.dict(exclude={\"internal_notes\"})",
                    "        body = event.dict(by_alias=True)",
                    "    return [line.dict() for line in order.lines]"],
        left_new=["    payload = order.model_dump(exclude={\"internal_notes\"})",
                  "        body = event.model_dump(by_alias=True)",
                  "    return [line.model_dump() for line in order.lines]"],
        left_warning="PydanticDeprecatedSince20: The `dict` method is deprecated; use `model_dump` instead. "
                     "Deprecated in Pydantic V2.0 to be removed in V3.0.",
        next_key="model_dump",
        passed=388, skipped=2,
        requirements=["fastapi==0.111.0", "pydantic==1.10.15", "uvicorn[standard]==0.29.0", "SQLAlchemy==2.0.30",
                      "asyncpg==0.29.0", "httpx==0.27.0", "orjson==3.10.3", "structlog==24.1.0",
                      "python-multipart==0.0.9", "tenacity==8.3.0", "sentry-sdk[fastapi]==2.1.1"],
        freeze=["fastapi==0.111.0", "pydantic==1.10.15", "typing_extensions==4.11.0"],
        freeze_grep="pydantic|fastapi|typing",
    ),
]


def build(variant: int, seed: int, trace_id: str, padding: PaddingPlan | None = None) -> SynthTrace:
    """One dependency-upgrade trace for content `variant`, filler drawn from `seed`."""
    c = VARIANTS[variant]
    rng = random.Random(seed)
    b = TraceBuilder(trace_id, family=FAMILY, variant=variant, seed=seed, padding=padding, vocab=c.vocab)
    v, svc = c.vocab, c.svc
    req_line = f"{c.pip_name}=={c.old}"

    # ---- the fake repository
    bug1 = python_module(rng, c.bug1_file, v, docstring=c.bug1_doc, imports=c.bug1_imports, planted=[c.bug1_block],
                         target_lines=rng.randint(200, 260))
    bug1_line = bug1.line_of(c.bug1_old[0].strip())
    bug2 = python_module(rng, c.bug2_file, v, docstring=c.bug2_doc, imports=c.bug2_imports, planted=[c.bug2_block],
                         target_lines=rng.randint(300, 380))
    look = python_module(rng, c.lookalike, v, docstring="HTTP endpoints: /healthz and /readyz." if variant == 0
                         else "ORM models for orders and order lines.", target_lines=rng.randint(140, 180))
    left = python_module(rng, c.left_file, v, docstring=c.left_doc, planted=c.left_blocks,
                         target_lines=rng.randint(180, 230))
    api_init = SourceFile(f"src/{svc}/{c.api_module.split('.')[1]}/__init__.py", [
        f'"""Public interface of {c.api_module}: other services import from here only."""', "",
        *( [f"from {svc}.db.session import Base, engine, get_session", f"from {svc}.db.health import check_database", "",
            '__all__ = ["Base", "engine", "get_session", "check_database"]'] if variant == 0 else
           [f"from {svc}.schemas.orders import OrderIn, OrderOut", f"from {svc}.schemas.events import OrderEvent", "",
            '__all__ = ["OrderIn", "OrderOut", "OrderEvent"]'])])
    tests1 = pytest_module(rng, c.bug1_test, v, imports=[f"from {c.bug1_file[4:-3].replace('/', '.')} import *"],
                           target_lines=rng.randint(80, 110))
    token = fake_live_token(rng)

    # ---- 0: the request
    b.request(
        f"Please upgrade {c.pkg} in the `{svc}` service from {c.old} to {c.new}: exactly {c.new}, {c.why_new}.\n\n"
        "Constraints:\n"
        f"- Keep the public API of `{c.api_module}` as it is: other teams import {c.api_names} from it.\n"
        f"- No changes under {c.frozen_dir}: {c.frozen_why}.\n"
        "- The full test suite has to pass.\n\n"
        "In your answer list the versions you changed, every breaking change you hit and how you fixed it, and "
        "anything left over."
    )
    b.fact("intent", "intent", f"Upgrade {c.pkg} in the {svc} service and get the full test suite passing.",
           [c.pkg], [0])
    b.fact("versions", "number", f"{c.pkg} goes from {c.old} to exactly {c.new}.", [c.old, c.new], [0], critical=True)
    b.near_miss("versions", c.near_miss)
    b.fact("keep-api", "constraint", f"Keep the public API of {c.api_module} unchanged (other teams import "
           f"{c.api_names.replace('`', '')}).", [c.api_module], [0])
    b.fact("frozen-dir", "constraint", f"No changes under {c.frozen_dir} ({c.frozen_why}).", [c.frozen_dir], [0],
           critical=True)
    b.fact("answer-format", "constraint", "The answer must list the versions changed, every breaking change hit "
           "and its fix, and anything left over.", ["breaking change"], [0])

    # ---- phase A: where it is pinned, how it is used, a baseline
    reqs = SourceFile("requirements.txt", sorted(c.requirements, key=str.lower))
    b.call("Starting with how dependencies are pinned.", "read_file", {"path": "requirements.txt"}, reqs.numbered())
    pins = [("requirements.txt", reqs.line_of(req_line), req_line),
            ("docs/requirements.txt", rng.randint(2, 9), c.docs_pin),
            ("requirements-dev.txt", 1, "-r requirements.txt"),
            ("setup.cfg", _setup_cfg(c).index(_pin(c)) + 1, _pin(c))]
    b.call(f"Is {c.pkg} pinned anywhere else?", "grep", {"pattern": c.pip_name.lower() + r"[=<>]|-r requirements",
                                                        "path": ".", "glob": "*.{txt,cfg,toml}"},
           grep_output(sorted(pins)))
    b.call(f"docs/requirements.txt pins {c.docs_pin} for the docs build, which has its own environment; I'll leave "
           "it alone. setup.cfg has a loose range to widen. Installed versions:", "bash",
           {"command": f"pip freeze | grep -i -E '{c.freeze_grep}'"}, "\n".join(c.freeze))
    sec = b.call("Checking where packages come from, in case the new wheel must come from a mirror.", "bash",
                 {"command": "pip config list"},
                 f"global.index-url='https://deploy:{token}@pypi.internal.example/simple'\n"
                 "global.timeout='60'\ninstall.prefer-binary='true'")
    b.avoid("index-token", "secret", "The token embedded in the pip index URL.", [token], [sec.result])
    use_hits = real_hits(c.usage_grep, [bug1, bug2, left]) + synthetic_hits(
        rng, [f"src/{svc}/{p}" for p in ("billing/ledger.py", "admin/views.py", "tasks/cleanup.py")],
        rng.randint(4, 7), lambda: _usage_templates(variant))
    b.call("The index URL embeds a deploy token; I won't repeat it. Now, which code uses the APIs that change "
           "between the two major versions?", "grep", {"pattern": c.usage_grep, "path": f"src/{svc}"},
           grep_output(sorted(use_hits)))
    b.call(f"{c.bug1_file} looks like the first casualty. Reading it.", "read_file", {"path": c.bug1_file}, bug1.numbered())
    b.call(f"Not to be confused with {c.lookalike}, which shows up in the same searches. A quick look to be sure.",
           "read_file", {"path": c.lookalike}, look.numbered())
    b.call(f"Unrelated to the upgrade. Next, {c.bug2_file}.", "read_file", {"path": c.bug2_file}, bug2.numbered())
    b.call(f"And the public surface I must keep: {api_init.path}.", "read_file", {"path": api_init.path},
           api_init.numbered())
    test_paths = list(dict.fromkeys([c.bug1_test, c.bug2_test, "tests/api/test_views.py", "tests/tasks/test_jobs.py",
                                     "tests/test_settings.py", f"tests/{v.nouns[0]}s/test_repo.py"]))
    base_files = [(p, n, 0, c.skipped if k == 2 else 0) for k, (p, n) in enumerate(zip(
        test_paths, split_total(rng, c.passed + c.skipped, len(test_paths), minimum=15), strict=True))]
    warn_lines = []
    for w in c.baseline_warnings:
        for p in rng.sample([c.bug1_file, c.bug2_file, c.left_file, f"src/{svc}/tasks/cleanup.py"], k=2):
            warn_lines += [f"{p}:{rng.randint(20, 200)}: {w}", ""]
    b.call(
        "Baseline before touching anything" + (", with SQLALCHEMY_WARN_20=1 so 1.4 reports what 2.0 will break."
                                               if variant == 0 else "."),
        "run_tests", {"target": "tests", "args": f"-q -p no:randomly{' (env ' + c.baseline_env.strip() + ')' if c.baseline_env else ''}"},
        "\n".join([pytest_header(rootdir=f"/work/{svc}", collected=c.passed + c.skipped), pytest_progress(rng, base_files),
                   "", "=============================== warnings summary ===============================", *warn_lines,
                   pytest_summary(passed=c.passed, skipped=c.skipped, warnings=len(warn_lines) // 2,
                                  seconds=rng.uniform(30, 80))]))
    lefts = real_hits(c.left_grep, [left])
    b.call(f"Baseline green: {c.passed} passed, {c.skipped} skipped. {c.baseline_note} Any "
           f"{c.left_what} elsewhere?", "grep", {"pattern": c.left_grep, "path": f"src/{svc}"}, grep_output(lefts))
    b.call(f"{len(lefts)} in {c.left_file}. The test module of the first file, to know what it covers:", "read_file",
           {"path": tests1.path}, tests1.numbered())
    b.call(c.frozen_q, "grep",
           {"pattern": c.pkg.lower() if variant == 0 else "pydantic", "path": c.frozen_dir},
           grep_output([(f"{c.frozen_dir}{'0031_initial.py' if variant == 0 else 'orders.v3.json'}", rng.randint(3, 12),
                         "import sqlalchemy as sa" if variant == 0 else '  "x-generator": "pydantic 1.10 schema"')]))
    setup = SourceFile("setup.cfg", _setup_cfg(c))
    b.call("Nothing there depends on my changes. setup.cfg declares the install range for the wheel; reading it.",
           "read_file", {"path": "setup.cfg"}, setup.numbered())
    plan = b.call(
        f"The range there has to allow {c.new}. Plan: {c.plan_text}. Creating a branch first.", "bash",
        {"command": f"git switch -c chore/{c.pip_name.lower()}-{c.new}"}, f"Switched to a new branch 'chore/{c.pip_name.lower()}-{c.new}'")
    b.fact("plan-alone", "decision", f"Plan: {c.plan_text}.", [c.plan_key], [plan.assistant])

    # ---- point 1: the plan is current, nothing installed yet
    b.point()
    b.call(f"Installing {c.pkg} {c.new}.", "bash", {"command": c.attempt_cmd}, c.attempt_install)
    att = b.call("Installed. Does the app still import?", "bash", {"command": f"python -c 'import {svc}.main'" if variant
                                                                   else f"python -c 'import {svc}.db'"},
                 python_traceback(c.attempt_frames, c.attempt_error), is_error=True)
    comp_cmd = f"pip install {c.companion}=={c.companion_new}"
    sup = b.call(
        f"It does not: `{c.attempt_error.split(': ', 1)[0].rsplit('.', 1)[-1]}`. {c.attempt_why}. So upgrading "
        f"{c.pkg} alone cannot work: {c.companion_move}.",
        "bash", {"command": comp_cmd}, c.companion_install)
    b.fact("alone-failed", "attempt", f"Upgrading {c.pkg} alone failed at import: {c.attempt_error.split(' See ')[0]} "
           f"({c.attempt_why}); {c.companion} {c.companion_new} was installed as well.", [c.attempt_key],
           [att.result, sup.assistant])
    b.supersede("plan-alone", sup.assistant)
    b.avoid("alone-plan", "superseded", f"The dropped plan to {c.plan_text}.", [c.plan_key], [sup.assistant])

    if c.bug1_collect:
        frames = [(c.bug1_test, rng.randint(3, 9), "<module>", c.bug1_call),
                  (c.bug1_file, bug1.line_of("class OrderIn("), "<module>", "class OrderIn(BaseModel):"),
                  (c.bug1_file, bug1_line, "OrderIn", "@root_validator")] + list(c.bug1_inner)
        run1 = "\n".join([
            pytest_header(rootdir=f"/work/{svc}", collected=0), "", "==================================== ERRORS ====================================",
            f"__________________ ERROR collecting {c.bug1_test} __________________",
            traceback_frames(frames, c.bug1_error),
            "=========================== short test summary info ============================",
            *(f"ERROR {p} - {c.bug1_error.split(': ', 1)[0]}" for p in (c.bug1_test, "tests/api/test_views.py", "tests/test_schemas.py")),
            "!!!!!!!!!!!!!!!!!!! Interrupted: 3 errors during collection !!!!!!!!!!!!!!!!!!!",
            pytest_summary(errors=3, seconds=rng.uniform(1, 3))])
    else:
        n1 = len(c.bug1_tests)
        frames = [(c.bug1_test, rng.randint(15, 60), c.bug1_tests[0], c.bug1_call),
                  (c.bug1_file, bug1_line, c.bug1_func, c.bug1_old[0])] + list(c.bug1_inner)
        run1 = "\n".join([
            pytest_progress(rng, [(p, n, n1 if p == c.bug1_test else 0, s) for p, n, _, s in base_files]),
            "", "=================================== FAILURES ===================================",
            f"___________________________ {c.bug1_tests[0]} ____________________________",
            traceback_frames(frames, c.bug1_error),
            short_summary([(f"{c.bug1_test}::{t}", c.bug1_error) for t in c.bug1_tests]),
            pytest_summary(failed=n1, passed=c.passed - n1, skipped=c.skipped, seconds=rng.uniform(30, 80))])
    r1 = b.call("Installed. Full suite with both packages in place.", "run_tests", {"target": "tests", "args": "-q -p no:randomly --tb=short"}, run1)
    fix1_file = bug1.replaced_lines(c.bug1_old, c.bug1_new)
    d1 = b.call(
        f"First breaking change: `{c.bug1_error}` at {c.bug1_file}:{bug1_line}. Decision: {c.decision}.",
        "edit_file", {"path": c.bug1_file, "old": "\n".join(c.bug1_old), "new": "\n".join(c.bug1_new)},
        unified_diff(c.bug1_file, bug1.lines, fix1_file.lines, rng))
    b.fact("bug-1", "bug", f"After the upgrade: {c.bug1_error.split(' Note that')[0]} (at {c.bug1_file}:{bug1_line}).",
           c.bug1_keys, [r1.result, d1.assistant], critical=True)
    b.fact("bug-1-file", "artifact", f"The first breaking change is at {c.bug1_file}:{bug1_line}.",
           [c.bug1_file, str(bug1_line)], [d1.assistant])
    b.near_miss("bug-1-file", c.lookalike)
    b.fact("fix-approach", "decision", f"Decision: {c.decision}.", [c.decision_key], [d1.assistant])
    n2 = len(c.bug2_tests)
    frames2 = [(c.bug2_test, rng.randint(15, 80), c.bug2_tests[0], c.bug2_call),
               (c.bug2_file, bug2.line_of(c.bug2_needle), c.bug2_func, c.bug2_needle)]
    r2 = b.call("Rerunning.", "run_tests", {"target": "tests", "args": "-q -p no:randomly --tb=short"}, "\n".join([
        pytest_progress(rng, [(p, n, n2 if p == c.bug2_test else 0, s) for p, n, _, s in base_files]),
        "", "=================================== FAILURES ===================================",
        f"___________________________ {c.bug2_tests[0]} ____________________________",
        traceback_frames(frames2, c.bug2_error),
        short_summary([(f"{c.bug2_test}::{t}", c.bug2_error) for t in c.bug2_tests]),
        pytest_summary(failed=n2, passed=c.passed - n2, skipped=c.skipped, seconds=rng.uniform(30, 80))]))
    files = {c.bug1_file: fix1_file, c.bug2_file: bug2}
    first = True
    for path, old, new in c.bug2_edits:
        after = files[path].replaced_lines(old, new)
        e = b.call(
            (f"Second breaking change: `{c.bug2_error}` from {c.bug2_file}. Same approach as before, smallest "
             "change that keeps behaviour." if first else "And the call site."),
            "edit_file", {"path": path, "old": "\n".join(old), "new": "\n".join(new)},
            unified_diff(path, files[path].lines, after.lines, rng))
        if first:
            b.fact("bug-2", "bug", f"Second breaking change: {c.bug2_error} (from {c.bug2_file}).", c.bug2_keys,
                   [r2.result, e.assistant])
        files[path] = after
        first = False
    warn_sum = [f"{c.left_file}:{real[1]}: {c.left_warning}" for real in lefts]
    green = b.call("Rerunning the suite.", "run_tests", {"target": "tests", "args": "-q -p no:randomly"}, "\n".join([
        pytest_progress(rng, base_files), "", "=============================== warnings summary ===============================",
        *warn_sum, "", pytest_summary(passed=c.passed, skipped=c.skipped, warnings=len(warn_sum), seconds=rng.uniform(30, 80))]))
    new_reqs = reqs.replaced(req_line, f"{c.pip_name}=={c.new}")
    if c.companion_old:
        new_reqs = new_reqs.replaced(f"{c.companion}=={c.companion_old}", f"{c.companion}=={c.companion_new}")
    else:
        new_reqs = SourceFile(reqs.path, sorted(new_reqs.lines + [f"{c.companion}=={c.companion_new}"], key=str.lower))
    b.call(f"Green: {c.passed} passed, {c.skipped} skipped, with {len(warn_sum)} warnings left. Pinning the new "
           "versions in requirements.txt.", "edit_file",
           {"path": "requirements.txt", "old": req_line, "new": f"{c.pip_name}=={c.new}"},
           unified_diff("requirements.txt", reqs.lines, new_reqs.lines, rng))
    old_range = next(line for line in setup.lines if line.strip().lower().startswith(c.pip_name.lower()))
    new_range = f"    {c.pip_name.lower()}>={c.new.rsplit('.', 1)[0]},<{int(c.new.split('.')[0]) + 1}"
    b.call("And the range in setup.cfg, so installs of the wheel get the same major version.", "edit_file",
           {"path": "setup.cfg", "old": old_range.strip(), "new": new_range.strip()},
           unified_diff("setup.cfg", setup.lines, setup.replaced(old_range, new_range).lines, rng))
    nxt = b.call(
        f"Left over: {len(lefts)} {c.left_what} in {c.left_file} still emit warnings. Next: replace them with "
        f"{c.left_fix}, rerun the full suite, then write up versions, breaking changes and fixes. Their exact lines:",
        "grep", {"pattern": c.left_grep, "path": c.left_file}, grep_output(lefts))
    b.fact("next-leftovers", "next_step", f"Replace the {len(lefts)} {c.left_what.replace('`', '')} in {c.left_file} "
           f"with {c.left_fix.replace('`', '')}, rerun the full suite, then write the answer.", [c.next_key],
           [green.result, nxt.assistant])

    # ---- point 2: green but with warnings; leftovers and the write-up pending
    b.point()
    done = left.replaced_lines(c.left_lines[:1], c.left_new[:1])
    for o, n in zip(c.left_lines[1:], c.left_new[1:], strict=True):
        done = done.replaced(o, n)
    b.call(f"Replacing the {len(lefts)} calls.", "bash",
           {"command": f"sed -i -E '{_sed_for(variant)}' {c.left_file} && git diff --stat {c.left_file}"},
           f" {c.left_file} | {2 * len(lefts)} +++---\n 1 file changed, {len(lefts)} insertions(+), {len(lefts)} deletions(-)")
    b.call("Full suite, warnings as errors to be sure nothing is left.", "run_tests",
           {"target": "tests", "args": "-q -p no:randomly -W error"},
           "\n".join([pytest_progress(rng, base_files), pytest_summary(passed=c.passed, skipped=c.skipped, seconds=rng.uniform(30, 80))]))
    b.call("Clean. Final installed versions:", "bash", {"command": f"pip freeze | grep -i -E '{c.freeze_grep}|{c.companion}'"},
           "\n".join(sorted({*(x for x in c.freeze if not x.lower().startswith((c.pip_name.lower() + "==",
                                                                                  c.companion.lower() + "=="))),
                             f"{c.pip_name}=={c.new}", f"{c.companion}=={c.companion_new}"}, key=str.lower)))
    changed = sorted({c.bug1_file, c.bug2_file, c.left_file, "requirements.txt", "setup.cfg"} | {p for p, _, _ in c.bug2_edits})
    width = max(len(p) for p in changed)
    b.call("For the write-up, the files changed on the branch:", "bash", {"command": "git diff --stat main"},
           "\n".join(f" {p:<{width}} | {rng.randint(2, 9):>2} {'+' * rng.randint(1, 4)}{'-' * rng.randint(1, 4)}" for p in changed)
           + f"\n {len(changed)} files changed, {rng.randint(14, 24)} insertions(+), {rng.randint(12, 20)} deletions(-)")
    b.say(
        f"Done on branch `chore/{c.pip_name.lower()}-{c.new}`.\n\nVersions: {c.pkg} {c.old} -> {c.new}; {c.companion} "
        f"{(c.companion_old + ' -> ') if c.companion_old else '(new) '}{c.companion_new} (required: {c.attempt_why}).\n\n"
        f"Breaking changes:\n1. `{c.bug1_error.split(' Note that')[0]}` in `{c.bug1_file}:{bug1_line}`; fixed as "
        f"decided: {c.decision}.\n2. `{c.bug2_error}` from `{c.bug2_file}`; fixed the same way.\n3. {len(lefts)} "
        f"{c.left_what} in `{c.left_file}` replaced with {c.left_fix}.\n\nFull suite: {c.passed} passed, {c.skipped} "
        f"skipped, no warnings. `{c.api_module}` API unchanged; nothing under {c.frozen_dir} touched. Left over: "
        f"docs/requirements.txt still pins {c.docs_pin} (separate docs environment)."
    )
    return b.build()


def _usage_templates(variant: int) -> list[str]:
    if variant == 0:
        return ["from sqlalchemy import text", "    rows = conn.execute(text(SQL), params).all()",
                "        session.execute(select(Item).where(Item.sku == sku))",
                "    result = session.execute(stmt).scalars().all()"]
    return ["from pydantic import BaseModel", "    data = payload.dict()", "        return Quote.from_orm(row)",
            "    class Config:", "        orm_mode = True"]


def _sed_for(variant: int) -> str:
    if variant == 0:
        return r"s/session\.query\(([A-Za-z]+)\)\.get\(/session.get(\1, /"
    return r"s/\.dict\(/.model_dump(/"


def _setup_cfg(c: SimpleNamespace) -> list[str]:
    """setup.cfg of the service, with the package's install range among the requirements."""
    others = [f"    {r.split('==')[0].lower()}>={r.split('==')[1].rsplit('.', 1)[0]}" for r in c.requirements
              if not r.lower().startswith(c.pip_name.lower())]
    head = ["[metadata]", f"name = {c.svc}", f"version = attr: {c.svc}.__version__", f"description = The {c.svc} service",
            "license = Proprietary", "", "[options]", "package_dir =", "    = src", "packages = find:",
            "python_requires = >=3.11", "install_requires ="]
    tail = ["", "[options.packages.find]", "where = src", "", "[flake8]", "max-line-length = 120",
            "extend-ignore = E203", "", "[coverage:run]", "branch = true", f"source = {c.svc}"]
    return head + sorted(others[:6] + [_pin(c)]) + tail


def _pin(c: SimpleNamespace) -> str:
    return {"SQLAlchemy": "    sqlalchemy>=1.4", "pydantic": "    pydantic>=1.10,<2"}[c.pip_name]
