//! Workflow files (TOML, docs/COMMANDS.md "Workflows"): parsing and validation. Every error
//! names the file, the line and the field. Pure: reads the file's text, touches nothing else.

use crate::model::StepKind;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::StepName;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use toml::Spanned;

/// A validated workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct Workflow {
    pub name: String,
    pub path: PathBuf,
    /// The file's text, for its digest.
    pub text: String,
    /// Steps in file order (which is a valid dependency order after validation).
    pub steps: Vec<StepDef>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepDef {
    pub name: StepName,
    pub kind: StepKind,
    /// Run by `sh -c` in the worktree; gates have none.
    pub run: Option<String>,
    pub inputs: Vec<String>,
    pub needs: Vec<StepName>,
    /// Safe to re-run after an interruption even when not deterministic.
    pub idempotent: bool,
    pub env: BTreeMap<String, String>,
    /// Done elsewhere (a worker, another host, a person): the runner records its `begin`
    /// and waits for `step end --attempt N`; no command.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub external: bool,
    /// Completion is refused while the files the step changed are uncommitted or HEAD has
    /// not moved past the commit the step began on.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub require_commit: bool,
}

impl StepDef {
    /// Whether an interrupted attempt may be re-run without asking.
    pub fn rerun_safe(&self) -> bool {
        self.kind == StepKind::Deterministic || self.idempotent
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    workflow: Option<RawHeader>,
    #[serde(default)]
    steps: Vec<RawStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    name: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    name: Spanned<String>,
    kind: Option<Spanned<String>>,
    run: Option<Spanned<String>>,
    #[serde(default)]
    inputs: Vec<Spanned<String>>,
    needs: Option<Vec<Spanned<String>>>,
    idempotent: Option<bool>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    external: Option<Spanned<bool>>,
    require_commit: Option<bool>,
}

/// Read and validate a workflow file.
pub fn load(path: &Path) -> Result<Workflow> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::usage(format!("cannot read workflow file {}: {e}", path.display())))?;
    parse(path, &text)
}

/// Where in the workflow file an error is: its name as shown and its text, for messages
/// `<file>:<line>: <field>: <message>`.
struct Locator<'a> {
    shown: String,
    text: &'a str,
}

impl Locator<'_> {
    fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    fn at(&self, span: std::ops::Range<usize>, field: &str, msg: String) -> Error {
        Error::usage(format!(
            "{}:{}: {field}: {msg}",
            self.shown,
            self.line_of(span.start)
        ))
    }

    /// toml's own error, with the line and the field it is in.
    fn toml_error(&self, e: toml::de::Error) -> Error {
        let offset = e.span().map(|s| s.start).unwrap_or(0);
        let message = agent_rewind_core::error::one_line(e.message());
        // Name the field: the table the error is in, and the key when toml names it.
        let mut field = table_at(self.text, offset);
        if let Some(key) = message
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
        {
            field = if field.is_empty() {
                key.to_string()
            } else {
                format!("{field}.{key}")
            };
        }
        let field = if field.is_empty() {
            String::new()
        } else {
            format!(" {field}:")
        };
        Error::usage(format!(
            "{}:{}:{field} {message}",
            self.shown,
            self.line_of(offset)
        ))
    }
}

/// Validate workflow `text` (as if read from `path`).
pub fn parse(path: &Path, text: &str) -> Result<Workflow> {
    let loc = Locator {
        shown: path.display().to_string(),
        text,
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| loc.toml_error(e))?;
    let name = match raw.workflow.and_then(|w| w.name) {
        Some(n) if !n.get_ref().trim().is_empty() => n.into_inner(),
        Some(n) => return Err(loc.at(n.span(), "workflow.name", "must not be empty".into())),
        None => {
            return Err(Error::usage(format!(
                "{}:1: workflow.name: missing ([workflow] name = \"…\")",
                loc.shown
            )));
        }
    };
    if raw.steps.is_empty() {
        return Err(Error::usage(format!(
            "{}:1: steps: the workflow has no [[steps]]",
            loc.shown
        )));
    }
    let mut steps: Vec<StepDef> = vec![];
    let mut spans: HashMap<String, std::ops::Range<usize>> = HashMap::new();
    let mut raw_needs: Vec<Vec<Spanned<String>>> = vec![];
    for (i, s) in raw.steps.into_iter().enumerate() {
        let step = step_def(&loc, i, &s, &spans)?;
        spans.insert(step.name.to_string(), s.name.span());
        raw_needs.push(match s.needs {
            Some(n) => n,
            // Default: the previous step.
            None => steps
                .last()
                .map(|p: &StepDef| vec![Spanned::new(0..0, p.name.to_string())])
                .unwrap_or_default(),
        });
        steps.push(StepDef {
            run: s.run.map(Spanned::into_inner),
            inputs: s.inputs.into_iter().map(Spanned::into_inner).collect(),
            env: s.env,
            ..step
        });
    }
    resolve_needs(&loc, &mut steps, raw_needs, &spans)?;
    let order = topological_order(&steps).map_err(|cycle| {
        let first = &cycle[0];
        loc.at(
            spans[first.as_str()].clone(),
            "needs",
            format!("cycle: {}", cycle.join(" -> ")),
        )
    })?;
    let steps = order.into_iter().map(|i| steps[i].clone()).collect();
    Ok(Workflow {
        name,
        path: path.to_path_buf(),
        text: text.to_string(),
        steps,
    })
}

/// Step `i` checked on its own (name, kind, command, inputs), without its command, inputs,
/// environment and needs, which the caller moves in and resolves.
fn step_def(
    loc: &Locator,
    i: usize,
    s: &RawStep,
    seen: &HashMap<String, std::ops::Range<usize>>,
) -> Result<StepDef> {
    let field = |f: &str| format!("steps[{i}].{f}");
    let step_name = StepName::new(s.name.get_ref().clone())
        .map_err(|e| loc.at(s.name.span(), &field("name"), e.message))?;
    if seen.contains_key(step_name.as_str()) {
        return Err(loc.at(
            s.name.span(),
            &field("name"),
            format!("duplicate step name {step_name:?}"),
        ));
    }
    let kind = match &s.kind {
        Some(k) => {
            StepKind::parse(k.get_ref()).map_err(|e| loc.at(k.span(), &field("kind"), e.message))?
        }
        None => StepKind::Agent,
    };
    let external = s.external.as_ref().is_some_and(|e| *e.get_ref());
    check_command(loc, s, kind, external, &field)?;
    for input in &s.inputs {
        if input.get_ref().trim().is_empty() {
            return Err(loc.at(input.span(), &field("inputs"), "an empty glob".into()));
        }
    }
    Ok(StepDef {
        name: step_name,
        kind,
        run: None,
        inputs: vec![],
        needs: vec![],
        idempotent: s.idempotent.unwrap_or(false),
        env: BTreeMap::new(),
        external,
        require_commit: s.require_commit.unwrap_or(false),
    })
}

/// A step has a command exactly when its kind runs one: a gate and an external step none,
/// every other kind a non-empty one.
fn check_command(
    loc: &Locator,
    s: &RawStep,
    kind: StepKind,
    external: bool,
    field: &dyn Fn(&str) -> String,
) -> Result<()> {
    if let Some(e) = s.external.as_ref().filter(|e| *e.get_ref()) {
        if kind == StepKind::Gate {
            return Err(loc.at(
                e.span(),
                &field("external"),
                "a gate already waits for a person; it cannot be external".into(),
            ));
        }
        if let Some(r) = &s.run {
            return Err(loc.at(
                r.span(),
                &field("run"),
                "an external step is done elsewhere and has no command".into(),
            ));
        }
    }
    match (&s.run, kind) {
        _ if external => Ok(()),
        (Some(r), StepKind::Gate) => Err(loc.at(
            r.span(),
            &field("run"),
            "a gate step waits for an approval and has no command".into(),
        )),
        (Some(r), _) if r.get_ref().trim().is_empty() => {
            Err(loc.at(r.span(), &field("run"), "must not be empty".into()))
        }
        (None, k) if k != StepKind::Gate => Err(loc.at(
            s.name.span(),
            &field("run"),
            format!("a {k} step needs a command (run = \"…\")"),
        )),
        _ => Ok(()),
    }
}

/// Each step's `needs`, checked against the steps there are, without duplicates.
fn resolve_needs(
    loc: &Locator,
    steps: &mut [StepDef],
    raw_needs: Vec<Vec<Spanned<String>>>,
    spans: &HashMap<String, std::ops::Range<usize>>,
) -> Result<()> {
    for (i, needs) in raw_needs.into_iter().enumerate() {
        for n in needs {
            if !spans.contains_key(n.get_ref()) {
                return Err(loc.at(
                    n.span(),
                    &format!("steps[{i}].needs"),
                    format!("unknown upstream step {:?}", n.get_ref()),
                ));
            }
            if n.get_ref() == steps[i].name.as_str() {
                return Err(loc.at(
                    n.span(),
                    &format!("steps[{i}].needs"),
                    "a step cannot need itself".into(),
                ));
            }
            let need = StepName::new(n.into_inner())?;
            if !steps[i].needs.contains(&need) {
                steps[i].needs.push(need);
            }
        }
    }
    Ok(())
}

/// The table that byte `offset` of `text` is in: `workflow`, `steps[i]`, or "" (top level).
fn table_at(text: &str, offset: usize) -> String {
    let mut table = String::new();
    let mut steps = 0;
    for line in text[..offset.min(text.len())].lines() {
        match line.trim() {
            "[[steps]]" => {
                table = format!("steps[{steps}]");
                steps += 1;
            }
            "[workflow]" => table = "workflow".into(),
            l if l.starts_with('[') => table = l.trim_matches(|c| c == '[' || c == ']').to_string(),
            _ => {}
        }
    }
    table
}

/// Indices in dependency order, keeping file order where free; a cycle is returned as the
/// names along it.
fn topological_order(steps: &[StepDef]) -> std::result::Result<Vec<usize>, Vec<String>> {
    let index: HashMap<&str, usize> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let mut state = vec![0u8; steps.len()]; // 0 new, 1 on stack, 2 done
    let mut out = vec![];
    fn visit(
        i: usize,
        steps: &[StepDef],
        index: &HashMap<&str, usize>,
        state: &mut [u8],
        stack: &mut Vec<usize>,
        out: &mut Vec<usize>,
    ) -> std::result::Result<(), Vec<String>> {
        match state[i] {
            2 => return Ok(()),
            1 => {
                let start = stack.iter().position(|&s| s == i).unwrap_or(0);
                let mut cycle: Vec<String> = stack[start..]
                    .iter()
                    .map(|&s| steps[s].name.to_string())
                    .collect();
                cycle.push(steps[i].name.to_string());
                return Err(cycle);
            }
            _ => {}
        }
        state[i] = 1;
        stack.push(i);
        for n in &steps[i].needs {
            visit(index[n.as_str()], steps, index, state, stack, out)?;
        }
        stack.pop();
        state[i] = 2;
        out.push(i);
        Ok(())
    }
    for i in 0..steps.len() {
        visit(i, steps, &index, &mut state, &mut vec![], &mut out)?;
    }
    Ok(out)
}

impl Workflow {
    pub fn step(&self, name: &str) -> Option<&StepDef> {
        self.steps.iter().find(|s| s.name.as_str() == name)
    }

    /// Steps that depend on `name`, directly or not.
    pub fn downstream_of(&self, name: &str) -> Vec<&StepDef> {
        let mut hit: Vec<&str> = vec![name];
        let mut out = vec![];
        for s in &self.steps {
            if s.needs.iter().any(|n| hit.contains(&n.as_str())) {
                hit.push(s.name.as_str());
                out.push(s);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Workflow> {
        parse(Path::new("wf.toml"), text)
    }

    #[test]
    fn parses_and_defaults_needs_to_previous_step() {
        let wf = p("[workflow]\nname = \"f\"\n[[steps]]\nname = \"a\"\nrun = \"true\"\n[[steps]]\nname = \"b\"\nkind = \"deterministic\"\nrun = \"true\"\n").unwrap();
        assert_eq!(wf.steps.len(), 2);
        assert_eq!(wf.steps[1].needs[0].as_str(), "a");
        assert_eq!(wf.steps[0].kind, StepKind::Agent);
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e =
            p("[workflow]\nname = \"f\"\n[[steps]]\nname = \"a\"\nkind = \"robot\"\nrun = \"x\"\n")
                .unwrap_err();
        assert!(
            e.message
                .starts_with("wf.toml:5: steps[0].kind: unknown step kind"),
            "{}",
            e.message
        );
        let e = p("[workflow]\nname = \"f\"\n[[steps]]\nname = \"a\"\nrun = \"x\"\n[[steps]]\nname = \"a\"\nrun = \"y\"\n").unwrap_err();
        assert!(
            e.message.starts_with("wf.toml:7: steps[1].name: duplicate"),
            "{}",
            e.message
        );
        let e = p("[workflow]\nname = \"f\"\n[[steps]]\nname = \"a\"\nrun = \"x\"\nneeds = [\"b\"]\n[[steps]]\nname = \"b\"\nrun = \"y\"\n").unwrap_err();
        assert!(e.message.contains("cycle: "), "{}", e.message);
        let e =
            p("[workflow]\nname = \"f\"\n[[steps]]\nname = \"a\"\nrun = \"x\"\nneeds = [\"zz\"]\n")
                .unwrap_err();
        assert!(
            e.message
                .starts_with("wf.toml:6: steps[0].needs: unknown upstream step \"zz\""),
            "{}",
            e.message
        );
        let e =
            p("[workflow]\nname = \"f\"\n[[steps]]\nname = \"a/b\"\nrun = \"x\"\n").unwrap_err();
        assert!(
            e.message
                .starts_with("wf.toml:4: steps[0].name: invalid step name"),
            "{}",
            e.message
        );
        let e = p("[workflow]\nname = \"f\"\n[[steps]]\nname = \"a\"\nrun = \n").unwrap_err();
        assert!(e.message.starts_with("wf.toml:5:"), "{}", e.message);
        let e = p("[workflow]\nname = \"f\"\n[[steps]]\nname = \"a\"\nrun = \"x\"\ncolour = 1\n")
            .unwrap_err();
        assert!(e.message.contains("colour"), "{}", e.message);
        let e =
            p("[workflow]\nname = \"f\"\n[[steps]]\nname = \"a\"\nexternal = true\nrun = \"x\"\n")
                .unwrap_err();
        assert!(
            e.message
                .starts_with("wf.toml:6: steps[0].run: an external step"),
            "{}",
            e.message
        );
    }

    #[test]
    fn external_steps_need_no_command() {
        let wf = p("[workflow]\nname = \"f\"\n[[steps]]\nname = \"a\"\nexternal = true\nrequire_commit = true\n")
            .unwrap();
        assert!(wf.steps[0].external && wf.steps[0].require_commit);
        assert_eq!(wf.steps[0].run, None);
    }
}
