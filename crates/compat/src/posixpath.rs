//! Python's `posixpath` on text (`os.path` on Linux) and Salt's `salt.utils.path.join`:
//! the lexical path arithmetic Salt's config code does, to the byte (`//` kept at the start
//! as POSIX allows, `..` folded without looking at the disk).

/// `os.path.normpath`: `.` and empty components dropped, `..` folded (kept at the start of
/// a relative path), exactly two leading slashes kept, three or more made one; `""` is `.`.
pub fn normpath(path: &str) -> String {
    if path.is_empty() {
        return ".".to_owned();
    }
    let slashes = if path.starts_with("//") && !path.starts_with("///") {
        2
    } else if path.starts_with('/') {
        1
    } else {
        0
    };
    let mut comps: Vec<&str> = Vec::new();
    for comp in path.split('/') {
        match comp {
            "" | "." => {}
            ".." if slashes == 0 && (comps.is_empty() || comps.last() == Some(&"..")) => {
                comps.push(comp);
            }
            ".." => {
                comps.pop();
            }
            c => comps.push(c),
        }
    }
    let out = format!("{}{}", "/".repeat(slashes), comps.join("/"));
    if out.is_empty() { ".".to_owned() } else { out }
}

/// `os.path.join(first, *rest)`: an absolute part restarts the path.
pub fn join(first: &str, rest: &[&str]) -> String {
    let mut path = first.to_owned();
    for part in rest {
        if part.starts_with('/') {
            path = (*part).to_owned();
        } else if path.is_empty() || path.ends_with('/') {
            path.push_str(part);
        } else {
            path.push('/');
            path.push_str(part);
        }
    }
    path
}

/// `os.path.isabs`.
pub fn isabs(path: &str) -> bool {
    path.starts_with('/')
}

/// `os.path.basename`: what follows the last `/`.
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `os.path.dirname`: up to the last `/`, trailing slashes dropped unless it is all slashes.
pub fn dirname(path: &str) -> &str {
    match path.rfind('/') {
        None => "",
        Some(i) => {
            let head = &path[..=i];
            let trimmed = head.trim_end_matches('/');
            if trimmed.is_empty() { head } else { trimmed }
        }
    }
}

/// `os.path.abspath`, the working directory given: `normpath(join(cwd, path))`.
pub fn abspath(path: &str, cwd: &str) -> String {
    if isabs(path) {
        normpath(path)
    } else {
        normpath(&join(cwd, &[path]))
    }
}

/// Salt's `salt.utils.path.join(*parts)`: every part normalised, the leading slashes of all
/// but the first stripped (so `join("/r", "/etc")` is `/r/etc`), joined and normalised.
pub fn salt_join(first: &str, rest: &[&str]) -> String {
    let root = normpath(first);
    let stripped: Vec<String> = rest
        .iter()
        .map(|p| normpath(p).trim_start_matches('/').to_owned())
        .collect();
    let refs: Vec<&str> = stripped.iter().map(String::as_str).collect();
    normpath(&join(&root, &refs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normpath_like_python() {
        // Expected values from CPython 3.11's posixpath.normpath.
        for (i, o) in [
            ("", "."),
            ("/", "/"),
            ("//", "//"),
            ("///", "/"),
            ("//a//b/", "//a/b"),
            ("///a/./b/..", "/a"),
            ("a/../..", ".."),
            ("../a/../../b", "../../b"),
            ("/../a", "/a"),
            ("a/b/../../..", ".."),
            ("./", "."),
        ] {
            assert_eq!(normpath(i), o, "{i:?}");
        }
    }

    #[test]
    fn join_and_salt_join() {
        assert_eq!(join("/a", &["b", "/c", "d"]), "/c/d");
        assert_eq!(join("", &["x"]), "x");
        assert_eq!(join("a/", &["b"]), "a/b");
        assert_eq!(join("a", &[""]), "a/");
        assert_eq!(salt_join("/r", &["/etc/salt"]), "/r/etc/salt");
        assert_eq!(salt_join("/r/", &["//x/../y"]), "/r/y");
        assert_eq!(salt_join("/r", &[""]), "/r");
        assert_eq!(salt_join("/", &["/var/log"]), "/var/log");
        assert_eq!(basename("/usr/bin/salt-master"), "salt-master");
        assert_eq!(basename("x/"), "");
        assert_eq!(dirname("/a/b//c"), "/a/b");
        assert_eq!(dirname("//x"), "//");
        assert_eq!(dirname("x"), "");
        assert_eq!(abspath("a/../b", "/cwd"), "/cwd/b");
        assert_eq!(abspath("/x/", "/cwd"), "/x");
    }
}
