//! salt-master-core
#![forbid(unsafe_code)]
