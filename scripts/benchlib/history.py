"""Sections `list` and `hook`: listing many runs, and the post-commit hook's cost as runs accumulate."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)
from benchlib.runs import create_runs, grow_runs, median_of, packed_copy, tool_checkpoint  # noqa: F401


@section("list", "list over many runs")
def bench_list(ctx: Context) -> SectionResult:
    a = ctx.args
    nfiles = 1000
    repo = build_repo(ctx, f"list-{size_label(nfiles)}", nfiles)
    log(f"creating {a.runs} runs with {a.jobs} parallel `start` processes")
    create_s = create_runs(ctx, repo, a.runs, a.jobs)
    rows, raw = [], {"create_s": create_s}

    def tool_list():
        return ctx.tool(repo, "list", "--json").stdout

    def git_list():
        return ctx.git(repo, "for-each-ref", "refs/agent-runs/")

    # The first `list` after the runs were created: it pays for whatever the tool caches.
    cold_t, out = timed(tool_list)
    listed = json.loads(out)
    raw["first_list"] = cold_t
    n_listed = len(listed["runs"] if isinstance(listed, dict) else listed)
    if n_listed != a.runs:
        raise SystemExit(f"list returned {n_listed} runs, expected {a.runs}")

    # One checkpoint in a repository that holds many runs (must not grow with their number).
    # Measured before `git repack -d`: right after thousands of loose objects are deleted,
    # ext4 takes longer to allocate inodes for a few minutes, which would skew it.
    work = Workload(repo, nfiles)
    gen = [0]

    def one_checkpoint():
        gen[0] += 1
        work.mutate(gen[0])
        return tool_checkpoint(ctx, repo, gen[0])

    cm = 0.0
    for layout in ("loose refs", "packed refs", "packed refs + objects"):
        if layout == "packed refs":
            ctx.git(repo, "pack-refs", "--all")
        elif layout == "packed refs + objects":
            cm, cxs = median_of(a.list_repeat, one_checkpoint)
            raw["checkpoint_among_runs"] = cxs
            # Every `start` leaves its objects loose; `git gc` would pack them.
            ctx.git(repo, "repack", "-a", "-d", "-q")
        first_t = cold_t if layout == "loose refs" else timed(tool_list)[0]
        tm, txs = median_of(a.list_repeat, tool_list)
        gm, gxs = median_of(a.list_repeat, git_list)
        rows.append(
            [
                f"{a.runs:,} runs, {layout}",
                ms(first_t),
                ms(tm),
                ms(max(txs)),
                ms(gm),
                f"{ratio(tm, gm)}",
                "yes" if tm < 1.0 else "**no**",
            ]
        )
        raw[layout] = {"tool": txs, "git": gxs, "first": first_t}
        log(f"{layout}: list {ms(tm)} (first call {ms(first_t)}), for-each-ref {ms(gm)}")

    notes = [
        "“first call” is the first `list` after the change in the row's first column: for "
        "loose refs, the very first `list` after the runs were created (nothing cached yet); "
        "the median is over the next "
        f"{a.list_repeat} calls (one more warm-up call before them).",
        f"Creating the {a.runs:,} runs (`start --run r<i>`, {a.jobs} in parallel) took "
        f"{create_s:.0f} s ({create_s / a.runs * 1e3 * a.jobs:.1f} ms per `start`).",
        f"A `checkpoint` (with the same {Workload.MODIFIED}+{Workload.UNTRACKED} changed files) "
        f"in this repository, among {a.runs:,} runs (packed refs, loose objects): median {ms(cm)}.",
    ]
    return SectionResult(
        headers=["runs", "`list --json` first call", "`list --json` median", "max",
                 "`git for-each-ref` median", "ratio (median)", "median < 1 s"],
        rows=rows,
        notes=notes,
        raw=raw,
    )


@section("hook", "post-commit hook: `git commit` with and without it")
def bench_hook(ctx: Context) -> SectionResult:
    """`git commit` (5 modified tracked files staged, 3 untracked files around) in a 1k-file
    repository, with our hooks installed and an active run vs with `core.hooksPath` pointed
    at an empty folder. One repository is grown to 10, 1,000 and 10,000 runs (`--hook-runs`);
    a copy is kept at each size as `start` leaves it (loose refs and objects) and one packed
    (what `git gc` makes of it). All copies are then measured round-robin, iteration by
    iteration, so that load on the machine hits every size alike and the ratios hold."""
    a = ctx.args
    nfiles = 1000
    repo = build_repo(ctx, "hook-1k", nfiles)
    # No `git gc --auto` / maintenance in the middle of a measurement.
    ctx.git(repo, "config", "gc.auto", "0")
    ctx.git(repo, "config", "maintenance.auto", "false")
    empty_hooks = ctx.root / "no-hooks"
    empty_hooks.mkdir(exist_ok=True)
    ctx.tool(repo, "hooks", "install")
    history = sorted({parse_size(x) for x in a.hook_runs.split(",") if x.strip()})

    # Build every configuration first: (label, layout, runs, path).
    configs, have, create_s = [], 0, 0.0
    for want in history:
        log(f"growing to {want} runs with {a.jobs} parallel `start` processes")
        create_s += grow_runs(ctx, repo, have, want, a.jobs)
        have = want
        for layout in ("loose", "packed"):
            copy = ctx.root / f"hook-1k-{want}-{layout}"
            if layout == "loose":
                shutil.copytree(repo, copy, symlinks=True)
            else:
                packed_copy(ctx, repo, copy)
            configs.append((f"{want:,} runs, {layout}", layout, want, copy))
    # The source repository is deleted only after the measurements: deleting its thousands of
    # files here made ext4 slow to allocate inodes near them (`recently_deleted`) for minutes,
    # and the copy made right after it (10 runs, loose) paid for that in every commit, with
    # and without the hook (third session: its plain commit took 2x the others').

    state = {}
    for label, layout, runs, where in configs:
        bench_run = f"bench-{runs}-{layout}"
        ctx.tool(where, "start", "--run", bench_run)  # the active run the hook records into
        state[label] = {"work": Workload(where, nfiles), "run": bench_run, "with": [], "without": []}

    gen = [0]

    def commit(where: Path, work: Workload, hooked: bool) -> float:
        if hooked:
            ctx.git(where, "config", "--unset", "core.hooksPath", check=False)
        else:
            ctx.git(where, "config", "core.hooksPath", str(empty_hooks))
        gen[0] += 1
        work.mutate(gen[0])
        ctx.git(where, "add", "--", *work.tracked)
        t, p = timed(lambda: run(["git", "commit", "-q", "-m", f"bench {gen[0]}"], cwd=where, env=ctx.env))
        if p.stderr.strip():
            raise SystemExit(f"git commit wrote to stderr (a hook problem?): {p.stderr}")
        return t

    total = a.warmup + a.hook_iterations
    log(f"{len(configs)} repositories, {total} rounds of one commit with and one without the hook each")
    for it in range(total):
        # Rotate the order of the repositories and alternate with/without every round.
        k = it % len(configs)
        for label, _layout, _runs, where in configs[k:] + configs[:k]:
            st = state[label]
            for hooked in ((True, False) if it % 2 == 0 else (False, True)):
                t = commit(where, st["work"], hooked)
                if it >= a.warmup:
                    st["with" if hooked else "without"].append(t)

    shutil.rmtree(repo, ignore_errors=True)
    rows, raw, base = [], {}, {}
    for label, layout, runs, where in configs:
        st = state[label]
        ctx.git(where, "config", "--unset", "core.hooksPath", check=False)
        cps = json.loads(ctx.tool(where, "list", st["run"], "--json").stdout)
        if sum(c["event"] == "commit" for c in cps) != total:
            raise SystemExit(f"{label}: not one commit checkpoint per hooked commit")
        with_t, without_t = st["with"], st["without"]
        wm, wom = statistics.median(with_t), statistics.median(without_t)
        # Each round timed both back to back: the median of those paired differences is far
        # less sensitive to the machine's load drifting than a difference of medians.
        overhead = statistics.median(w - wo for w, wo in zip(with_t, without_t))
        base.setdefault(layout, overhead)
        rows.append(
            [
                label,
                ms(wom),
                ms(wm),
                ms(p90(with_t)),
                f"**{ms(overhead)}**",
                "yes" if overhead <= 15e-3 else "**no**",
                f"**{ratio(overhead, base[layout])}**",
            ]
        )
        raw[label] = {"runs": runs, "layout": layout, "with": with_t, "without": without_t, "overhead": overhead}
        log(f"{label}: commit {ms(wom)} without, {ms(wm)} with the hook (+{ms(overhead)})")

    first, last = history[0], history[-1]
    ratios = {
        layout: ratio(raw[f"{last:,} runs, {layout}"]["overhead"], raw[f"{first:,} runs, {layout}"]["overhead"])
        for layout in ("loose", "packed")
    }
    notes = [
        f"Hook overhead = median over {a.hook_iterations} rounds (after {a.warmup} warm-up) of "
        "(`git commit` with the hook − `git commit` without), timed back to back in each round "
        "and repository; the repositories take turns within each round. Each hooked commit "
        "recorded exactly one `commit` checkpoint (checked).",
        f"History ratio ({last:,} vs {first:,} runs): **{ratios['loose']}** with loose refs and objects, "
        f"**{ratios['packed']}** packed (target ≤ 1.2×); the last column compares each row with the "
        "first row of the same layout.",
        f"Creating the runs (`start --run r<i>`, {a.jobs} in parallel) took {create_s:.0f} s; "
        "`gc.auto=0` keeps `git gc --auto` out of the measured commits (and makes the tool write "
        "loose objects). \"packed\" is a copy with every ref in packed-refs and every object in "
        "one pack, built without deleting files (see `packed_copy`).",
    ]
    return SectionResult(
        headers=[
            "history",
            "commit without hook",
            "commit with hook",
            "with hook p90",
            "hook overhead",
            "≤ 15 ms",
            "vs 1st row (same layout)",
        ],
        rows=rows,
        notes=notes,
        raw=raw,
    )
