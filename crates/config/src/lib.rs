//! salt-config
#![forbid(unsafe_code)]
