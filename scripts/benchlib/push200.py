"""Section `push200`: 200 new checkpoints pushed to a remote holding 100,000 runs."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)


@section("push200", "200 new checkpoints pushed to a remote holding 100,000 runs")
def bench_push200(ctx: Context) -> SectionResult:
    """Two identical bare remotes holding N runs (`--scale-remote-runs`, default 100,000;
    packed refs). A clone records 200 new runs of one checkpoint each; `push --all` sends
    them to one remote, `git push --atomic` of the same refs (`refs/agent-runs/*`,
    `refs/notes/agent-runs/*`) to the other, the order flipping every round
    (`--scale-iterations` rounds). Every push pays for the remote's advertisement of its
    100,000 runs; the target is at most 1.3x git's."""
    a = ctx.args
    n = a.scale_remote_runs
    seed = build_repo(ctx, "push200-seed", 10)
    base = ctx.git(seed, "rev-parse", "HEAD").strip()
    tool_remote, git_remote = ctx.root / "push200-tool.git", ctx.root / "push200-git.git"
    ctx.git(ctx.root, "init", "-q", "--bare", str(tool_remote))
    ctx.git(seed, "push", "-q", str(tool_remote), "HEAD:refs/heads/main")
    log(f"seeding the remote with {n} runs")
    seed_s = seed_runs(ctx, tool_remote, n, base)
    ctx.git(ctx.root, "clone", "-q", "--mirror", str(tool_remote), str(git_remote))
    clone = ctx.root / "push200-clone"
    ctx.git(ctx.root, "clone", "-q", str(tool_remote), str(clone))
    ctx.git(clone, "config", "gc.auto", "0")
    ctx.git(clone, "config", "agentRewind.remote", "origin")
    ctx.git(clone, "remote", "add", "gitside", str(git_remote))
    tool_t, git_t = [], []
    rounds = a.scale_iterations
    for it in range(rounds):
        for i in range(200):
            ctx.tool(clone, "start", "--run", f"new{it:02d}x{i:03d}")
        order = ("tool", "git") if it % 2 == 0 else ("git", "tool")
        for who in order:
            if who == "tool":
                t, p = timed(lambda: ctx.tool(clone, "--json", "push", "--all"))
                got = json.loads(p.stdout)
                if got.get("up_to_date", 0) + sum(r["result"] == "pushed" for r in got["runs"]) != 200 * (it + 1):
                    raise SystemExit(f"push --all did not push the 200 runs: {p.stdout[:500]}")
                tool_t.append(t)
            else:
                t, _ = timed(lambda: ctx.git(clone, "push", "-q", "--atomic", "gitside",
                                             "refs/agent-runs/*:refs/agent-runs/*",
                                             "refs/notes/agent-runs/*:refs/notes/agent-runs/*"))
                git_t.append(t)
        log(f"round {it}: tool {ms(tool_t[-1])}, git {ms(git_t[-1])}")
    same = ctx.git(tool_remote, "for-each-ref", "refs/agent-runs/", "refs/notes/agent-runs/") == \
        ctx.git(git_remote, "for-each-ref", "refs/agent-runs/", "refs/notes/agent-runs/")
    tm, gm = statistics.median(tool_t), statistics.median(git_t)
    return SectionResult(
        headers=["measured", "median", "against", "median", "ratio", "≤ 1.3×"],
        rows=[[f"`push --all` of 200 new runs to a remote of {n:,}", ms(tm),
               "`git push --atomic` of the same refs", ms(gm), f"**{ratio(tm, gm)}**",
               "yes" if tm <= 1.3 * gm else "**no**"]],
        notes=[f"Remote seeded with `git fast-import` ({seed_s:.0f} s), refs packed, copied with "
               f"`git clone --mirror` for git's side. {rounds} rounds of 200 new one-checkpoint runs; "
               f"both remotes ended with the same refs: {'yes' if same else '**no**'}."],
        raw={"tool": tool_t, "git": git_t, "seed_s": seed_s},
    )
