//! `--out highstate` as Salt's `highstate` outputter prints it without colours
//! (`state_output: full`, `state_verbose: True`, `state_output_profile: True`), with the
//! `nested` outputter (`nested_indent=14`) for `changes`.

use rmpv::Value;

use crate::{get, py_str};

fn py_scalar(v: &Value) -> String {
    match v {
        Value::Nil => "None".into(),
        Value::Boolean(true) => "True".into(),
        Value::Boolean(false) => "False".into(),
        Value::F64(f) => crate::output::py_float(*f),
        Value::F32(f) => crate::output::py_float(f64::from(*f)),
        other => py_str(other),
    }
}

/// Salt's `NestDisplay.display` without colours.
fn nested(v: &Value, indent: usize, prefix: &str, out: &mut Vec<String>) {
    let pad = " ".repeat(indent);
    match v {
        Value::String(s) => {
            for (i, line) in s.as_str().unwrap_or_default().lines().enumerate() {
                let p = if i == 0 {
                    prefix.to_owned()
                } else {
                    " ".repeat(prefix.len())
                };
                out.push(format!("{pad}{p}{line}"));
            }
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Array(_) | Value::Map(_) => {
                        out.push(format!("{pad}|_"));
                        let p = if matches!(item, Value::Map(_)) {
                            ""
                        } else {
                            "- "
                        };
                        nested(item, indent + 2, p, out);
                    }
                    _ => nested(item, indent, "- ", out),
                }
            }
        }
        Value::Map(entries) => {
            if indent > 0 {
                out.push(format!("{pad}----------"));
            }
            let mut sorted: Vec<&(Value, Value)> = entries.iter().collect();
            sorted.sort_by_key(|(k, _)| py_str(k));
            for (k, val) in sorted {
                out.push(format!("{pad}{prefix}{}:", py_str(k)));
                nested(val, indent + 4, "", out);
            }
        }
        other => out.push(format!("{pad}{prefix}{}", py_scalar(other))),
    }
}

fn result_key(v: Option<&Value>) -> u8 {
    match v {
        Some(Value::Boolean(true)) => 0,
        Some(Value::Boolean(false)) => 1,
        _ => 2,
    }
}

fn format_host(host: &str, data: &Value) -> String {
    let mut hstrs: Vec<String> = Vec::new();
    let mut counts = [0usize; 3]; // True, False, None
    let mut seen = [false; 3];
    let mut nchanges = 0usize;
    let mut total_ms = 0f64;
    match data {
        Value::Array(errs) => {
            hstrs.push("    Data failed to compile:".into());
            for e in errs {
                hstrs.push(format!("----------\n    {}", py_str(e)));
            }
        }
        Value::Map(entries) => {
            let mut states: Vec<&(Value, Value)> = entries
                .iter()
                .filter(|(_, r)| get(r, "result").is_some())
                .collect();
            states.sort_by_key(|(_, r)| get(r, "__run_num__").and_then(Value::as_i64).unwrap_or(0));
            for (tag, ret) in states {
                let rk = result_key(get(ret, "result"));
                counts[rk as usize] += 1;
                seen[rk as usize] = true;
                if let Some(d) = get(ret, "duration").and_then(Value::as_f64) {
                    total_ms += d;
                }
                let changes = get(ret, "changes").cloned().unwrap_or(Value::Nil);
                let changed = crate::truthy(&changes);
                let ctext = if !changed {
                    String::new()
                } else if matches!(changes, Value::Map(_)) {
                    let mut lines = Vec::new();
                    nested(&changes, 14, "", &mut lines);
                    format!("\n{}", lines.join("\n"))
                } else {
                    format!("Invalid Changes data: {}", py_str(&changes))
                };
                if changed {
                    nchanges += 1;
                }
                let tag = py_str(tag);
                let comps: Vec<&str> = tag.split("_|-").collect();
                let c = |i: usize| comps.get(i).copied().unwrap_or("");
                let comment = py_str(get(ret, "comment").unwrap_or(&Value::Nil));
                let comment = comment
                    .trim()
                    .replace('\n', &format!("\n{}", " ".repeat(14)));
                hstrs.push("----------".into());
                hstrs.push(format!("          ID: {}", c(1)));
                hstrs.push(format!("    Function: {}.{}", c(0), c(3)));
                if c(1) != c(2) {
                    hstrs.push(format!("        Name: {}", c(2)));
                }
                hstrs.push(format!(
                    "      Result: {}",
                    py_scalar(get(ret, "result").unwrap_or(&Value::Nil))
                ));
                hstrs.push(format!("     Comment: {comment}"));
                if let Some(st) = get(ret, "start_time") {
                    hstrs.push(format!("     Started: {}", py_str(st)));
                    let d = get(ret, "duration")
                        .map(py_scalar)
                        .map(|d| format!("{d} ms"))
                        .unwrap_or_default();
                    hstrs.push(format!("    Duration: {d}"));
                }
                hstrs.push(format!("     Changes:   {ctext}"));
            }
            let count_vals: Vec<usize> = (0..3).filter(|i| seen[*i]).map(|i| counts[i]).collect();
            let count_max = count_vals
                .iter()
                .map(|c| c.to_string().len())
                .max()
                .unwrap_or(0);
            let line_max = "Succeeded".len() + count_max + 2;
            let counted = |label: &str, n: String| {
                format!("{label}: {n:>w$}", w = line_max - (label.len() + 2))
            };
            hstrs.push(format!("\nSummary for {host}\n{}", "-".repeat(line_max)));
            let mut stats = Vec::new();
            if counts[2] > 0 {
                stats.push(format!("unchanged={}", counts[2]));
            }
            if nchanges > 0 {
                stats.push(format!("changed={nchanges}"));
            }
            let stats = if stats.is_empty() {
                String::new()
            } else {
                format!(" ({})", stats.join(", "))
            };
            hstrs.push(counted("Succeeded", (counts[0] + counts[2]).to_string()) + &stats);
            hstrs.push(counted("Failed", counts[1].to_string()));
            let total = counts.iter().sum::<usize>();
            hstrs.push(format!(
                "{}\nTotal states run: {total:>w$}",
                "-".repeat(line_max),
                w = line_max - 7
            ));
            let (dur, unit) = if total_ms > 999.0 {
                (total_ms / 1000.0, "s")
            } else {
                (total_ms, "ms")
            };
            hstrs.push(format!(
                "Total run time: {:>w$} {unit}",
                format!("{dur:.3}"),
                w = line_max - 5
            ));
        }
        other => {
            for line in py_str(other).lines() {
                hstrs.push(format!("    {line}"));
            }
        }
    }
    hstrs.insert(0, format!("{host}:"));
    hstrs.join("\n")
}

/// `{host: return}` through the highstate outputter.
pub fn highstate(data: &Value) -> String {
    match data {
        Value::Map(hosts) => hosts
            .iter()
            .map(|(h, d)| format_host(&py_str(h), d))
            .collect::<Vec<_>>()
            .join("\n"),
        other => py_str(other),
    }
}
