//! External authentication on the command line (`salt -a`, `salt-run -a`), as Salt's CLI:
//! `salt.auth.Resolver.cli` (the backend's `username`/`password` from `--username`/
//! `--password`, else prompted), `-T` (`Resolver.token_cli`: the master makes a token, saved
//! in `token_file` with umask 0177) and the saved token read back by `salt.config.
//! client_config` while it is younger than `token_expire`. The credentials go to the master
//! over the local socket ([`LocalAuth`]); its eauth engine decides, as for Salt's clear
//! commands. Passwords are read without echo from the terminal and never printed.

use std::io::{BufRead as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use salt_client::local::{LocalAuth, LocalEvent, LocalRequest};
use salt_client::session::Session;
use salt_config::MasterConfig;
use zeroize::Zeroizing;

/// The eauth backends salt-rs's master implements (Salt's `Resolver.cli` lists the auth
/// modules it can load).
const BACKENDS: &[&str] = &["auto", "file", "pam", "sharedsecret"];

/// Salt's `token_expire` default (seconds).
const DEFAULT_TOKEN_EXPIRE: f64 = 43200.0;

/// The `External Authentication` options of Salt's `EAuthMixIn`.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct EauthArgs {
    /// Specify an external authentication system to use.
    #[arg(
        short = 'a',
        long = "auth",
        visible_aliases = ["eauth", "external-auth"],
        default_value = ""
    )]
    pub eauth: String,
    /// Generate and save an authentication token for re-use. The token is generated and
    /// made available for the period defined in the Salt Master.
    #[arg(short = 'T', long = "make-token")]
    pub make_token: bool,
    /// Username for external authentication.
    #[arg(long = "username")]
    pub username: Option<String>,
    /// Password for external authentication.
    #[arg(long = "password")]
    pub password: Option<String>,
}

/// Salt's `client_config` `token_file`: `$XDG_CONFIG_HOME/salt/salt_token` (default
/// `~/.config/salt/salt_token`) when that directory exists, else `~/salt_token`.
pub fn token_file() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".config"))
        .join("salt");
    Some(if xdg.is_dir() {
        xdg.join("salt_token")
    } else {
        home.join("salt_token")
    })
}

/// The saved token while the file is younger than `token_expire` (`client_config`).
pub fn saved_token(cfg: &MasterConfig) -> Option<Zeroizing<String>> {
    let path = token_file()?;
    let meta = std::fs::metadata(&path).ok().filter(|m| m.is_file())?;
    let expire = cfg
        .eauth_opts
        .get("token_expire")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(DEFAULT_TOKEN_EXPIRE);
    let age = SystemTime::now()
        .duration_since(meta.modified().ok()?)
        .unwrap_or(Duration::ZERO);
    if age.as_secs_f64() >= expire {
        return None;
    }
    let text = Zeroizing::new(std::fs::read_to_string(&path).ok()?);
    Some(Zeroizing::new(text.trim().to_owned()))
}

/// The caller can read the master's root key (`cachedir/.root_key`): Salt's CLI then uses
/// it rather than a saved token (our master knows such a caller by its uid).
pub fn root_key_readable(cfg: &MasterConfig) -> bool {
    std::fs::File::open(cfg.cachedir.join(".root_key")).is_ok()
}

/// What a command sends: `None` to be known by its uid (root key readable, or no eauth),
/// else the credentials; `Err(())` when `salt` must stop with "ERROR: Authentication
/// failed" (an unknown backend).
pub async fn resolve(
    args: &EauthArgs,
    cfg: &MasterConfig,
    sock: &Path,
    token: Option<Zeroizing<String>>,
) -> Result<Option<LocalAuth>, ()> {
    if let Some(token) = token {
        if root_key_readable(cfg) {
            return Ok(None);
        }
        return Ok(Some(LocalAuth {
            eauth: String::new(),
            username: None,
            password: None,
            token: Some(token.to_string()),
        }));
    }
    if args.eauth.is_empty() {
        return Ok(None);
    }
    let mut auth = cli_credentials(args)?;
    if args.make_token {
        auth.token = make_token(sock, &auth).await;
    }
    Ok(Some(auth))
}

/// Salt's `Resolver.cli`: the backend's arguments from the options, else prompted
/// (`username: ` on stdout, `password: ` without echo on the terminal); an empty username
/// is the current user.
fn cli_credentials(args: &EauthArgs) -> Result<LocalAuth, ()> {
    if !BACKENDS.contains(&args.eauth.as_str()) {
        println!(
            "The specified external authentication system \"{}\" is not available",
            args.eauth
        );
        println!("Available eauth types: {}", BACKENDS.join(", "));
        return Err(());
    }
    let username = match &args.username {
        Some(u) => u.clone(),
        None => prompt_line("username: ").unwrap_or_default(),
    };
    let username = if username.is_empty() {
        current_user()
    } else {
        username
    };
    let password = match &args.password {
        Some(p) => p.clone(),
        None => prompt_password("password: ")
            .map(|p| p.to_string())
            .unwrap_or_default(),
    };
    Ok(LocalAuth {
        eauth: args.eauth.clone(),
        username: Some(username),
        password: Some(password),
        token: None,
    })
}

/// Salt's `Resolver.token_cli`: ask the master for a token; on success write it to
/// `token_file` (umask 0177: mode 0600; a file that cannot be written is skipped, as Salt)
/// and return it. A refusal returns `None` (the command goes on with the password).
async fn make_token(sock: &Path, auth: &LocalAuth) -> Option<String> {
    let req = LocalRequest::MkToken(auth.clone());
    let mut session = Session::open(sock, &req, Duration::from_secs(60))
        .await
        .ok()?;
    let Ok(Some(LocalEvent::Token { token })) = session.next().await else {
        return None;
    };
    if let Some(path) = token_file() {
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut f| f.write_all(token.as_bytes()));
        // Salt passes over a token file it cannot write; this says so.
        if let Err(e) = written {
            eprintln!("warning: cannot save the token in {}: {e}", path.display());
        }
    }
    Some(token)
}

/// The user running this command (Salt's `salt.utils.user.get_user`).
fn current_user() -> String {
    nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map_or_else(|| nix::unistd::geteuid().to_string(), |u| u.name)
}

/// Python's `input(prompt)`: the prompt on stdout, one line from stdin.
fn prompt_line(prompt: &str) -> Option<String> {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(prompt.as_bytes());
    let _ = out.flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok()?;
    Some(line.trim_end_matches(['\n', '\r']).to_owned())
}

/// Python's `getpass.getpass(prompt)`: prompt and read on the terminal with echo off; with
/// no terminal, Python's fallback (a warning and the prompt on stderr, the line from stdin).
fn prompt_password(prompt: &str) -> Option<Zeroizing<String>> {
    use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty");
    let Ok(mut tty) = tty else {
        eprintln!("Warning: Password input may be echoed.");
        eprint!("{prompt}");
        let mut line = Zeroizing::new(String::new());
        std::io::stdin().lock().read_line(&mut line).ok()?;
        eprintln!();
        return Some(Zeroizing::new(
            line.trim_end_matches(['\n', '\r']).to_owned(),
        ));
    };
    let _ = tty.write_all(prompt.as_bytes());
    let _ = tty.flush();
    let saved = tcgetattr(&tty).ok();
    if let Some(old) = &saved {
        let mut quiet = old.clone();
        quiet.local_flags.remove(LocalFlags::ECHO);
        let _ = tcsetattr(&tty, SetArg::TCSAFLUSH, &quiet);
    }
    let mut line = Zeroizing::new(String::new());
    let read = std::io::BufReader::new(&tty).read_line(&mut line);
    if let Some(old) = &saved {
        let _ = tcsetattr(&tty, SetArg::TCSAFLUSH, old);
    }
    let _ = tty.write_all(b"\n");
    read.ok()?;
    Some(Zeroizing::new(
        line.trim_end_matches(['\n', '\r']).to_owned(),
    ))
}
