//! Bad workflow files get precise errors and record nothing.

use super::{Wf, stderr};
use crate::common::refs;

// ---------------------------------------------------------------------------------------
// 7. Bad workflow files.

/// 1-based number of the `nth` (0-based) line of `text` that contains `needle`.
fn line_of(text: &str, needle: &str, nth: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .nth(nth)
        .unwrap_or_else(|| panic!("{needle:?} not in {text}"))
        .0
        + 1
}

#[test]
fn bad_workflow_files_get_precise_errors_and_record_nothing() {
    let wf = Wf::feature();
    let head = "[workflow]\nname = \"bad\"\n\n";
    let step = |name: &str, extra: &str| {
        format!("[[steps]]\nname = \"{name}\"\nrun = \"true\"\n{extra}\n")
    };
    // (file name, text, expected prefix after `<file>:`, text the message must contain)
    let mut cases: Vec<(&str, String, String, &str)> = vec![];

    let t = format!("{head}{}", step("a", "kind = \"robot\""));
    let l = line_of(&t, "robot", 0);
    cases.push(("kind.toml", t, format!("{l}: steps[0].kind:"), "robot"));

    let t = format!("{head}{}{}", step("a", ""), step("a", ""));
    let l = line_of(&t, "name = \"a\"", 1);
    cases.push(("dup.toml", t, format!("{l}: steps[1].name:"), "duplicate"));

    let t = format!(
        "{head}{}{}{}",
        step("a", "needs = [\"c\"]"),
        step("b", ""),
        step("c", "")
    );
    let l = line_of(&t, "name = \"a\"", 0);
    cases.push(("cycle.toml", t, format!("{l}: needs:"), "cycle"));

    let t = format!("{head}{}{}", step("a", ""), step("b", "needs = [\"zz\"]"));
    let l = line_of(&t, "zz", 0);
    cases.push((
        "upstream.toml",
        t,
        format!("{l}: steps[1].needs:"),
        "\"zz\"",
    ));

    let t = format!("{head}{}", step("a/b", ""));
    let l = line_of(&t, "a/b", 0);
    cases.push(("name.toml", t, format!("{l}: steps[0].name:"), "a/b"));

    let t = format!("{head}[[steps]]\nname = \"a\"\nrun = \n");
    let l = line_of(&t, "run =", 0);
    cases.push(("syntax.toml", t, format!("{l}:"), ""));

    let t = format!("[workflow]\n\n{}", step("a", ""));
    cases.push(("noname.toml", t, "1: workflow.name:".into(), "missing"));

    let t = format!(
        "{head}{}[[steps]]\nname = \"review\"\nkind = \"gate\"\nrun = \"echo ok\"\n",
        step("a", "")
    );
    let l = line_of(&t, "echo ok", 0);
    cases.push(("gate.toml", t, format!("{l}: steps[1].run:"), "gate"));

    let t = format!("{head}{}", step("a", "colour = \"blue\""));
    let l = line_of(&t, "colour", 0);
    cases.push(("unknown.toml", t, format!("{l}: steps[0]"), "colour"));

    let mut failures = vec![];
    for (name, text, prefix, needle) in &cases {
        let rel = format!("fixtures/{name}");
        wf.repo.write(&rel, text);
        let out = wf.out(&["run", &rel, "--run", "bad"]);
        let err = stderr(&out);
        let first = err.lines().next().unwrap_or("");
        let msg = first.strip_prefix("error: ").unwrap_or(first);
        let expected = format!("{rel}:{prefix}");
        if out.status.code() != Some(2) || !msg.starts_with(&expected) || !msg.contains(needle) {
            failures.push(format!(
                "{name}: exit {:?}, expected a message starting with {expected:?} and \
                 containing {needle:?}, got {first:?}",
                out.status.code()
            ));
        }
        assert!(
            refs(wf.path(), "refs/agent-runs/").is_empty()
                && refs(wf.path(), "refs/notes/agent-runs/").is_empty(),
            "{name}: a bad workflow recorded something"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
