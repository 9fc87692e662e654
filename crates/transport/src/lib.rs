//! salt-transport
#![forbid(unsafe_code)]
