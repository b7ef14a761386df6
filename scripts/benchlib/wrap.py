"""Section `wrap`: what `wrap` adds to the program it runs. The program writes to the
terminal's file descriptors itself (the wrapper puts nothing in between), so a large
output takes as long with the wrapper as without; the wrapper's own cost is a fixed
start (open the repository, set up the watch) and the final checkpoint."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)

WRAP_OUTPUT_MB = 512


@section("wrap", "wrap: the wrapped program's output, with and without the wrapper")
def bench_wrap(ctx: Context) -> SectionResult:
    n = ctx.args.small_iterations
    repo = build_repo(ctx, "wrap-1k", 1000)
    ctx.tool(repo, "start", "--run", "wraprun")
    big = ctx.root / "wrap-output.bin"
    with open(big, "wb") as f:
        chunk = os.urandom(1 << 20)
        for _ in range(WRAP_OUTPUT_MB):
            f.write(chunk)
    env = dict(ctx.env, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="agentRewind.wrapQuiet", GIT_CONFIG_VALUE_0="2s")

    def once(cmd: list[str]) -> float:
        t, _ = timed(lambda: subprocess.run(cmd, cwd=repo, env=env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, check=True))
        return t

    rows, raw = [], {}
    cases = [
        (f"`cat` of {WRAP_OUTPUT_MB} MB > /dev/null", ["cat", str(big)]),
        ("`true` (the wrapper's fixed cost)", ["true"]),
    ]
    for label, cmd in cases:
        plain, wrapped = [], []
        for i in range(n + 1):
            pair = [lambda: plain.append(once(cmd)),
                    lambda: wrapped.append(once([str(ctx.bin), "wrap", "--", *cmd]))]
            for f in (pair if i % 2 else reversed(pair)):
                f()
        plain, wrapped = plain[1:], wrapped[1:]  # the first pair warms the caches
        mp, mw = statistics.median(plain), statistics.median(wrapped)
        rows.append([label, ms(mp), ms(mw), f"+{ms(mw - mp)}", f"**{ratio(mw, mp)}**"])
        raw[label] = {"plain": plain, "wrapped": wrapped}
    added = [statistics.median(raw[l]["wrapped"]) - statistics.median(raw[l]["plain"]) for l, _ in cases]
    rows.append(["the output itself: added to `cat` − added to `true`", "—", "—",
                 f"**{'+' if added[0] >= added[1] else '−'}{ms(abs(added[0] - added[1]))}**", "—"])
    return SectionResult(
        headers=["program", "alone", "under `wrap`", "added", "ratio"],
        rows=rows,
        notes=[f"{n} interleaved runs each (median), 1k-file repository with an active run, "
               "`agentRewind.wrapQuiet=2s`; output to /dev/null."],
        raw=raw,
    )
