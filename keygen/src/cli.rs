//! Command-line options of `salt-key`, as Salt 3007's `SaltKeyOptionParser` defines them
//! (same long and short names, same defaults, optparse-style unique-prefix long options).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;

/// `salt-key` options. Field names follow Salt's option `dest` names.
#[derive(Debug, Parser, Default)]
#[command(
    name = "salt-key",
    about = "salt-key is used to manage Salt authentication keys",
    override_usage = "salt-key [options]",
    disable_version_flag = true,
    infer_long_args = true,
    args_override_self = true
)]
pub struct Args {
    /// Pass in an alternative configuration directory. Default: '/etc/salt'.
    #[arg(short = 'c', long = "config-dir", value_name = "CONFIG_DIR")]
    pub config_dir: Option<PathBuf>,

    /// List the public keys. The args 'pre', 'un', and 'unaccepted' will list
    /// unaccepted/unsigned keys. 'acc' or 'accepted' will list accepted/signed keys.
    /// 'rej' or 'rejected' will list rejected keys. 'den' or 'denied' will list denied
    /// keys. Finally, 'all' will list all keys.
    #[arg(short = 'l', long = "list", value_name = "ARG")]
    pub list: Option<String>,

    /// List all public keys. Deprecated: use "--list all".
    #[arg(short = 'L', long = "list-all")]
    pub list_all: bool,

    /// Accept the specified public key (use --include-rejected and --include-denied to
    /// match rejected and denied keys in addition to pending keys). Globs are supported.
    #[arg(short = 'a', long = "accept", value_name = "ACCEPT")]
    pub accept: Option<String>,

    /// Accept all pending keys.
    #[arg(short = 'A', long = "accept-all")]
    pub accept_all: bool,

    /// Reject the specified public key. Use --include-accepted and --include-denied to
    /// match accepted and denied keys in addition to pending keys. Globs are supported.
    #[arg(short = 'r', long = "reject", value_name = "REJECT")]
    pub reject: Option<String>,

    /// Reject all pending keys.
    #[arg(short = 'R', long = "reject-all")]
    pub reject_all: bool,

    /// Include rejected/accepted keys when accepting/rejecting. Deprecated: use
    /// "--include-rejected" and "--include-accepted".
    #[arg(long = "include-all")]
    pub include_all: bool,

    /// Include accepted keys when rejecting.
    #[arg(long = "include-accepted")]
    pub include_accepted: bool,

    /// Include rejected keys when accepting.
    #[arg(long = "include-rejected")]
    pub include_rejected: bool,

    /// Include denied keys when accepting/rejecting.
    #[arg(long = "include-denied")]
    pub include_denied: bool,

    /// Print the specified public key.
    #[arg(short = 'p', long = "print", value_name = "PRINT")]
    pub print: Option<String>,

    /// Print all public keys.
    #[arg(short = 'P', long = "print-all")]
    pub print_all: bool,

    /// Delete the specified key. Globs are supported.
    #[arg(short = 'd', long = "delete", value_name = "DELETE")]
    pub delete: Option<String>,

    /// Delete all keys.
    #[arg(short = 'D', long = "delete-all")]
    pub delete_all: bool,

    /// Print the specified key's fingerprint.
    #[arg(short = 'f', long = "finger", value_name = "FINGER")]
    pub finger: Option<String>,

    /// Print all keys' fingerprints.
    #[arg(short = 'F', long = "finger-all")]
    pub finger_all: bool,

    /// Suppress output.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,

    /// Answer "Yes" to all questions presented. Default: False.
    #[arg(short = 'y', long = "yes")]
    pub yes: bool,

    /// Setting this to False prevents the master from refreshing the key session when
    /// keys are deleted or rejected, this lowers the security of the key
    /// deletion/rejection operation. Default: True.
    #[arg(long = "rotate-aes-key", value_name = "ROTATE_AES_KEY")]
    pub rotate_aes_key: Option<String>,

    /// Setting this to True prevents the master from deleting the minion cache when keys
    /// are deleted, this may have security implications if compromised minions auth with
    /// a previous deleted minion ID. Default: False.
    #[arg(long = "preserve-minions", value_name = "PRESERVE_MINIONS")]
    pub preserve_minions: Option<String>,

    /// Set a name to generate a keypair for use with salt.
    #[arg(long = "gen-keys", value_name = "GEN_KEYS")]
    pub gen_keys: Option<String>,

    /// Set the directory to save the generated keypair, only works with "--gen-keys"
    /// option. Default: '.'.
    #[arg(
        long = "gen-keys-dir",
        value_name = "GEN_KEYS_DIR",
        default_value = "."
    )]
    pub gen_keys_dir: PathBuf,

    /// Set the keysize for the generated key, only works with the "--gen-keys" option,
    /// the key size must be 2048 or higher. Default: 2048.
    #[arg(
        long = "keysize",
        value_name = "KEYSIZE",
        allow_negative_numbers = true
    )]
    pub keysize: Option<i64>,

    /// Create a signature file of the masters public-key named master_pubkey_signature.
    /// This requires a new signing-key-pair which can be auto-created with the
    /// --auto-create parameter.
    #[arg(long = "gen-signature")]
    pub gen_signature: bool,

    /// The private-key file to create a signature with.
    #[arg(long = "priv", value_name = "PRIV")]
    pub priv_path: Option<PathBuf>,

    /// The path where the signature file should be written.
    #[arg(long = "signature-path", value_name = "SIGNATURE_PATH")]
    pub signature_path: Option<PathBuf>,

    /// The public-key file to create a signature for.
    #[arg(long = "pub", value_name = "PUB")]
    pub pub_path: Option<PathBuf>,

    /// Auto-create a signing key-pair if it does not yet exist.
    #[arg(long = "auto-create")]
    pub auto_create: bool,

    /// Print the output from the 'salt-key' command using the specified outputter.
    #[arg(long = "out", alias = "output", value_name = "OUTPUT")]
    pub output: Option<String>,

    /// Print the output indented by the provided value in spaces. Negative values
    /// disable indentation. Only applicable in outputters that support indentation.
    #[arg(
        long = "out-indent",
        alias = "output-indent",
        value_name = "OUTPUT_INDENT",
        allow_negative_numbers = true
    )]
    pub output_indent: Option<i64>,

    /// Write the output to the specified file.
    #[arg(long = "out-file", alias = "output-file", value_name = "OUTPUT_FILE")]
    pub output_file: Option<PathBuf>,

    /// Append the output to the specified file.
    #[arg(long = "out-file-append", alias = "output-file-append")]
    pub output_file_append: bool,

    /// Disable all colored output.
    #[arg(long = "no-color", alias = "no-colour")]
    pub no_color: bool,

    /// Force colored output.
    #[arg(long = "force-color", alias = "force-colour")]
    pub force_color: bool,

    /// Console logging log level. One of 'all', 'garbage', 'trace', 'debug', 'profile',
    /// 'info', 'warning', 'error', 'critical', 'quiet'. Default: 'warning'.
    #[arg(long = "log-level", value_name = "LOG_LEVEL")]
    pub log_level: Option<String>,

    /// Log file path. Accepted for compatibility; salt-key logs to the console only.
    #[arg(long = "log-file", value_name = "KEY_LOGFILE")]
    pub log_file: Option<PathBuf>,

    /// Logfile logging log level. Accepted for compatibility.
    #[arg(long = "log-file-level", value_name = "LOG_LEVEL_LOGFILE")]
    pub log_file_level: Option<String>,

    /// Run salt-key as a user. Accepted for compatibility (no effect).
    #[arg(short = 'u', long = "user", value_name = "USER")]
    pub user: Option<String>,

    /// Raise any original exception rather than exiting gracefully. Accepted, no effect.
    #[arg(long = "hard-crash")]
    pub hard_crash: bool,

    /// Show program's version number and exit.
    #[arg(short = 'V', long = "version")]
    pub version: bool,

    /// Extra positional arguments (Salt accepts and ignores them, except with -D).
    #[arg(hide = true)]
    pub args: Vec<String>,
}

/// A parse result: options, or what to print and the exit code.
#[derive(Debug)]
pub enum Parsed {
    /// Go on with these options.
    Run(Box<Args>),
    /// Print to stdout and exit 0 (help).
    Help(String),
    /// A usage error: print to stderr and exit 64 (Salt's `EX_USAGE`).
    Usage(String),
}

/// Salt's `OptionParser.error`: usage line, blank line, `salt-key: error: MSG`.
pub fn usage_error(msg: &str) -> String {
    format!("Usage: salt-key [options]\n\nsalt-key: error: {msg}\n")
}

/// Parse `argv` (including the program name) and apply Salt's post-parse checks
/// (`process_list`, `process_keysize`, output option exclusivity).
pub fn parse(argv: Vec<OsString>) -> Parsed {
    let last = argv
        .last()
        .filter(|_| argv.len() > 1)
        .map(|s| s.to_string_lossy().into_owned());
    let args = match Args::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            use clap::error::ErrorKind as K;
            return match e.kind() {
                K::DisplayHelp | K::DisplayHelpOnMissingArgumentOrSubcommand => {
                    Parsed::Help(e.render().to_string())
                }
                _ => Parsed::Usage(usage_error(&clap_msg(&e, last.as_deref()))),
            };
        }
    };
    if let Some(list) = args.list.as_deref().filter(|l| {
        !l.is_empty()
            && !["acc", "pre", "un", "rej", "den", "all"]
                .iter()
                .any(|p| l.starts_with(p))
    }) {
        return Parsed::Usage(usage_error(&format!(
            "'{list}' is not a valid argument to '--list'"
        )));
    }
    if let Some(size) = args.keysize {
        if size < 2048 {
            return Parsed::Usage(usage_error("The minimum value for keysize is 2048"));
        }
        if size > 32768 {
            return Parsed::Usage(usage_error("The maximum value for keysize is 32768"));
        }
    }
    if args.no_color && args.force_color {
        // Salt does not forbid it; force wins in get_printout. Nothing to do.
    }
    Parsed::Run(Box::new(args))
}

/// An optparse-like message for a clap error.
fn clap_msg(e: &clap::Error, last: Option<&str>) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind as K};
    let arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.split_whitespace().next().unwrap_or("").to_owned(),
        _ => String::new(),
    };
    let value = match e.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    let arg = arg.split(['=', ' ']).next().unwrap_or("").to_owned();
    // optparse names the option as typed ("-a"), clap by its long name.
    let typed = last
        .filter(|l| l.starts_with('-'))
        .unwrap_or(&arg)
        .to_owned();
    match e.kind() {
        K::UnknownArgument => format!("no such option: {arg}"),
        K::InvalidValue if value.is_empty() => format!("{typed} option requires 1 argument"),
        K::InvalidValue | K::ValueValidation => {
            format!("option {arg}: invalid integer value: '{value}'")
        }
        K::NoEquals | K::WrongNumberOfValues | K::TooFewValues => {
            format!("{typed} option requires 1 argument")
        }
        K::ArgumentConflict => format!("conflicting options: {arg}"),
        _ => {
            let text = e.render().to_string();
            text.lines()
                .next()
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ")
                .to_owned()
        }
    }
}

/// Salt's `process_rotate_aes_key`/`process_preserve_minions`: "true"/"false" (any case)
/// become booleans; any other string stays a (truthy) string.
pub fn salt_bool_opt(v: &Option<String>, default: bool) -> StrBool {
    match v.as_deref() {
        None => StrBool::Bool(default),
        Some(s) if s.eq_ignore_ascii_case("true") => StrBool::Bool(true),
        Some(s) if s.eq_ignore_ascii_case("false") => StrBool::Bool(false),
        Some("") => StrBool::Bool(false),
        Some(_) => StrBool::Other,
    }
}

/// A Salt option that is a bool or, when given an unparsable string, a truthy string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrBool {
    /// Parsed.
    Bool(bool),
    /// A non-empty string that is neither true nor false.
    Other,
}

impl StrBool {
    /// Python truthiness (`if opts.get(...)`).
    pub fn truthy(self) -> bool {
        !matches!(self, Self::Bool(false))
    }
    /// `opts.get(...) is True`.
    pub fn is_true(self) -> bool {
        matches!(self, Self::Bool(true))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Parsed {
        parse(
            std::iter::once("salt-key")
                .chain(args.iter().copied())
                .map(OsString::from)
                .collect(),
        )
    }

    #[test]
    fn optparse_like_errors() {
        let Parsed::Usage(m) = p(&["--bogus"]) else {
            panic!()
        };
        assert_eq!(m, usage_error("no such option: --bogus"));
        let Parsed::Usage(m) = p(&["-a"]) else {
            panic!()
        };
        assert!(
            m.ends_with("salt-key: error: -a option requires 1 argument\n"),
            "{m}"
        );
        let Parsed::Usage(m) = p(&["-l", "foo"]) else {
            panic!()
        };
        assert!(m.ends_with("'foo' is not a valid argument to '--list'\n"));
        let Parsed::Usage(m) = p(&["--gen-keys", "x", "--keysize", "1024"]) else {
            panic!()
        };
        assert!(m.ends_with("The minimum value for keysize is 2048\n"));
    }

    #[test]
    fn prefixes_and_attached_values() {
        let Parsed::Run(a) = p(&["--accept=web*", "-yq", "--include-rej"]) else {
            panic!()
        };
        assert_eq!(a.accept.as_deref(), Some("web*"));
        assert!(a.yes && a.quiet && a.include_rejected);
        let Parsed::Run(a) = p(&["-aweb1", "-a", "web2"]) else {
            panic!()
        };
        assert_eq!(a.accept.as_deref(), Some("web2"));
    }
}
