"""Section `checkpoint`: the tool's checkpoint vs the plain-git plumbing chain."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)
from benchlib.runs import tool_checkpoint


def plumbing_tree(ctx: Context, repo: Path) -> str:
    """What `git add -A && git write-tree` makes of the worktree (untimed reference)."""
    tmp_index = repo / ".git" / "bench-check-index"
    shutil.copy2(repo / ".git" / "index", tmp_index)  # keeps the mtime: git's racy-clean check stays right
    env = dict(ctx.env, GIT_INDEX_FILE=str(tmp_index))
    ctx.git(repo, "add", "-A", env=env)
    return ctx.git(repo, "write-tree", env=env).strip()


def plumbing_checkpoint(ctx: Context, repo: Path, prev: str, n: int) -> str:
    """The plain-git equivalent of one checkpoint, in a throw-away index. Returns the commit."""
    tmp_index = repo / ".git" / "bench-index"
    shutil.copy2(repo / ".git" / "index", tmp_index)  # keeps the mtime: git's racy-clean check stays right
    env = dict(ctx.env, GIT_INDEX_FILE=str(tmp_index))
    ctx.git(repo, "add", "-A", env=env)
    tree = ctx.git(repo, "write-tree", env=env).strip()
    commit = ctx.git(repo, "commit-tree", tree, "-p", prev, "-m", f"bench checkpoint {n}").strip()
    ctx.git(repo, "update-ref", "refs/bench/plumbing", commit)
    note = json.dumps(
        {
            "type": "checkpoint",
            "schema": "agent-rewind/checkpoint/v1",
            "run": "benchrun",
            "step": "bench",
            "seq": n,
            "git_commit_sha": prev,
            "ts": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "meta": {"i": str(n)},
        }
    )
    ctx.git(repo, "notes", "--ref=bench", "add", "-m", note, commit)
    return commit


@section("checkpoint", "checkpoint vs plain-git plumbing")
def bench_checkpoint(ctx: Context) -> SectionResult:
    a = ctx.args
    rows, raw, notes = [], {}, []
    for nfiles, packed in [(n, p) for n in a.sizes for p in (True, False)]:
        label = f"{size_label(nfiles)} files, {'packed (a clone)' if packed else 'loose objects (a new project)'}"
        repo = build_repo(ctx, f"checkpoint-{size_label(nfiles)}-{'packed' if packed else 'loose'}", nfiles, packed)
        work = Workload(repo, nfiles)
        ctx.tool(repo, "start", "--run", "benchrun")
        prev = ctx.git(repo, "rev-parse", "HEAD").strip()
        index_before = (repo / ".git" / "index").read_bytes()
        tool_t, plumb_t, tool_cpu, plumb_cpu, mismatches = [], [], [], [], 0
        total = a.warmup + a.iterations
        log(f"{label}: {a.warmup} warm-up + {a.iterations} measured iterations")
        gen = 0
        for it in range(total):
            order = ("tool", "plumbing") if it % 2 == 0 else ("plumbing", "tool")
            for who in order:
                # Fresh content before each contender: neither finds its blobs and trees
                # already written by the other.
                gen += 1
                work.mutate(gen)
                if who == "tool":
                    t, cpu, out = timed_cpu(lambda: tool_checkpoint(ctx, repo, it))
                    if out.get("unchanged"):
                        raise SystemExit(f"checkpoint {it} was not written (unchanged)")
                    got = ctx.git(repo, "rev-parse", out["checkpoint"] + "^{tree}").strip()
                    want = plumbing_tree(ctx, repo)
                    if got != want:
                        mismatches += 1
                        diff = ctx.git(repo, "diff-tree", "-r", "--name-status", want, got)
                        log(f"{label} iteration {it}: tree differs from git's (git → tool):\n{diff}")
                    if it >= a.warmup:
                        tool_t.append(t)
                        tool_cpu.append(cpu)
                else:
                    t, cpu, prev = timed_cpu(lambda: plumbing_checkpoint(ctx, repo, prev, it))
                    if it >= a.warmup:
                        plumb_t.append(t)
                        plumb_cpu.append(cpu)
        # The user's index must be untouched by both.
        index_same = (repo / ".git" / "index").read_bytes() == index_before
        tm, pm = statistics.median(tool_t), statistics.median(plumb_t)
        tc, pc = statistics.median(tool_cpu), statistics.median(plumb_cpu)
        rows.append(
            [
                label,
                ms(tm),
                ms(p90(tool_t)),
                ms(pm),
                ms(p90(plumb_t)),
                f"**{ratio(tm, pm)}**",
                "yes" if tm <= 0.5 * pm else "**no**",
                f"{ms(tc)} / {ms(pc)} = {ratio(tc, pc)}",
            ]
        )
        raw[label] = {
            "tool": tool_t,
            "plumbing": plumb_t,
            "tool_cpu": tool_cpu,
            "plumbing_cpu": plumb_cpu,
            "tree_mismatches": mismatches,
        }
        log(f"{label}: tool {ms(tm)}, plumbing {ms(pm)}, ratio {ratio(tm, pm)}")
        if mismatches:
            notes.append(f"**{label}: the tool's tree differed from `git write-tree`'s in {mismatches} iterations.**")
        if not index_same:
            notes.append(f"**{label}: the user's `.git/index` changed during the measurements.**")
    notes.append(
        "Wall time is what the targets are about. CPU time (median user + system of the "
        "child processes) is less sensitive to other load. The tool's status pass runs on "
        "several threads, so its wall time suffers more than the plumbing's when the CPUs "
        "are busy with something else."
    )
    if len(notes) == 1:
        notes.insert(
            0,
            "Checks: after every measured checkpoint, its tree was identical to what "
            "`git add -A && git write-tree` makes of the same worktree, and the user's `.git/index` was byte-for-byte unchanged."
        )
    return SectionResult(
        headers=["repository", "tool median", "tool p90", "plumbing median", "plumbing p90",
                 "ratio (median)", "≤ 0.5×", "CPU (user+sys) tool / plumbing"],
        rows=rows,
        notes=notes,
        raw=raw,
    )
