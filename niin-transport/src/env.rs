//! Reading the environment variables that configure niin-rs.
//!
//! `std::env::var(name).ok()` treats a value that is not valid UTF-8 as unset, so a
//! damaged value would quietly become the default. [`text`] reports such a value as an
//! error that names the variable, as every other malformed value is reported.
//! [`choice`] reads a variable that names one of a few modes.

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

/// A mode variable whose value is none of the names it accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}={value:?}: expected {expected}")]
pub struct BadChoice {
    /// The variable.
    pub var: String,
    /// Its value, trimmed.
    pub value: String,
    /// The accepted names, as a list for the message ("auto, lsa or nccl").
    pub expected: String,
}

impl From<BadChoice> for TransportError {
    fn from(e: BadChoice) -> Self {
        TransportError::BadArgument {
            op: "nvshmem_init",
            what: e.to_string(),
        }
    }
}

/// The mode that `value` of variable `var` names, among `choices` (name, mode): unset,
/// empty or blank picks the first; surrounding white space is ignored; any other value is
/// an error naming the variable, the value and every accepted name.
pub fn choice<T: Copy>(
    var: &str,
    value: Option<&str>,
    choices: &[(&str, T)],
) -> Result<T, BadChoice> {
    let value = value.map(str::trim).unwrap_or("");
    let Some(&(_, first)) = choices.first() else {
        panic!("env::choice({var}) was given no choices");
    };
    if value.is_empty() {
        return Ok(first);
    }
    if let Some(&(_, mode)) = choices.iter().find(|(name, _)| *name == value) {
        return Ok(mode);
    }
    let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
    let expected = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.concat(),
    };
    Err(BadChoice {
        var: var.to_owned(),
        value: value.to_owned(),
        expected,
    })
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

    #[test]
    fn a_choice_defaults_trims_and_lists_what_it_accepts() {
        let modes = [("auto", 0), ("lsa", 1), ("nccl", 2)];
        assert_eq!(choice("NIIN_X", None, &modes), Ok(0));
        assert_eq!(choice("NIIN_X", Some(""), &modes), Ok(0));
        assert_eq!(choice("NIIN_X", Some("  "), &modes), Ok(0));
        assert_eq!(choice("NIIN_X", Some(" lsa "), &modes), Ok(1));
        assert_eq!(choice("NIIN_X", Some("nccl"), &modes), Ok(2));
        let bad = choice("NIIN_X", Some(" ring "), &modes).unwrap_err();
        assert_eq!(
            bad.to_string(),
            "NIIN_X=\"ring\": expected auto, lsa or nccl"
        );
        let two = choice("NIIN_Y", Some("NCCL"), &[("auto", 0), ("nccl", 1)]).unwrap_err();
        assert_eq!(two.to_string(), "NIIN_Y=\"NCCL\": expected auto or nccl");
        let shown = TransportError::from(two).to_string();
        assert!(
            shown.contains("nvshmem_init") && shown.contains("NIIN_Y"),
            "{shown}"
        );
    }
}
