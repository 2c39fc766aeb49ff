//! Reading the environment variables that configure niin-rs.
//!
//! `std::env::var(name).ok()` treats a value that is not valid UTF-8 as unset, so a
//! damaged value would quietly become the default. [`text`] reports such a value as an
//! error that names the variable, as every other malformed value is reported.

use std::ffi::OsString;

use crate::error::TransportError;

/// A configuration variable whose value is not valid UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}={value:?} is not valid UTF-8 (bad bytes shown as U+FFFD)")]
pub struct NotUnicode {
    /// The variable.
    pub var: String,
    /// Its value, with each invalid sequence replaced by U+FFFD.
    pub value: String,
}

impl From<NotUnicode> for TransportError {
    fn from(e: NotUnicode) -> Self {
        TransportError::BadArgument {
            op: "environment",
            what: e.to_string(),
        }
    }
}

/// The value of `var`: `None` when it is unset, an error when it is not valid UTF-8.
pub fn text(var: &str) -> Result<Option<String>, NotUnicode> {
    text_of(var, std::env::var_os(var))
}

/// [`text`] on a value already read (so tests need not set the process's environment).
pub fn text_of(var: &str, value: Option<OsString>) -> Result<Option<String>, NotUnicode> {
    value
        .map(|os| {
            os.into_string().map_err(|os| NotUnicode {
                var: var.to_owned(),
                value: os.to_string_lossy().into_owned(),
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn unset_text_and_bad_bytes() {
        assert_eq!(text_of("NIIN_X", None), Ok(None));
        assert_eq!(
            text_of("NIIN_X", Some("30".into())),
            Ok(Some("30".to_owned()))
        );
        let bad = text_of("NIIN_X", Some(OsString::from_vec(b"3\xff0".to_vec()))).unwrap_err();
        assert_eq!(bad.value, "3\u{fffd}0");
        let shown = TransportError::from(bad).to_string();
        assert!(
            shown.contains("NIIN_X=\"3\u{fffd}0\" is not valid UTF-8"),
            "{shown}"
        );
    }
}
