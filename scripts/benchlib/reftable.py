"""Section `reftable`: checkpoint and `list` in a reftable repository against the same
repository in the files format. In reftable the tool reads and writes refs
through git's own commands (`for-each-ref`, `show-ref`, `update-ref --stdin`)."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)
from benchlib.runs import tool_checkpoint


@section("reftable", "reftable vs files ref storage")
def bench_reftable(ctx: Context) -> SectionResult:
    a = ctx.args
    nfiles = a.sizes[0]
    formats = ("files", "reftable")
    repos = {f: build_repo(ctx, f"reftable-{f}", nfiles, True, ref_format=f) for f in formats}
    works = {f: Workload(repos[f], nfiles) for f in formats}
    for f in formats:
        ctx.tool(repos[f], "start", "--run", "benchrun")
    times: dict[str, list[float]] = {f: [] for f in formats}
    log(f"checkpoint: {a.warmup} warm-up + {a.iterations} measured iterations per format")
    for it in range(a.warmup + a.iterations):
        order = formats if it % 2 == 0 else tuple(reversed(formats))
        for f in order:
            works[f].mutate(it + 1)
            t, _ = timed(lambda: tool_checkpoint(ctx, repos[f], it))
            if it >= a.warmup:
                times[f].append(t)
    rows = []
    cp = {f: statistics.median(times[f]) for f in formats}
    rows.append([f"checkpoint, {size_label(nfiles)} files (5 modified, 3 new)", ms(cp["files"]),
                 ms(cp["reftable"]), ratio(cp["reftable"], cp["files"])])
    # `list` over many runs, and git's own listing of the same refs in each format.
    runs = a.reftable_runs
    for f in formats:
        base = ctx.git(repos[f], "rev-parse", "HEAD").strip()
        seed_runs(ctx, repos[f], runs, base)
    lists: dict[str, list[float]] = {f: [] for f in formats}
    gits: dict[str, list[float]] = {f: [] for f in formats}
    for it in range(1 + a.iterations):
        order = formats if it % 2 == 0 else tuple(reversed(formats))
        for f in order:
            t, _ = timed(lambda: ctx.tool(repos[f], "list", "--json"))
            g, _ = timed(lambda: ctx.git(repos[f], "for-each-ref", "refs/agent-runs/"))
            if it > 0:
                lists[f].append(t)
                gits[f].append(g)
    lm = {f: statistics.median(lists[f]) for f in formats}
    gm = {f: statistics.median(gits[f]) for f in formats}
    rows.append([f"`list --json`, {runs + 1:,} runs", ms(lm["files"]), ms(lm["reftable"]),
                 ratio(lm["reftable"], lm["files"])])
    rows.append([f"`git for-each-ref refs/agent-runs/`, {runs + 1:,} runs", ms(gm["files"]),
                 ms(gm["reftable"]), ratio(gm["reftable"], gm["files"])])
    notes = [
        f"median of {a.iterations} interleaved iterations; refs packed (`git pack-refs --all`: "
        "packed-refs for files, one compacted table for reftable)",
        f"`list` vs git in reftable: {ratio(lm['reftable'], gm['reftable'])} of `git for-each-ref`; "
        f"in files: {ratio(lm['files'], gm['files'])}",
    ]
    raw = {"checkpoint": times, "list": lists, "for_each_ref": gits}
    return SectionResult(["case", "files", "reftable", "reftable / files"], rows, notes, raw)
