//! Shannon entropy of a value, in bits per character, for the secret rules: gitleaks'
//! measure (characters counted, divided by the length in bytes) and the key-name rules'
//! (divided by the number of characters). Computed from the counts `c` of the characters
//! as `(Σ c · log2(n) - Σ c · log2(c)) / n`, with a base-2 logarithm of whole numbers of its
//! own: the standard library's `f64::log2` is the C math library's, and it was the one
//! function that made every start of the binary load `libm.so` (docs/design/small-commands.md,
//! "Start-up cost"). Pure; no I/O.

use std::collections::HashMap;

/// gitleaks' entropy of `s`: over its characters, divided by its length in bytes.
pub fn per_byte_length(s: &str) -> f64 {
    entropy(s, s.len())
}

/// The entropy of `s` over its characters, divided by its number of characters.
pub fn per_char(s: &str) -> f64 {
    entropy(s, s.chars().count())
}

fn entropy(s: &str, n: usize) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let mut counts: HashMap<char, usize> = HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_insert(0) += 1;
    }
    // Σ -p·log2(p) with p = c/n is (Σ c)·log2(n) / n - Σ c·log2(c) / n; Σ c is the number
    // of characters, which is `n` unless `n` counts bytes.
    let chars: usize = counts.values().sum();
    let weighted: f64 = counts.values().map(|&c| c as f64 * log2_whole(c)).sum();
    (chars as f64 * log2_whole(n) - weighted) / n as f64
}

/// The base-2 logarithm of a whole number `k` ≥ 1, to about one unit in the last place:
/// `k = 2^e · m` with `m` in [√½, √2), and `ln m = 2·atanh(z)` with `z = (m-1)/(m+1)`,
/// |z| < 0.172, summed until the terms vanish. Exact for powers of two.
pub fn log2_whole(k: usize) -> f64 {
    debug_assert!(k >= 1);
    let k = k.max(1) as u64;
    let mut e = k.ilog2() as i32;
    // `k` has at most 64 bits; dividing by 2^e is exact in f64 once `k` is below 2^53, and
    // rounds to the nearest representable value above that (counts never get there).
    let mut m = k as f64 / f64::from(2u32).powi(e);
    if m > std::f64::consts::SQRT_2 {
        m /= 2.0;
        e += 1;
    }
    if m == 1.0 {
        return f64::from(e);
    }
    let z = (m - 1.0) / (m + 1.0);
    let z2 = z * z;
    let mut term = z;
    let mut sum = 0.0;
    let mut i = 1.0;
    loop {
        let next = sum + term / i;
        if next == sum {
            break;
        }
        sum = next;
        term *= z2;
        i += 2.0;
    }
    f64::from(e) + 2.0 * sum / std::f64::consts::LN_2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_of_whole_numbers_matches_the_math_library() {
        for k in (1..5000).chain([65_535, 65_536, 1 << 20, 999_999_937, usize::MAX >> 12]) {
            let ours = log2_whole(k);
            let libm = (k as f64).log2();
            assert!(
                (ours - libm).abs() <= 4.0 * f64::EPSILON * libm.max(1.0),
                "log2({k}): {ours} vs {libm}"
            );
        }
        assert_eq!(log2_whole(1), 0.0);
        assert_eq!(log2_whole(1024), 10.0);
    }

    #[test]
    fn entropy_is_the_sum_over_characters() {
        let reference = |s: &str, n: usize| -> f64 {
            let mut counts: HashMap<char, usize> = HashMap::new();
            for c in s.chars() {
                *counts.entry(c).or_insert(0) += 1;
            }
            counts
                .values()
                .map(|&c| {
                    let p = c as f64 / n as f64;
                    -p * p.log2()
                })
                .sum()
        };
        for s in [
            "",
            "a",
            "aaaa",
            "abcdefgh",
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a", // gitleaks:allow
            "é€x€",
        ] {
            let by_bytes = per_byte_length(s);
            let by_chars = per_char(s);
            if s.is_empty() {
                assert_eq!((by_bytes, by_chars), (0.0, 0.0));
                continue;
            }
            assert!((by_bytes - reference(s, s.len())).abs() < 1e-12, "{s}");
            assert!(
                (by_chars - reference(s, s.chars().count())).abs() < 1e-12,
                "{s}"
            );
        }
        // Whole-bit cases stay exact: 8 distinct characters are 3 bits, a threshold gitleaks
        // rules use.
        assert_eq!(per_char("abcdefgh"), 3.0);
        assert_eq!(per_byte_length("abcdefghabcdijkl"), 3.5);
    }
}
