//! The daemons' logs, one scheme for `salt-master` and `salt-minion`, laid out as Salt's:
//!
//! * console (stderr): `[WARNING ] message`; colours only when stderr is a terminal (never
//!   escape codes in journald or a pipe);
//! * log file: `2026-11-22 02:50:41,123 [salt_minion_core::driver:290 ][INFO    ][1234]
//!   message` — Salt's layout (`%(asctime)s [%(name)-17s:%(lineno)-4d][%(levelname)-8s]
//!   [%(process)d]`), with the honest Rust module path and line where Salt puts its Python
//!   logger name, local time as Salt's.
//!
//! `tracing` has no CRITICAL level: an ERROR event with the field `critical = true` prints
//! as `CRITICAL`.

use std::fmt;
use std::io::IsTerminal as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

/// The level filter for a Salt level name (`-l`, `log_level`): all, garbage, trace, debug,
/// profile, info, warning, error, critical, quiet. `None` for anything else.
pub fn level_filter(name: &str) -> Option<LevelFilter> {
    Some(match name.to_ascii_lowercase().as_str() {
        "all" | "garbage" | "trace" => LevelFilter::TRACE,
        "debug" | "profile" => LevelFilter::DEBUG,
        "info" => LevelFilter::INFO,
        "warning" | "warn" => LevelFilter::WARN,
        "error" | "critical" => LevelFilter::ERROR,
        "quiet" => LevelFilter::OFF,
        _ => return None,
    })
}

/// The accepted `-l` names, for error messages.
pub const LEVELS: &str =
    "all, garbage, trace, debug, profile, info, warning, error, critical, quiet";

#[derive(Default)]
struct Fields {
    message: String,
    critical: bool,
    extra: String,
}

impl Visit for Fields {
    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == "critical" {
            self.critical = value;
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.extra.push_str(&format!(" {}={value}", field.name()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.message.push_str(&format!("{value:?}"));
        } else {
            self.extra.push_str(&format!(" {}={value:?}", field.name()));
        }
    }
}

fn level_name(level: &Level, critical: bool) -> &'static str {
    match *level {
        Level::ERROR if critical => "CRITICAL",
        Level::ERROR => "ERROR",
        Level::WARN => "WARNING",
        Level::INFO => "INFO",
        Level::DEBUG => "DEBUG",
        Level::TRACE => "TRACE",
    }
}

/// Salt's console colours for the level (salt/_logging: red errors, yellow warnings...).
fn level_colour(level: &str) -> &'static str {
    match level {
        "CRITICAL" | "ERROR" => "\x1b[1;31m",
        "WARNING" => "\x1b[1;33m",
        "INFO" => "\x1b[1;32m",
        _ => "\x1b[1;36m",
    }
}

enum Style {
    /// With colours or not.
    Console(bool),
    File,
}

struct SaltFormat(Style);

impl<S, N> FormatEvent<S, N> for SaltFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut f = Fields::default();
        event.record(&mut f);
        let level = level_name(event.metadata().level(), f.critical);
        match self.0 {
            Style::Console(false) => writeln!(w, "[{level:<8}] {}{}", f.message, f.extra),
            Style::Console(true) => writeln!(
                w,
                "[{}{level:<8}\x1b[0m] {}{}",
                level_colour(level),
                f.message,
                f.extra
            ),
            Style::File => writeln!(
                w,
                "{} [{:<17}][{level:<8}][{}] {}{}",
                chrono::Local::now().format("%Y-%m-%d %H:%M:%S,%3f"),
                format!(
                    "{}:{:<4}",
                    event.metadata().target(),
                    event.metadata().line().unwrap_or(0)
                ),
                std::process::id(),
                f.message,
                f.extra
            ),
        }
    }
}

/// Install the console logger (stderr) at `console` and, when given, the file logger.
/// Returns why the log file could not be opened (the console logger is installed anyway;
/// the caller decides whether that is fatal).
pub fn init(console: LevelFilter, file: Option<(&Path, LevelFilter)>) -> Result<(), String> {
    let colour = std::io::stderr().is_terminal();
    let console_layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .event_format(SaltFormat(Style::Console(colour)))
        .with_filter(console)
        .boxed();
    let mut layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> = vec![console_layer];
    let mut file_err = Ok(());
    if let Some((path, level)) = file {
        let opened = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
            });
        match opened {
            Ok(f) => {
                let f = Arc::new(Mutex::new(f));
                layers.push(
                    tracing_subscriber::fmt::layer()
                        .with_writer(move || FileWriter(f.clone()))
                        .with_ansi(false)
                        .event_format(SaltFormat(Style::File))
                        .with_filter(level)
                        .boxed(),
                );
            }
            Err(e) => file_err = Err(format!("cannot open the log file {}: {e}", path.display())),
        }
    }
    tracing_subscriber::registry().with(layers).init();
    file_err
}

struct FileWriter(Arc<Mutex<std::fs::File>>);

impl std::io::Write for FileWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.0.lock() {
            Ok(mut f) => f.write(buf),
            Err(_) => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.0.lock() {
            Ok(mut f) => f.flush(),
            Err(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salt_level_names() {
        assert_eq!(level_filter("WARNING"), Some(LevelFilter::WARN));
        assert_eq!(level_filter("garbage"), Some(LevelFilter::TRACE));
        assert_eq!(level_filter("quiet"), Some(LevelFilter::OFF));
        assert_eq!(level_filter("loud"), None);
    }
}
