"""Section `share`: push / fetch of one run against remotes holding many runs."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)


@section("share", "push / fetch of one run vs `git push` / `git fetch` of one branch")
def bench_share(ctx: Context) -> SectionResult:
    """A bare remote (`file://`) holding N runs (10, 1k, 10k; `--share-runs`); clones A and B
    that fetched them all. Per iteration: A creates runs with `start` and a branch with a new
    commit; `push origin <run>` vs `git push origin <branch>` (order alternating); A pushes a
    second run; in B `fetch origin <run>` (named), then `fetch` (all runs, imports the one
    new run) vs `git fetch origin` (order alternating). Then `gc` in A and B (nothing old
    enough to delete: it packs refs) and the same again; then `gc --keep 100`."""
    a = ctx.args
    rows, raw, notes = [], {}, []
    counts = sorted({parse_size(x) for x in a.share_runs.split(",") if x.strip()})
    seq = [0]

    def measure(label: str, remote: Path, ra: Path, rb: Path) -> None:
        tp, gp, tf, gf, tn = [], [], [], [], []
        for it in range(a.warmup + a.share_iterations):
            seq[0] += 1
            n, m, b = f"n{seq[0]:05d}", f"m{seq[0]:05d}", f"b{seq[0]:05d}"
            ctx.tool(ra, "start", "--run", n)
            ctx.tool(ra, "start", "--run", m)
            head = ctx.git(ra, "rev-parse", "HEAD").strip()
            commit = ctx.git(ra, "commit-tree", "HEAD^{tree}", "-p", head, "-m", f"bench {b}").strip()
            ctx.git(ra, "branch", b, commit)

            # Only the process is timed; its JSON report is checked afterwards.
            order = ("tool", "git") if it % 2 == 0 else ("git", "tool")
            for who in order:
                if who == "tool":
                    t, p = timed(lambda: ctx.tool(ra, "--json", "push", "origin", n))
                    if json.loads(p.stdout)["runs"][0]["result"] != "pushed":
                        raise SystemExit(f"push of {n}: {p.stdout}")
                    tp.append(t)
                else:
                    t, _ = timed(lambda: ctx.git(ra, "push", "-q", "origin", b))
                    gp.append(t)
            ctx.tool(ra, "push", "origin", m)
            t, p = timed(lambda: ctx.tool(rb, "--json", "fetch", "origin", m))
            if [r["result"] for r in json.loads(p.stdout)["runs"]] != ["new"]:
                raise SystemExit(f"fetch of {m}: {p.stdout}")
            tn.append(t)
            for who in order:
                if who == "tool":
                    t, p = timed(lambda: ctx.tool(rb, "--json", "fetch"))
                    got = {r["run"]: r["result"] for r in json.loads(p.stdout)["runs"]}
                    if got != {n: "new"}:
                        raise SystemExit(f"fetch imported {got}, expected only {n}")
                    tf.append(t)
                else:
                    t, _ = timed(lambda: ctx.git(rb, "fetch", "-q", "origin"))
                    gf.append(t)
        w = a.warmup
        tp, gp, tf, gf, tn = tp[w:], gp[w:], tf[w:], gf[w:], tn[w:]
        med = statistics.median
        rows.append(
            [
                label,
                ms(med(tp)),
                ms(med(gp)),
                f"**{ratio(med(tp), med(gp))}**",
                ms(med(tf)),
                ms(med(gf)),
                f"**{ratio(med(tf), med(gf))}**",
                ms(med(tn)),
            ]
        )
        raw[label] = {"push": tp, "git_push": gp, "fetch": tf, "git_fetch": gf, "fetch_run": tn}
        log(f"{label}: push {ms(med(tp))} vs {ms(med(gp))}, fetch {ms(med(tf))} vs {ms(med(gf))}")

    for count in counts:
        label = f"{count:,} runs"
        remote = ctx.root / f"share-{count}.git"
        ctx.git(ctx.root, "init", "-q", "--bare", str(remote))
        seed = build_repo(ctx, f"share-seed-{count}", 10)
        ctx.git(seed, "push", "-q", str(remote), "HEAD:refs/heads/main")
        ctx.git(remote, "symbolic-ref", "HEAD", "refs/heads/main")
        base = ctx.git(seed, "rev-parse", "HEAD").strip()
        log(f"{label}: seeding the remote")
        seed_s = seed_runs(ctx, remote, count, base, old_share=1.0)
        clones = []
        for who in ("a", "b"):
            c = ctx.root / f"share-{count}-{who}"
            ctx.git(ctx.root, "clone", "-q", f"file://{remote}", str(c))
            ctx.git(c, "config", "gc.auto", "0")
            ctx.git(c, "config", "maintenance.auto", "false")
            t, p = timed(lambda: ctx.tool(c, "--json", "fetch"))
            if sum(r["result"] == "new" for r in json.loads(p.stdout)["runs"]) != count:
                raise SystemExit(f"initial fetch: {p.stdout[-2000:]}")
            clones.append(c)
        ra, rb = clones
        raw[f"{label} setup"] = {"seed_s": seed_s, "initial_fetch_s": t}
        notes.append(f"{label}: the first `fetch` of all {count:,} runs into a fresh clone took {f'{t:.1f} s' if t >= 1 else ms(t)}.")
        measure(f"{label}, loose refs", remote, ra, rb)
        if count == counts[-1]:
            for c in (ra, rb):
                t, _ = timed(lambda: ctx.tool(c, "gc", "--older-than", "3650d"))
            notes.append(f"{label}: `gc --older-than 3650d` (nothing to delete; packs refs) took {t:.1f} s.")
            measure(f"{label}, after `gc`", remote, ra, rb)
            for c in (ra, rb):
                t, _ = timed(lambda: ctx.tool(c, "gc", "--keep", "100"))
            notes.append(
                f"{label}: `gc --keep 100` (deletes all but 100 runs locally; the remote keeps them) took {t:.1f} s."
            )
            measure(f"{label}, after `gc --keep 100`", remote, ra, rb)

    notes += [
        f"Medians of {a.share_iterations} iterations after {a.warmup} warm-up; each sample is one process, "
        "wall-clock. `fetch` and `git fetch` both run against a remote that gained one run and one branch since "
        "the previous fetch; `fetch RUN` names the run (its refspecs only).",
        "The remote is a bare repository over `file://` with its refs packed; the clones hold "
        "their runs as the import left them (loose refs) until `gc`.",
    ]
    return SectionResult(
        headers=[
            "remote holds",
            "`push RUN`",
            "`git push` branch",
            "ratio",
            "`fetch` (all)",
            "`git fetch`",
            "ratio",
            "`fetch RUN`",
        ],
        rows=rows,
        notes=notes,
        raw=raw,
    )
