//! `git -c key=value agent-rewind …`: git hands the `-c` values to the commands it runs in
//! `GIT_CONFIG_PARAMETERS`, which gix does not read. This parses that variable as git's
//! `parse_config_env_list` does (`'key'='value'`, the older `'key=value'`, and `'key'=` or
//! `'key'` for an implicit true; each word single-quoted with `'\''` for a quote) into the
//! `key=value` overrides gix takes on the command line's level. Pure: it never reads or
//! writes a file.

use agent_rewind_core::error::{Error, Result};

/// The `-c` values of the git that started us, in git's order, as gix's CLI overrides.
pub(crate) fn git_config_parameters() -> Result<Vec<String>> {
    match std::env::var("GIT_CONFIG_PARAMETERS") {
        Ok(text) => parse(&text),
        Err(_) => Ok(vec![]),
    }
}

fn bogus(text: &str) -> Error {
    Error::usage(format!("bogus format in GIT_CONFIG_PARAMETERS: {text:?}"))
        .with_hint("it is set by `git -c key=value`; unset it, or quote each word as git does")
}

/// One single-quoted word at the start of `s` (after `'`), with `'\''` inside standing for
/// a quote; returns the word and the rest after its closing quote.
fn dequote(s: &str) -> Option<(String, &str)> {
    let mut rest = s.strip_prefix('\'')?;
    let mut word = String::new();
    loop {
        let end = rest.find('\'')?;
        word.push_str(&rest[..end]);
        rest = &rest[end + 1..];
        match rest.strip_prefix("\\''") {
            Some(after) => {
                word.push('\'');
                rest = after;
            }
            None => return Some((word, rest)),
        }
    }
}

fn parse(text: &str) -> Result<Vec<String>> {
    let mut out = vec![];
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let (key, after) = dequote(rest).ok_or_else(|| bogus(text))?;
        rest = after;
        if rest.is_empty() || rest.starts_with(char::is_whitespace) {
            // The older 'key=value' (or 'key' alone, an implicit true).
            out.push(key);
        } else if let Some(after) = rest.strip_prefix('=') {
            if after.starts_with('\'') {
                let (value, after) = dequote(after).ok_or_else(|| bogus(text))?;
                if !(after.is_empty() || after.starts_with(char::is_whitespace)) {
                    return Err(bogus(text));
                }
                out.push(format!("{key}={value}"));
                rest = after;
            } else if after.is_empty() || after.starts_with(char::is_whitespace) {
                out.push(key);
                rest = after;
            } else {
                return Err(bogus(text));
            }
        } else {
            return Err(bogus(text));
        }
        rest = rest.trim_start();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn git_s_forms_are_read() {
        assert_eq!(
            parse("'user.name'='O'\\''Brien Smith' 'color.diff=never' 'core.bare'= 'a.b'").unwrap(),
            [
                "user.name=O'Brien Smith",
                "color.diff=never",
                "core.bare",
                "a.b"
            ]
        );
        assert_eq!(parse("").unwrap(), Vec::<String>::new());
        for bad in ["user.name=x", "'unterminated", "'a'='b'c", "'a'x"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
