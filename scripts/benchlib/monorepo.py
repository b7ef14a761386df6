"""Section `fsmonitor`: a 100k-file repository with and without a filesystem monitor
(Watchman through git's own `fsmonitor-watchman` hook), and the post-commit hook there."""

from benchlib.checkpoint import plumbing_tree
from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)
from benchlib.runs import tool_checkpoint

HOOK_SAMPLE = Path("/usr/share/git-core/templates/hooks/fsmonitor-watchman.sample")


class Watchman:
    """A Watchman server of our own: Watchman 4.9 keeps its socket and state under
    `$TMPDIR/<user>-state`, so an environment with TMPDIR pointing into the bench's temp dir
    makes every client (ours, git's hook, the tool's hook) talk to it alone."""

    def __init__(self, ctx: Context):
        self.dir = ctx.root / "watchman"
        self.dir.mkdir(exist_ok=True)
        self.env = dict(ctx.env, TMPDIR=str(self.dir))
        self.roots: list[Path] = []
        run(["watchman", "get-sockname"], env=self.env)

    def watch(self, repo: Path) -> None:
        run(["watchman", "watch", str(repo)], env=self.env)
        self.roots.append(repo)

    def settle(self) -> None:
        """Until Watchman has seen every change so far (a query syncs with a cookie file)."""
        for r in self.roots:
            run(["watchman", "clock", str(r)], env=self.env)

    def stop(self) -> None:
        for r in self.roots:
            run(["watchman", "--no-spawn", "--no-local", "watch-del", str(r)], env=self.env, check=False)
        run(["watchman", "--no-spawn", "--no-local", "shutdown-server"], env=self.env, check=False)


def trace_lines(ctx: Context, repo: Path, env: dict[str, str], n: int) -> list[str]:
    """The tool's phase timings (`AGENT_REWIND_TRACE=1`) of one checkpoint."""
    p = run(
        [*ctx.tool_cmd, "checkpoint", "bench", "--run", "benchrun", "--meta", f"i=trace{n}", "--json"],
        cwd=repo,
        env=dict(env, AGENT_REWIND_TRACE="1"),
    )
    return [line.removeprefix("agent-rewind trace:").strip() for line in p.stderr.splitlines() if "trace:" in line]


@section("fsmonitor", "Monorepo: checkpoint and `git status` with and without Watchman, post-commit hook")
def bench_fsmonitor(ctx: Context) -> SectionResult:
    """One repository of `--mono-size` files (default 100k). Each round, in rotating order,
    times (each after touching the same 5 tracked files and 3 new untracked files):
    `git status` and our checkpoint with `core.fsmonitor` set to git's Watchman hook, the same
    two with `core.fsmonitor` unset, and `git commit` of the 5 files with and without our
    post-commit hook, with and without the monitor. The monitor is switched between contenders
    with `git config`, outside the timings; the hooks of a commit without ours are turned off on
    its command line (`-c core.hooksPath=<empty folder>`)."""
    a = ctx.args
    if shutil.which("watchman") is None or not HOOK_SAMPLE.exists():
        raise SystemExit("needs watchman (Debian package `watchman`) and git's fsmonitor-watchman.sample")
    nfiles = parse_size(a.mono_size)
    repo = build_repo(ctx, f"mono-{size_label(nfiles)}", nfiles)
    ctx.git(repo, "config", "gc.auto", "0")
    ctx.git(repo, "config", "maintenance.auto", "false")
    hook = repo / ".git" / "hooks" / "fsmonitor-watchman"
    shutil.copy2(HOOK_SAMPLE, hook)
    empty_hooks = ctx.root / "no-hooks-mono"
    empty_hooks.mkdir(exist_ok=True)
    wm = Watchman(ctx)
    env = wm.env
    try:
        wm.watch(repo)
        run([*ctx.tool_cmd, "hooks", "install"], cwd=repo, env=env)
        # `benchfull` takes the full-pass contender's checkpoints; `benchrun`, started last, is
        # the active run the post-commit hook records into.
        run([*ctx.tool_cmd, "start", "--run", "benchfull"], cwd=repo, env=env)
        run([*ctx.tool_cmd, "start", "--run", "benchrun"], cwd=repo, env=env)
        work = Workload(repo, nfiles)
        state = {"monitor": None}

        def monitor(on: bool) -> None:
            if state["monitor"] == on:
                return
            if on:
                run(["git", "config", "core.fsmonitor", str(hook.relative_to(repo))], cwd=repo, env=env)
            else:
                run(["git", "config", "--unset", "core.fsmonitor"], cwd=repo, env=env, check=False)
            state["monitor"] = on
            # Switching is the bench's doing, not a user's: the first `git status` and the first
            # checkpoint after a switch (git's token, our walk cache) are not timed.
            hooks(True)
            touch()
            run(["git", "status", "--porcelain"], cwd=repo, env=env)
            run([*ctx.tool_cmd, "checkpoint", "bench", "--run", "benchrun", "--meta", f"i=switch{gen[0]}", "--json"],
                cwd=repo, env=env)

        def hooks(on: bool) -> None:
            # On git's command line, not in the repository's config: a checkpoint's state key
            # covers the whole config, and a user does not switch their hooks between commits.
            state["hooks"] = on

        def git_commit() -> list[str]:
            off = [] if state.get("hooks", True) else ["-c", f"core.hooksPath={empty_hooks}"]
            return ["git", *off, "commit"]

        gen = [0]
        mismatches = [0]
        # How long `show` right after a hooked commit took (no monitor): it waits for a
        # checkpoint the hook left to record in the background.
        after_hook: list[float] = []

        def touch() -> None:
            gen[0] += 1
            work.mutate(gen[0])
            wm.settle()

        def status(on: bool):
            monitor(on)
            hooks(True)
            touch()
            return timed(lambda: run(["git", "status", "--porcelain"], cwd=repo, env=env))[0]

        # The full monitored pass, as after a commit or `git add` (the index or HEAD moved).
        full_env = dict(env, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="agentRewind.fromLastCheckpoint",
                        GIT_CONFIG_VALUE_0="false")

        def checkpoint(on: bool, full: bool = False):
            monitor(on)
            hooks(True)
            # What is timed is a checkpoint after 5 files changed since the run's last one (an
            # agent's turn): that last one is taken first, untimed, after the same kind of touch.
            # The full pass goes to a run of its own: the post-commit hook's checkpoints go to
            # `benchrun`, and start from its last checkpoint as they would in use.
            cenv, into = (full_env, "benchfull") if full else (env, "benchrun")
            touch()
            run([*ctx.tool_cmd, "checkpoint", "bench", "--run", into, "--meta", f"i=before{gen[0]}"],
                cwd=repo, env=cenv)
            touch()
            t, out = timed(lambda: json.loads(
                run([*ctx.tool_cmd, "checkpoint", "bench", "--run", into, "--meta", f"i={gen[0]}", "--json"],
                    cwd=repo, env=cenv).stdout))
            got = run(["git", "rev-parse", out["checkpoint"] + "^{tree}"], cwd=repo, env=env).stdout.strip()
            tmp_index = repo / ".git" / "bench-check-index"
            # copy2 keeps the index's mtime: a copy stamped "now" makes git trust stale stat data
            # (racy git) and miss same-size edits.
            shutil.copy2(repo / ".git" / "index", tmp_index)
            cenv = dict(env, GIT_INDEX_FILE=str(tmp_index))
            run(["git", "-c", "core.fsmonitor=false", "add", "-A"], cwd=repo, env=cenv)
            want = run(["git", "write-tree"], cwd=repo, env=cenv).stdout.strip()
            if got != want:
                mismatches[0] += 1
                diff = run(["git", "diff-tree", "-r", "--name-status", want, got], cwd=repo, env=env).stdout
                log(f"checkpoint (monitor {on}) tree differs from git add -A's (git → tool):\n{diff}")
                conf = run(["git", "config", "--get", "core.fsmonitor"], cwd=repo, env=env, check=False).stdout.strip()
                log(f"  core.fsmonitor={conf!r}; unchanged={out.get('unchanged')}; checkpoint {out['checkpoint']}; "
                    f"took {t * 1000:.0f} ms")
                again = trace_lines(ctx, repo, env, 1000 + gen[0])
                log("  a checkpoint now: " + "; ".join(again))
            return t

        def commit(with_hook: bool, on: bool):
            monitor(on)
            hooks(with_hook)
            touch()
            run(["git", "add", "--", *work.tracked], cwd=repo, env=env)
            t, p = timed(lambda: run([*git_commit(), "-q", "-m", f"bench {gen[0]}"], cwd=repo, env=env))
            if p.stderr.strip():
                raise SystemExit(f"git commit wrote to stderr (a hook problem?): {p.stderr}")
            if with_hook:
                # Untimed: our next command waits for a checkpoint the hook left to record in
                # the background (a large index without a monitor), so nothing of it overlaps
                # the next contender; and the commit must have its checkpoint.
                waited, shown = timed(lambda: run([*ctx.tool_cmd, "--json", "show", "benchrun"], cwd=repo, env=env))
                if not on:
                    after_hook.append(waited)
                tip = json.loads(shown.stdout)
                head = run(["git", "rev-parse", "HEAD"], cwd=repo, env=env).stdout.strip()
                if tip.get("event") != "commit" or tip.get("git_commit_sha") != head:
                    raise SystemExit(f"the hook recorded no checkpoint of commit {head}: {tip}")
            return t

        # Grouped by monitor state (each group in rotating order, the groups alternating which
        # goes first), so that the configuration changes twice per round.
        contenders = {
            "status+wm": lambda: status(True),
            "checkpoint+wm": lambda: checkpoint(True),
            "checkpoint-full+wm": lambda: checkpoint(True, full=True),
            "status": lambda: status(False),
            "checkpoint": lambda: checkpoint(False),
            "commit+hook": lambda: commit(True, False),
            "commit": lambda: commit(False, False),
            "commit+hook+wm": lambda: commit(True, True),
            "commit+wm": lambda: commit(False, True),
        }
        times = {k: [] for k in contenders}
        names = list(contenders)
        total = a.warmup + a.mono_iterations
        log(f"{size_label(nfiles)} files: {a.warmup} warm-up + {a.mono_iterations} rounds of {len(names)} contenders")
        on_names = [n for n in names if n.endswith("+wm")]
        off_names = [n for n in names if not n.endswith("+wm")]
        for it in range(total):
            k = it % len(on_names)
            on_order, off_order = on_names[k:] + on_names[:k], off_names[k:] + off_names[:k]
            for name in (on_order + off_order if it % 2 == 0 else off_order + on_order):
                t = contenders[name]()
                if it >= a.warmup:
                    times[name].append(t)
        # One traced checkpoint each way, for the profile.
        monitor(True)
        hooks(True)
        touch()
        trace_lines(ctx, repo, env, 0)
        touch()
        trace_wm = trace_lines(ctx, repo, env, 1)
        touch()
        trace_wm_full = trace_lines(ctx, repo, full_env, 3)
        monitor(False)
        touch()
        trace_plain = trace_lines(ctx, repo, env, 2)
        # And one post-commit hook each way (the hook's stderr carries the trace).
        trace_hook = {}
        for on in (False, True):
            monitor(on)
            hooks(True)
            touch()
            run(["git", "add", "--", *work.tracked], cwd=repo, env=env)
            p = run(["git", "commit", "-q", "-m", f"traced {on}"], cwd=repo, env=dict(env, AGENT_REWIND_TRACE="1"))
            trace_hook[on] = [line.removeprefix("agent-rewind trace:").strip()
                              for line in p.stderr.splitlines() if "trace:" in line]
    finally:
        wm.stop()

    med = {k: statistics.median(v) for k, v in times.items()}
    overhead = statistics.median(w - wo for w, wo in zip(times["commit+hook"], times["commit"]))
    overhead_wm = statistics.median(w - wo for w, wo in zip(times["commit+hook+wm"], times["commit+wm"]))
    hook_budget = 15e-3 + 0.5 * med["checkpoint"]
    hook_budget_wm = 15e-3 + 0.5 * med["checkpoint+wm"]

    def row(what, ours, theirs, target):
        r = ours / theirs
        return [what, ms(ours), ms(theirs), f"**{r:.2f}×**", f"≤ {target:.1f}×", "yes" if r <= target else "**no**"]

    def hook_row(what, overhead, budget):
        return [
            what,
            ms(overhead),
            ms(budget),
            f"**{overhead / budget:.2f}×**",
            "≤ 1.0×",
            "yes" if overhead <= budget else "**no**",
        ]

    rows = [
        row("checkpoint with Watchman vs `git status` with Watchman", med["checkpoint+wm"], med["status+wm"], 1.0),
        row("checkpoint with Watchman vs our checkpoint without", med["checkpoint+wm"], med["checkpoint"], 0.3),
        [
            "(not a target) the full monitored pass, as the first checkpoint after a `git add` "
            "not committed yet takes, vs our checkpoint without",
            ms(med["checkpoint-full+wm"]),
            ms(med["checkpoint"]),
            f"{med['checkpoint-full+wm'] / med['checkpoint']:.2f}×",
            "—",
            "—",
        ],
        row("checkpoint vs `git status`, no monitor", med["checkpoint"], med["status"], 0.8),
        hook_row("post-commit hook overhead vs 15 ms + 0.5× checkpoint (no monitor: the checkpoint is "
                 "recorded in the background)", overhead, hook_budget),
        [
            "(not a target) `show` of the run right after that commit (it waits for the checkpoint "
            "being recorded in the background)",
            ms(statistics.median(after_hook[a.warmup:] or after_hook)),
            "—",
            "—",
            "—",
            "—",
        ],
        hook_row("the same with Watchman (budget from the checkpoint without)", overhead_wm, hook_budget),
        hook_row("the same with Watchman, budget from the checkpoint with Watchman", overhead_wm, hook_budget_wm),
    ]
    notes = [
        f"{size_label(nfiles)} files ({nfiles // 20:,} leaf folders), objects packed; median of "
        f"{a.mono_iterations} rounds after {a.warmup} warm-up; the nine contenders take turns "
        "within each round, grouped by monitor state (in rotating order within a group, the groups "
        "alternating; after each switch one untimed `git status` and one untimed checkpoint let "
        "git's token and our walk cache catch up); each runs right after the same 5 tracked files get new "
        "content and 3 new untracked files appear (Watchman is let to settle before the timing). "
        "A timed checkpoint follows an untimed one of the same run made after the same kind of touch, "
        "so it starts from the run's last checkpoint where it can (with Watchman); the full monitored "
        "pass is timed with `agentRewind.fromLastCheckpoint=false`.",
        "Medians: " + ", ".join(f"{k} {ms(v)}" for k, v in med.items()) + ". Hook overhead = median "
        "of the paired differences (commit with our post-commit hook − commit without), each way.",
        "With Watchman: `core.fsmonitor` = git's `fsmonitor-watchman.sample` (Perl) hook, for git "
        "and for us alike (git runs it; we recognise it and send its query to Watchman's socket "
        "ourselves); git's untracked cache is not enabled (git's defaults).",
    ]
    if mismatches[0]:
        notes.append(f"**A checkpoint's tree differed from `git add -A`'s {mismatches[0]} times.**")
    else:
        notes.append("Checks: every measured checkpoint's tree equalled `git add -A`'s of the same worktree.")
    notes.append("Profile of one checkpoint with Watchman (`AGENT_REWIND_TRACE=1`): " + "; ".join(trace_wm))
    notes.append("The full monitored pass: " + "; ".join(trace_wm_full))
    notes.append("Without a monitor: " + "; ".join(trace_plain))
    notes.append("The post-commit hook without a monitor (it starts the process that records the "
                 "checkpoint and returns): " + "; ".join(trace_hook[False]))
    notes.append("… and with Watchman: " + "; ".join(trace_hook[True]))
    return SectionResult(
        headers=["target", "ours", "against", "ratio", "target", "met"],
        rows=rows,
        notes=notes,
        raw={"times": times, "overhead": overhead, "overhead_wm": overhead_wm, "trace_wm": trace_wm, "trace_plain": trace_plain, "trace_hook": trace_hook},
    )
