//! Token usage: what a turn's model calls consumed (`usage` on a `turn` line, per model), its
//! sums, and the per-million prices (`agentRewind.price.<model>`) that turn it into a cost.
//!
//! Pure data and arithmetic: reading the agents' transcripts is the hooks' job, reading the
//! configuration the caller's. Never stores or sees any message text.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Longest model name kept as a key of [`Usage`].
pub const MAX_MODEL: usize = 200;

/// The tokens of one or more model calls, counted apart so that each has its own price:
/// `input` is the prompt's tokens not read from a cache nor written to one, `cache_read`
/// and `cache_write` those that were, `output` what the model wrote (its reasoning
/// included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
}

impl Tokens {
    pub fn is_zero(&self) -> bool {
        *self == Tokens::default()
    }

    /// All four counts.
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }
}

impl std::ops::AddAssign for Tokens {
    fn add_assign(&mut self, o: Tokens) {
        self.input = self.input.saturating_add(o.input);
        self.output = self.output.saturating_add(o.output);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
        self.cache_write = self.cache_write.saturating_add(o.cache_write);
    }
}

/// Tokens per model (`{"<model>": {"input", "output", "cache_read", "cache_write"}}`); a
/// call whose model is not known is counted under `unknown`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Usage(pub BTreeMap<String, Tokens>);

/// The model name of calls whose model the agent did not say.
pub const UNKNOWN_MODEL: &str = "unknown";

impl Usage {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Count `tokens` for `model` (a name that is empty, too long or holds control
    /// characters counts as [`UNKNOWN_MODEL`]). Nothing is kept for zero tokens.
    pub fn add(&mut self, model: Option<&str>, tokens: Tokens) {
        if tokens.is_zero() {
            return;
        }
        let model = model
            .map(str::trim)
            .filter(|m| !m.is_empty() && m.len() <= MAX_MODEL && !m.chars().any(char::is_control))
            .unwrap_or(UNKNOWN_MODEL);
        *self.0.entry(model.to_string()).or_default() += tokens;
    }

    /// Add every model of `other`.
    pub fn merge(&mut self, other: &Usage) {
        for (m, t) in &other.0 {
            *self.0.entry(m.clone()).or_default() += *t;
        }
    }

    /// The sum over the models.
    pub fn total(&self) -> Tokens {
        let mut t = Tokens::default();
        for v in self.0.values() {
            t += *v;
        }
        t
    }
}

/// Prices per million tokens of one model, in whatever currency the user wrote them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// The names [`Price::parse`] accepts.
pub const PRICE_PARTS: [&str; 4] = ["input", "output", "cache_read", "cache_write"];

impl Price {
    /// `input=3,output=15,cache_read=0.3,cache_write=3.75`: each part at most once, any order,
    /// spaces allowed around them; a part left out costs nothing. `Err` says what is wrong.
    pub fn parse(text: &str) -> Result<Price, String> {
        let mut price = Price::default();
        let mut seen = vec![];
        for part in text.split(',').map(str::trim) {
            if part.is_empty() {
                continue;
            }
            let Some((name, value)) = part.split_once('=') else {
                return Err(format!("{part:?} is not <name>=<price>"));
            };
            let name = name.trim();
            let value: f64 = match value.trim().parse() {
                Ok(v) if f64::is_finite(v) && v >= 0.0 => v,
                _ => return Err(format!("{name}: {:?} is not a price", value.trim())),
            };
            if seen.contains(&name) {
                return Err(format!("{name} is given twice"));
            }
            seen.push(name);
            match name {
                "input" => price.input = value,
                "output" => price.output = value,
                "cache_read" => price.cache_read = value,
                "cache_write" => price.cache_write = value,
                other => return Err(format!("unknown part {other:?}")),
            }
        }
        if seen.is_empty() {
            return Err("no price given".into());
        }
        Ok(price)
    }

    /// The cost of `t` at these prices.
    pub fn cost(&self, t: &Tokens) -> f64 {
        (t.input as f64 * self.input
            + t.output as f64 * self.output
            + t.cache_read as f64 * self.cache_read
            + t.cache_write as f64 * self.cache_write)
            / 1_000_000.0
    }
}

/// The config key that prices `model`: `agentRewind.price.<model>`, the model's name in
/// lower case with every character a git variable name cannot hold (anything but letters,
/// digits and `-`) written as `-` (`gpt-5.4` → `agentRewind.price.gpt-5-4`).
pub fn price_key(model: &str) -> String {
    let name: String = model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    format!("agentRewind.price.{name}")
}

/// What a usage costs: the sum over the models that have a price, and the models that have
/// none (then the sum is a lower bound).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Cost {
    /// Rounded to millionths.
    pub amount: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
}

/// The cost of `usage` at `prices` (by model); `None` when no model of it has a price.
pub fn cost_of(usage: &Usage, prices: &BTreeMap<String, Price>) -> Option<Cost> {
    let mut cost = Cost::default();
    let mut priced = false;
    for (model, tokens) in &usage.0 {
        match prices.get(model) {
            Some(p) => {
                priced = true;
                cost.amount += p.cost(tokens);
            }
            None => cost.unpriced.push(model.clone()),
        }
    }
    cost.amount = (cost.amount * 1e6).round() / 1e6;
    priced.then_some(cost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_parse_and_bad_ones_say_why() {
        let p = Price::parse("input=3, output=15,cache_read=0.3,cache_write=3.75").unwrap();
        assert_eq!(p.output, 15.0);
        assert_eq!(p.cache_write, 3.75);
        let t = Tokens {
            input: 1_000_000,
            output: 2_000_000,
            cache_read: 0,
            cache_write: 0,
        };
        assert_eq!(p.cost(&t), 33.0);
        for bad in [
            "",
            "input",
            "input=x",
            "input=-1",
            "input=NaN",
            "input=1,input=2",
            "inptu=1",
        ] {
            assert!(Price::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(price_key("GPT-5.4"), "agentRewind.price.gpt-5-4");
        assert_eq!(
            price_key("anthropic/claude-x"),
            "agentRewind.price.anthropic-claude-x"
        );
    }

    #[test]
    fn usage_sums_per_model_and_skips_nothing_to_count() {
        let mut u = Usage::default();
        let t = Tokens {
            input: 1,
            output: 2,
            cache_read: 3,
            cache_write: 4,
        };
        u.add(Some("m"), t);
        u.add(Some("m"), t);
        u.add(None, t);
        u.add(Some("z"), Tokens::default());
        assert_eq!(u.0["m"].cache_write, 8);
        assert_eq!(u.0[UNKNOWN_MODEL].input, 1);
        assert!(!u.0.contains_key("z"));
        assert_eq!(u.total().total(), 30);
        let mut prices = BTreeMap::new();
        prices.insert("m".to_string(), Price::parse("input=1000000").unwrap());
        let c = cost_of(&u, &prices).unwrap();
        assert_eq!(c.amount, 2.0);
        assert_eq!(c.unpriced, [UNKNOWN_MODEL]);
        assert_eq!(cost_of(&u, &BTreeMap::new()), None);
    }
}
