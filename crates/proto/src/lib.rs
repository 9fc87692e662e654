//! salt-proto
#![forbid(unsafe_code)]
