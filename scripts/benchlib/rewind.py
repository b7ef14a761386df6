"""Sections `rewind` and `revert`: rewind/fork vs git checkout/worktree add, revert vs restore."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)


@section("rewind", "rewind and fork vs git checkout / git worktree add")
def bench_rewind(ctx: Context) -> SectionResult:
    """Rewind in place (backup + write the differing files + branch + index) vs
    `git checkout -q -b <branch> <commit>` of the same commit, with a small and a large
    difference between the current state and the target; and fork into a new linked worktree
    vs `git worktree add --detach`. Clean worktrees, interleaved, state reset (untimed)
    between samples."""
    a = ctx.args
    nfiles = parse_size(a.rewind_size)
    label = size_label(nfiles)
    rows, raw, notes = [], {}, []
    for kind, changed in (("small", 10), ("large", max(10, nfiles // 10))):
        repo = build_repo(ctx, f"rewind-{label}-{kind}", nfiles)
        ctx.tool(repo, "start", "--run", "src")
        target = json.loads(ctx.tool(repo, "checkpoint", "base", "--json").stdout)["checkpoint"]
        base_commit = ctx.git(repo, "rev-parse", "HEAD").strip()
        step = max(1, nfiles // changed)
        for k in range(changed):
            (repo / file_path(min(nfiles - 1, k * step))).write_text(file_content(k, 99) + "changed\n")
        ctx.git(repo, "commit", "-q", "-a", "-m", f"{changed} files changed")
        ctx.tool(repo, "checkpoint", "later")
        time.sleep(2.1)
        ctx.git(repo, "update-index", "--refresh", check=False)
        tool_t, git_t = [], []
        log(f"rewind {label} ({kind}: {changed} files differ): {a.warmup} warm-up + {a.rewind_iterations} measured")
        for it in range(a.warmup + a.rewind_iterations):
            order = ("tool", "git") if it % 2 == 0 else ("git", "tool")
            for who in order:
                if who == "tool":
                    t, _ = timed(lambda: ctx.tool(repo, "rewind", "src", "--to", target, "--run", f"rw{it}", "--branch", f"rw{it}"))
                    got = ctx.git(repo, "rev-parse", "HEAD").strip()
                    if got != base_commit or ctx.git(repo, "status", "--porcelain").strip():
                        raise SystemExit(f"rewind {it}: HEAD {got} or a dirty worktree after rewind")
                    (tool_t if it >= a.warmup else []).append(t)
                else:
                    t, _ = timed(lambda: ctx.git(repo, "checkout", "-q", "-b", f"co{it}", base_commit))
                    (git_t if it >= a.warmup else []).append(t)
                # Back to the later state (untimed).
                ctx.git(repo, "checkout", "-q", "-f", "main")
        tm, gm = statistics.median(tool_t), statistics.median(git_t)
        rows.append([f"rewind in place, {label} files, {changed} differ", ms(tm), ms(gm), f"**{ratio(tm, gm)}**",
                     "yes" if tm <= 1.5 * gm else "**no**"])
        raw[f"rewind-{kind}"] = {"tool": tool_t, "git": git_t}
        if kind == "small":
            # Fork into a new linked worktree vs git worktree add, same repository.
            tool_t, git_t = [], []
            for it in range(a.warmup + a.rewind_iterations):
                order = ("tool", "git") if it % 2 == 0 else ("git", "tool")
                for who in order:
                    path = ctx.root / f"wt-{who}-{it}"
                    if who == "tool":
                        t, _ = timed(lambda: ctx.tool(repo, "fork", "src", "--to", target, "--run", f"fk{it}",
                                                      "--worktree", str(path)))
                        (tool_t if it >= a.warmup else []).append(t)
                    else:
                        t, _ = timed(lambda: ctx.git(repo, "worktree", "add", "-q", "-b", f"wt{it}", str(path), base_commit))
                        (git_t if it >= a.warmup else []).append(t)
                    ctx.git(repo, "worktree", "remove", "--force", str(path))
            tm, gm = statistics.median(tool_t), statistics.median(git_t)
            rows.append([f"fork into a new worktree, {label} files", ms(tm), ms(gm), f"**{ratio(tm, gm)}**",
                         "yes" if tm <= 1.5 * gm else "**no**"])
            raw["fork-worktree"] = {"tool": tool_t, "git": git_t}
    notes.append("Each rewind sample also takes the backup of the current state (a full status pass and "
                 "a backup commit) and creates the new run; `git checkout` does neither. Checked after every "
                 "rewind: HEAD is the checkpoint's commit and `git status --porcelain` is empty.")
    return SectionResult(headers=["operation", "tool median", "git median", "ratio", "≤ 1.5×"], rows=rows, notes=notes, raw=raw)


@section("revert", "revert of one run vs restore of the same paths")
def bench_revert(ctx: Context) -> SectionResult:
    """A run changed 10 tracked files (uncommitted, as an agent leaves them) in a repository
    of `--rewind-size` files; `revert <run>` (plan, three states per path, backup, write, the
    record) vs `restore <root> -- <those 10 paths>` (backup, write), the nearest command that
    writes the same files back. Interleaved; the run's edits are put back (untimed) between
    samples."""
    a = ctx.args
    nfiles = parse_size(a.rewind_size)
    label = size_label(nfiles)
    repo = build_repo(ctx, f"revert-{label}", nfiles)
    ctx.tool(repo, "start", "--run", "r")
    root = json.loads(ctx.tool(repo, "list", "r", "--json").stdout)[0]["checkpoint"]
    step = max(1, nfiles // 10)
    paths = [file_path(min(nfiles - 1, k * step + 3)) for k in range(10)]
    edited = {p: file_content(k, 77) + "agent edit\n" for k, p in enumerate(paths)}

    def put_back() -> None:
        for p, text in edited.items():
            (repo / p).write_text(text)

    put_back()
    ctx.tool(repo, "checkpoint", "edit", "--run", "r")
    time.sleep(2.1)
    ctx.git(repo, "update-index", "--refresh", check=False)
    tool_t, git_t = [], []
    log(f"revert {label}: {a.warmup} warm-up + {a.rewind_iterations} measured")
    for it in range(a.warmup + a.rewind_iterations):
        order = ("revert", "restore") if it % 2 == 0 else ("restore", "revert")
        for who in order:
            if who == "revert":
                t, _ = timed(lambda: ctx.tool(repo, "revert", "r"))
                (tool_t if it >= a.warmup else []).append(t)
            else:
                t, _ = timed(lambda: ctx.tool(repo, "restore", root, "--", *paths))
                (git_t if it >= a.warmup else []).append(t)
            if ctx.git(repo, "status", "--porcelain").strip():
                raise SystemExit(f"{who} {it}: the worktree is not back to the state before the run")
            put_back()
    tm, rm = statistics.median(tool_t), statistics.median(git_t)
    rows = [[f"revert of a 10-file run, {label} files", ms(tm), ms(rm), f"**{ratio(tm, rm)}**",
             "yes" if tm <= rm else "**no**"]]
    notes = ["Both take the backup of the current state (a status pass and a backup commit) before "
             "writing. Checked after every sample: `git status --porcelain` is empty (the 10 files "
             "are back to HEAD's content)."]
    return SectionResult(headers=["operation", "revert median", "restore median", "ratio", "≤ 1.0×"],
                         rows=rows, notes=notes, raw={"revert": {"tool": tool_t, "restore": git_t}})
