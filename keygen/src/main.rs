//! The `salt-key` binary.
#![forbid(unsafe_code)]

fn main() {
    let code = salt_key::run(std::env::args_os().collect());
    std::process::exit(code);
}
