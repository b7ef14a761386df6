//! Counts as English: "1 path", "2 paths". Every message that counts something says it this
//! way, never "path(s)". Pure functions: it decides nothing.

/// `n` followed by `one` when `n` is 1, else by `many`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1, "path", "paths"), "1 path");
        assert_eq!(count(0, "path", "paths"), "0 paths");
        assert_eq!(count(2, "run", "runs"), "2 runs");
    }
}
