"""Section `static`: a checkpoint by the static musl binary (scripts/build-static) vs the
glibc binary under test, interleaved in the same repository, to see what musl's C library
(its allocator above all) costs on the write path."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)


def static_binary(ctx: Context) -> Path:
    """--static-bin, or the release binary scripts/build-static makes (copied into the
    bench's folder, so that a later build cannot change it mid-run)."""
    if ctx.args.static_bin:
        return ctx.args.static_bin.resolve()
    log("scripts/build-static (release, musl)")
    p = run([str(PROJECT / "scripts" / "build-static")], cwd=PROJECT)
    out = ctx.root / "git-agent-rewind-musl.bin"
    shutil.copy2(p.stdout.strip().splitlines()[-1], out)
    return out


def checkpoint_with(ctx: Context, binary: Path, repo: Path, n: int) -> None:
    p = run([str(binary), "checkpoint", "bench", "--run", "benchrun", "--meta", f"i={n}", "--json"],
            cwd=repo, env=ctx.env)
    if json.loads(p.stdout).get("unchanged"):
        raise SystemExit(f"checkpoint {n} by {binary} was not written (unchanged)")


@section("static", "checkpoint: the static musl binary vs the glibc one")
def bench_static(ctx: Context) -> SectionResult:
    a = ctx.args
    musl = static_binary(ctx)
    contenders = {"glibc": ctx.bin, "musl": musl}
    rows, raw = [], {}
    for nfiles in a.sizes:
        label = f"{size_label(nfiles)} files, packed"
        repo = build_repo(ctx, f"static-{size_label(nfiles)}", nfiles, True)
        work = Workload(repo, nfiles)
        ctx.tool(repo, "start", "--run", "benchrun")
        times = {name: [] for name in contenders}
        cpu = {name: [] for name in contenders}
        gen = 0
        for it in range(a.warmup + a.iterations):
            order = list(contenders) if it % 2 == 0 else list(reversed(contenders))
            for name in order:
                gen += 1
                work.mutate(gen)
                t, c, _ = timed_cpu(lambda: checkpoint_with(ctx, contenders[name], repo, gen))
                if it >= a.warmup:
                    times[name].append(t)
                    cpu[name].append(c)
        g, m = statistics.median(times["glibc"]), statistics.median(times["musl"])
        gc, mc = statistics.median(cpu["glibc"]), statistics.median(cpu["musl"])
        rows.append([label, ms(g), ms(m), f"**{ratio(m, g)}**", f"{ms(gc)} / {ms(mc)} = {ratio(mc, gc)}"])
        raw[label] = {"glibc": times["glibc"], "musl": times["musl"], "glibc_cpu": cpu["glibc"], "musl_cpu": cpu["musl"]}
        log(f"{label}: glibc {ms(g)}, musl {ms(m)}, ratio {ratio(m, g)}")
    return SectionResult(
        headers=["repository", "glibc median", "musl median", "musl / glibc", "CPU (user+sys) glibc / musl"],
        rows=rows,
        notes=[f"musl binary: `{musl}`. The two alternate in one repository (the order flips every round); "
               "each checkpoint has fresh content of its own."],
        raw=raw,
    )
