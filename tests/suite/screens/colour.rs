//! `list`, `status`, `show` and `log` colour as git decides: `color.<command>`, then
//! `color.ui`, from `git -c` or the repository's config, as `diff` and `blame` do.

use super::{hand_recorded_run, on_terminal, through_git};

const READERS: [&[&str]; 5] = [
    &["list"],
    &["status"],
    &["show", "r1"],
    &["log", "r1"],
    &["log", "r1", "--graph"],
];

#[test]
fn git_s_colour_settings_decide_the_colour_of_every_read_command() {
    let repo = hand_recorded_run();
    for args in READERS {
        // On a terminal: coloured by default, never with `git -c color.ui=never`.
        let plain = on_terminal(&repo, &[], args);
        assert!(plain.contains("\x1b["), "{args:?} on a terminal: {plain:?}");
        let never = on_terminal(&repo, &["-c", "color.ui=never"], args);
        assert!(
            !never.contains("\x1b["),
            "{args:?} color.ui=never: {never:?}"
        );
        // Piped: plain by default, coloured with `color.ui=always`.
        assert!(!through_git(&repo, &[], args).contains('\x1b'), "{args:?}");
        let always = through_git(&repo, &["-c", "color.ui=always"], args);
        assert!(
            always.contains("\x1b["),
            "{args:?} color.ui=always: {always:?}"
        );
    }
    // The repository's config, and `color.<command>` before `color.ui`.
    repo.git(&["config", "color.ui", "always"]);
    repo.git(&["config", "color.list", "never"]);
    assert!(!through_git(&repo, &[], &["list"]).contains('\x1b'));
    assert!(through_git(&repo, &[], &["status"]).contains("\x1b["));
    let never = on_terminal(&repo, &["-c", "color.status=false"], &["status"]);
    assert!(!never.contains("\x1b["), "{never:?}");
    // A value git would refuse is refused, naming the key.
    let out = crate::common::git_cmd(repo.path())
        .env("PATH", crate::common::path_with_tool())
        .args(["-c", "color.show=sometimes", "agent-rewind", "show", "r1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("color.show"), "{err}");
}
