"""Markdown: a report that reads well as a GitHub pull-request comment.

A two-sentence verdict (the cheapest policy, against the recorded bill when the
trace has one; then what passes the window: a saving against a baseline that
overflows is said to be one), a six-column table that fits a comment (860 px),
the charts as images under `--image-base-url` (or a note on how to get them:
relative images do not show in a PR comment), then every column, the
assumptions, events, the worst requests and the policies' parameters in
collapsible details. It stays under the comment limit (65,536 characters) by
showing fewer events and requests, and says what it cut.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ctxsim.replay.run import RunResult, none_run, recorded_gap, recorded_of_result
from ctxsim.reports import Options, ReportInfo, register
from ctxsim.reports._common import (
    change,
    labels,
    money,
    overflows,
    pct,
    request_rows,
    signed_pct,
    starred_run,
    tokens,
    window_of,
    winner,
)

WORST = 5
EVENT_STEPS = (None, 200, 100, 50, 20, 10, 5, 0)  # events shown per policy, tried in turn until it fits
WORST_STEPS = (WORST, 3, 1, 0)
PRIMARY_CHARTS = ("context.png", "cost.png")


def cell(text: object) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("\r", " ")


def code(text: str) -> str:
    text = text.replace("\n", " ")
    if "`" in text:
        return f"`` {text} ``"
    return f"`{text}`"


def _names(items: Sequence[tuple[str, int]], most: int = 4) -> str:
    shown = [f"{code(n)} (request {r:,})" for n, r in items[:most]]
    rest = len(items) - len(shown)
    return ", ".join(shown) + (f" and {rest} more" if rest else "")


def verdict(result: RunResult, names: Sequence[str]) -> str:
    """Two sentences: which policy is cheapest, against the recorded bill when there is one; then what
    overflows (a saving against a baseline that passes the window is said to be one)."""
    runs = result.runs
    base = runs[0]
    t0 = base.totals
    rec = recorded_of_result(result)
    billed = f" (the recorded bill: {money(rec.cost_usd)})" if rec is not None else ""
    best_i = winner(result)
    best = runs[best_i].totals
    if len(runs) == 1:
        share = t0.peak_context_tokens / window_of(base, result) if window_of(base, result) else 0
        text = (f"{code(names[0])} costs {money(t0.cost_usd)}{billed} for {t0.requests:,} requests, peak context "
                f"{t0.peak_context_tokens:,} tokens ({share * 100:.0f}% of the window), hit rate {pct(t0.hit_rate)}.")
    elif best_i == 0:
        second_i = min(range(1, len(runs)), key=lambda i: (runs[i].totals.cost_usd, i))
        second = runs[second_i].totals
        text = (f"the baseline {code(names[0])} is the cheapest at {money(t0.cost_usd)}{billed}; the next, "
                f"{code(names[second_i])}, costs {money(second.cost_usd)} "
                f"({signed_pct(change(t0.cost_usd, second.cost_usd))}).")
    else:
        against = f"{money(t0.cost_usd)} for {code(names[0])} ({signed_pct(change(t0.cost_usd, best.cost_usd))})"
        if rec is not None:
            against = (f"the recorded bill of {money(rec.cost_usd)} ({signed_pct(change(rec.cost_usd, best.cost_usd))})"
                       f" and {against} replayed")
        text = (f"{code(names[best_i])} is the cheapest at {money(best.cost_usd)}, against {against}; peak context "
                f"{best.peak_context_tokens:,} against {t0.peak_context_tokens:,} tokens.")
    from ctxsim.reports._loss import markdown_verdict

    text = markdown_verdict(result, names, best_i) or text
    over = [(i, overflows(run, result)) for i, run in enumerate(runs)]
    past_window = [(names[i] + (" (the cheapest)" if i == best_i and len(runs) > 1 else ""), r)
                   for i, r in over if r is not None]
    reserve_only = [(names[i], r) for i, run in enumerate(runs)
                    if over[i][1] is None and (r := run.totals.first_over.get("window-reserve")) is not None]
    parts = []
    base_over = over[0][1]
    if base_over is not None and best_i != 0 and len(runs) > 1:
        window = window_of(base, result)
        first = (f"the saving is against a baseline that overflows: {code(names[0])} passes the window of "
                 f"{window:,} at request {base_over:,} (peak {t0.peak_context_tokens:,}, "
                 f"{t0.peak_context_tokens / window:.1f}× the window), a session that could not have happened "
                 "as replayed")
        if rec is not None and rec.peak_context_tokens is not None and rec.peak_context_tokens <= window:
            first += f" (the recorded one peaked at {rec.peak_context_tokens:,})"
        parts.append(first)
        past_window = past_window[1:]
        if past_window:
            parts.append("also past the window: " + _names(past_window))
    elif past_window:
        parts.append("past the window (could not have run as replayed): " + _names(past_window))
    if reserve_only:
        parts.append("past the window minus the output reserve: " + _names(reserve_only))
    if parts:
        second_text = "⚠️ " + parts[0][0].upper() + parts[0][1:] + "".join("; " + p for p in parts[1:]) + "."
    else:
        second_text = "No policy passes the window minus the output reserve."
    return "**Verdict:** " + text[0].upper() + text[1:] + " " + second_text


MAIN_COLUMNS = ("policy", "cost (cached)", "vs {base}", "hit rate", "peak context", "over window − reserve")


def main_table(result: RunResult, names: Sequence[str]) -> list[str]:
    """The at-a-glance table: six columns, fits a PR comment (860 px); the rest is in `comparison`."""
    base = result.runs[0].totals
    from ctxsim.loss.verdict import weighs_loss

    loss = weighs_loss(result)
    # Six columns at most (860 px): with the loss metered, its misses take the hit rate's place (in the details).
    keep = [i for i, h in enumerate(MAIN_COLUMNS) if not (loss and h == "hit rate")]
    head = [MAIN_COLUMNS[i].format(base=code(names[0])) for i in keep] + (["recall misses"] if loss else [])
    lines = ["| " + " | ".join(head) + " |", "|:--|" + "--:|" * (len(head) - 1)]
    starred_i = starred_run(result)
    for i, run in enumerate(result.runs):
        t = run.totals
        window = window_of(run, result)
        share = f" ({t.peak_context_tokens / window * 100:.0f}%)" if window else ""
        flag = "⚠️ " if overflows(run, result) is not None else ""
        first = t.first_over.get("window-reserve")
        name = code(names[i]) + (" ★" if len(result.runs) > 1 and i == starred_i else "")
        cells = [name, money(t.cost_usd), "—" if i == 0 else signed_pct(change(base.cost_usd, t.cost_usd)),
                 pct(t.hit_rate), f"{flag}{t.peak_context_tokens:,}{share}",
                 "never" if first is None else f"request {first:,}"]
        cells = [cells[i] for i in keep]
        if loss:
            cells.append(f"{run.loss.recall_misses:,}" + (" (bound)" if run.policy["name"] == "oracle" else ""))
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    rec = recorded_of_result(result)
    if rec is not None:
        none = none_run(result)
        hit = pct(rec.cache_read_tokens / rec.input_tokens) if rec.cache_read_tokens is not None and rec.input_tokens \
            else "—"
        peak = f"{rec.peak_context_tokens:,}" if rec.peak_context_tokens is not None else "—"
        label = (f"recorded (billed, {rec.estimated_outputs:,} placeholder outputs estimated: "
                 f"{money(rec.logged_cost_usd)} as logged)" if rec.estimated_outputs and rec.logged_cost_usd is not None
                 else "recorded (billed)")
        cells = [label, money(rec.cost_usd),
                 signed_pct(change(none.totals.cost_usd, rec.cost_usd)) if none is not None else "—", hit, peak, "—"]
        cells = [cells[i] for i in keep]
        lines.append("| " + " | ".join(cell(c) for c in cells + (["—"] if loss else [])) + " |")
    star = "★ the cheapest with re-fetches within the recall-miss allowance" if loss else "★ the cheapest"
    notes = [star] if len(result.runs) > 1 and starred_i is not None else []
    if any(overflows(run, result) is not None for run in result.runs):
        notes.append("⚠️ passes the window: that session could not have happened as replayed")
    if notes:
        lines += ["", "<sub>" + " · ".join(notes) + "</sub>"]
    return lines


def comparison(result: RunResult, names: Sequence[str]) -> list[str]:
    """Every column, for the folded details under the main table."""
    base = result.runs[0].totals
    head = ["policy", "cost (cached)", f"vs {code(names[0])}", "no cache", "hit rate", "peak context",
            "p95 context", "first over window − reserve", "events", "rewrites"]
    lines = ["| " + " | ".join(head) + " |", "|:--|" + "--:|" * (len(head) - 1)]
    cheapest = min(r.totals.cost_usd for r in result.runs)
    for i, run in enumerate(result.runs):
        t = run.totals
        window = window_of(run, result)
        share = f" ({t.peak_context_tokens / window * 100:.0f}%)" if window else ""
        first = t.first_over.get("window-reserve")
        name = code(names[i]) + (" **cheapest**" if len(result.runs) > 1 and t.cost_usd == cheapest else "")
        cells = [
            name, money(t.cost_usd), "—" if i == 0 else signed_pct(change(base.cost_usd, t.cost_usd)),
            money(t.cost_nocache_usd), pct(t.hit_rate), f"{t.peak_context_tokens:,}{share}",
            f"{t.p95_context_tokens:,}", "never" if first is None else f"request {first:,}", f"{t.events:,}",
            f"{t.rewrites:,}",
        ]
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    rec = recorded_of_result(result)
    if rec is not None:  # what was really billed
        none = none_run(result)
        cost = money(rec.cost_usd) + (f" (trace's own {money(rec.own_cost_usd)}{' ⚠️' if rec.own_cost_flagged else ''})"
                                      if rec.own_cost_usd is not None else "")
        hit = pct(rec.cache_read_tokens / rec.input_tokens) if rec.cache_read_tokens is not None and rec.input_tokens \
            else "—"
        peak = f"{rec.peak_context_tokens:,}" if rec.peak_context_tokens is not None else "—"
        cells = ["recorded", cost, signed_pct(change(none.totals.cost_usd, rec.cost_usd)) if none is not None else "—",
                 "—", hit, peak, "—", "—", "—", "—"]
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    return lines



def recorded_lines(result: RunResult) -> list[str]:
    """Said above the table: `none` off the recorded bill by more than 3 %, its predicted error beside it (fitted
    on the first part of each session: analysis/predict), the trace's own cost beside ctxsim's."""
    from ctxsim.replay.recorded import own_cost_line, warning
    from ctxsim.reports._terminal import predicted_line

    out = []
    pair = recorded_gap(result)
    if pair is not None:
        line = warning(*pair)
        if line:
            out.append("⚠️ " + cell(line[0].upper() + line[1:]))
        said = predicted_line(result.manifest)
        if said:
            out.append(cell(said[0].upper() + said[1:]))
    rec = recorded_of_result(result)
    own = own_cost_line(rec) if rec is not None else None
    if own:
        out.append(("⚠️ " if rec is not None and rec.own_cost_flagged else "") + cell(own[0].upper() + own[1:]))
    return [line for text in out for line in (text, "")]


def assumptions(result: RunResult) -> str:
    m = result.manifest
    trace = m.get("trace") or {}
    exact = " (exact)" if m.get("tokenizer_exact") else " (estimate)"
    tokenizer_text = f"tokenizer {m.get('tokenizer', '?')}{exact}"
    used = sorted({str((r.policy.get("setup") or {}).get("tokenizer") or m.get("tokenizer")) for r in result.runs})
    if len(used) > 1:
        tokenizer_text = "tokenizers " + ", ".join(used) + " (per policy; chars4 and bytes4 are estimates)"
    latest = m.get("price_data_latest_change")
    prices = f"prices {m.get('prices', '?')}" + (f" (price changes known through {latest})" if latest else "")
    digest = str(trace.get("digest", ""))
    requests = max((r.totals.requests for r in result.runs), default=0)
    parts = [
        m.get("assumption") or "open-loop replay: the agent's recorded outputs are replayed unchanged",
        tokenizer_text,
        prices,
        f"output reserve {int(m.get('output_reserve') or 0):,}",
        priced_as(result),
        f"trace {trace.get('name', '?')} {code(digest[:19])} ({requests:,} requests)",
        f"ctxsim {m.get('ctxsim_version', '?')}",
    ]
    from ctxsim.replay.recorded import calibration_line, calibration_notes

    calibration = calibration_line(m)
    if calibration:
        parts.append(calibration.removesuffix("; --no-calibrate replays raw"))
        parts.extend(calibration_notes(m))
    if m.get("seed") is not None:
        parts.append(f"seed {m['seed']}")
    from ctxsim.reports._loss import notes as loss_notes

    parts.extend(loss_notes(result))
    notes = [str(n) for n in m.get("price_notes") or []]
    line = "<sub>**Assumptions:** " + " · ".join(cell(p) for p in parts) + "</sub>"
    if notes:
        line += "\n\n<sub>" + " ".join(cell(n) for n in notes) + "</sub>"
    return line


def _cache_text(cache: dict) -> str:
    params = cache.get("params") or {}
    ttl = f" (ttl {params['ttl']})" if params.get("ttl") else ""
    return f"cache model {cache.get('name', '?')}{ttl}"


def priced_as(result: RunResult) -> str:
    """`provider model, window N, cache model X`, or each setup with its policy count when runs differ."""
    m = result.manifest
    setups: dict[str, int] = {}
    for run in result.runs:
        setup = run.policy.get("setup") or {}
        cache = _cache_text(setup.get("cache_model") or m.get("cache_model") or {})
        key = (f"{setup.get('provider') or m.get('provider', '?')} {setup.get('model') or m.get('model', '?')}, "
               f"window {window_of(run, result):,}, {cache}")
        setups[key] = setups.get(key, 0) + 1
    if len(setups) <= 1:
        return next(iter(setups), f"{m.get('provider', '?')} {m.get('model', '?')}")
    return "priced as " + "; ".join(f"{k} ({n} polic{'y' if n == 1 else 'ies'})" for k, n in setups.items())


def chart_section(links: Sequence[tuple[str, str]], base_url: str | None) -> list[str]:
    """Images under `base_url` (where CI uploaded the bundle); without one, no images (a PR comment cannot
    show relative ones) and a note on how to get them."""
    if not links or base_url is None:
        files = ", ".join(code(p) for _, p in links)
        where = (f"Charts ({files}, each also as SVG) are in the bundle folder beside this file and not shown: "
                 if links else "Charts are not included: ")
        return ["", (f"<sub>📊 {where}a PR comment cannot show relative images. Upload the bundle (a CI artefact, "
                     "a branch) and pass `--image-base-url URL` to `ctxsim compare -o DIR` or "
                     "`ctxsim report run.json -o DIR/` to embed them.</sub>")]
    url = base_url.rstrip("/") + "/"
    primary = [(t, p) for t, p in links if p.rsplit("/", 1)[-1] in PRIMARY_CHARTS]
    other = [(t, p) for t, p in links if (t, p) not in primary]
    out = ["", "#### Charts", ""]
    out += [line for t, p in primary for line in (f"![{t}]({url}{p})", "")][:-1]  # one image a paragraph
    if other:
        out += ["", "<details><summary>More charts: " + ", ".join(t for t, _ in other) + "</summary>", ""]
        out += [line for t, p in other for line in (f"![{t}]({url}{p})", "")][:-1]
        out += ["", "</details>"]
    out += ["", "<sub>Each chart also as SVG beside the PNG.</sub>"]
    return out


def events_section(result: RunResult, names: Sequence[str], per_policy: int | None) -> tuple[list[str], int]:
    total = sum(len(r.events) for r in result.runs)
    if not total:
        return ["", "<details><summary>Events: none</summary>", "",
                "No policy edited the context and no request passed the window.", "", "</details>"], 0
    kinds = Counter(e.kind for r in result.runs for e in r.events)
    summary = ", ".join(f"{k} {n:,}" for k, n in sorted(kinds.items()))
    out = ["", f"<details><summary>Events: {total:,} ({summary})</summary>", ""]
    cut = 0
    if per_policy != 0:
        out += ["| policy | request | event | what | context before | after | freed |",
                "|:--|--:|:--|:--|--:|--:|--:|"]
    for name, run in zip(names, result.runs, strict=True):
        shown = run.events if per_policy is None else run.events[:per_policy]
        cut += len(run.events) - len(shown)
        for e in shown:
            sized = e.kind not in ("threshold", "overflow")
            out.append("| " + " | ".join(cell(c) for c in [
                code(name), f"{e.request:,}", e.kind, e.note,
                f"{e.tokens_before:,}" if sized else "—", f"{e.tokens_after:,}" if sized else "—",
                f"{e.freed_tokens:,}" if sized else "—"]) + " |")
    if cut:
        out += ["", f"_{cut:,} more events not shown (see events.csv)._"]
    out += ["", "</details>"]
    return out, cut


def worst_section(result: RunResult, names: Sequence[str], per_policy: int) -> list[str]:
    if per_policy == 0:
        return []
    out = ["", f"<details><summary>Worst requests: the {per_policy} most expensive per policy</summary>", "",
           "| policy | request | context | cache read | cache write | uncached | output | cost | no cache |",
           "|:--|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for name, run in zip(names, result.runs, strict=True):
        worst = sorted(request_rows(run), key=lambda r: (-r.cost_usd, r.request))[:per_policy]
        for r in sorted(worst, key=lambda r: r.request):
            out.append("| " + " | ".join(cell(c) for c in [
                code(name), f"{r.request:,}", tokens(r.context_tokens), tokens(r.cache_read_tokens),
                tokens(r.cache_write_tokens + r.cache_write_1h_tokens), tokens(r.uncached_tokens),
                tokens(r.output_tokens), money(r.cost_usd), money(r.cost_nocache_usd)]) + " |")
    out += ["", "</details>"]
    return out


def params_section(result: RunResult, names: Sequence[str], width: int | None) -> list[str]:
    out = ["", "<details><summary>Policies and their effective parameters</summary>", ""]
    for name, run in zip(names, result.runs, strict=True):
        params = run.policy.get("params") or {}
        shown = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in sorted(params.items()))
        if width is not None and len(shown) > width:
            shown = shown[: width - 1] + "…"
        out.append(f"- {code(name)} ({run.policy['name']}): " + (code(shown) if shown else "no parameters"))
    out += ["", "</details>"]
    return out


def build(result: RunResult, options: Options, per_policy: int | None, worst: int, width: int | None,
          ) -> tuple[str, int]:
    names = labels(result)
    trace = (result.manifest.get("trace") or {}).get("name", "?")
    n = len(result.runs)
    lines = [f"### ctxsim: {cell(trace)}, {n} polic{'y' if n == 1 else 'ies'}", "", verdict(result, names), ""]
    lines += recorded_lines(result)  # `none` off the recorded bill: said before any figure is read
    lines += main_table(result, names)
    lines += chart_section(options.charts, options.image_base_url)
    lines += ["", "<details><summary>Every column: no-cache cost, p95 context, events, rewrites</summary>", ""]
    lines += comparison(result, names)
    lines += ["", "</details>"]
    from ctxsim.reports._loss import markdown_section

    lines += markdown_section(result, names, code, cell, 10 if per_policy is None else 3)
    lines += ["", assumptions(result)]
    events, cut = events_section(result, names, per_policy)
    lines += events
    lines += worst_section(result, names, worst)
    lines += params_section(result, names, width)
    return "\n".join(lines) + "\n", cut


def render(result: RunResult, fmt: str, options: Options) -> str:
    budget = options.limit - 400  # room for the note on what was cut
    text, cut = build(result, options, None, WORST, None)
    if len(text) < options.limit:
        return text
    for width in (None, 300):
        for worst in WORST_STEPS:
            for per_policy in EVENT_STEPS:
                text, cut = build(result, options, per_policy, worst, width)
                if len(text) <= budget:
                    return text + "\n" + cut_note(result, cut, worst, width, options.limit)
    # Still too long (a great many policies): keep the head, drop the rest.
    head = text[:budget].rsplit("\n", 1)[0]
    return head + "\n\n" + cut_note(result, cut, 0, width, options.limit, truncated=True)


def cut_note(result: RunResult, cut_events: int, worst: int, width: int | None, limit: int,
             truncated: bool = False) -> str:
    parts = []
    if cut_events:
        parts.append(f"{cut_events:,} of {sum(len(r.events) for r in result.runs):,} events")
    if worst < WORST:
        parts.append(f"worst requests beyond {worst} per policy")
    if width is not None:
        parts.append(f"policy parameters beyond {width} characters")
    if truncated:
        parts.append("everything after this point")
    what = ", ".join(parts) or "nothing"
    return (f"<sub>✂️ Cut to fit a PR comment ({limit:,} characters): {what} not shown; "
            f"the full data is in run.json, events.csv and requests.csv.</sub>\n")


def bundle(result: RunResult) -> list[tuple[str, str, Options]]:
    return [("report.md", "md", Options())]


register(ReportInfo("markdown", ("md",), "Markdown report for a PR comment", render, __name__, bundle=bundle))
