//! What the `states_*` tests share: comparing a salt-call run of Python Salt with ours.

use std::path::Path;

/// A salt-call's `--out json` or `--out highstate` text with what differs between two runs
/// blanked: the throwaway root (`ROOT`), `start_time`, `duration`, `pid` and the highstate
/// summary's times, and the line after a `pid:` key.
pub fn normalize(text: &str, root: &Path) -> String {
    let root = root.display().to_string();
    let mut after_pid = false;
    text.replace(&root, "ROOT")
        .lines()
        .map(|l| {
            let t = l.trim_start();
            let pid_line = after_pid;
            after_pid = t == "pid:";
            if pid_line {
                return "PID".to_owned();
            }
            for key in [
                "\"start_time\": ",
                "\"duration\": ",
                "\"pid\": ",
                "Started: ",
                "Duration: ",
                "Total run time: ",
            ] {
                if t.starts_with(key) {
                    return format!("{}{key}X", &l[..l.len() - t.len()]);
                }
            }
            l.to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
