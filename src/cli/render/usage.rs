//! Token usage as text: a turn's tokens per model (`show`), a run's own and inherited tokens
//! per agent and model (`list <run>`), the runs behind a range's lines (`stats`), each with
//! its cost when `agentRewind.price.<model>` prices it. Formatting only.

use super::{escape, table};
use agent_rewind::model::Tokens;
use agent_rewind::model::usage::Cost;
use agent_rewind::ops::usage::{Priced, RunUsage, Spent, UsageReport};

/// `1000 in, 200 out, 400 cache read, 30 cache write`.
pub fn tokens(t: &Tokens) -> String {
    format!(
        "{} in, {} out, {} cache read, {} cache write",
        t.input, t.output, t.cache_read, t.cache_write
    )
}

/// `0.0123`, `≥ 0.0123 (no price: m)` when some models have none, `-` when none has one.
pub fn cost(c: Option<&Cost>) -> String {
    match c {
        None => "-".into(),
        Some(c) if c.unpriced.is_empty() => format!("{}", c.amount),
        Some(c) => format!(
            "≥ {} (no price: {})",
            c.amount,
            escape(&c.unpriced.join(", "))
        ),
    }
}

/// `tokens; cost x` of one group, the cost only when it has one.
pub fn spent(s: &Spent) -> String {
    match &s.cost {
        Some(c) => format!("{}; cost {}", tokens(&s.tokens), cost(Some(c))),
        None => tokens(&s.tokens),
    }
}

/// `show`'s lines of a turn's usage: one per model, and the total cost.
pub fn shown(p: &Priced) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = p
        .models
        .iter()
        .map(|m| ("tokens".into(), format!("{} {}", escape(&m.name), spent(m))))
        .collect();
    if let Some(c) = &p.total.cost {
        out.push(("cost".into(), cost(Some(c))));
    }
    out
}

fn rows(kind: &str, list: &[Spent]) -> Vec<Vec<(String, String)>> {
    list.iter()
        .map(|s| {
            let cell = |v: String| (v.clone(), v);
            vec![
                cell(kind.into()),
                cell(escape(&s.name).into_owned()),
                cell(s.tokens.input.to_string()),
                cell(s.tokens.output.to_string()),
                cell(s.tokens.cache_read.to_string()),
                cell(s.tokens.cache_write.to_string()),
                cell(cost(s.cost.as_ref())),
            ]
        })
        .collect()
}

const HEADER: [&str; 7] = [
    "TOKENS",
    "OF",
    "INPUT",
    "OUTPUT",
    "CACHE READ",
    "CACHE WRITE",
    "COST",
];

/// A run's usage: its own total, per agent and per model; what it inherited, per model;
/// both together.
pub fn run_usage(u: &RunUsage) -> String {
    let mut r = rows("run", std::slice::from_ref(&u.own.total));
    r.extend(rows("agent", &u.agents));
    r.extend(rows("model", &u.own.models));
    if let Some(inh) = &u.inherited {
        r.extend(rows("inherited", std::slice::from_ref(&inh.total)));
        r.extend(rows("inherited model", &inh.models));
        r.extend(rows("with inherited", std::slice::from_ref(&u.total)));
    }
    table(&HEADER, r)
}

/// `stats`' tokens: per run (own, and inherited), per agent, per model, and the total.
pub fn report(rep: &UsageReport) -> String {
    let mut r = vec![];
    for u in &rep.runs {
        r.extend(rows("run", std::slice::from_ref(&u.own.total)));
        if let Some(inh) = &u.inherited {
            let mut i = inh.total.clone();
            i.name = format!("{} inherited", u.run);
            r.extend(rows("run", &[i]));
        }
    }
    r.extend(rows("agent", &rep.agents));
    r.extend(rows("model", &rep.models));
    r.extend(rows("total", std::slice::from_ref(&rep.total)));
    table(&HEADER, r)
}
