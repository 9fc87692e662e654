//! The `[returned/expected] waiting for returns...` line of `salt`.

use std::io::Write as _;

/// The progress line on a terminal, `[returned/expected] waiting for returns...` on stderr,
/// rewritten in place (`\r`) as returns arrive and erased before the final output; nothing
/// when stderr is not a terminal (pipes, files, tests).
pub struct Progress {
    on: bool,
    expected: Option<usize>,
    returned: usize,
    shown: bool,
}

impl Progress {
    pub fn new(on: bool) -> Self {
        Progress {
            on,
            expected: None,
            returned: 0,
            shown: false,
        }
    }

    pub fn expect(&mut self, n: Option<usize>) {
        self.expected = n;
        self.draw();
    }

    pub fn returned(&mut self) {
        self.returned += 1;
        self.draw();
    }

    fn line(&self) -> String {
        match self.expected {
            Some(n) => format!("[{}/{n}] waiting for returns...", self.returned),
            None => format!("[{}/?] waiting for returns...", self.returned),
        }
    }

    fn draw(&mut self) {
        if self.on {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{}", self.line());
            let _ = err.flush();
            self.shown = true;
        }
    }

    /// Erase the line so returns print on a clean line.
    pub fn clear(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.shown = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_counts_returns_and_stays_quiet_off_a_terminal() {
        let mut p = Progress::new(false);
        p.expect(Some(3));
        p.returned();
        assert_eq!(p.line(), "[1/3] waiting for returns...");
        assert!(!p.shown, "not drawn when off");
        p.expect(None);
        assert_eq!(p.line(), "[1/?] waiting for returns...");
    }
}
