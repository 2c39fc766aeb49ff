//! Human-readable byte counts for error messages and stats.

use std::fmt;

/// Displays a byte count in binary units: `3 GiB`, `1.50 KiB`, `255 B`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bytes(pub(crate) u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u32); 6] = [
            ("EiB", 60),
            ("PiB", 50),
            ("TiB", 40),
            ("GiB", 30),
            ("MiB", 20),
            ("KiB", 10),
        ];
        let v = self.0;
        for (name, shift) in UNITS {
            if v >> shift != 0 {
                let whole = v >> shift;
                return if v & ((1u64 << shift) - 1) == 0 {
                    write!(f, "{whole} {name}")
                } else {
                    // Display only; precision loss beyond 2 decimals is irrelevant.
                    #[allow(clippy::cast_precision_loss)]
                    let x = v as f64 / (1u64 << shift) as f64;
                    write!(f, "{x:.2} {name}")
                };
            }
        }
        write!(f, "{v} B")
    }
}

#[cfg(test)]
mod tests {
    use super::Bytes;

    #[test]
    fn bytes_display() {
        assert_eq!(Bytes(0).to_string(), "0 B");
        assert_eq!(Bytes(1023).to_string(), "1023 B");
        assert_eq!(Bytes(1024).to_string(), "1 KiB");
        assert_eq!(Bytes(1536).to_string(), "1.50 KiB");
        assert_eq!(Bytes(3 << 30).to_string(), "3 GiB");
        assert_eq!(Bytes(u64::MAX).to_string(), "16.00 EiB");
    }
}
