//! salt-minion-core
#![forbid(unsafe_code)]
