//! salt-pki
#![forbid(unsafe_code)]
