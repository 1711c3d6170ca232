"""The `coding` profile: a synthetic coding-agent session hunting a billing rounding bug.

One session: the user asks the agent to fix BRL invoice totals that drift by a cent; the
agent reads files, edits them, runs the tests (which fail with tracebacks until edits fix
the errors, and sometimes fail again after an edit regresses something), runs shell
commands, searches and keeps notes. Its messages carry the marker lines the system prompt
asks for (DECISION:, TODO:, DONE:, ERROR:, FILE:), so fact-retention checks have something
to look for. Timestamps advance by seconds, with occasional pauses of minutes and rare ones
of hours, long enough for a prompt cache to go cold.

Everything is drawn from `random.Random(seed)`; the text comes from line pools built once at
import from a fixed seed, so generation does no per-character work.

Calibration (output_scale 1.0, o200k_base, seeds 0-19): the first 60 turns append about
2.2k tokens a turn (exploration reads whole files; early test runs fail with long
tracebacks), so an unmanaged context holds 100-220k tokens by turn 60 (mean about 135k).
Later turns re-read ranges of files already seen and most test runs pass, so 600 turns
write about 2-2.4 MB in the native format and 2,400 turns about 6.4-7.4 MB.
"""

from __future__ import annotations

import math
import random
from decimal import ROUND_HALF_EVEN, Decimal
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ctxsim.model import Message, Session, ToolCall, Trace, format_ts, parse_ts
from ctxsim.synth import option_number, option_weights

PROFILE = "coding"
START = "2026-01-13T16:56:00Z"
MODEL = "claude-sonnet-4-5"
WINDOW = 200_000

TOOL_NAMES: tuple[str, ...] = (
    "read_file", "edit_file", "run_tests", "bash", "search", "notes_write", "notes_read",
)
DEFAULT_TOOL_MIX: dict[str, float] = {
    "read_file": 0.30, "run_tests": 0.20, "edit_file": 0.25, "bash": 0.15, "search": 0.07,
    "notes_write": 0.03,
}
DEFAULTS: dict[str, Any] = {
    "tool_mix": MappingProxyType(DEFAULT_TOOL_MIX),
    "output_scale": 1.0,  # multiplier on every tool output's size
    "aside_rate": 0.08,  # chance per turn (after the first) of a user aside
    "pause_rate": 0.03,  # chance per turn of a 6-50 minute pause before it
    "long_pause_rate": 0.005,  # chance per turn of a 1-3 hour pause before it
    "parallel_rate": 0.06,  # chance per turn of two parallel tool calls
}


def check(options: dict[str, Any]) -> dict[str, Any]:
    merged = {**DEFAULTS, **options}
    merged["tool_mix"] = option_weights(PROFILE, "tool_mix", merged["tool_mix"], TOOL_NAMES)
    merged["output_scale"] = option_number(PROFILE, "output_scale", merged["output_scale"],
                                           low=0.0, high=100.0, low_open=True)
    for rate in ("aside_rate", "pause_rate", "long_pause_rate", "parallel_rate"):
        merged[rate] = option_number(PROFILE, rate, merged[rate], high=1.0)
    return merged


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
class _Failure:
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

FAILURES: tuple[_Failure, ...] = (
    _Failure("AssertionError: expected Decimal('10.01'), got Decimal('10.00')", "tests/test_invoice.py",
             "test_brl_total_rounds_once_half_even",
             'assert invoice.total() == Decimal("10.01"), f"expected {expected!r}, got {invoice.total()!r}"',
             (("src/billing/invoice.py", 57, "total", "total = round_total(total, self.currency)"),
              ("src/billing/money.py", 48, "round_total", "return amount.quantize(exponent, rounding=rounding)")),
             ("BRL", "BRL-many-lines"),
             ("assert Decimal('10.00') == Decimal('10.01')",
              f" +  where Decimal('10.00') = <bound method Invoice.total of {_INVOICE_REPR}>()",
              " +  and   Decimal('10.01') = Decimal('10.01')")),
    _Failure("TypeError: unsupported operand type(s) for *: 'float' and 'decimal.Decimal'", "tests/test_tax.py",
             "test_rate_applies_to_decimal_amount", 'assert apply_tax(Decimal("9.99"), "BR-SP") == Decimal("11.79")',
             (("src/billing/invoice.py", 61, "total", "taxed = apply_tax(total, self.region)"),
              ("src/billing/tax.py", 41, "apply_tax", "return rate_for(region) * amount")),
             ("BR-SP", "BR-RJ", "PT-LIS")),
    _Failure("AssertionError: '10.010' != '10.01'", "tests/test_export.py", "test_csv_brl_has_two_decimals",
             'assert row["total"] == "10.01"',
             (("src/billing/export.py", 88, "export_rows", 'row["total"] = str(invoice.total())'),),
             (), ("- 10.01", "+ 10.010", "?      +")),
    _Failure("KeyError: 'BRL'", "tests/test_currency.py", "test_exponent_known_for_brl",
             'assert exponent("BRL") == 2',
             (("src/billing/currency.py", 23, "exponent", "return EXPONENTS[code.upper()]"),)),
    _Failure("AssertionError: assert 'R$ 10,00' == 'R$ 10,01'", "tests/test_export.py",
             "test_pdf_amount_uses_brazilian_format", 'assert render_amount(invoice, locale="pt_BR") == "R$ 10,01"',
             (), ("pt_BR",), ("  - R$ 10,01", "  ?       ^", "  + R$ 10,00", "  ?       ^")),
    _Failure("AssertionError: assert Decimal('99.99') == Decimal('100.00')", "tests/test_discounts.py",
             "test_allocation_sums_to_total", "assert sum(parts) == total",
             (), ("3-way", "7-way"),
             (" +  where Decimal('99.99') = sum([Decimal('33.33'), Decimal('33.33'), Decimal('33.33')])",)),
    _Failure("AttributeError: 'NoneType' object has no attribute 'quantize'", "tests/test_credit_notes.py",
             "test_credit_note_mirrors_invoice_total", "assert note.total() == -invoice.total()",
             (("src/billing/credit_notes.py", 64, "total", "return self.source.rounded_total.quantize(CENT)"),)),
    _Failure("ValueError: unknown currency code 'BRX'", "tests/test_currency.py", "test_rejects_unknown_code",
             'assert exponent("brl") == 2',
             (("src/billing/currency.py", 19, "exponent", 'raise ValueError(f"unknown currency code {code!r}")'),)),
    _Failure("ZeroDivisionError: division by zero", "tests/test_fx.py", "test_convert_with_missing_rate_raises_cleanly",
             'assert convert(Decimal("10.00"), "USD", "BRL", rates={}) is None',
             (("src/billing/fx.py", 52, "convert", "return amount * (target_rate / source_rate)"),)),
    _Failure("AssertionError: expected 'José Araújo;R$ 10,01', got 'José Araújo;R$ 10,010'", "tests/test_export.py",
             "test_csv_row_keeps_accents_and_two_decimals", 'assert lines[1] == "José Araújo;R$ 10,01"',
             (("src/billing/export.py", 112, "write_csv", "writer.writerows(rows)"),)),
    _Failure("AssertionError: assert 3 == 2", "tests/test_ledger.py", "test_posting_writes_balanced_entries",
             "assert len(ledger.entries_for(invoice.id)) == 2",
             (), ("BRL", "USD"),
             (" +  where 3 = len([LedgerEntry(account='receivables', amount_minor=1001, currency='BRL'), "
              "LedgerEntry(account='revenue', amount_minor=-1000, currency='BRL'), "
              "LedgerEntry(account='rounding', amount_minor=-1, currency='BRL')])",)),
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
_SRC_DOCS = (
    "Round an amount to the currency's minor unit.", "Sum the invoice lines, then round once.",
    "Apply the region's tax rate to a Decimal amount.", "One CSV row per invoice, amounts as text.",
    "Split a total by weights so the parts add up exactly.", "Convert between currencies with the given rates.",
    "Parse a decimal amount from user input.", "Post the invoice to the ledger as two balanced entries.",
    "Format money for display, with the currency symbol.", "Issue a credit note that mirrors an invoice.",
)
_SRC_NAMES = FUNCS + ("load_rates", "to_minor", "from_minor", "parse_amount", "issue_credit_note", "balance",
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
        name = rng.choice(_SRC_NAMES)
        suffix = "" if i < len(_SRC_NAMES) else f"_{rng.choice(('v2', 'legacy', 'for_region', 'minor', 'safe'))}"
        lines = []
        if rng.random() < 0.2:
            lines.append("@lru_cache(maxsize=256)" if rng.random() < 0.5 else "@staticmethod")
        lines.append(f"def {name}{suffix}({rng.choice(_SRC_SIGNATURES)}):")
        lines.append(f'    """{rng.choice(_SRC_DOCS)}"""')
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
            name = f"test_{rng.choice(_SRC_NAMES)}_{rng.choice(CURRENCIES).lower()}_{i}"
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


_SRC_BLOCKS, _TEST_BLOCKS = _build_blocks()

_SRC_HEADER = (
    "from __future__ import annotations", "", "import csv", "import logging",
    "from dataclasses import dataclass, field", "from datetime import date",
    "from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation",
    "from functools import lru_cache", "from pathlib import Path",
    "from typing import Iterable, Mapping", "", "from billing.currency import EXPONENTS, SYMBOLS",
    "", "logger = logging.getLogger(__name__)", 'CENT = Decimal("0.01")', "", "",
)
_TEST_HEADER = (
    "from decimal import Decimal", "", "import pytest", "",
    "from billing.currency import exponent", "from billing.export import export_rows, write_csv",
    "from billing.invoice import Invoice, round_total", "from billing.ledger import Ledger",
    "from billing.money import allocate, format_money", "from billing import tax", "", "",
)

_LOG_LINES = tuple(
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


def _lognormal(rng: random.Random, median: float, sigma: float, low: int, high: int) -> int:
    value = median * math.exp(rng.gauss(0.0, sigma))
    return max(low, min(high, int(value)))


def _rule(title: str, char: str = "=", width: int = 80) -> str:
    pad = max(2, width - len(title) - 2)
    return f"{char * (pad // 2)} {title} {char * (pad - pad // 2)}"


# ---------------------------------------------------------------- the generator


@dataclass
class _Call:
    name: str
    arguments: dict[str, Any]
    intent: str
    content: str = ""
    is_error: bool = False
    runtime: float = 0.5


@dataclass
class _State:
    rng: random.Random
    scale: float
    turn: int = 0
    clock: float = 0.0
    files: dict[str, list[str]] = field(default_factory=dict)
    reads: dict[str, int] = field(default_factory=dict)
    edits: list[tuple[str, int, str, str]] = field(default_factory=list)  # path, line, old, new
    active: list[int] = field(default_factory=lambda: [0, 1])  # indexes into FAILURES
    pending: list[str] = field(default_factory=list)  # marker lines for the next assistant message
    todos: list[str] = field(default_factory=list)
    decisions: int = 0
    notes: dict[str, list[str]] = field(default_factory=dict)
    last: tuple[str, bool] = ("", False)  # the previous turn's last tool and whether it failed

    # ---- helpers

    def size(self, median: float, sigma: float, low: int, high: int) -> int:
        s = self.scale
        return _lognormal(self.rng, median * s, sigma, max(1, int(low * s)), max(1, int(high * s)))

    def file(self, path: str) -> list[str]:
        lines = self.files.get(path)
        if lines is None:
            rng = self.rng
            is_test = path.startswith("tests/")
            pool = _TEST_BLOCKS if is_test else _SRC_BLOCKS
            target = self.size(430, 0.4, 100, 650)
            lines = [f'"""{path.rsplit("/", 1)[-1]}: {rng.choice(_SRC_DOCS).lower()}"""', ""]
            lines += _TEST_HEADER if is_test else _SRC_HEADER
            for failure in FAILURES:  # tests that can fail live in their file
                if failure.test_file == path:
                    lines += _TEST_BLOCKS[FAILURES.index(failure)]
            while len(lines) < target:
                lines += pool[rng.randrange(len(pool))]
            self.files[path] = lines
        return lines

    def pick_path(self, sources: Sequence[str]) -> str:
        unread = [p for p in sources if p not in self.reads]
        if unread and self.rng.random() < 0.8:
            return self.rng.choice(unread)
        return self.rng.choice(sources)

    def weighted_tool(self, mix: dict[str, float]) -> str:
        names = list(mix)
        return self.rng.choices(names, weights=[mix[n] for n in names])[0]

    # ---- tools

    def read_file(self) -> _Call:
        rng = self.rng
        focus = [FAILURES[i].test_file for i in self.active] + [f[0] for i in self.active for f in FAILURES[i].frames]
        path = rng.choice(focus) if focus and rng.random() < 0.3 else self.pick_path(
            SRC_FILES if rng.random() < 0.65 else TEST_FILES + ("tests/conftest.py",))
        lines = self.file(path)
        seen = self.reads.get(path, 0)
        self.reads[path] = seen + 1
        args: dict[str, Any] = {"path": path}
        # Early re-reads are often whole files; later the agent knows where to look.
        if seen and rng.random() < 0.9 - 0.45 * math.exp(-self.turn / 80):
            limit = self.size(62, 0.6, 15, 250)
            offset = rng.randrange(max(1, len(lines) - limit // 2))
            args.update(offset=offset, limit=limit)
            part = lines[offset:offset + limit]
            intent = f"Looking at lines {offset}-{offset + len(part)} of {path} around {rng.choice(FUNCS)}()."
        else:
            part = lines
            intent = rng.choice((
                f"Let me read {path} to see how it handles {rng.choice(TOPICS)}.",
                f"Opening {path}; the {rng.choice(TOPICS)} logic should be in there.",
                f"I need the current version of {path} before changing anything.",
            ))
        if rng.random() < 0.15:
            self.pending.append(f"FILE: {path}, last read_file at turn {self.turn}")
        return _Call("read_file", args, intent, "\n".join(part), runtime=rng.uniform(0.05, 0.6))

    def edit_file(self) -> _Call:
        rng = self.rng
        focus = [f[0] for i in self.active for f in FAILURES[i].frames]
        known = [p for p in self.reads if p != "tests/conftest.py"]  # read before you edit
        if focus and rng.random() < 0.5:
            path = rng.choice(focus)
        elif known and rng.random() < 0.85:
            path = rng.choice(known)
        else:
            path = rng.choice(SRC_FILES if rng.random() < 0.75 else TEST_FILES)
        lines = self.file(path)
        index = rng.randrange(len(lines))
        while not lines[index].strip():
            index = (index + 1) % len(lines)
        old = lines[index]
        indent = old[: len(old) - len(old.lstrip())]
        new = indent + rng.choice((
            "total = total.quantize(CENT, rounding=ROUND_HALF_EVEN)", "amount = Decimal(str(amount))",
            'return format_money(amount, currency, locale="pt_BR")', "if rate is None:",
            "# Round once at the total; see DECISION in the PR description.", "return Money(total, self.currency)",
            "exponent = Decimal(1).scaleb(-EXPONENTS[currency.upper()])",
            f"{old.strip()}  # keep: callers pass Decimal since the fix",
        ))
        fix = rng.choice(FIXES)
        intent = rng.choice((f"Changing {rng.choice(FUNCS)} in {path} so that {fix}.", f"Editing {path}: {fix}."))
        args = {"path": path, "old_string": old.strip(), "new_string": new.strip()}
        if rng.random() < 0.05:
            return _Call("edit_file", args, intent,
                         f"Error: old_string not found in {path}; read the file again, it may have changed.",
                         is_error=True, runtime=0.1)
        lines[index] = new
        self.edits.append((path, index, old, new))
        start = max(0, index - 2)
        diff = [f"Edited {path}: 1 replacement at line {index + 1}.", f"@@ -{start + 1},5 +{start + 1},5 @@"]
        for j in range(start, min(len(lines), index + 3)):
            diff += [f"-{old}", f"+{new}"] if j == index else [f" {lines[j]}"]
        # The story: edits mostly fix what is failing and sometimes break something else.
        # Early on the agent is still hunting, so an edit fixes something less often.
        if self.active and rng.random() < 0.35 - 0.17 * math.exp(-self.turn / 200):
            self.active.pop(rng.randrange(len(self.active)))
        # Early edits break things often; later ones rarely, as the code settles.
        if rng.random() < 0.02 + 0.10 * math.exp(-self.turn / 250) and len(self.active) < 3:
            fresh = [i for i in range(len(FAILURES)) if i not in self.active]
            self.active.append(rng.choice(fresh))
        if rng.random() < 0.15:
            self.pending.append(f"FILE: {path}, last edit_file at turn {self.turn}")
        return _Call("edit_file", args, intent, "\n".join(diff), runtime=rng.uniform(0.05, 0.4))

    def run_tests(self) -> _Call:
        rng = self.rng
        roll = rng.random()
        if self.active and roll < 0.5:
            target = FAILURES[rng.choice(self.active)].test_file
        elif roll < 0.8:
            target = "tests/"
        else:
            target = rng.choice(TEST_FILES)
        args: dict[str, Any] = {"path": target}
        failing = [FAILURES[i] for i in self.active if target == "tests/" or FAILURES[i].test_file == target]
        if target != "tests/" and rng.random() < 0.35:
            failing = failing[:1]
            args["k"] = failing[0].test if failing else rng.choice(FUNCS)
        files = TEST_FILES if target == "tests/" else (target,)
        counts = {f: 8 + (sum(map(ord, f)) % 19) for f in files}
        header = f"collected {sum(counts.values())} items"
        if "k" in args:
            selected = max(1, len(failing[0].params)) if failing else rng.randint(1, 3)
            header += f" / {counts[target] - selected} deselected / {selected} selected"
            counts = {target: selected}
        total = sum(counts.values())
        out = [_rule("test session starts"), "platform linux -- Python 3.12.7, pytest-8.3.3, pluggy-1.5.0",
               "rootdir: /home/dev/billing", "configfile: pyproject.toml", "plugins: cov-5.0.0, anyio-4.6.2",
               header, ""]
        done = 0
        for f, n in counts.items():
            marks = ["."] * n
            for failure in failing:
                if failure.test_file == f:
                    first = sum(map(ord, failure.test)) % n
                    for j in range(max(1, len(failure.params))):
                        marks[(first + j) % n] = "F"
            done += n
            out.append(f"{f} {''.join(marks)}".ljust(74) + f"[{100 * done // total:3d}%]")
        out.append("")
        failed_ids: list[tuple[str, _Failure]] = []
        for failure in failing:
            ids = [f"{failure.test}[{p}]" for p in failure.params] or [failure.test]
            failed_ids += [(test_id, failure) for test_id in ids]
        for number, (test_id, failure) in enumerate(failed_ids):
            out += [_rule("FAILURES") if number == 0 else "", _rule(test_id, "_"), ""]
            block = _TEST_BLOCKS[FAILURES.index(failure)]
            body = [ln for ln in block if ln.strip()][:-1]
            out += ["    " + ln for ln in body]
            out.append(">   " + "    " + failure.check)
            path, lineno = failure.test_file, 40 + sum(map(ord, failure.test)) % 150
            for frame_path, frame_line, func, code in failure.frames:
                out += ["", f"{path}:{lineno}: ", "_ " * 39 + "_", ""]
                src = _SRC_BLOCKS[(frame_line * 7 + len(frame_path)) % len(_SRC_BLOCKS)]
                keep = self.size(20, 0.5, 4, 60)
                out += [f"    def {func}(*args, **kwargs):"] + ["    " + ln for ln in src[2:2 + keep] if ln]
                out.append(">   " + "    " + code.strip())
                path, lineno = frame_path, frame_line
            out += [f"E       {failure.line}"] + [f"E       {ln}" for ln in failure.explain] + [""]
            out.append(f"{path}:{lineno}: {failure.kind.rsplit('.', 1)[-1]}")
            if rng.random() < 0.8:
                out.append(_rule("Captured log call", "-"))
                out += [rng.choice(_LOG_LINES) for _ in range(self.size(45, 0.8, 2, 300))]
        if failed_ids:
            out.append(_rule("short test summary info"))
            out += [f"FAILED {f.test_file}::{test_id} - {f.line}" for test_id, f in failed_ids]
        seconds = 0.3 + total * rng.uniform(0.004, 0.02)
        bad = len(failed_ids)
        summary = f"{bad} failed, {max(0, total - bad)} passed" if bad else f"{total} passed"
        out.append(_rule(f"{summary} in {seconds:.2f}s"))
        who = target if "k" not in args else f"{target} -k {args['k']}"
        intent = rng.choice((f"Running {who} to see where we stand.", f"Let me rerun {who} after that change.",
                             f"Running {who}."))
        if target == "tests/":
            intent = rng.choice(("Running the full suite to check nothing else broke.", "Full test run."))
        for failure in failing:
            self.pending.append(f"ERROR: {failure.line} (last seen turn {self.turn})")
        if failing and rng.random() < 0.12:
            self.pending.append(f"FILE: {target}, last run_tests at turn {self.turn}")
        return _Call("run_tests", args, intent, "\n".join(out), is_error=bool(failing), runtime=seconds + 1.5)

    def bash(self) -> _Call:
        rng = self.rng
        kind = rng.choices(("status", "diff", "log", "ls", "mypy", "ruff", "python", "collect", "cat", "pip"),
                           weights=(14, 14, 6, 8, 8, 6, 14, 3, 6, 2))[0]
        is_error = False
        if kind == "status":
            command = "git status --short"
            changed = sorted({p for p, *_ in self.edits[-12:]}) or ["src/billing/money.py"]
            out = [f" M {p}" for p in changed] + ["?? .pytest_cache/"]
        elif kind == "diff":
            only = None if rng.random() < 0.6 or not self.edits else self.edits[-1][0]
            command = f"git diff {only}" if only else "git diff"
            recent = [e for e in self.edits[-self.size(6, 0.8, 1, 60):] if only in (None, e[0])]
            recent = recent or [("src/billing/money.py", 40, "    pass", "    pass")]
            out = []
            for path, index, old, new in recent:
                out += [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}",
                        f"@@ -{index + 1},7 +{index + 1},7 @@"]
                context = self.file(path)[max(0, index - 3):index + 4]
                out += [f" {ln}" for ln in context[:3]] + [f"-{old}", f"+{new}"] + [f" {ln}" for ln in context[4:]]
        elif kind == "log":
            command = "git log --oneline -n 20"
            out = [f"{rng.getrandbits(28):07x} {rng.choice(DECISIONS)[:60]}" for _ in range(20)]
        elif kind == "ls":
            command = "ls -la src/billing"
            out = ["total 184", "drwxr-xr-x  3 dev dev  4096 Jan 13 16:40 .",
                   "drwxr-xr-x  4 dev dev  4096 Jan 12 09:12 .."]
            out += [f"-rw-r--r--  1 dev dev {len(self.file(p)) * 38:5d} Jan 13 16:5{i % 10} {p.rsplit('/', 1)[-1]}"
                    for i, p in enumerate(SRC_FILES)]
        elif kind == "mypy":
            command = "python -m mypy src/billing"
            n = self.size(3, 1.0, 0, 80) if rng.random() < 0.6 else 0
            out = [f"{rng.choice(SRC_FILES)}:{rng.randint(10, 400)}: error: Unsupported operand types for * "
                   f'("float" and "Decimal")  [operator]' for _ in range(n)]
            out.append(f"Found {n} errors in {min(n, 4)} files (checked 13 source files)" if n
                       else "Success: no issues found in 13 source files")
            is_error = n > 0
        elif kind == "ruff":
            command = "ruff check src tests"
            n = self.size(2, 1.0, 0, 40) if rng.random() < 0.5 else 0
            out = [f"{rng.choice(ALL_FILES)}:{rng.randint(1, 300)}:{rng.randint(1, 80)}: "
                   "F401 [*] `decimal.ROUND_HALF_UP` imported but unused" for _ in range(n)]
            out += ([f"Found {n} error{'s' if n > 1 else ''}.", "[*] fixable with `ruff check --fix`"]
                    if n else ["All checks passed!"])
            is_error = n > 0
        elif kind == "python":
            value = rng.choice(("3.335", "10.005", "2.675", "0.125"))
            command = (f'python -c "from decimal import Decimal, ROUND_HALF_EVEN; '
                       f"print(Decimal('{value}').quantize(Decimal('0.01'), rounding=ROUND_HALF_EVEN))\"")
            out = [str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN))]
        elif kind == "collect":
            command = "python -m pytest --collect-only -q"
            out = [f"{f}::test_{rng.choice(_SRC_NAMES)}_{i}"
                   for f in TEST_FILES for i in range(self.size(14, 0.5, 4, 40))]
            out += ["", f"{len(out)} tests collected in 0.21s"]
        elif kind == "cat":
            command = "cat pyproject.toml"
            out = ["[project]", 'name = "billing"', 'version = "2.14.0"', 'requires-python = ">=3.11"',
                   "dependencies = [", '    "babel>=2.14",', '    "pydantic>=2.6",', "]", "",
                   "[tool.pytest.ini_options]", 'testpaths = ["tests"]', 'addopts = "-ra"', "",
                   "[tool.ruff]", "line-length = 100", "", "[tool.mypy]", "strict = true"]
        else:
            command = "pip list"
            out = ["Package    Version", "---------- -------"] + [
                f"{name:<18} {rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
                for name in ("babel", "pydantic", "pytest", "pytest-cov", "mypy", "ruff", "anyio", "coverage",
                             "iniconfig", "packaging", "pluggy", "typing_extensions", "annotated-types")]
        intent = {
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
        }[kind]
        return _Call("bash", {"command": command}, intent, "\n".join(out), is_error=is_error,
                     runtime=rng.uniform(0.2, 8.0))

    def search(self) -> _Call:
        rng = self.rng
        pattern = rng.choice(("quantize", "float(", "ROUND_HALF", "format_money", "Decimal(str(", "EXPONENTS",
                              "str(invoice.total", "rate_for", "total()"))
        where = rng.choice(("src", "tests", "."))
        paths = [p for p in ALL_FILES if where == "." or p.startswith(where)]
        want = self.size(14, 0.8, 0, 150)
        out: list[str] = []
        for path in rng.sample(paths, len(paths)):
            lines = self.file(path)
            out += [f"{path}:{i + 1}:{ln}" for i, ln in enumerate(lines) if pattern in ln]
            if len(out) >= want:
                break
        out = out[:want]
        intent = f"Searching for `{pattern}` to find every place that {rng.choice(TOPICS)} touches."
        return _Call("search", {"pattern": pattern, "path": where}, intent,
                     "\n".join(out) if out else "No matches found.", runtime=rng.uniform(0.1, 1.2))

    def notes_write(self) -> _Call:
        rng = self.rng
        section = rng.choice(("Decisions", "Open", "Errors", "Files"))
        if section == "Decisions":
            entry = DECISIONS[self.decisions % len(DECISIONS)] if self.decisions else DECISIONS[0]
        elif section == "Open":
            entry = self.todos[-1] if self.todos else "run the full suite and summarize the change for the PR"
        elif section == "Errors":
            entry = FAILURES[self.active[0]].line if self.active else "suite green"
        else:
            entry = f"{rng.choice(SRC_FILES)} edited at turn {self.turn}"
        entries = self.notes.setdefault(section, [])
        entries.append(entry)
        del entries[:-12]  # the notes file keeps each section short
        count = sum(len(v) for v in self.notes.values())
        return _Call("notes_write", {"section": section, "entry": entry},
                     "Recording this in the notes so it survives compaction.",
                     f"ok: added to ## {section} (notes.md: {count} entries)", runtime=0.05)

    def notes_read(self) -> _Call:
        text = "\n\n".join(f"## {k}\n" + "\n".join(f"- {e}" for e in v) for k, v in self.notes.items())
        return _Call("notes_read", {}, "Reading my notes to pick up where I left off.",
                     text or "(notes.md is empty)", runtime=0.05)

    # ---- markers

    def markers(self) -> list[str]:
        rng = self.rng
        lines: list[str] = []
        seen_errors = set()
        for marker in self.pending:
            if marker.startswith("ERROR: "):
                head = marker.rsplit(" (last seen", 1)[0]
                if head in seen_errors or rng.random() > 0.7:
                    continue
                seen_errors.add(head)
            lines.append(marker)
        self.pending.clear()
        if rng.random() < 0.035:
            text = DECISIONS[self.decisions % len(DECISIONS)]
            if self.decisions >= len(DECISIONS):
                text += " (still holds)"
            self.decisions += 1
            lines.append(f"DECISION: {text}")
        if self.todos and rng.random() < 0.05:
            lines.append(f"DONE: {self.todos.pop(rng.randrange(len(self.todos)))}")
        if len(self.todos) < 8 and rng.random() < 0.05:
            todo = self.new_todo()
            if todo not in self.todos:
                self.todos.append(todo)
                lines.append(f"TODO: {todo}")
        return lines

    def new_todo(self) -> str:
        rng = self.rng
        return rng.choice(TODO_TEMPLATES).format(cur=rng.choice(CURRENCIES), test=rng.choice(TEST_FILES),
                                                 src=rng.choice(SRC_FILES), func=rng.choice(FUNCS))


_REACTIONS: dict[tuple[str, bool], tuple[str, ...]] = {
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


def generate(turns: int, seed: int = 0, *, tool_mix: dict[str, float], output_scale: float, aside_rate: float,
             pause_rate: float, long_pause_rate: float, parallel_rate: float) -> Trace:
    rng = random.Random(seed)
    options = {"tool_mix": dict(tool_mix), "output_scale": output_scale, "aside_rate": aside_rate,
               "pause_rate": pause_rate, "long_pause_rate": long_pause_rate, "parallel_rate": parallel_rate}
    state = _State(rng=rng, scale=output_scale, clock=parse_ts(START))
    handlers = {name: getattr(state, name) for name in TOOL_NAMES}
    side_mix = {n: w for n, w in tool_mix.items() if n in ("read_file", "search", "bash") and w > 0}
    messages: list[Message] = []

    def stamp(gap: float) -> str:
        state.clock += gap
        return format_ts(round(state.clock))

    for turn in range(1, turns + 1):
        state.turn = turn
        user = None
        paused = False
        if turn == 1:
            user = TASK
        else:
            roll = rng.random()
            if roll < long_pause_rate:
                state.clock += rng.uniform(3600, 3 * 3600)
                paused = True
            elif roll < long_pause_rate + pause_rate:
                state.clock += rng.uniform(6 * 60, 50 * 60)
                paused = True
            if rng.random() < aside_rate:
                user = rng.choice(ASIDES).format(n=turn)
                if user.startswith("Also check the CSV") and 2 not in state.active and len(state.active) < 3:
                    state.active.append(2)
            elif paused and rng.random() < 0.5:
                user = rng.choice(RESUMES)
        if user is not None:
            messages.append(Message(role="user", content=user, ts=stamp(0 if turn == 1 else rng.uniform(3, 40))))

        names = [state.weighted_tool(tool_mix)]
        if side_mix and rng.random() < parallel_rate:
            names.append(state.weighted_tool(side_mix))
        markers = state.markers()
        calls = [handlers[name]() for name in names]

        # The assistant's words: a reaction to the last result, the marker lines, the intent.
        parts = []
        if turn == 1:
            parts.append("Plan: reproduce the drift with a test, find where the rounding happens, fix it in "
                         "one place, then run the whole suite.")
            for _ in range(3):
                todo = state.new_todo()
                if todo not in state.todos:
                    state.todos.append(todo)
                    markers.append(f"TODO: {todo}")
        elif rng.random() < 0.45:
            reaction = rng.choice(_REACTIONS.get(state.last, _REACTIONS[("", False)]))
            if reaction:
                parts.append(reaction)
        if markers:
            parts.append("\n".join(markers))
        parts.append(" ".join(c.intent for c in calls))
        tool_calls = tuple(ToolCall(id=f"t{turn}-c{i + 1}", name=c.name, arguments=c.arguments)
                           for i, c in enumerate(calls))
        messages.append(Message(role="assistant", content="\n\n".join(parts), tool_calls=tool_calls,
                                ts=stamp(_lognormal(rng, 9, 0.6, 2, 40))))
        base = state.clock
        state.last = (calls[-1].name, calls[-1].is_error)
        for call, tc in zip(calls, tool_calls):
            state.clock = max(state.clock, base + call.runtime)
            messages.append(Message(role="tool", content=call.content, tool_call_id=tc.id, name=call.name,
                                    is_error=call.is_error, ts=format_ts(round(state.clock))))

    generator = {"profile": PROFILE, "seed": seed, "turns": turns,
                 **{k: (dict(v) if isinstance(v, dict) else v) for k, v in options.items()}}
    session = Session(
        id=f"synth-coding-s{seed}-t{turns}",
        source="ctxsim-synth",
        model=MODEL,
        provider="anthropic",
        window=WINDOW,
        system=SYSTEM,
        tools=tuple(MappingProxyType(t) for t in TOOLS),
        ts=START,
        messages=tuple(messages),
        extra=MappingProxyType({"generator": generator}),
    )
    return Trace(name=session.id, sessions=(session,))
