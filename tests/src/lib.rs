//! salt-integration-tests
#![forbid(unsafe_code)]
