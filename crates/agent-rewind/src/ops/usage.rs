//! Token usage read back: the `usage` of turns summed per run (its own turns, and what a
//! rewound or forked run inherited from the runs it came from), per agent and per model, and
//! priced with `agentRewind.price.<model>` (`model::usage::Price`; there are no built-in
//! prices). For `show`, `list <run>`, `stats` and `view`.
//!
//! Reads notes and configuration only; never writes, and never prints.

use crate::catalog::{Catalog, Checkpoint};
use crate::model::usage::{Cost, Price, cost_of, price_key};
use crate::model::{Tokens, Usage};
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use serde::Serialize;
use std::collections::BTreeMap;

/// Prices per model, as configured.
pub type Prices = BTreeMap<String, Price>;

/// The configured price of each of `models` that has one. A value that does not parse is an
/// error naming its key.
pub fn prices<'a>(store: &Store, models: impl IntoIterator<Item = &'a String>) -> Result<Prices> {
    let config = store.config();
    let mut out = Prices::new();
    for model in models {
        let key = price_key(model);
        let Some(text) = config.string(&key) else {
            continue;
        };
        let price = Price::parse(&text).map_err(|why| {
            Error::usage(format!("bad price config value {text:?} for {key}: {why}"))
                .with_hint("a price is per million tokens, like input=3,output=15,cache_read=0.3,cache_write=3.75")
        })?;
        out.insert(model.clone(), price);
    }
    Ok(out)
}

/// The prices of every model `usage` names.
pub fn prices_of(store: &Store, usage: &Usage) -> Result<Prices> {
    prices(store, usage.0.keys())
}

/// The prices of every model the `usage` of `checkpoints` names.
pub fn prices_of_all<'a>(
    store: &Store,
    checkpoints: impl Iterator<Item = &'a Checkpoint>,
) -> Result<Prices> {
    let mut all = Usage::default();
    checkpoints.for_each(|c| all.merge(&c.line().usage));
    prices_of(store, &all)
}

/// Tokens of one group (a model, an agent, a run), with their cost when priced.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Spent {
    /// What the group is: a model's, an agent's or a run's name.
    pub name: String,
    #[serde(flatten)]
    pub tokens: Tokens,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

impl Spent {
    fn of(name: &str, usage: &Usage, prices: &Prices) -> Spent {
        Spent {
            name: name.to_string(),
            tokens: usage.total(),
            cost: cost_of(usage, prices),
        }
    }
}

/// A usage priced: its total, and per model.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Priced {
    #[serde(flatten)]
    pub total: Spent,
    pub models: Vec<Spent>,
}

impl Priced {
    pub fn of(name: &str, usage: &Usage, prices: &Prices) -> Priced {
        Priced {
            total: Spent::of(name, usage, prices),
            models: usage
                .0
                .iter()
                .map(|(m, t)| {
                    let mut one = Usage::default();
                    one.0.insert(m.clone(), *t);
                    Spent::of(m, &one, prices)
                })
                .collect(),
        }
    }
}

/// Usage summed over checkpoints: all of them, and per agent.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub all: Usage,
    pub agents: BTreeMap<String, Usage>,
    /// Turns that carried usage.
    pub turns: usize,
}

impl Tally {
    pub fn add(&mut self, cp: &Checkpoint) {
        let line = cp.line();
        if line.usage.is_empty() {
            return;
        }
        self.turns += 1;
        self.all.merge(&line.usage);
        let agent = line.recording_agent().unwrap_or("-").to_string();
        self.agents.entry(agent).or_default().merge(&line.usage);
    }

    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }
}

/// One run's usage: its own turns, and those of the runs it was rewound or forked from, up
/// to where it branched off.
#[derive(Debug, Clone, Serialize)]
pub struct RunUsage {
    pub run: String,
    /// Its own turns: total, per model, and per agent.
    pub own: Priced,
    pub agents: Vec<Spent>,
    /// Turns of its own that carried usage.
    pub turns: usize,
    /// What it inherited (`None` for a run that was neither rewound nor forked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inherited: Option<Priced>,
    /// Own and inherited together.
    pub total: Spent,
}

/// The usage of `run` (its chain read through `catalog`), priced.
pub fn run_usage(store: &Store, catalog: &mut Catalog, run: &RunId) -> Result<RunUsage> {
    let chain = catalog.run_chain(run)?;
    let mut own = Tally::default();
    chain.iter().for_each(|c| own.add(c));
    let inherited = match chain.first() {
        Some(root) if root.line().origin().is_some() => {
            let mut t = Tally::default();
            if let Some(parent) = root.commit.parents.first() {
                for cp in catalog.lineage_chain(*parent, usize::MAX)? {
                    t.add(&cp);
                }
            }
            Some(t)
        }
        _ => None,
    };
    let mut all = own.all.clone();
    if let Some(t) = &inherited {
        all.merge(&t.all);
    }
    let prices = prices_of(store, &all)?;
    Ok(RunUsage {
        run: run.to_string(),
        own: Priced::of(run.as_str(), &own.all, &prices),
        agents: own
            .agents
            .iter()
            .map(|(a, u)| Spent::of(a, u, &prices))
            .collect(),
        turns: own.turns,
        inherited: inherited.map(|t| Priced::of("inherited", &t.all, &prices)),
        total: Spent::of(run.as_str(), &all, &prices),
    })
}

/// Usage over several runs (their own turns only, so that a run inherited by another is
/// counted once): per run, per agent and per model.
#[derive(Debug, Clone, Serialize)]
pub struct UsageReport {
    pub runs: Vec<RunUsage>,
    pub agents: Vec<Spent>,
    pub models: Vec<Spent>,
    pub total: Spent,
}

/// The usage report of `runs`.
pub fn report(store: &Store, runs: &[RunId]) -> Result<UsageReport> {
    let mut catalog = Catalog::new(store);
    let mut all = Usage::default();
    let mut agents: BTreeMap<String, Usage> = BTreeMap::new();
    let mut per_run = vec![];
    for run in runs {
        let mut own = Tally::default();
        for cp in catalog.run_chain(run)? {
            own.add(&cp);
        }
        all.merge(&own.all);
        for (a, u) in &own.agents {
            agents.entry(a.clone()).or_default().merge(u);
        }
        per_run.push(run_usage(store, &mut catalog, run)?);
    }
    let prices = prices_of(store, &all)?;
    let priced = Priced::of("total", &all, &prices);
    Ok(UsageReport {
        runs: per_run,
        agents: agents
            .iter()
            .map(|(a, u)| Spent::of(a, u, &prices))
            .collect(),
        models: priced.models,
        total: priced.total,
    })
}
