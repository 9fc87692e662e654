//! salt-examples
#![forbid(unsafe_code)]
