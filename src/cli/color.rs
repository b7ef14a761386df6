//! Whether a command's output is coloured, by git's rules: `--color[=WHEN]`/`--no-color`
//! first, then NO_COLOR, then the command's git config keys in order (`color.diff`, then
//! `color.ui`), `auto` by default; `auto` colours only a terminal that is not `dumb`.
//! Decides only that; the colours themselves are the renderer's.

use agent_rewind::store::Store;
use agent_rewind_core::error::{Error, Result};
use clap::Args;
use std::io::IsTerminal;

/// `--color[=WHEN]` and `--no-color`, as git spells them.
#[derive(Debug, Clone, Default, Args)]
pub struct ColorArgs {
    /// Colour: always, never, or auto (on a terminal; the default, as git's `color.*`
    /// settings say; none with NO_COLOR).
    #[arg(
        long,
        value_name = "WHEN",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "always",
        value_parser = ["auto", "always", "never"]
    )]
    pub color: Option<String>,
    /// No colour.
    #[arg(long, conflicts_with = "color")]
    pub no_color: bool,
}

impl ColorArgs {
    /// Whether to colour, these flags first, then git's `keys` in order.
    pub fn use_color(&self, store: &Store, keys: &[&str]) -> Result<bool> {
        use_color(store, self.color.as_deref(), self.no_color, keys)
    }
}

pub fn use_color(store: &Store, flag: Option<&str>, no_color: bool, keys: &[&str]) -> Result<bool> {
    let when = if no_color {
        "never".to_string()
    } else if let Some(c) = flag {
        c.to_string()
    } else if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        "never".to_string()
    } else {
        let found = keys
            .iter()
            .find_map(|k| store.config().string(k).map(|v| (*k, v)));
        match found {
            None => "auto".into(),
            Some((key, configured)) => match configured.to_ascii_lowercase().as_str() {
                "always" => "always".into(),
                "never" | "false" | "no" | "off" | "0" => "never".into(),
                "auto" | "true" | "yes" | "on" | "1" | "" => "auto".into(),
                other => {
                    return Err(
                        Error::usage(format!("bad color value {other:?} in git config")).with_hint(
                            format!(
                                "{} take always, never, auto, true or false (found in {key})",
                                keys.join(" and ")
                            ),
                        ),
                    );
                }
            },
        }
    };
    Ok(match when.as_str() {
        "always" => true,
        "never" => false,
        _ => std::io::stdout().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb"),
    })
}
