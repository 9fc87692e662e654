//! A source pass before minijinja compiles a template, for the parts of Salt's Jinja that
//! minijinja has no syntax for:
//!
//! * Salt's tags `{% import_yaml "f" as x %}` (`import_json`, `import_text`) and
//!   `{% load_yaml as x %}...{% endload %}` (`load_json`, `load_text`) become `set`s;
//! * `with context` / `without context` on `import`/`from`/`include` are dropped
//!   (minijinja imports always see the context);
//! * dict and list literals in expressions are wrapped in `__mut(...)` so that
//!   `{% do d.update(..) %}` / `{% do l.append(..) %}` change them in place, as in Jinja2.

/// Rewrite a template source.
pub fn rewrite(src: &str) -> Result<String, String> {
    let mut out = String::with_capacity(src.len() + src.len() / 8);
    let mut rest = src;
    let mut loads: Vec<(String, String)> = Vec::new();
    let mut counter = 0usize;
    while let Some(start) = rest.find('{') {
        let after = &rest[start..];
        let kind = after.as_bytes().get(1).copied();
        if !matches!(kind, Some(b'{' | b'%' | b'#')) {
            out.push_str(&rest[..start + 1]);
            rest = &rest[start + 1..];
            continue;
        }
        out.push_str(&rest[..start]);
        if kind == Some(b'#') {
            let end = after.find("#}").ok_or("unterminated comment")? + 2;
            out.push_str(&after[..end]);
            rest = &after[end..];
            continue;
        }
        let close = if kind == Some(b'{') { "}}" } else { "%}" };
        let end = find_close(&after[2..], close).ok_or("unterminated tag or expression")? + 2;
        let inner = &after[2..end];
        rest = &after[end + 2..];
        let (lead, body, trail) = split_ws_control(inner);
        let open = &after[..2];
        if kind == Some(b'{') {
            out.push_str(&format!(
                "{open}{lead}{}{trail}{close}",
                wrap_literals(&percent(body))
            ));
            continue;
        }
        let words: Vec<&str> = body.split_whitespace().collect();
        let tag = |t: String| format!("{open}{lead} {t} {trail}{close}");
        match words.first().copied() {
            Some("raw") => {
                out.push_str(&after[..end + 2]);
                let stop = rest.find("endraw").ok_or("unterminated raw block")?;
                let stop = rest[stop..]
                    .find("%}")
                    .map(|i| stop + i + 2)
                    .ok_or("bad endraw")?;
                out.push_str(&rest[..stop]);
                rest = &rest[stop..];
            }
            Some(w @ ("import_yaml" | "import_json" | "import_text")) => {
                let expr = body.trim_start()[w.len()..].trim();
                let (path, name) = expr
                    .rsplit_once(" as ")
                    .ok_or_else(|| format!("{w} needs `as NAME`"))?;
                let f = format!("__{w}");
                out.push_str(&tag(format!(
                    "set {} = {f}({})",
                    name.trim(),
                    wrap_literals(path.trim())
                )));
            }
            Some(w @ ("load_yaml" | "load_json" | "load_text")) => {
                let name = match words.as_slice() {
                    [_, "as", name] => (*name).to_owned(),
                    _ => return Err(format!("{w} needs `as NAME`")),
                };
                counter += 1;
                let tmp = format!("__load{counter}");
                out.push_str(&tag(format!("set {tmp}")));
                loads.push((w.to_owned(), format!("{name}={tmp}")));
            }
            Some("endload") => {
                let (w, names) = loads.pop().ok_or("endload without load_*")?;
                let (name, tmp) = names.split_once('=').unwrap_or_default();
                let filter = w.replace("load_", "__load_");
                out.push_str(&format!("{open}{lead} endset {trail}{close}"));
                out.push_str(&format!("{{% set {name} = {tmp}|{filter} %}}"));
            }
            Some("import" | "from" | "include") => {
                let cleaned = body
                    .replace(" without context", "")
                    .replace(" with context", "");
                out.push_str(&format!("{open}{lead}{cleaned}{trail}{close}"));
            }
            _ => out.push_str(&format!(
                "{open}{lead}{}{trail}{close}",
                wrap_literals(&percent(body))
            )),
        }
    }
    out.push_str(rest);
    if !loads.is_empty() {
        return Err("load_* block without endload".to_owned());
    }
    Ok(out)
}

fn split_ws_control(inner: &str) -> (&str, &str, &str) {
    let lead = if inner.starts_with(['-', '+']) {
        &inner[..1]
    } else {
        ""
    };
    let body = &inner[lead.len()..];
    let trail = if body.ends_with(['-', '+']) {
        &body[body.len() - 1..]
    } else {
        ""
    };
    (lead, &body[..body.len() - trail.len()], trail)
}

/// Position of `close` at bracket depth 0, outside strings.
fn find_close(s: &str, close: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' => depth -= 1,
            b'}' if depth > 0 => depth -= 1,
            _ if depth <= 0 && s[i..].starts_with(close) => return Some(i),
            _ if depth <= 0 && b[i] == b'-' && s[i + 1..].starts_with(close) => return Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The end of the string literal starting at `i` (its closing quote + 1).
fn string_end(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() && b[j] != q {
        if b[j] == b'\\' {
            j += 1;
        }
        j += 1;
    }
    (j + 1).min(b.len())
}

/// The end of the bracketed group opening at `i`.
fn group_end(b: &[u8], i: usize) -> usize {
    let mut depth = 0i32;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'"' | b'\'' => {
                j = string_end(b, j);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    b.len()
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The operand of `%` starting at `i`: a primary (name, number, string, bracketed group)
/// with its attribute, subscript and call suffixes and `|filter(...)` chain, which Jinja
/// binds tighter than `%`.
fn operand_end(b: &[u8], mut i: usize) -> usize {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'"' | b'\'') => i = string_end(b, i),
        Some(b'(' | b'[' | b'{') => i = group_end(b, i),
        Some(&c) if is_word(c) => {
            while i < b.len() && (is_word(b[i]) || b[i] == b'.') {
                i += 1;
            }
        }
        _ => return i,
    }
    loop {
        match b.get(i) {
            Some(b'.') => {
                i += 1;
                while i < b.len() && is_word(b[i]) {
                    i += 1;
                }
            }
            Some(b'[' | b'(') => i = group_end(b, i),
            _ => {
                let mut j = i;
                while b.get(j) == Some(&b' ') {
                    j += 1;
                }
                if b.get(j) == Some(&b'|') && b.get(j + 1) != Some(&b'|') {
                    j += 1;
                    while b.get(j) == Some(&b' ') {
                        j += 1;
                    }
                    while j < b.len() && is_word(b[j]) {
                        j += 1;
                    }
                    i = j;
                } else {
                    return i;
                }
            }
        }
    }
}

/// Whether a parenthesised group's inside has a comma at depth 0 (a tuple).
fn tuple_items(inner: &str) -> Option<String> {
    let b = inner.as_bytes();
    let mut i = 0;
    let mut comma = false;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                i = string_end(b, i);
                continue;
            }
            b'(' | b'[' | b'{' => {
                i = group_end(b, i);
                continue;
            }
            b',' => comma = true,
            _ => {}
        }
        i += 1;
    }
    comma.then(|| inner.trim().trim_end_matches(',').to_owned())
}

/// Python's `%` formatting on a string literal: `'fmt' % x` becomes `__pyfmt('fmt', x)` and
/// `'fmt' % (a, b)` becomes `__pyfmt_t('fmt', a, b)` (minijinja's `%` is only the modulo).
fn percent(expr: &str) -> String {
    let b = expr.as_bytes();
    let mut out = String::with_capacity(expr.len() + 16);
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if !matches!(b[i], b'"' | b'\'') {
            i += 1;
            continue;
        }
        let start = i;
        let end = string_end(b, i);
        let mut j = end;
        while b.get(j) == Some(&b' ') {
            j += 1;
        }
        if b.get(j) != Some(&b'%') {
            i = end;
            continue;
        }
        let mut k = j + 1;
        while b.get(k) == Some(&b' ') {
            k += 1;
        }
        let stop = operand_end(b, k);
        if stop == k {
            i = end;
            continue;
        }
        let lit = &expr[start..end];
        let operand = &expr[k..stop];
        out.push_str(&expr[copied..start]);
        let tuple = (b[k] == b'(' && group_end(b, k) == stop)
            .then(|| tuple_items(&operand[1..operand.len() - 1]))
            .flatten();
        match tuple {
            Some(items) => out.push_str(&format!("__pyfmt_t({lit}, {items})")),
            None => out.push_str(&format!("__pyfmt({lit}, {})", percent(operand))),
        }
        copied = stop;
        i = stop;
    }
    out.push_str(&expr[copied..]);
    out
}

/// Wrap dict and list literals of an expression in `__mut(...)`.
fn wrap_literals(expr: &str) -> String {
    let mut out = String::with_capacity(expr.len() + 16);
    let mut stack: Vec<bool> = Vec::new();
    let mut prev: Option<char> = None;
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' => {
                out.push(c);
                while let Some(d) = chars.next() {
                    out.push(d);
                    if d == '\\' {
                        if let Some(e) = chars.next() {
                            out.push(e);
                        }
                    } else if d == c {
                        break;
                    }
                }
                prev = Some(c);
                continue;
            }
            '{' | '[' => {
                let literal = c == '{'
                    || match prev {
                        None => true,
                        Some(p) => "=(,:[{+-*/%<>!|~".contains(p),
                    };
                if literal {
                    out.push_str("__mut(");
                }
                stack.push(literal);
                out.push(c);
            }
            '(' => {
                stack.push(false);
                out.push(c);
            }
            '}' | ']' | ')' => {
                out.push(c);
                if stack.pop() == Some(true) {
                    out.push(')');
                }
            }
            _ => out.push(c),
        }
        if !c.is_whitespace() {
            prev = Some(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_wrapped_subscripts_not() {
        assert_eq!(wrap_literals(" set x = {} "), " set x = __mut({}) ");
        assert_eq!(wrap_literals(" set x = [] "), " set x = __mut([]) ");
        assert_eq!(
            wrap_literals(" do d.update({'a': [1, 2]}) "),
            " do d.update(__mut({'a': __mut([1, 2])})) "
        );
        assert_eq!(wrap_literals(" x['a'][0] "), " x['a'][0] ");
        assert_eq!(wrap_literals(" f('[{') "), " f('[{') ");
    }

    #[test]
    fn percent_rewritten() {
        assert_eq!(
            percent(" '/home/%s' % name "),
            " __pyfmt('/home/%s', name) "
        );
        assert_eq!(
            percent(" x ~ \"%s-%d\" % (a.b, c|length) ~ y "),
            " x ~ __pyfmt_t(\"%s-%d\", a.b, c|length) ~ y "
        );
        assert_eq!(percent(" '%s' % (x,) "), " __pyfmt_t('%s', x) ");
        assert_eq!(
            percent(" '%(a)s' % d['k'] | f "),
            " __pyfmt('%(a)s', d['k'] | f) "
        );
        assert_eq!(percent(" '%s' % (x) "), " __pyfmt('%s', (x)) ");
        assert_eq!(percent(" loop.index % 2 "), " loop.index % 2 ");
        assert_eq!(percent(" d['a'] % 2 "), " d['a'] % 2 ");
    }

    #[test]
    fn salt_tags() {
        let r = rewrite("{% import_yaml 'a/b.yaml' as d %}{{ d }}").unwrap();
        assert_eq!(r, "{% set d = __import_yaml('a/b.yaml') %}{{ d }}");
        let r = rewrite("{%- load_yaml as x %}a: 1{% endload -%}").unwrap();
        assert_eq!(
            r,
            "{%- set __load1 %}a: 1{% endset -%}{% set x = __load1|__load_yaml %}"
        );
        let r = rewrite("{% from 'map.jinja' import m with context %}").unwrap();
        assert_eq!(r, "{% from 'map.jinja' import m %}");
        let r = rewrite("{{ {'a': {'b': 1}} }}").unwrap();
        assert_eq!(r, "{{ __mut({'a': __mut({'b': 1})}) }}");
        assert_eq!(
            rewrite("a { b } {% raw %}{{ x }}{% endraw %}").unwrap(),
            "a { b } {% raw %}{{ x }}{% endraw %}"
        );
    }
}
