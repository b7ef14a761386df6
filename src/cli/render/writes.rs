//! Human output of the commands that write: rewind/fork, restore, revert, undo and steer —
//! what was written, set aside, left in place, and what to do next.

use super::{Style, escape, short};
use agent_rewind::ops;
use agent_rewind::store::ChangeKind;

/// Most paths listed one by one in human output (`--json` lists them all).
const MAX_LISTED: usize = 50;

/// The paths a checkout changed, one a line: what was removed, replaced (the previous
/// content set aside in the backup), added.
pub fn file_changes(files: &[agent_rewind::materialize::PathChange]) -> String {
    let mut s = String::new();
    for f in files.iter().take(MAX_LISTED) {
        let what = match f.change {
            ChangeKind::Deleted => "removed ",
            ChangeKind::Added => "added   ",
            ChangeKind::Modified | ChangeKind::TypeChanged => "replaced",
        };
        s.push_str(&format!("  {what}  {}\n", f.path));
    }
    if files.len() > MAX_LISTED {
        s.push_str(&format!(
            "  … and {} more (`--json` lists them all)\n",
            files.len() - MAX_LISTED
        ));
    }
    s
}

pub fn rewound(o: &ops::rewind::RewindOutcome, st: &Style) -> String {
    // A dry run without --run names no id: the real rewind generates it.
    let new_run = match &o.run {
        Some(run) => format!("{} run {}", o.relation, st.bold(run)),
        None => format!("{} into a new run", o.relation),
    };
    let mut s = format!(
        "{}{} from {}{} ({})\n",
        if o.dry_run {
            "dry run, nothing written: would be "
        } else {
            ""
        },
        new_run,
        o.source_run,
        o.from_step
            .as_ref()
            .map(|x| format!("/{x}"))
            .unwrap_or_default(),
        st.id(&short(&o.from_checkpoint))
    );
    if let Some(b) = &o.branch {
        s.push_str(&format!("  branch    {}\n", escape(b)));
    } else if o.dry_run && o.run.is_none() {
        s.push_str(
            "  run id    generated when the run is made (`--run ID` chooses it, and the default branch agent-runs/ID)\n",
        );
    }
    if let Some(w) = &o.worktree {
        s.push_str(&format!("  worktree  {}\n", escape(w)));
    }
    s.push_str(&format!(
        "  session   {}\n",
        escape(o.sdk_session_id.as_deref().unwrap_or("-"))
    ));
    if let Some(c) = &o.resume_command {
        s.push_str(&format!("  resume    {}\n", escape(c)));
    }
    if let Some(c) = &o.conversation {
        s.push_str(&format!("            ({})\n", escape(c)));
    }
    if !o.inherited_steps.is_empty() {
        s.push_str(&format!("  inherited {}\n", o.inherited_steps.join(", ")));
    }
    if o.source_archived {
        s.push_str(&format!("  archived  {}\n", o.source_run));
    }
    if o.dry_run {
        if o.files.is_empty() {
            s.push_str("no file of this worktree would change\n");
        } else {
            s.push_str(&format!(
                "files this worktree would change ({}):\n",
                o.files.len()
            ));
            s.push_str(&file_changes(&o.files));
        }
        s.push_str(&left_in_place(&o.left_in_place));
    }
    if let Some(b) = &o.backup {
        if !o.files.is_empty() {
            s.push_str(&format!(
                "files changed in this worktree ({}):\n",
                o.files.len()
            ));
            s.push_str(&file_changes(&o.files));
        }
        s.push_str(&format!(
            "  backup    {} (`git agent-rewind undo` brings the previous state back)\n",
            short(&b.commit)
        ));
        s.push_str(&left_in_place(&b.left_in_place));
    }
    s.trim_end().to_string()
}

/// One line per file an overwrite left as it was (`Backup::left_in_place`).
pub fn left_in_place(files: &[agent_rewind::model::Excluded]) -> String {
    files
        .iter()
        .map(|e| {
            format!(
                "  left in place {} ({})\n",
                agent_rewind_core::quote::display_text_path(&e.path),
                e.reason
            )
        })
        .collect()
}

pub fn steer(o: &ops::steer::SteerOutcome, st: &Style) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "{} {}\n",
        if o.applied { "steered" } else { "would steer" },
        st.bold(&o.run)
    ));
    for e in &o.edits {
        s.push_str(&format!("  edit       {}\n", escape(e)));
    }
    for i in &o.invalidated {
        s.push_str(&format!("  invalidate {i}\n"));
    }
    s.push_str("blast radius (re-run by the next resume):\n");
    if o.blast_radius.is_empty() {
        s.push_str("  (nothing)\n");
    }
    for i in &o.blast_radius {
        s.push_str(&format!("  {:<14} {}\n", i.step, i.reason));
    }
    match &o.checkpoint {
        Some(c) => s.push_str(&format!("recorded steer checkpoint {}", short(c))),
        None => s.push_str("nothing changed; add --yes to apply"),
    }
    s
}

/// The plan or result of `revert`: one line per file, then what was written.
pub fn reverted(out: &agent_rewind::ops::revert::RevertOutcome) -> String {
    let mut s = format!(
        "{} {} of run {} ({}..{}; paths: {})\n",
        if out.dry_run {
            "would revert"
        } else {
            "reverted"
        },
        out.scope,
        out.run,
        short(&out.from),
        short(&out.to),
        rule_words(out.rule)
    );
    file_plans(&mut s, &out.files, "nothing to revert");
    backed_up(&mut s, out.backup.as_ref());
    s.trim_end().to_string()
}

/// The plan or result of `pick`: one line per file, what was written, where it was recorded.
pub fn picked(out: &agent_rewind::ops::pick::PickOutcome) -> String {
    let mut s = format!(
        "{} {} of run {} ({}..{}; paths: {})\n",
        if out.dry_run { "would pick" } else { "picked" },
        out.scope,
        out.run,
        short(&out.from),
        short(&out.to),
        rule_words(out.rule)
    );
    file_plans(&mut s, &out.files, "nothing to pick");
    backed_up(&mut s, out.backup.as_ref());
    if let (Some(run), Some(cp)) = (&out.recorded_in, &out.checkpoint) {
        s.push_str(&format!(
            "  recorded as checkpoint {} of run {run}\n",
            short(cp)
        ));
    }
    s.trim_end().to_string()
}

fn rule_words(rule: agent_rewind::ops::revert::PathRule) -> &'static str {
    use agent_rewind::ops::revert::PathRule;
    match rule {
        PathRule::Touched => "the ones its agent touched",
        PathRule::Diff => "every path that differs",
    }
}

/// One line per path of a `revert` or `pick` plan: what is done to it, and why.
fn file_plans(s: &mut String, files: &[agent_rewind::ops::revert::FilePlan], nothing: &str) {
    use agent_rewind::ops::revert::Action;
    for f in files {
        let what = match f.action {
            Action::Revert => "revert  ",
            Action::Pick => "pick    ",
            Action::Merge => "merge   ",
            Action::Keep => "keep    ",
            Action::Conflict => "conflict",
            Action::Markers => "markers ",
        };
        match &f.reason {
            Some(r) => s.push_str(&format!("  {what} {} ({r})\n", escape(&f.path))),
            None => s.push_str(&format!("  {what} {}\n", escape(&f.path))),
        }
    }
    if files.is_empty() {
        s.push_str(&format!("  {nothing}\n"));
    }
}

fn backed_up(s: &mut String, backup: Option<&agent_rewind::materialize::Backup>) {
    if let Some(b) = backup {
        s.push_str(&format!(
            "  backup {} (`git agent-rewind undo` brings the previous state back)\n",
            short(&b.commit)
        ));
    }
}

pub fn undone(o: &ops::undo::UndoOutcome) -> String {
    let mut s = format!("restored the state before: {}\n", o.restored.reason);
    if o.active_restored && o.active_run != o.active_run_before {
        s.push_str(&format!(
            "  active run: {} (was {})\n",
            o.active_run.as_deref().unwrap_or("none"),
            o.active_run_before.as_deref().unwrap_or("none")
        ));
    }
    for r in &o.unarchived {
        s.push_str(&format!("  run {r} is no longer archived\n"));
    }
    for r in &o.archived {
        s.push_str(&format!(
            "  run {r} archived, not deleted (`git agent-rewind delete {r}` removes it)\n"
        ));
    }
    if let Some(b) = &o.branch_left {
        s.push_str(&format!(
            "  branch {b} kept (`git branch -D {b}` removes it)\n"
        ));
    }
    s.push_str(&format!(
        "  backup of the state just replaced: {} (`git agent-rewind undo` brings it back)",
        short(&o.backup.commit)
    ));
    let left = left_in_place(&o.backup.left_in_place);
    if !left.is_empty() {
        s.push('\n');
        s.push_str(left.trim_end());
    }
    s
}

/// `undo --list`: one line per backup of this worktree, newest first.
pub fn backups(list: &[agent_rewind::materialize::Backup]) -> String {
    if list.is_empty() {
        return "no backup was taken in this worktree".into();
    }
    let mut s = String::new();
    for (i, b) in list.iter().enumerate() {
        let when = b.taken_at.map(|t| t.to_string()).unwrap_or_default();
        let branch = b
            .branch
            .as_deref()
            .map(|r| r.strip_prefix("refs/heads/").unwrap_or(r))
            .unwrap_or("detached HEAD");
        s.push_str(&format!(
            "{}  {when}  before: {} (on {branch}){}\n",
            short(&b.commit),
            escape(&b.reason),
            if i == 0 { "  <- `undo`" } else { "" }
        ));
    }
    s.push_str("`git agent-rewind undo <backup>` brings back the state saved in one of them");
    s
}

/// What `trust <run>` would let run: the workflow, where its text is stored, how and where
/// each step runs, and every step's command, `env` (a variable that changes which program
/// runs marked `(!)`, with what it changes) and `inputs` (escaped: all of it is someone
/// else's text).
pub fn trust_plan(p: &ops::trust::TrustPlan, st: &Style) -> String {
    let mut s = format!(
        "workflow {} of run {} ({}, {})\n",
        st.bold(&escape(&p.workflow)),
        p.run,
        escape(&p.from),
        p.digest
    );
    s.push_str(&format!(
        "each step runs as `{} <command>` in {}, with your environment and the step's env\n",
        p.shell,
        escape(&p.folder)
    ));
    for step in &p.steps {
        let what = match (&step.run, step.external) {
            (Some(cmd), _) => format!("$ {}", escape(cmd)),
            (None, true) => "(external: done elsewhere, no command)".to_string(),
            (None, false) => "(no command)".to_string(),
        };
        s.push_str(&format!("  {:<14} {what}\n", step.name.as_str()));
        for (key, value) in &step.env {
            let risky = p
                .changes_what_runs
                .iter()
                .find(|r| r.step == step.name.as_str() && r.key == *key);
            let mark = match risky {
                Some(r) => format!("  {} changes {}", st.bold("(!)"), r.why),
                None => String::new(),
            };
            s.push_str(&format!(
                "  {:<14} env {}={}{mark}\n",
                "",
                escape(key),
                escape(value)
            ));
        }
        if !step.inputs.is_empty() {
            let inputs: Vec<String> = step.inputs.iter().map(|i| escape(i).into_owned()).collect();
            s.push_str(&format!("  {:<14} inputs {}\n", "", inputs.join(", ")));
        }
    }
    if !p.changes_what_runs.is_empty() {
        s.push_str(&format!(
            "{} {} which programs run or what they load: trust only if you expect that\n",
            st.bold("(!)"),
            agent_rewind_core::words::count(
                p.changes_what_runs.len(),
                "env variable above changes",
                "env variables above change"
            )
        ));
    }
    s
}

/// The outcome of `trust`.
pub fn trusted(p: &ops::trust::TrustPlan) -> String {
    if p.already_trusted {
        format!(
            "already trusted here; `git agent-rewind resume {}` runs it",
            p.run
        )
    } else {
        format!(
            "trusted {}: `git agent-rewind resume {}` runs it",
            p.digest, p.run
        )
    }
}
