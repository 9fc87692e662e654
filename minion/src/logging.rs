//! Salt's log look: `[DEBUG   ] message` on the terminal and
//! `2026-11-22 02:50:41,123 [salt.minion      :0   ][INFO    ][1234] message` in the log
//! file. `tracing` has no CRITICAL level: an ERROR event with the field `critical = true`
//! prints as `CRITICAL`.

use std::fmt;
use std::fs::OpenOptions;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use salt_config::LogLevel;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

/// Map a Salt log level to a tracing filter.
pub fn filter(level: LogLevel) -> LevelFilter {
    match level {
        LogLevel::All | LogLevel::Garbage | LogLevel::Trace => LevelFilter::TRACE,
        LogLevel::Debug | LogLevel::Profile => LevelFilter::DEBUG,
        LogLevel::Info => LevelFilter::INFO,
        LogLevel::Warning => LevelFilter::WARN,
        LogLevel::Error | LogLevel::Critical => LevelFilter::ERROR,
        LogLevel::Quiet => LevelFilter::OFF,
        #[allow(unreachable_patterns)]
        _ => LevelFilter::WARN,
    }
}

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

/// The two Salt layouts.
#[derive(Clone, Copy)]
enum Style {
    Console,
    File,
}

struct SaltFormat(Style);

/// `YYYY-MM-DD HH:MM:SS,mmm` (UTC).
fn timestamp() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs();
    let ms = d.subsec_millis();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let mon = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(mon <= 2);
    format!(
        "{year:04}-{mon:02}-{day:02} {:02}:{:02}:{:02},{ms:03}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

impl<S, N> FormatEvent<S, N> for SaltFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut f = Fields::default();
        event.record(&mut f);
        let level = level_name(event.metadata().level(), f.critical);
        match self.0 {
            Style::Console => writeln!(writer, "[{level:<8}] {}{}", f.message, f.extra),
            Style::File => {
                let target = event.metadata().target();
                let name = if target.starts_with("salt_minion_core::failover") {
                    "salt.minion"
                } else if target.starts_with("salt_minion_core::driver") {
                    "salt.crypt"
                } else if target.starts_with("salt_minion_core::modules") {
                    "salt.loaded.int.module"
                } else {
                    "salt.minion"
                };
                writeln!(
                    writer,
                    "{} [{name:<17}:{:<4}][{level:<8}][{}] {}{}",
                    timestamp(),
                    event.metadata().line().unwrap_or(0),
                    std::process::id(),
                    f.message,
                    f.extra
                )
            }
        }
    }
}

/// Install the console logger (stderr) and, when `log_file` is given, the file logger.
pub fn init(console: LevelFilter, log_file: Option<(&Path, LevelFilter)>) -> std::io::Result<()> {
    let console_layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .event_format(SaltFormat(Style::Console))
        .with_filter(console)
        .boxed();
    let mut layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> = vec![console_layer];
    if let Some((path, level)) = log_file {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let file = Arc::new(Mutex::new(file));
        let layer = tracing_subscriber::fmt::layer()
            .with_writer(move || FileWriter(file.clone()))
            .event_format(SaltFormat(Style::File))
            .with_filter(level)
            .boxed();
        layers.push(layer);
    }
    tracing_subscriber::registry().with(layers).init();
    Ok(())
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
