"""The `coding` profile's text: the story's fixed text (the task, the system prompt, the tool definitions,
the repository's files, the ways its tests fail, decisions, asides) and the line pools its tool outputs are
cut from (source and test blocks built once at import from a fixed seed, log lines, the assistant's
reactions). Only data: `coding.py` holds the state machine that draws from it with the session's seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# ---------------------------------------------------------------- the story's fixed text

TASK = (
    "Invoice totals in BRL are sometimes one cent off: the invoice for Café Aurora shows "
    "R$ 10,00 where finance expects R$ 10,01. Find out why, fix it, add regression tests, "
    "and make sure USD invoices come out exactly as before."
)

SYSTEM = """You are a careful software engineer working in a Python repository (a billing \
service: src/billing/ for the code, tests/ for pytest). You act through tools: read_file to \
read a file or a range of it, edit_file to replace an exact string in a file, run_tests to run \
pytest on a path or a -k expression, bash for other shell commands, search to grep the tree, \
and notes_write / notes_read for a small notes file that survives when old context is dropped.

Work in small steps. Read before you edit. After every edit, run the narrowest test that \
covers it, and run the whole suite before you say you are done. Money is Decimal, never float; \
keep the public API of the billing package stable unless the user agrees to change it.

Your context may be trimmed or summarized during long sessions, so state what matters in plain \
marker lines, each on its own line at the start of the line:
DECISION: a choice you made and why (e.g. which rounding mode, where it lives)
TODO: work that is still open
DONE: the exact text of an earlier TODO once it is finished
ERROR: an exact error line from a tool, with the turn you last saw it
FILE: a file path and what you last did to it
Keep these lines exact; a later summary copies them word for word. Prefer recording durable \
facts in the notes file as well. Be brief in prose: one or two sentences on what you are about \
to do and why, then the tool call."""


def _schema(description: str, properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False, "description": description}


_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}

TOOLS: tuple[dict[str, Any], ...] = (
    {"name": "read_file", "description": "Read a text file, whole or a range of lines.",
     "input_schema": _schema("File to read.", {
         "path": {**_STR, "description": "Path relative to the repository root."},
         "offset": {**_INT, "description": "First line to return, 0-based."},
         "limit": {**_INT, "description": "Maximum number of lines to return."}}, ["path"])},
    {"name": "edit_file", "description": "Replace an exact string in a file with another.",
     "input_schema": _schema("Edit to make.", {
         "path": _STR, "old_string": {**_STR, "description": "Text to find; must be unique."},
         "new_string": _STR}, ["path", "old_string", "new_string"])},
    {"name": "run_tests", "description": "Run pytest on a path, optionally filtered with -k.",
     "input_schema": _schema("Tests to run.", {
         "path": {**_STR, "description": "Test file or directory, e.g. tests/ or tests/test_money.py."},
         "k": {**_STR, "description": "pytest -k expression."}}, ["path"])},
    {"name": "bash", "description": "Run a shell command in the repository and return its output.",
     "input_schema": _schema("Command to run.", {
         "command": _STR, "timeout": {**_INT, "description": "Seconds before the command is killed."}},
         ["command"])},
    {"name": "search", "description": "Search files for a literal string (like grep -rn).",
     "input_schema": _schema("Search to run.", {
         "pattern": _STR, "path": {**_STR, "description": "Directory to search, default '.'."}},
         ["pattern"])},
    {"name": "notes_write", "description": "Append an entry to a section of the notes file.",
     "input_schema": _schema("Note to add.", {
         "section": {"type": "string", "enum": ["Decisions", "Open", "Errors", "Files"]},
         "entry": _STR}, ["section", "entry"])},
    {"name": "notes_read", "description": "Return the whole notes file.",
     "input_schema": _schema("No arguments.", {}, [])},
)

SRC_FILES = (
    "src/billing/money.py", "src/billing/invoice.py", "src/billing/tax.py", "src/billing/currency.py",
    "src/billing/export.py", "src/billing/discounts.py", "src/billing/credit_notes.py",
    "src/billing/ledger.py", "src/billing/fx.py", "src/billing/models.py", "src/billing/pdf.py",
    "src/billing/api.py",
)
TEST_FILES = (
    "tests/test_money.py", "tests/test_invoice.py", "tests/test_tax.py", "tests/test_export.py",
    "tests/test_currency.py", "tests/test_discounts.py", "tests/test_credit_notes.py",
    "tests/test_ledger.py", "tests/test_fx.py",
)
ALL_FILES = SRC_FILES + TEST_FILES + ("tests/conftest.py",)


@dataclass(frozen=True)
class Failure:
    """One way the test suite can fail: the exact error line and where it is raised."""

    line: str
    test_file: str
    test: str
    check: str  # the failing line in the test
    frames: tuple[tuple[str, int, str, str], ...] = ()  # (file, line number, function, code)
    params: tuple[str, ...] = ()  # parametrized ids that fail together
    explain: tuple[str, ...] = ()  # pytest's assertion-rewrite lines under the error

    @property
    def kind(self) -> str:
        return self.line.split(":", 1)[0]


_INVOICE_REPR = ("Invoice(id='inv_0042', customer='Café Aurora', currency='BRL', issued=datetime.date(2026, 1, 12), "
                 "lines=[InvoiceLine(unit_price=Decimal('3.335'), quantity=1), "
                 "InvoiceLine(unit_price=Decimal('3.335'), "
                 "quantity=1), InvoiceLine(unit_price=Decimal('3.335'), quantity=1)], region='BR-SP')")

FAILURES: tuple[Failure, ...] = (
    Failure("AssertionError: expected Decimal('10.01'), got Decimal('10.00')", "tests/test_invoice.py",
             "test_brl_total_rounds_once_half_even",
             'assert invoice.total() == Decimal("10.01"), f"expected {expected!r}, got {invoice.total()!r}"',
             (("src/billing/invoice.py", 57, "total", "total = round_total(total, self.currency)"),
              ("src/billing/money.py", 48, "round_total", "return amount.quantize(exponent, rounding=rounding)")),
             ("BRL", "BRL-many-lines"),
             ("assert Decimal('10.00') == Decimal('10.01')",
              f" +  where Decimal('10.00') = <bound method Invoice.total of {_INVOICE_REPR}>()",
              " +  and   Decimal('10.01') = Decimal('10.01')")),
    Failure("TypeError: unsupported operand type(s) for *: 'float' and 'decimal.Decimal'", "tests/test_tax.py",
             "test_rate_applies_to_decimal_amount", 'assert apply_tax(Decimal("9.99"), "BR-SP") == Decimal("11.79")',
             (("src/billing/invoice.py", 61, "total", "taxed = apply_tax(total, self.region)"),
              ("src/billing/tax.py", 41, "apply_tax", "return rate_for(region) * amount")),
             ("BR-SP", "BR-RJ", "PT-LIS")),
    Failure("AssertionError: '10.010' != '10.01'", "tests/test_export.py", "test_csv_brl_has_two_decimals",
             'assert row["total"] == "10.01"',
             (("src/billing/export.py", 88, "export_rows", 'row["total"] = str(invoice.total())'),),
             (), ("- 10.01", "+ 10.010", "?      +")),
    Failure("KeyError: 'BRL'", "tests/test_currency.py", "test_exponent_known_for_brl",
             'assert exponent("BRL") == 2',
             (("src/billing/currency.py", 23, "exponent", "return EXPONENTS[code.upper()]"),)),
    Failure("AssertionError: assert 'R$ 10,00' == 'R$ 10,01'", "tests/test_export.py",
             "test_pdf_amount_uses_brazilian_format", 'assert render_amount(invoice, locale="pt_BR") == "R$ 10,01"',
             (), ("pt_BR",), ("  - R$ 10,01", "  ?       ^", "  + R$ 10,00", "  ?       ^")),
    Failure("AssertionError: assert Decimal('99.99') == Decimal('100.00')", "tests/test_discounts.py",
             "test_allocation_sums_to_total", "assert sum(parts) == total",
             (), ("3-way", "7-way"),
             (" +  where Decimal('99.99') = sum([Decimal('33.33'), Decimal('33.33'), Decimal('33.33')])",)),
    Failure("AttributeError: 'NoneType' object has no attribute 'quantize'", "tests/test_credit_notes.py",
             "test_credit_note_mirrors_invoice_total", "assert note.total() == -invoice.total()",
             (("src/billing/credit_notes.py", 64, "total", "return self.source.rounded_total.quantize(CENT)"),)),
    Failure("ValueError: unknown currency code 'BRX'", "tests/test_currency.py", "test_rejects_unknown_code",
             'assert exponent("brl") == 2',
             (("src/billing/currency.py", 19, "exponent", 'raise ValueError(f"unknown currency code {code!r}")'),)),
    Failure("ZeroDivisionError: division by zero", "tests/test_fx.py", "test_convert_with_missing_rate_raises_cleanly",
             'assert convert(Decimal("10.00"), "USD", "BRL", rates={}) is None',
             (("src/billing/fx.py", 52, "convert", "return amount * (target_rate / source_rate)"),)),
    Failure("AssertionError: expected 'José Araújo;R$ 10,01', got 'José Araújo;R$ 10,010'", "tests/test_export.py",
             "test_csv_row_keeps_accents_and_two_decimals", 'assert lines[1] == "José Araújo;R$ 10,01"',
             (("src/billing/export.py", 112, "write_csv", "writer.writerows(rows)"),)),
    Failure("AssertionError: assert 3 == 2", "tests/test_ledger.py", "test_posting_writes_balanced_entries",
             "assert len(ledger.entries_for(invoice.id)) == 2",
             (), ("BRL", "USD"),
             ((" +  where 3 = len([LedgerEntry(account='receivables', amount_minor=1001, currency='BRL'), "
               "LedgerEntry(account='revenue', amount_minor=-1000, currency='BRL'), "
               "LedgerEntry(account='rounding', amount_minor=-1, currency='BRL')])"),)),
)

DECISIONS = (
    "round once, at the invoice total, with ROUND_HALF_EVEN in src/billing/money.py",
    "tax rates are parsed from strings into Decimal; floats never touch money",
    "the CSV export formats amounts with format_money(), never str(Decimal)",
    "currency exponents come from one table in src/billing/currency.py",
    "discounts are allocated in integer minor units so the parts always sum to the total",
    "FX conversion rounds after converting, never before",
    "credit notes reuse Invoice.total() instead of rounding on their own",
    "Invoice.total() keeps its public signature; other teams import it",
    "ledger entries store minor units as int, not Decimal",
    "the PDF prints money with format_money(locale=...), so BRL reads R$ 10,01",
    "USD keeps ROUND_HALF_UP for now to match last quarter's invoices exactly",
    "rates with more than four decimals are rejected at load time",
)

TODO_TEMPLATES = (
    "add a regression test for {cur} rounding in {test}",
    "check {src} for float arithmetic",
    "run the full suite and summarize the change for the PR",
    "make {src} use format_money()",
    "ask whether {cur} invoices should show 3 decimals anywhere",
    "remove the per-line quantize call in {src}",
    "add a {cur} case to the parametrized tests in {test}",
    "update the docstring of {func} in {src}",
    "check credit notes for {cur} after the rounding change",
)
CURRENCIES = ("BRL", "USD", "EUR", "JPY", "CLP", "GBP")
FUNCS = ("round_total", "apply_tax", "format_money", "export_rows", "convert", "allocate", "line_subtotal",
         "quantize_cents", "rate_for", "exponent", "post_invoice", "render_amount")

ASIDES = (
    "Also check the CSV export, finance says it shows 3 decimals for BRL.",
    "Also make sure USD invoices still round the same way, sales compares them with last quarter.",
    "By the way, the PDF for José Araújo shows R$ 10,00 too, same bug?",
    "Also check the credit-note path; it has its own rounding as far as I remember.",
    "Please don't change the public API of Invoice, the reporting team imports it.",
    "Also check item {n} in the ledger export while you are there.",
    "Quick question: does the discount allocation have the same problem?",
    "Also look at the FX conversion, EUR to BRL invoices drift as well.",
    "Can you keep a note of what you changed? I'll write the PR description from it.",
    "Finance just said JPY has no minor unit, make sure that still works.",
    "Also check the Société Générale account, their invoices are EUR with BRL tax.",
)
RESUMES = (
    "Back. Where were we?",
    "Sorry, got pulled into a meeting. Continue.",
    "Continue from where you stopped.",
    "ok, go on",
)

TOPICS = ("rounding", "tax rate loading", "currency exponents", "CSV formatting", "discount allocation",
          "FX conversion", "credit notes", "ledger posting", "PDF amounts")
FIXES = (
    "it quantizes once at the invoice total with ROUND_HALF_EVEN",
    "tax rates are parsed from strings into Decimal",
    "the CSV writer goes through format_money()",
    "the per-line quantize goes away",
    "BRL uses two decimal places from the exponent table",
    "the None case returns early instead of calling quantize",
    "allocation works in integer cents",
    "the conversion guards against a missing rate",
)


# ---------------------------------------------------------------- line pools (built once)

_SRC_SNIPPETS: tuple[tuple[str, ...], ...] = (
    ("    if currency not in EXPONENTS:", '        raise ValueError(f"unknown currency code {currency!r}")'),
    ("    exponent = Decimal(1).scaleb(-EXPONENTS[currency])",),
    ("    subtotal = Decimal(0)", "    for line in invoice.lines:",
     "        subtotal += line.unit_price * line.quantity"),
    ('    logger.debug("rounding %s %s with %s", amount, currency, rounding)',),
    ("    amount = Decimal(str(amount)) if not isinstance(amount, Decimal) else amount",),
    ("    rate = RATES.get(region)", "    if rate is None:", '        raise KeyError(f"no tax rate for {region}")'),
    ("    taxed = (amount * rate).quantize(CENT, rounding=ROUND_HALF_EVEN)",),
    ("    parts = [total * weight / sum(weights) for weight in weights]",
     "    remainder = total - sum(p.quantize(CENT) for p in parts)"),
    ("    rows = []", "    for invoice in invoices:",
     '        rows.append({"id": invoice.id, "customer": invoice.customer, "total": str(invoice.total())})'),
    ("    with open(path, \"w\", encoding=\"utf-8\", newline=\"\") as handle:",
     '        writer = csv.DictWriter(handle, fieldnames=FIELDS, delimiter=";")',
     "        writer.writeheader()", "        writer.writerows(rows)"),
    ("    symbol = SYMBOLS.get(currency, currency)",
     '    text = f"{symbol} {amount:,.{EXPONENTS[currency]}f}"'),
    ('    if locale == "pt_BR":', '        text = text.replace(",", "_").replace(".", ",").replace("_", ".")'),
    ("    source_rate = rates[source]", "    target_rate = rates[target]"),
    ("    entry = LedgerEntry(account=account, amount_minor=to_minor(amount, currency), currency=currency)",
     "    self.entries.append(entry)"),
    ("    if not self.lines:", "        return Decimal(0)"),
    ("    total = sum((line.amount() for line in self.lines), Decimal(0))",),
    ("    total = round_total(total, self.currency)",),
    ("    cents = int((amount * 100).to_integral_value(rounding=ROUND_HALF_EVEN))",),
    ("    # Quantize once, at the end: rounding every line drifts by a cent on long invoices.",),
    ("    # TODO(billing): drop this once every caller passes Decimal.",),
    ("    discount = min(discount, subtotal)", "    subtotal -= discount"),
    ("    for region, text in raw.items():", "        RATES[region] = Decimal(text)"),
    ('    response = {"invoice": invoice.id, "total": format_money(invoice.total(), invoice.currency)}',),
    ("    note = CreditNote(source=invoice, reason=reason, issued=issued or date.today())",),
    ("    assert amount.as_tuple().exponent >= -4, amount",),
    ("    try:", "        value = Decimal(text)", "    except InvalidOperation:",
     '        raise ValueError(f"not an amount: {text!r}") from None'),
    ("    key = (currency, when or date.today())", "    if key in _CACHE:", "        return _CACHE[key]"),
    ("    return [line for line in self.lines if not line.is_discount]",),
    ("    balance = sum(e.amount_minor for e in self.entries if e.account == account)",),
    ("    page.draw_text(x, y, render_amount(amount, locale=self.locale), font=self.font)",),
)
_SRC_RETURNS = (
    "    return amount.quantize(exponent, rounding=rounding)", "    return total", "    return taxed",
    "    return rows", "    return text", "    return note", "    return Money(total, self.currency)",
    "    return amount * (target_rate / source_rate)", "    return cents", "    return balance",
    "    return response", "    return value",
)
_SRC_SIGNATURES = (
    "amount: Decimal, currency: str, rounding: str = ROUND_HALF_EVEN", "self", "invoice: Invoice",
    "amount: Decimal, region: str", "invoices: Iterable[Invoice], path: Path", "total: Decimal, weights: list[int]",
    "amount: Decimal, source: str, target: str, rates: Mapping[str, Decimal]", "text: str",
    "self, account: str, amount: Decimal, currency: str", "amount: Decimal, currency: str, locale: str = \"en_US\"",
)
SRC_DOCS = (
    "Round an amount to the currency's minor unit.", "Sum the invoice lines, then round once.",
    "Apply the region's tax rate to a Decimal amount.", "One CSV row per invoice, amounts as text.",
    "Split a total by weights so the parts add up exactly.", "Convert between currencies with the given rates.",
    "Parse a decimal amount from user input.", "Post the invoice to the ledger as two balanced entries.",
    "Format money for display, with the currency symbol.", "Issue a credit note that mirrors an invoice.",
)
SRC_NAMES = (*FUNCS, "load_rates", "to_minor", "from_minor", "parse_amount", "issue_credit_note", "balance",
             "write_csv", "invoice_lines", "discount_for", "draw_totals", "handle_get_invoice")

_TEST_SNIPPETS: tuple[tuple[str, ...], ...] = (
    ('    invoice = make_invoice("BRL", ["3.335", "3.335", "3.335"])',),
    ('    invoice = make_invoice("USD", ["19.99", "0.01"], customer="Café Aurora")',),
    ('    expected = Decimal("10.01")',),
    ("    rows = export_rows([invoice])", '    assert rows[0]["currency"] == "BRL"'),
    ('    monkeypatch.setattr(tax, "RATES", {"BR-SP": Decimal("0.18")})',),
    ('    parts = allocate(Decimal("100.00"), [1, 1, 1])', "    assert len(parts) == 3"),
    ('    note = issue_credit_note(invoice, reason="duplicate")',),
    ("    ledger = Ledger()", "    ledger.post_invoice(invoice)"),
    ('    rates = {"USD": Decimal("1"), "BRL": Decimal("4.9731"), "EUR": Decimal("0.9214")}',),
    ('    path = tmp_path / "export.csv"', "    write_csv([invoice], path)",
     '    lines = path.read_text(encoding="utf-8").splitlines()'),
    ('    assert format_money(Decimal("1234.5"), "BRL") == "R$ 1.234,50"',),
    ("    with pytest.raises(ValueError):", '        exponent("BRX")'),
    ('    assert round_total(Decimal("2.675"), "USD") == Decimal("2.68")',),
    ('@pytest.mark.parametrize("currency", ["BRL", "USD", "EUR", "JPY"])',),
)

_SNIPPET_CHOICE_SEED = 20260113


def _build_blocks() -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
    """Function-sized blocks of source and of tests, drawn once from a fixed seed."""
    rng = random.Random(_SNIPPET_CHOICE_SEED)
    src: list[tuple[str, ...]] = []
    for i in range(160):
        name = rng.choice(SRC_NAMES)
        suffix = "" if i < len(SRC_NAMES) else f"_{rng.choice(('v2', 'legacy', 'for_region', 'minor', 'safe'))}"
        lines = []
        if rng.random() < 0.2:
            lines.append("@lru_cache(maxsize=256)" if rng.random() < 0.5 else "@staticmethod")
        lines.append(f"def {name}{suffix}({rng.choice(_SRC_SIGNATURES)}):")
        lines.append(f'    """{rng.choice(SRC_DOCS)}"""')
        for snippet in rng.sample(_SRC_SNIPPETS, rng.randint(2, 6)):
            lines.extend(snippet)
        lines.append(rng.choice(_SRC_RETURNS))
        lines += ["", ""]
        src.append(tuple(lines))
    for cls in ("Money", "Invoice", "InvoiceLine", "CreditNote", "LedgerEntry", "TaxRate", "ExportRow"):
        fields = [f"    {n}: {t}" for n, t in rng.sample(
            [("amount", "Decimal"), ("currency", "str"), ("customer", "str"), ("issued", "date"),
             ("lines", "list[InvoiceLine] = field(default_factory=list)"), ("region", "str | None = None"),
             ("quantity", "int = 1"), ("unit_price", "Decimal = Decimal(0)"),
             ("id", "str = field(default_factory=new_id)"),
             ("rounding", "str = ROUND_HALF_EVEN")], 5)]
        src.append(("@dataclass(frozen=True)", f"class {cls}:", f'    """{cls} as stored and exported."""', "",
                    *fields, "", "    def amount(self) -> Decimal:",
                    "        return self.unit_price * self.quantity", "", ""))
    tests: list[tuple[str, ...]] = []
    for i in range(140):
        failure = FAILURES[i % len(FAILURES)]
        if i < len(FAILURES):
            name = failure.test
        else:
            name = f"test_{rng.choice(SRC_NAMES)}_{rng.choice(CURRENCIES).lower()}_{i}"
        lines = []
        if rng.random() < 0.25:
            lines.append(_TEST_SNIPPETS[-1][0])
        lines.append(f"def {name}({rng.choice(('', 'monkeypatch', 'tmp_path', 'currency', 'make_invoice'))}):")
        for snippet in rng.sample(_TEST_SNIPPETS[:-1], rng.randint(2, 4)):
            lines.extend(snippet)
        lines.append("    " + failure.check)
        lines += ["", ""]
        tests.append(tuple(lines))
    return tuple(src), tuple(tests)


SRC_BLOCKS, TEST_BLOCKS = _build_blocks()

SRC_HEADER = (
    "from __future__ import annotations", "", "import csv", "import logging",
    "from dataclasses import dataclass, field", "from datetime import date",
    "from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation",
    "from functools import lru_cache", "from pathlib import Path",
    "from typing import Iterable, Mapping", "", "from billing.currency import EXPONENTS, SYMBOLS",
    "", "logger = logging.getLogger(__name__)", 'CENT = Decimal("0.01")', "", "",
)
TEST_HEADER = (
    "from decimal import Decimal", "", "import pytest", "",
    "from billing.currency import exponent", "from billing.export import export_rows, write_csv",
    "from billing.invoice import Invoice, round_total", "from billing.ledger import Ledger",
    "from billing.money import allocate, format_money", "from billing import tax", "", "",
)

LOG_LINES = tuple(
    f"{level:<8} billing.{mod}:{mod}.py:{lineno} {text}"
    for level, mod, lineno, text in (
        ("DEBUG", "money", 48, "quantize 10.005 BRL -> 10.00 (ROUND_HALF_EVEN)"),
        ("DEBUG", "invoice", 57, "line subtotal 3.335 x 1 = 3.335"),
        ("DEBUG", "tax", 33, "rate BR-SP = 0.18 (float from rates.json)"),
        ("INFO", "export", 90, "wrote 1 row for customer 'Café Aurora'"),
        ("WARNING", "fx", 47, "no rate for BRL on 2026-01-13, using previous day"),
        ("DEBUG", "ledger", 112, "post 1001 BRL to receivables"),
        ("DEBUG", "money", 51, "format_money 10.01 BRL locale=pt_BR -> 'R$ 10,01'"),
    )
)



REACTIONS: dict[tuple[str, bool], tuple[str, ...]] = {
    ("run_tests", True): ("Still failing.", "Same one-cent drift as before.", "The traceback points at the tax path.",
                          "That test fails the way I expected.", "Not there yet."),
    ("run_tests", False): ("That passes now.", "Green.", "Good, no failures.", ""),
    ("read_file", False): ("OK, the file confirms the rounding happens per line.", "I see where the total is built.",
                           "That explains part of it.", ""),
    ("edit_file", False): ("Edit applied.", "", ""),
    ("edit_file", True): ("The file changed under me; I'll re-read it first.",),
    ("bash", True): ("Some lint to clean up later.", "Noted."),
    ("", False): ("OK.", "", "", "Next step."),
}


# ---------------------------------------------------------------- what the agent writes and runs

# The lines an edit writes (besides the edited line itself, kept with a comment).
EDIT_LINES = (
    "total = total.quantize(CENT, rounding=ROUND_HALF_EVEN)", "amount = Decimal(str(amount))",
    'return format_money(amount, currency, locale="pt_BR")', "if rate is None:",
    "# Round once at the total; see DECISION in the PR description.", "return Money(total, self.currency)",
    "exponent = Decimal(1).scaleb(-EXPONENTS[currency.upper()])",
)

PYPROJECT = (
    "[project]", 'name = "billing"', 'version = "2.14.0"', 'requires-python = ">=3.11"',
    "dependencies = [", '    "babel>=2.14",', '    "pydantic>=2.6",', "]", "",
    "[tool.pytest.ini_options]", 'testpaths = ["tests"]', 'addopts = "-ra"', "",
    "[tool.ruff]", "line-length = 100", "", "[tool.mypy]", "strict = true",
)

PACKAGES = ("babel", "pydantic", "pytest", "pytest-cov", "mypy", "ruff", "anyio", "coverage", "iniconfig",
            "packaging", "pluggy", "typing_extensions", "annotated-types")

# What the agent says before each kind of shell command.
BASH_INTENTS = {
    "status": "Checking which files I have touched so far.",
    "diff": "Reviewing the diff before going on.",
    "log": "Looking at recent history for earlier rounding changes.",
    "ls": "Listing the billing package.",
    "mypy": "Type-checking: mypy should catch float and Decimal mixing.",
    "ruff": "Running the linter.",
    "python": "Checking how Decimal rounds that value with ROUND_HALF_EVEN.",
    "collect": "Listing the tests pytest collects.",
    "cat": "Checking the project configuration.",
    "pip": "Checking installed package versions.",
}

SEARCH_PATTERNS = ("quantize", "float(", "ROUND_HALF", "format_money", "Decimal(str(", "EXPONENTS",
                   "str(invoice.total", "rate_for", "total()")

# The first assistant message's plan.
PLAN = ("Plan: reproduce the drift with a test, find where the rounding happens, fix it in one place, then run "
        "the whole suite.")
