//! Salt's `highstate` outputter (`salt/output/highstate.py`), byte for byte: one block per
//! state (or a terse line), then `Summary for <minion>` with the counts and the run time.
//!
//! Options are Salt's: `state_output` (`full`, `terse`, `mixed`, `changes`, and their `_id`
//! forms; `filter` is not implemented and prints as `full`), `state_verbose`,
//! `state_output_profile`, `state_output_pct`, `state_tabular` (`False`/`True`), colours.
//! `state_compress_ids` is not implemented (Salt's default, off).

use serde_json::{Map, Value};

use salt_compat::{py_json_repr, py_json_str};

use crate::{NO_COLOUR, Palette, SALT_COLOURS, nested};

/// Salt's options for the outputter (defaults: Salt's).
#[derive(Clone, Debug)]
pub struct Options {
    /// `state_output`: `full`, `terse`, `mixed`, `changes` (optionally `_id`).
    pub state_output: String,
    /// `state_verbose`: show successful states without changes too.
    pub state_verbose: bool,
    /// `state_output_profile`: `Started`/`Duration` lines and the total run time.
    pub state_output_profile: bool,
    /// `state_output_pct`: success and failure percentages.
    pub state_output_pct: bool,
    /// `state_tabular` (`True` only; a format string is not implemented).
    pub state_tabular: bool,
    /// Terminal colours.
    pub colour: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            state_output: "full".into(),
            state_verbose: true,
            state_output_profile: true,
            state_output_pct: false,
            state_tabular: false,
            colour: false,
        }
    }
}

/// Salt's colour table (`salt.utils.color.get_colors`), or empty strings.
struct Colours {
    green: &'static str,
    cyan: &'static str,
    red: &'static str,
    light_red: &'static str,
    light_yellow: &'static str,
    end: &'static str,
    nested: Palette,
}

impl Colours {
    fn new(on: bool) -> Self {
        if on {
            Self {
                green: "\x1b[0;32m",
                cyan: "\x1b[0;36m",
                red: "\x1b[0;31m",
                light_red: "\x1b[0;1;31m",
                light_yellow: "\x1b[0;1;33m",
                end: "\x1b[0;0m",
                nested: SALT_COLOURS,
            }
        } else {
            Self {
                green: "",
                cyan: "",
                red: "",
                light_red: "",
                light_yellow: "",
                end: "",
                nested: NO_COLOUR,
            }
        }
    }
}

/// Render `{minion: {state_key: result}}` as Salt's highstate outputter. A return that is not
/// a state result map (a string, a list of compile errors) prints as Salt prints it.
pub fn render(data: &Value, opts: &Options) -> String {
    let data = match data {
        Value::Object(m) if m.contains_key("return") => &m["return"],
        other => other,
    };
    // Orchestrate's `{"data": {...}, "outputter": ..., "retcode": ...}`: only `data` shows.
    let data = match data {
        Value::Object(m) if m.contains_key("data") => &m["data"],
        other => other,
    };
    // An orchestration's `retcode` beside the one `<id>_master` is not a host.
    let stripped;
    let data = match data {
        Value::Object(m)
            if m.contains_key("retcode")
                && m.keys().filter(|k| k.ends_with("_master")).count() == 1 =>
        {
            let mut m = m.clone();
            m.remove("retcode");
            stripped = Value::Object(m);
            &stripped
        }
        other => other,
    };
    match data {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Null => "None".into(),
        Value::Object(hosts) => hosts
            .iter()
            .map(|(host, hostdata)| host_block(host, hostdata, opts))
            .collect::<Vec<_>>()
            .join("\n"),
        other => py_json_repr(other),
    }
}

/// Result counters: True, False, None, warnings.
#[derive(Default)]
struct Counts {
    ok: Option<u64>,
    failed: Option<u64>,
    none: Option<u64>,
    warnings: Option<u64>,
}

impl Counts {
    fn bump(&mut self, result: &Value) {
        let slot = match result {
            Value::Bool(true) => &mut self.ok,
            Value::Bool(false) => &mut self.failed,
            _ => &mut self.none,
        };
        *slot.get_or_insert(0) += 1;
    }

    fn values(&self) -> impl Iterator<Item = u64> {
        [self.ok, self.failed, self.none, self.warnings]
            .into_iter()
            .flatten()
    }
}

fn host_block(host: &str, data: &Value, opts: &Options) -> String {
    host_changed(host, data, opts).0
}

/// Salt's `_format_host`: the block, and whether it shows changes.
fn host_changed(host: &str, data: &Value, opts: &Options) -> (String, bool) {
    let c = Colours::new(opts.colour);
    let mut hcolor = c.green;
    let mut lines: Vec<String> = Vec::new();
    let mut changed = false;
    match data {
        Value::Number(n) => {
            lines.push(format!("{}    {n}{}", c.green, c.end));
            hcolor = c.cyan;
            changed = true;
        }
        Value::String(s) => {
            for l in s.lines() {
                lines.push(format!("{}    {l}{}", c.green, c.end));
            }
            hcolor = c.cyan;
            changed = true;
        }
        Value::Array(errs) => {
            hcolor = c.light_red;
            lines.push(format!("    {hcolor}Data failed to compile:{}", c.end));
            for e in errs {
                let e = py_json_str(e).replace('\x1b', "?");
                lines.push(format!("{hcolor}----------\n    {e}{}", c.end));
            }
        }
        Value::Object(states) => {
            changed = states_block(host, states, opts, &c, &mut hcolor, &mut lines) > 0;
        }
        _ => {}
    }
    lines.insert(0, format!("{hcolor}{host}:{}", c.end));
    (lines.join("\n"), changed)
}

fn run_num(v: &Value) -> f64 {
    v.get("__run_num__").and_then(Value::as_f64).unwrap_or(0.0)
}

fn duration_ms(v: &Value) -> f64 {
    match v.get("duration") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
        Some(Value::String(s)) => s.trim_end_matches(" ms").trim().parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// The state blocks and the summary.
fn states_block(
    host: &str,
    states: &Map<String, Value>,
    opts: &Options,
    c: &Colours,
    hcolor: &mut &'static str,
    lines: &mut Vec<String>,
) -> u64 {
    let mut counts = Counts::default();
    let mut durations: Vec<f64> = Vec::new();
    let mut pdurations: Vec<f64> = Vec::new();
    let mut nchanges = 0u64;
    let mut order: Vec<(&String, &Value)> = states
        .iter()
        .filter(|(_, v)| v.get("result").is_some())
        .collect();
    order.sort_by(|a, b| run_num(a.1).total_cmp(&run_num(b.1)));
    let mode = opts.state_output.to_lowercase();
    for (tname, ret) in order {
        let result = ret.get("result").cloned().unwrap_or(Value::Null);
        counts.bump(&result);
        if ret.get("__parallel__").is_some() {
            pdurations.push(duration_ms(ret));
        } else {
            durations.push(duration_ms(ret));
        }
        let (schanged, ctext) = format_changes(ret.get("changes"), c, opts);
        if schanged {
            nchanges += 1;
        }
        let ok = result == Value::Bool(true);
        if !opts.state_verbose && ok && !schanged {
            continue;
        }
        let mut tcolor = if schanged { c.cyan } else { c.green };
        match result {
            Value::Bool(false) => {
                *hcolor = c.red;
                tcolor = c.red;
            }
            Value::Null => {
                *hcolor = c.light_yellow;
                tcolor = c.light_yellow;
            }
            _ => {}
        }
        let mut comps: Vec<String> = tname.split("_|-").map(str::to_owned).collect();
        while comps.len() < 4 {
            comps.push(String::new());
        }
        if mode.ends_with("_id") {
            comps[2] = comps[1].clone();
        }
        let terse = mode.starts_with("terse")
            || (mode.starts_with("mixed") && result != Value::Bool(false))
            || (mode.starts_with("changes") && ok && !schanged);
        if terse {
            lines.push(terse_line(tcolor, &comps, ret, opts, c));
            continue;
        }
        lines.push(format!("{tcolor}----------{}", c.end));
        lines.push(format!("    {tcolor}      ID: {}{}", comps[1], c.end));
        lines.push(format!(
            "    {tcolor}Function: {}.{}{}",
            comps[0], comps[3], c.end
        ));
        if comps[1] != comps[2] {
            lines.push(format!("    {tcolor}    Name: {}{}", comps[2], c.end));
        }
        lines.push(format!(
            "    {tcolor}  Result: {}{}",
            py_json_str(&result),
            c.end
        ));
        lines.push(format!("    {tcolor} Comment: {}{}", comment(ret), c.end));
        if opts.state_output_profile && ret.get("start_time").is_some() {
            let start = ret.get("start_time").map(py_json_str).unwrap_or_default();
            let dur = match ret.get("duration") {
                None => String::new(),
                Some(d) => format!("{} ms", py_json_str(d)),
            };
            lines.push(format!("    {tcolor} Started: {start}{}", c.end));
            lines.push(format!("    {tcolor}Duration: {dur}{}", c.end));
        }
        lines.push(format!("{tcolor}     Changes:   {ctext}{}", c.end));
        if let Some(Value::Array(w)) = ret.get("warnings") {
            *counts.warnings.get_or_insert(0) += 1;
            let text: Vec<String> = w.iter().map(py_json_str).collect();
            lines.push(format!(
                "   {} Warnings: {}{}",
                c.light_red,
                wrap(&text.join("\n"), 80, 14).trim_start(),
                c.end
            ));
        }
    }
    let times = (durations.as_slice(), pdurations.as_slice());
    summary(host, &counts, nchanges, times, opts, c, lines);
    nchanges
}

/// Salt's `comment` handling: `str()` of a non-string, stripped, continuation lines indented.
fn comment(ret: &Value) -> String {
    let raw = match ret.get("comment") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => py_json_repr(other),
        None => String::new(),
    };
    let mut text = raw.trim().replace('\n', &format!("\n{}", " ".repeat(14)));
    match ret.get("data") {
        Some(Value::Array(items)) => {
            for i in items {
                text = format!("{text} {}", py_json_str(i));
            }
        }
        Some(Value::Object(m)) => {
            for (k, v) in m {
                text = format!("{text}\n\t\t{k}: {}", py_json_str(v));
            }
        }
        Some(other) => text = format!("{text} {}", py_json_str(other)),
        None => {}
    }
    text
}

/// `(changed, text)`: the changes as the nested outputter prints them, indented 14.
fn format_changes(changes: Option<&Value>, c: &Colours, opts: &Options) -> (bool, String) {
    let empty = match changes {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Bool(b)) => !b,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
    };
    if empty {
        return (false, String::new());
    }
    let Some(ch @ Value::Object(_)) = changes else {
        let shown = match changes {
            Some(Value::String(s)) => s.clone(),
            Some(other) => py_json_repr(other),
            None => String::new(),
        };
        return (true, format!("Invalid Changes data: {shown}"));
    };
    // `salt.state` in an orchestration: each minion's run as its own highstate block.
    if let (Some(Value::Object(hosts)), Some("highstate")) =
        (ch.get("ret"), ch.get("out").and_then(Value::as_str))
    {
        let (mut text, mut changed) = (String::new(), false);
        for (host, hostdata) in hosts {
            let (block, c) = host_changed(host, hostdata, opts);
            changed |= c;
            text.push('\n');
            text.push_str(
                &block
                    .lines()
                    .map(|l| format!("{}{l}", " ".repeat(14)))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
        return (changed, text);
    }
    let mut out = Vec::new();
    nested(ch, 14, "", &mut out, &c.nested);
    (true, format!("\n{}", out.join("\n").trim_end()))
}

fn terse_line(tcolor: &str, comps: &[String], ret: &Value, opts: &Options, c: &Colours) -> String {
    let changed = ret
        .get("changes")
        .is_some_and(|ch| format_changes(Some(ch), c, opts).0);
    let result = match ret.get("result") {
        Some(Value::Bool(false)) => "Failed",
        Some(Value::Null) | None => "Differs",
        _ if changed => "Changed",
        _ => "Clean",
    };
    let warnings = match ret.get("warnings") {
        Some(Value::Array(w)) => format!(
            "{}Warnings:\n{}{}",
            c.light_red,
            w.iter().map(py_json_str).collect::<Vec<_>>().join("\n"),
            c.end
        ),
        _ => String::new(),
    };
    let profile = opts.state_output_profile && ret.get("start_time").is_some();
    let start = ret.get("start_time").map(py_json_str).unwrap_or_default();
    let dur = ret.get("duration").map(py_json_str).unwrap_or_default();
    let last = comps.last().map(String::as_str).unwrap_or_default();
    if opts.state_tabular {
        let w = if warnings.is_empty() {
            String::new()
        } else {
            format!("{warnings}\n")
        };
        let prof = if profile {
            format!("{start} [{dur:>7} ms] ")
        } else {
            String::new()
        };
        format!(
            "{w}{tcolor}{prof}{:>10}.{:<10} {result:7}   Name: {}{}",
            comps[0], last, comps[2], c.end
        )
    } else {
        let prof = if profile {
            format!(" - Started: {start} - Duration: {dur} ms")
        } else {
            String::new()
        };
        format!(
            "{warnings} {tcolor} Name: {} - Function: {}.{last} - Result: {result}{prof}{}",
            comps[2], comps[0], c.end
        )
    }
}

fn summary(
    host: &str,
    counts: &Counts,
    nchanges: u64,
    (durations, pdurations): (&[f64], &[f64]),
    opts: &Options,
    c: &Colours,
    lines: &mut Vec<String>,
) {
    let count_max = counts
        .values()
        .map(|v| v.to_string().len())
        .max()
        .unwrap_or(0);
    let width = "Succeeded".len() + count_max + 2;
    let counted =
        |label: &str, n: String| format!("{label}: {n:>w$}", w = width - (label.len() + 2));
    lines.push(format!(
        "{}\nSummary for {host}\n{}{}",
        c.cyan,
        "-".repeat(width),
        c.end
    ));
    let mut stats = Vec::new();
    if let Some(n) = counts.none.filter(|n| *n > 0) {
        stats.push(format!("{}unchanged={n}{}", c.light_yellow, c.end));
    }
    if nchanges > 0 {
        stats.push(format!("{}changed={nchanges}{}", c.green, c.end));
    }
    let stats = if stats.is_empty() {
        String::new()
    } else {
        format!(" ({})", stats.join(", "))
    };
    let succeeded = counts.ok.unwrap_or(0) + counts.none.unwrap_or(0);
    lines.push(format!(
        "{}{}{}{stats}",
        c.green,
        counted("Succeeded", succeeded.to_string()),
        c.end
    ));
    let failed = counts.failed.unwrap_or(0);
    let fcolor = if failed > 0 { c.red } else { c.cyan };
    lines.push(format!(
        "{fcolor}{}{}",
        counted("Failed", failed.to_string()),
        c.end
    ));
    let total = counts.values().sum::<u64>() - counts.warnings.unwrap_or(0);
    if opts.state_output_pct && total > 0 {
        let pct = |n: u64| py_round2(n as f64 / total as f64 * 100.0);
        lines.push(format!(
            "{}{}{}",
            c.green,
            counted("Success %", pct(succeeded)),
            c.end
        ));
        lines.push(format!(
            "{fcolor}{}{}",
            counted("Failure %", pct(failed)),
            c.end
        ));
    }
    if let Some(w) = counts.warnings.filter(|w| *w > 0) {
        lines.push(format!(
            "{}{}{}",
            c.light_red,
            counted("Warnings", w.to_string()),
            c.end
        ));
    }
    lines.push(format!(
        "{}{}\nTotal states run: {total:>w$}{}",
        c.cyan,
        "-".repeat(width),
        c.end,
        w = width.saturating_sub(7)
    ));
    if opts.state_output_profile {
        let mut sum: f64 = durations.iter().sum();
        if let Some(max) = pdurations.iter().copied().reduce(f64::max) {
            sum += max;
        }
        let (sum, unit) = if sum > 999.0 {
            (sum / 1000.0, "s")
        } else {
            (sum, "ms")
        };
        lines.push(format!(
            "{}Total run time: {:>w$} {unit}{}",
            c.cyan,
            format!("{sum:.3}"),
            c.end,
            w = width.saturating_sub(5)
        ));
    }
}

/// Python's `round(x, 2)` printed with `str()`.
fn py_round2(x: f64) -> String {
    let r = (x * 100.0).round() / 100.0;
    py_json_str(&serde_json::json!(r))
}

/// `textwrap.TextWrapper(width, initial_indent=pad, subsequent_indent=pad).fill(text)`.
fn wrap(text: &str, width: usize, pad: usize) -> String {
    let indent = " ".repeat(pad);
    let mut lines = Vec::new();
    let mut cur = indent.clone();
    for word in text.split_whitespace() {
        if cur.len() > pad && cur.len() + 1 + word.len() > width {
            lines.push(std::mem::replace(&mut cur, indent.clone()));
        }
        if cur.len() > pad {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    lines.push(cur);
    lines.join("\n")
}
