//! `NVSHMEM_SYMMETRIC_SIZE`: the per-PE symmetric heap size, parsed strictly (grammar on
//! [`parse_symmetric_size`]). Unlike NIIN, which fell back to the default on a bad value,
//! every bad value is an error naming the variable and quoting the value.

use crate::SizeError;

/// Name of the environment variable holding the per-PE symmetric heap size.
pub const SYMMETRIC_SIZE_VAR: &str = "NVSHMEM_SYMMETRIC_SIZE";

/// Heap size used when `NVSHMEM_SYMMETRIC_SIZE` is unset: 256 MiB.
pub const DEFAULT_SYMMETRIC_SIZE: u64 = 256 << 20;

/// Parses an `NVSHMEM_SYMMETRIC_SIZE` value into bytes.
///
/// Accepted grammar (after trimming surrounding whitespace; letters case-insensitive):
///
/// ```text
/// size   := digits [ "." digits ] [ spaces ] [ unit ]
/// unit   := "B" | scale | scale "B" | scale "iB"
/// scale  := "K" (2^10) | "M" (2^20) | "G" (2^30) | "T" (2^40)
/// ```
///
/// Scales are binary (`K` = 1024) whether written `K`, `KB` or `KiB`. A decimal fraction
/// is accepted and, as the OpenSHMEM specification of `SHMEM_SYMMETRIC_SIZE` says, the
/// result is the integer *ceiling* of number × scale: `1.5G` = 1610612736, `0.1K` = 103,
/// `1.5` = 2. There is no `+` sign, exponent, hex or digit separator.
///
/// Errors (each names `NVSHMEM_SYMMETRIC_SIZE` and quotes `value`): anything else,
/// including an empty value, is [`SizeError::Malformed`]; a well-formed value with a
/// leading `-` is [`SizeError::Negative`]; one above `u64::MAX` bytes is
/// [`SizeError::Overflow`]; one equal to zero is [`SizeError::Zero`].
///
/// ```
/// use niin_heap::parse_symmetric_size;
/// assert_eq!(parse_symmetric_size(" 512M "), Ok(512 << 20));
/// assert_eq!(parse_symmetric_size("1.5GiB"), Ok(3 << 29));
/// assert!(parse_symmetric_size("12Q").is_err());
/// ```
pub fn parse_symmetric_size(value: &str) -> Result<u64, SizeError> {
    parse_size(SYMMETRIC_SIZE_VAR, value)
}

/// Reads `NVSHMEM_SYMMETRIC_SIZE` from the process environment: unset gives
/// [`DEFAULT_SYMMETRIC_SIZE`], set gives [`parse_symmetric_size`] of its value (a value
/// that is not valid Unicode is [`SizeError::Malformed`]).
pub fn symmetric_size_from_env() -> Result<u64, SizeError> {
    match std::env::var_os(SYMMETRIC_SIZE_VAR) {
        None => symmetric_size_from_value(None),
        Some(os) => match os.to_str() {
            Some(s) => symmetric_size_from_value(Some(s)),
            None => Err(SizeError::Malformed {
                var: SYMMETRIC_SIZE_VAR,
                value: os.to_string_lossy().into_owned(),
            }),
        },
    }
}

/// [`symmetric_size_from_env`] with the variable's value passed in (`None` = unset), so
/// callers and tests need not touch the process-global environment.
pub fn symmetric_size_from_value(value: Option<&str>) -> Result<u64, SizeError> {
    match value {
        None => Ok(DEFAULT_SYMMETRIC_SIZE),
        Some(v) => parse_symmetric_size(v),
    }
}

/// Parses `value` as a size for variable `var`.
fn parse_size(var: &'static str, value: &str) -> Result<u64, SizeError> {
    let malformed = || SizeError::Malformed {
        var,
        value: value.to_owned(),
    };
    let text = value.trim();
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };

    // Number: digits [ "." digits ].
    let int_end = body
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(body.len());
    let (int_digits, rest) = body.split_at(int_end);
    if int_digits.is_empty() {
        return Err(malformed());
    }
    let (frac_digits, rest) = match rest.strip_prefix('.') {
        Some(after) => {
            let end = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            if end == 0 {
                return Err(malformed());
            }
            after.split_at(end)
        }
        None => ("", rest),
    };

    // Unit.
    let shift: u32 = match rest.trim_start().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(malformed()),
    };

    if negative {
        return Err(SizeError::Negative {
            var,
            value: value.to_owned(),
        });
    }

    // bytes = int * 2^shift + ceil(0.frac * 2^shift), in u128 so overflow is detectable.
    let mut int: u128 = 0;
    for d in int_digits.bytes() {
        int = int
            .checked_mul(10)
            .and_then(|x| x.checked_add(u128::from(d - b'0')))
            .ok_or_else(|| overflow(var, value))?;
        if int > u128::from(u64::MAX) {
            return Err(overflow(var, value));
        }
    }
    let bytes = (int << shift) + u128::from(frac_ceil(frac_digits, shift));
    let bytes = u64::try_from(bytes).map_err(|_| overflow(var, value))?;
    if bytes == 0 {
        return Err(SizeError::Zero {
            var,
            value: value.to_owned(),
        });
    }
    Ok(bytes)
}

/// The overflow error for `var=value`.
fn overflow(var: &'static str, value: &str) -> SizeError {
    SizeError::Overflow {
        var,
        value: value.to_owned(),
    }
}

/// `ceil(0.<frac_digits> * 2^shift)`, exactly, for any number of digits: the decimal
/// fraction is doubled `shift` times, each doubling moving its carry into the integer
/// result. The result is at most `2^shift`.
fn frac_ceil(frac_digits: &str, shift: u32) -> u64 {
    let mut digits: Vec<u8> = frac_digits.bytes().map(|d| d - b'0').collect();
    while digits.last() == Some(&0) {
        digits.pop();
    }
    let mut whole: u64 = 0;
    for _ in 0..shift {
        let mut carry = 0;
        for d in digits.iter_mut().rev() {
            let v = *d * 2 + carry;
            *d = v % 10;
            carry = v / 10;
        }
        whole = whole * 2 + u64::from(carry);
    }
    if digits.iter().any(|&d| d != 0) {
        whole + 1
    } else {
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> Result<u64, SizeError> {
        parse_symmetric_size(s)
    }

    fn err_kind(r: Result<u64, SizeError>) -> &'static str {
        match r {
            Ok(_) => "ok",
            Err(SizeError::Malformed { .. }) => "malformed",
            Err(SizeError::Zero { .. }) => "zero",
            Err(SizeError::Negative { .. }) => "negative",
            Err(SizeError::Overflow { .. }) => "overflow",
        }
    }

    #[test]
    fn plain_bytes() {
        assert_eq!(p("1"), Ok(1));
        assert_eq!(p("1073741824"), Ok(1 << 30));
        assert_eq!(p("007"), Ok(7));
        assert_eq!(p("512B"), Ok(512));
        assert_eq!(p(&u64::MAX.to_string()), Ok(u64::MAX));
    }

    #[test]
    fn each_suffix_is_binary() {
        assert_eq!(p("1K"), Ok(1 << 10));
        assert_eq!(p("3M"), Ok(3 << 20));
        assert_eq!(p("2G"), Ok(2 << 30));
        assert_eq!(p("5T"), Ok(5 << 40));
        for (s, v) in [
            ("KB", 1u64 << 10),
            ("MiB", 1 << 20),
            ("GB", 1 << 30),
            ("TiB", 1 << 40),
        ] {
            assert_eq!(p(&format!("1{s}")), Ok(v), "{s}");
        }
    }

    #[test]
    fn suffix_is_case_insensitive() {
        for s in [
            "1g", "1G", "1gb", "1Gb", "1gB", "1GB", "1gib", "1GiB", "1GIB",
        ] {
            assert_eq!(p(s), Ok(1 << 30), "{s}");
        }
        assert_eq!(p("4k"), Ok(4096));
        assert_eq!(p("1t"), Ok(1 << 40));
        assert_eq!(p("1m"), Ok(1 << 20));
        assert_eq!(p("10b"), Ok(10));
    }

    #[test]
    fn surrounding_and_inner_whitespace() {
        assert_eq!(p("  512M \n"), Ok(512 << 20));
        assert_eq!(p("\t1 G"), Ok(1 << 30));
        assert_eq!(p(" 64 KiB "), Ok(64 << 10));
    }

    #[test]
    fn fractions_round_up() {
        assert_eq!(p("1.5G"), Ok(3 << 29));
        assert_eq!(p("0.5K"), Ok(512));
        assert_eq!(p("0.1K"), Ok(103)); // 102.4 -> 103
        assert_eq!(p("1.5"), Ok(2));
        assert_eq!(p("2.000"), Ok(2));
        assert_eq!(p("0.0009765625K"), Ok(1)); // exactly 2^-10 K = 1 byte
        assert_eq!(p("0.00097656250000000000000001K"), Ok(2));
        assert_eq!(p("15.99999999999999999999999999T"), Ok(16 << 40));
    }

    #[test]
    fn malformed_values() {
        for s in [
            "", "   ", "12Q", "G", "1.", ".5G", "1..5G", "1GG", "1 2", "0x10", "1e9", "+1G",
            "1,000", "1KiBB", "1iB", "--1", "-", "abc", "1 G B",
        ] {
            assert_eq!(err_kind(p(s)), "malformed", "{s:?}");
        }
        let e = p("12Q").unwrap_err();
        assert_eq!(
            e,
            SizeError::Malformed {
                var: SYMMETRIC_SIZE_VAR,
                value: "12Q".to_owned()
            }
        );
    }

    #[test]
    fn zero_is_an_error() {
        for s in ["0", "0K", "0.0G", " 000 "] {
            assert_eq!(err_kind(p(s)), "zero", "{s:?}");
        }
    }

    #[test]
    fn negative_is_an_error() {
        for s in ["-1G", "-1", " -0.5K", "-0", "-20000000T"] {
            assert_eq!(err_kind(p(s)), "negative", "{s:?}");
        }
        assert!(p("-1G").unwrap_err().to_string().contains("\"-1G\""));
    }

    #[test]
    fn overflow_is_an_error() {
        for s in [
            "20000000T",
            "18446744073709551616",
            "16777216T",
            "99999999999999999999999999999999999999999999",
            "16777215.99999999999999999999999T",
        ] {
            assert_eq!(err_kind(p(s)), "overflow", "{s:?}");
        }
        assert_eq!(p("16777215T"), Ok(16_777_215 << 40));
    }

    #[test]
    fn env_value_unset_gives_default() {
        assert_eq!(symmetric_size_from_value(None), Ok(DEFAULT_SYMMETRIC_SIZE));
        assert_eq!(DEFAULT_SYMMETRIC_SIZE, 268_435_456);
    }

    #[test]
    fn env_value_set_is_parsed() {
        assert_eq!(symmetric_size_from_value(Some("2G")), Ok(2 << 30));
    }

    #[test]
    fn env_value_bad_names_variable_and_value() {
        let e = symmetric_size_from_value(Some("12Q")).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("NVSHMEM_SYMMETRIC_SIZE"), "{msg}");
        assert!(msg.contains("\"12Q\""), "{msg}");
        for bad in ["0", "-1G", "20000000T"] {
            let msg = symmetric_size_from_value(Some(bad))
                .unwrap_err()
                .to_string();
            assert!(
                msg.starts_with(&format!("NVSHMEM_SYMMETRIC_SIZE=\"{bad}\"")),
                "{msg}"
            );
        }
    }

    /// The only test that touches the real environment, and it only reads it (setting
    /// variables is `unsafe` in edition 2024 and racy across test threads).
    #[test]
    fn env_reader_agrees_with_value_reader() {
        let raw = std::env::var(SYMMETRIC_SIZE_VAR).ok();
        assert_eq!(
            symmetric_size_from_env(),
            symmetric_size_from_value(raw.as_deref())
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn prop_integer_times_suffix_roundtrips(n in 1u64..1_000_000, unit in 0usize..5, lower in any::<bool>()) {
            let (suffix, shift) = [("", 0), ("K", 10), ("M", 20), ("G", 30), ("T", 40)][unit];
            let s = format!("{n}{suffix}");
            let s = if lower { s.to_ascii_lowercase() } else { s };
            let want = u64::try_from(u128::from(n) << shift).ok();
            match want {
                Some(v) => prop_assert_eq!(p(&s), Ok(v)),
                None => prop_assert_eq!(err_kind(p(&s)), "overflow"),
            }
        }

        #[test]
        fn prop_arbitrary_text_never_panics(s in "\\PC{0,24}") {
            let _ = p(&s);
        }
    }
}
