//! Argument binding: positional values, then keyword arguments by name.

use rmpv::Value;

use crate::{is_true, text};

/// The arguments of one call.
#[derive(Debug, Clone)]
pub struct Args<'a> {
    fun: &'a str,
    pos: &'a [Value],
    kw: &'a [(String, Value)],
}

impl<'a> Args<'a> {
    /// Bind `pos`/`kw` for `fun`.
    pub fn new(fun: &'a str, pos: &'a [Value], kw: &'a [(String, Value)]) -> Self {
        Self { fun, pos, kw }
    }

    /// The function name (`module.fun`).
    pub fn fun(&self) -> &str {
        self.fun
    }

    /// Argument `name`, or positional `idx`.
    pub fn get(&self, idx: usize, name: &str) -> Option<&'a Value> {
        self.kwarg(name).or_else(|| self.pos.get(idx))
    }

    /// Keyword argument `name` only.
    pub fn kwarg(&self, name: &str) -> Option<&'a Value> {
        self.kw.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// Argument as text (None for Nil/absent).
    pub fn str(&self, idx: usize, name: &str) -> Option<String> {
        match self.get(idx, name) {
            None | Some(Value::Nil) => None,
            Some(v) => Some(text(v)),
        }
    }

    /// A required argument as text, else Salt's missing-argument error.
    pub fn req(&self, idx: usize, name: &str) -> Result<String, String> {
        self.str(idx, name).ok_or_else(|| {
            format!(
                "{}() missing 1 required positional argument: '{name}'",
                self.fun.rsplit('.').next().unwrap_or(self.fun)
            )
        })
    }

    /// A boolean keyword argument.
    pub fn flag(&self, name: &str, default: bool) -> bool {
        self.kwarg(name).map(is_true).unwrap_or(default)
    }

    /// All positional arguments as text.
    pub fn positional(&self) -> Vec<String> {
        self.pos.iter().map(text).collect()
    }

    /// Refuse any keyword argument in `unsupported` that is given (not Nil/False).
    pub fn refuse(&self, unsupported: &[&str]) -> Result<(), String> {
        for (k, v) in self.kw {
            if unsupported.contains(&k.as_str()) && !matches!(v, Value::Nil | Value::Boolean(false))
            {
                return Err(format!(
                    "{}: the option '{k}' is not supported by salt-rs",
                    self.fun
                ));
            }
        }
        Ok(())
    }
}
