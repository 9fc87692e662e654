//! Salt-like log formats: `[INFO    ] message` on the console, a timestamped line in the
//! log file.

use std::fmt;

use salt_config::LogLevel;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

/// Salt's level name for a tracing level.
fn salt_level(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "ERROR",
        Level::WARN => "WARNING",
        Level::INFO => "INFO",
        Level::DEBUG => "DEBUG",
        Level::TRACE => "TRACE",
    }
}

/// Tracing filter for a Salt level.
pub fn filter(level: LogLevel) -> LevelFilter {
    match level.as_str() {
        "all" | "garbage" | "trace" => LevelFilter::TRACE,
        "debug" | "profile" => LevelFilter::DEBUG,
        "info" => LevelFilter::INFO,
        "warning" => LevelFilter::WARN,
        "error" | "critical" => LevelFilter::ERROR,
        _ => LevelFilter::OFF,
    }
}

/// `[LEVEL   ] message`.
struct Console;

impl<S, N> FormatEvent<S, N> for Console
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(w, "[{:<8}] ", salt_level(event.metadata().level()))?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// `2026-11-22 02:44:02,123 [target           ][INFO    ][pid] message`.
struct File;

impl<S, N> FormatEvent<S, N> for File
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let now = chrono::Local::now();
        write!(
            w,
            "{} [{:<17}][{:<8}][{}] ",
            now.format("%Y-%m-%d %H:%M:%S,%3f"),
            event.metadata().target(),
            salt_level(event.metadata().level()),
            std::process::id()
        )?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// Install the console logger at `console` and, if given, the file logger at `file_level`.
/// A log file that cannot be opened is reported on the console and skipped.
pub fn init(console: LevelFilter, file: Option<(&std::path::Path, LevelFilter)>) {
    let console_layer = tracing_subscriber::fmt::layer()
        .event_format(Console)
        .with_writer(std::io::stderr)
        .with_filter(console);
    let mut file_err = None;
    let file_layer = file.and_then(|(path, level)| {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            Ok(f) => Some(
                tracing_subscriber::fmt::layer()
                    .event_format(File)
                    .with_ansi(false)
                    .with_writer(std::sync::Mutex::new(f))
                    .with_filter(level),
            ),
            Err(e) => {
                file_err = Some(format!("cannot open log file {}: {e}", path.display()));
                None
            }
        }
    });
    Registry::default()
        .with(console_layer)
        .with(file_layer)
        .init();
    if let Some(e) = file_err {
        tracing::warn!("{e}");
    }
}
