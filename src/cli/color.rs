//! Whether a command's output is coloured, by git's rules, one rule for every command:
//! `--color[=WHEN]`/`--no-color` first (where the command has them), then NO_COLOR, then
//! git's config (`git -c` included) `color.<command>` (`color.diff`, `color.list` …), then
//! `color.ui`, `auto` by default; `auto` colours only a terminal that is not `dumb`.
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
    /// Whether `command` colours its output: these flags first, then the rule of
    /// [`command_uses_color`].
    pub fn use_color(&self, store: &Store, command: &str) -> Result<bool> {
        use_color(store, self.color.as_deref(), self.no_color, &keys(command))
    }
}

/// Whether `command` (as typed: `list`, `status` …) colours its output when it has no
/// colour flags: NO_COLOR, then `color.<command>`, then `color.ui`, as git decides.
pub fn command_uses_color(store: &Store, command: &str) -> Result<bool> {
    use_color(store, None, false, &keys(command))
}

/// The config keys that decide `command`'s colour, in order.
fn keys(command: &str) -> [String; 2] {
    [format!("color.{command}"), "color.ui".to_string()]
}

fn use_color(store: &Store, flag: Option<&str>, no_color: bool, keys: &[String]) -> Result<bool> {
    let when = if no_color {
        "never".to_string()
    } else if let Some(c) = flag {
        c.to_string()
    } else if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        "never".to_string()
    } else {
        let found = keys
            .iter()
            .find_map(|k| store.config().string(k).map(|v| (k.as_str(), v)));
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
