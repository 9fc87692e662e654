//! salt-keystore
#![forbid(unsafe_code)]
