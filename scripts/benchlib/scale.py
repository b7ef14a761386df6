"""Sections `runs100k` and `remote100k`: 100,000 runs, written
with `git fast-import` in the real format (one checkpoint each, a valid checkpoint note) by
common.py `seed_runs`, with 90% of them old enough for `gc`."""

from __future__ import annotations

import shutil
import subprocess

from .common import *  # noqa: F401,F403

def maxrss_kib(cmd: list, cwd: Path, env: dict) -> tuple[float, int, str]:
    """Wall time, peak RSS (KiB, from /usr/bin/time) and stdout of one process."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], cwd=cwd, env=env, capture_output=True, text=True)
    t = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed: {p.stderr[-2000:]}")
    return t, int(p.stderr.strip().splitlines()[-1]), p.stdout


def interleave(n: int, a: Callable[[], float], b: Callable[[], float]) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for i in range(n):
        for who in ((0, 1) if i % 2 == 0 else (1, 0)):
            (xs if who == 0 else ys).append(a() if who == 0 else b())
    return xs, ys


@section("runs100k", "100,000 runs: list, checkpoint, hook, gc")
def bench_runs100k(ctx: Context) -> SectionResult:
    """A 10-file repository holding N runs (`--scale-runs`, default 100,000; packed refs),
    and the same holding 10 runs. `list --json` vs `git for-each-ref refs/agent-runs/`
    interleaved (peak memory of each `list`); a checkpoint and a `git commit` through the
    post-commit hook in each repository, interleaved between them; then `gc --older-than 30d`
    deleting the 90% of runs that are old, and `git fsck`."""
    a = ctx.args
    n = a.scale_runs
    rows, raw, notes = [], {}, []
    repos = {}
    for count in (10, n):
        repo = build_repo(ctx, f"scale-{size_label(count)}", 10)
        ctx.git(repo, "config", "gc.auto", "0")
        base = ctx.git(repo, "rev-parse", "HEAD").strip()
        log(f"seeding {count} runs")
        raw[f"seed_{count}_s"] = seed_runs(ctx, repo, count, base)
        repos[count] = repo
    big = repos[n]
    cmd = [*ctx.tool_cmd, "list", "--json"]

    t_first, rss_first, out = maxrss_kib(cmd, big, ctx.env)
    listed = len(json.loads(out))
    if listed != n:
        raise SystemExit(f"list returned {listed} runs, expected {n}")
    # More calls without a summary cache (the tool's cache folder removed before each), for a
    # median rather than one sample; the first call above is one of them.
    cold_t, cold_rss = [t_first], [rss_first]
    for _ in range(4):
        shutil.rmtree(big / ".git" / "agent-rewind" / "cache", ignore_errors=True)
        t, r, _ = maxrss_kib(cmd, big, ctx.env)
        cold_t.append(t)
        cold_rss.append(r)
    t_first, rss_first = statistics.median(cold_t), max(cold_rss)
    rss = []

    def tool_list() -> float:
        t, r, _ = maxrss_kib(cmd, big, ctx.env)
        rss.append(r)
        return t

    def git_list() -> float:
        return timed(lambda: ctx.git(big, "for-each-ref", "refs/agent-runs/"))[0]

    tl, gl = interleave(a.scale_iterations, tool_list, git_list)
    med = statistics.median
    rows.append([f"`list --json`, {n:,} runs (packed refs)", ms(med(tl)), "`git for-each-ref refs/agent-runs/`",
                 ms(med(gl)), f"**{ratio(med(tl), med(gl))}**",
                 f"peak {max(rss) / 1024:.0f} MiB (without a summary cache: median of 5 {ms(t_first)}, "
                 f"peak {rss_first / 1024:.0f} MiB)"])
    raw["list"] = {"tool": tl, "git": gl, "rss_kib": rss, "first_s": t_first, "first_rss_kib": rss_first,
                   "cold_s": cold_t, "cold_rss_kib": cold_rss}
    log(f"list {ms(med(tl))} vs for-each-ref {ms(med(gl))}, peak {max(rss) / 1024:.0f} MiB")

    # The human table (`list` piped, so not cut to a terminal's width), the same way.
    human_cmd = [*ctx.tool_cmd, "list"]
    hrss = []

    def tool_human() -> float:
        t, r, _ = maxrss_kib(human_cmd, big, ctx.env)
        hrss.append(r)
        return t

    hl, gl2 = interleave(a.scale_iterations, tool_human, git_list)
    rows.append([f"`list` (the table, piped), {n:,} runs", ms(med(hl)), "`git for-each-ref refs/agent-runs/`",
                 ms(med(gl2)), f"**{ratio(med(hl), med(gl2))}**", f"peak {max(hrss) / 1024:.0f} MiB"])
    raw["list_human"] = {"tool": hl, "git": gl2, "rss_kib": hrss}
    log(f"list (table) {ms(med(hl))} vs for-each-ref {ms(med(gl2))}, peak {max(hrss) / 1024:.0f} MiB")

    # Checkpoint and post-commit hook: the same work in the 10-run and the N-run repository.
    for count, repo in repos.items():
        ctx.tool(repo, "start", "--run", "bench")
        ctx.tool(repo, "hooks", "install")
    gen = [0]

    def checkpoint(repo: Path) -> Callable[[], float]:
        def f() -> float:
            gen[0] += 1
            for i in range(5):
                (repo / file_path(i)).write_text(file_content(i, gen[0]))
            return timed(lambda: ctx.tool(repo, "checkpoint", "edit"))[0]
        return f

    def commit(repo: Path) -> Callable[[], float]:
        def f() -> float:
            gen[0] += 1
            for i in range(5):
                (repo / file_path(i)).write_text(file_content(i, gen[0]))
            ctx.git(repo, "add", "-A")
            return timed(lambda: ctx.git(repo, "commit", "-q", "-m", f"bench {gen[0]}"))[0]
        return f

    no_hooks = ctx.root / "no-hooks-scale"
    no_hooks.mkdir(exist_ok=True)

    def hook_overhead(repo: Path) -> Callable[[], float]:
        """What the hook adds to one `git commit`: a commit with it minus one without, back
        to back (the order alternating)."""
        turn = [0]

        def plain() -> float:
            gen[0] += 1
            for i in range(5):
                (repo / file_path(i)).write_text(file_content(i, gen[0]))
            ctx.git(repo, "add", "-A")
            return timed(lambda: ctx.git(repo, "-c", f"core.hooksPath={no_hooks}", "commit", "-q", "-m",
                                         f"bench {gen[0]}"))[0]

        def f() -> float:
            turn[0] += 1
            if turn[0] % 2:
                with_hook = commit(repo)()
                return with_hook - plain()
            without = plain()
            return commit(repo)() - without
        return f

    # First as the repositories were seeded (`gc.auto=0`: a checkpoint's objects go loose,
    # a dozen files), then with git's default `gc.auto` (they go into one small pack).
    for config in ("gc.auto=0", "default"):
        if config == "default":
            for repo in repos.values():
                ctx.git(repo, "config", "--unset", "gc.auto")
        for what, fn in (("checkpoint (5 files changed)", checkpoint), ("`git commit` with the post-commit hook", commit),
                         ("the post-commit hook's overhead (commit with it − without)", hook_overhead)):
            interleave(a.warmup, fn(repos[n]), fn(repos[10]))
            # Each sample is 5-25 ms, and the ratio is wanted within a few percent: many pairs.
            big_t, small_t = interleave(max(40, a.scale_iterations * 8), fn(repos[n]), fn(repos[10]))
            rows.append([f"{what}, {n:,} runs, {config}", ms(med(big_t)), "the same with 10 runs", ms(med(small_t)),
                         f"**{ratio(med(big_t), med(small_t))}**", ""])
            raw[f"{what} {config}"] = {"big": big_t, "small": small_t}
            log(f"{what} ({config}): {ms(med(big_t))} vs {ms(med(small_t))}")
    for repo in repos.values():
        ctx.git(repo, "config", "gc.auto", "0")

    # gc of the old runs (with --keep, the N-run repository is kept as it was before, for
    # profiling: `<root>/scale-<N>-before-gc`).
    if a.keep:
        shutil.copytree(big, big.with_name(big.name + "-before-gc"), symlinks=True)
    before = len(ctx.git(big, "for-each-ref", "refs/agent-runs/").splitlines())
    t_gc, p = timed(lambda: ctx.tool(big, "--json", "gc", "--older-than", "30d"))
    deleted = len(json.loads(p.stdout)["deleted"])
    t_fsck, f = timed(lambda: run(["git", "fsck", "--strict", "--no-progress"], cwd=big, env=ctx.env, check=False))
    fsck_ok = f.returncode == 0 and "error" not in f.stderr
    rows.append([f"`gc --older-than 30d`: {deleted:,} of {before:,} runs deleted", f"{t_gc:.1f} s",
                 "`git fsck --strict` after it", f"{t_fsck:.1f} s", "",
                 "fsck clean" if fsck_ok else f"**fsck failed**: {f.stderr[-300:]}"])
    raw["gc"] = {"s": t_gc, "deleted": deleted, "fsck_s": t_fsck, "fsck_ok": fsck_ok}
    log(f"gc {t_gc:.1f} s ({deleted} deleted), fsck {'clean' if fsck_ok else 'FAILED'}")

    notes += [
        f"Runs written with `git fast-import` ({raw[f'seed_{n}_s']:.0f} s for {n:,}), refs packed, one checkpoint "
        "each; 90% dated 2026-01-01, the rest now.",
        f"Medians of {a.scale_iterations} interleaved `list` calls (after five without a summary cache: the "
        f"first, then four with the tool's cache folder removed before each) and {max(40, a.scale_iterations * 8)} checkpoints / commits per repository after {a.warmup} warm-up; "
        "peak memory is `/usr/bin/time`'s maximum resident set size.",
    ]
    return SectionResult(headers=["measured", "time", "against", "time", "ratio", "notes"],
                         rows=rows, notes=notes, raw=raw)


class Daemon:
    """`git daemon` serving `base` on a free port; `stop()` kills it."""

    def __init__(self, ctx: Context, base: Path):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        # The daemon binary itself: `git daemon` runs it as a child that killing `git` leaves behind.
        exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, check=True).stdout.strip()
        self.proc = subprocess.Popen(
            [str(Path(exec_path) / "git-daemon"), "--export-all", "--enable=receive-pack", "--reuseaddr", "--listen=127.0.0.1",
             f"--port={self.port}", f"--base-path={base}", str(base)],
            env=ctx.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise SystemExit("git daemon did not start")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@section("remote100k", "remotes holding 100,000 runs: push / fetch of one run, fetch and push of all")
def bench_remote100k(ctx: Context) -> SectionResult:
    """A bare remote holding N runs (`--scale-remote-runs`, default 100,000; packed refs),
    reached as a local path and through `git daemon`. `push RUN` / `fetch RUN` of one new
    run vs `git push` / `git fetch` of one branch, interleaved; then `fetch` of everything
    into a fresh clone vs `git fetch` of the same refs into the staging namespace of another,
    and `push --all` of them to an empty remote vs the equivalent `git push`."""
    a = ctx.args
    n = a.scale_remote_runs
    rows, raw, notes = [], {}, []
    med = statistics.median
    seed = build_repo(ctx, "remote100k-seed", 10)
    base = ctx.git(seed, "rev-parse", "HEAD").strip()
    served = ctx.root / "served"
    served.mkdir()
    remote = served / "r.git"
    ctx.git(ctx.root, "init", "-q", "--bare", str(remote))
    ctx.git(seed, "push", "-q", str(remote), "HEAD:refs/heads/main")
    log(f"seeding the remote with {n} runs")
    raw["seed_s"] = seed_runs(ctx, remote, n, base)
    daemon = Daemon(ctx, served)
    try:
        for label, url in (("local bare remote", str(remote)), ("`git daemon`", f"git://127.0.0.1:{daemon.port}/r.git")):
            clones = []
            for who in ("a", "b"):
                c = ctx.root / f"remote100k-{len(raw)}-{who}"
                ctx.git(ctx.root, "clone", "-q", url, str(c))
                ctx.git(c, "config", "gc.auto", "0")
                clones.append(c)
            ra, rb = clones
            seq = [0]
            tp, gp, tf, gf = [], [], [], []
            for it in range(a.warmup + a.scale_iterations):
                seq[0] += 1
                run_id, br = f"one{len(raw)}x{seq[0]:04d}", f"b{len(raw)}x{seq[0]:04d}"
                ctx.tool(ra, "start", "--run", run_id)
                head = ctx.git(ra, "rev-parse", "HEAD").strip()
                ctx.git(ra, "branch", br, ctx.git(ra, "commit-tree", "HEAD^{tree}", "-p", head, "-m", br).strip())
                order = ("tool", "git") if it % 2 == 0 else ("git", "tool")
                for who in order:
                    if who == "tool":
                        t, p = timed(lambda: ctx.tool(ra, "--json", "push", "origin", run_id))
                        assert json.loads(p.stdout)["runs"][0]["result"] == "pushed", p.stdout
                        tp.append(t)
                    else:
                        gp.append(timed(lambda: ctx.git(ra, "push", "-q", "origin", br))[0])
                for who in order:
                    if who == "tool":
                        t, p = timed(lambda: ctx.tool(rb, "--json", "fetch", "origin", run_id))
                        assert json.loads(p.stdout)["runs"][0]["result"] == "new", p.stdout
                        tf.append(t)
                    else:
                        gf.append(timed(lambda: ctx.git(rb, "fetch", "-q", "origin", f"+refs/heads/{br}:refs/remotes/origin/{br}"))[0])
            w = a.warmup
            tp, gp, tf, gf = tp[w:], gp[w:], tf[w:], gf[w:]
            rows.append([f"{label}: `push RUN` (one run)", ms(med(tp)), "`git push` one branch", ms(med(gp)),
                         f"**{ratio(med(tp), med(gp))}**"])
            rows.append([f"{label}: `fetch RUN` (one run)", ms(med(tf)), "`git fetch` one branch", ms(med(gf)),
                         f"**{ratio(med(tf), med(gf))}**"])
            raw[label] = {"push": tp, "git_push": gp, "fetch": tf, "git_fetch": gf}
            log(f"{label}: push {ms(med(tp))} vs {ms(med(gp))}, fetch {ms(med(tf))} vs {ms(med(gf))}")
    finally:
        daemon.stop()

    # Everything: a fresh clone each, local bare remote.
    c_git, c_tool = ctx.root / "all-git", ctx.root / "all-tool"
    for c in (c_git, c_tool):
        ctx.git(ctx.root, "clone", "-q", str(remote), str(c))
        ctx.git(c, "config", "gc.auto", "0")
    t_git, _ = timed(lambda: ctx.git(c_git, "fetch", "-q", "--no-tags", "origin",
                                     "+refs/agent-runs/*:refs/agent-runs-remote/origin/*",
                                     "+refs/notes/agent-runs/*:refs/notes/agent-runs-remote/origin/*"))
    t_tool, p = timed(lambda: ctx.tool(c_tool, "--json", "fetch"))
    got = json.loads(p.stdout)
    new = sum(r["result"] == "new" for r in got["runs"])
    rows.append([f"`fetch` of all {new:,} runs", f"{t_tool:.1f} s", "`git fetch` of the same refs into staging",
                 f"{t_git:.1f} s", f"**{ratio(t_tool, t_git)}**"])
    raw["fetch_all"] = {"tool": t_tool, "git": t_git}
    log(f"fetch all: {t_tool:.1f} s vs {t_git:.1f} s")

    # push --all of them to an empty remote.
    for name in ("empty-tool.git", "empty-git.git"):
        ctx.git(ctx.root, "init", "-q", "--bare", str(ctx.root / name))
    ctx.git(c_tool, "remote", "add", "empty", str(ctx.root / "empty-tool.git"))
    ctx.git(c_tool, "remote", "add", "empty-git", str(ctx.root / "empty-git.git"))
    t_tool, p = timed(lambda: ctx.tool(c_tool, "--json", "push", "empty", "--all"))
    t_git, _ = timed(lambda: ctx.git(c_tool, "push", "-q", "--atomic", "empty-git",
                                     "refs/agent-runs/*:refs/agent-runs/*", "refs/notes/agent-runs/*:refs/notes/agent-runs/*"))
    rows.append([f"`push --all` of {n:,} runs to an empty remote", f"{t_tool:.1f} s",
                 "`git push --atomic` of the same refs", f"{t_git:.1f} s", f"**{ratio(t_tool, t_git)}**"])
    raw["push_all"] = {"tool": t_tool, "git": t_git}
    log(f"push --all: {t_tool:.1f} s vs {t_git:.1f} s")
    notes += [
        f"Remote seeded with `git fast-import` ({raw['seed_s']:.0f} s), refs packed. One-run rows: medians of "
        f"{a.scale_iterations} interleaved iterations after {a.warmup} warm-up, each a new run / branch.",
        "`fetch` and `push --all` of everything are single measurements (one fresh clone / empty remote each).",
    ]
    return SectionResult(headers=["measured", "time", "against", "time", "ratio"], rows=rows, notes=notes, raw=raw)
