//! Keys and who may do what.

pub mod acl;
pub mod aes;
pub mod master;
pub mod sessions;
pub mod tokens;
