"""Section `writers`: twenty clones recording and pushing runs at once to one remote."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)

import threading


def start_http(ctx: Context, base: Path) -> tuple[subprocess.Popen, int]:
    """lighttpd in front of `git http-backend` (CGI) serving the repositories under `base` on
    127.0.0.1, pushes allowed: the server tests/suite/sharing/http_server.rs starts."""
    import socket

    backend = Path(ctx.git(base, "--exec-path").strip()) / "git-http-backend"
    conf = ctx.root / "lighttpd"
    conf.mkdir(exist_ok=True)
    for _ in range(5):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        (conf / "lighttpd.conf").write_text(
            f'server.document-root = "{base}"\nserver.bind = "127.0.0.1"\nserver.port = {port}\n'
            f'server.errorlog = "{conf}/error.log"\n'
            'server.modules = ("mod_alias", "mod_setenv", "mod_cgi")\n'
            f'alias.url = ("/git" => "{backend}")\n'
            '$HTTP["url"] =~ "^/git" {\n    cgi.assign = ("" => "")\n'
            f'    setenv.add-environment = ("GIT_PROJECT_ROOT" => "{base}", "GIT_HTTP_EXPORT_ALL" => "1",\n'
            f'        "GIT_CONFIG_NOSYSTEM" => "1", "GIT_CONFIG_GLOBAL" => "/dev/null", "PATH" => "{ctx.env["PATH"]}")\n'
            "}\n"
        )
        p = subprocess.Popen(["lighttpd", "-D", "-f", str(conf / "lighttpd.conf")],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return p, port
            except OSError:
                if p.poll() is not None:
                    break
                time.sleep(0.05)
        p.kill()
        p.wait()
    raise SystemExit("lighttpd did not start")


# Refuses every non-fast-forward update (and logs each update the remote is asked for), so a
# forced push could not land unnoticed.
UPDATE_HOOK = """#!/bin/sh
ref=$1 old=$2 new=$3
zero=0000000000000000000000000000000000000000
if [ "$old" != "$zero" ] && [ "$new" != "$zero" ] && ! git merge-base --is-ancestor "$old" "$new"; then
    echo "nonff $ref $old $new" >> "$GIT_DIR/updates.log"
    echo "refusing a non-fast-forward update of $ref" >&2
    exit 1
fi
echo "ok $ref" >> "$GIT_DIR/updates.log"
"""


def make_remote(ctx: Context, path: Path, seed: Path) -> None:
    ctx.git(ctx.root, "init", "-q", "--bare", str(path))
    ctx.git(path, "config", "receive.denyNonFastForwards", "true")
    ctx.git(path, "config", "http.receivepack", "true")
    hook = path / "hooks" / "update"
    hook.write_text(UPDATE_HOOK)
    hook.chmod(0o755)
    ctx.git(seed, "push", "-q", str(path), "HEAD:refs/heads/main")
    ctx.git(path, "symbolic-ref", "HEAD", "refs/heads/main")


def writer(ctx: Context, repo: Path, run_id: str, n: int, push_every: int, fetch_every: int,
           stats: dict) -> None:
    """Record `n` checkpoints into `run_id`, pushing every `push_every` and fetching every
    runs every `fetch_every`; a last push at the end. Counts into `stats`."""
    def push() -> None:
        p = ctx.tool(repo, "--json", "push", run_id)
        out = json.loads(p.stdout)
        stats["pushes"] += 1
        stats["attempts"].append(out.get("attempts", 1))
        if out["runs"][0]["result"] not in ("pushed", "up to date"):
            raise SystemExit(f"{run_id}: push rejected: {p.stdout}")

    ctx.tool(repo, "start", "--run", run_id)
    for i in range(1, n + 1):
        (repo / f"{run_id}.txt").write_text(f"{run_id} checkpoint {i}\n")
        ctx.tool(repo, "checkpoint", f"s{i % 10}", "--run", run_id, "-m", f"{run_id} {i}")
        stats["checkpoints"] += 1
        if i % push_every == 0:
            push()
        if i % fetch_every == 0:
            p = ctx.tool(repo, "--json", "fetch")
            out = json.loads(p.stdout)
            stats["fetches"] += 1
            stats["refetches"].append(out.get("refetches", 0))
            for r in out["runs"]:
                if r["result"] in ("new", "up to date", "fast-forwarded", "local is ahead"):
                    continue
                # Still half-pushed after the refetches: left for the next fetch.
                if r["result"] == "skipped" and "in the middle of a push" in r.get("detail", ""):
                    stats["left"] += 1
                    continue
                raise SystemExit(f"{run_id}: fetch: {r}")
    push()


def chain(ctx: Context, repo: Path, run_id: str) -> list[str]:
    """The checkpoint commits of `run_id` (its first-parent chain)."""
    return ctx.git(repo, "rev-list", "--first-parent", f"refs/agent-runs/{run_id}/HEAD",
                   f"--grep=^Agent-Run: {run_id}$").split()


def scenario(ctx: Context, label: str, url: str, bare: Path, seed: Path) -> dict:
    a = ctx.args
    n_writers, n = a.writers, a.writer_checkpoints
    clones = []
    for w in range(n_writers):
        c = ctx.root / f"{label}-w{w:02d}"
        ctx.git(ctx.root, "clone", "-q", url, str(c))
        ctx.git(c, "config", "user.name", f"writer{w:02d}")
        ctx.git(c, "config", "agentRewind.remote", "origin")
        clones.append(c)
    stats = [{"checkpoints": 0, "pushes": 0, "fetches": 0, "attempts": [], "refetches": [], "left": 0}
             for _ in clones]
    errors = []

    def go(w: int) -> None:
        try:
            writer(ctx, clones[w], f"w{w:02d}", n, a.writer_push_every, a.writer_fetch_every, stats[w])
        except (Exception, SystemExit) as e:  # reported after every writer finished
            errors.append(f"writer {w}: {e}")

    log(f"{label}: {n_writers} writers × {n} checkpoints")
    threads = [threading.Thread(target=go, args=(w,)) for w in range(n_writers)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise SystemExit(f"{label}: " + "; ".join(errors))
    # Every checkpoint and note on the remote, and in a fresh clone after one fetch.
    fresh = ctx.root / f"{label}-fresh"
    ctx.git(ctx.root, "clone", "-q", url, str(fresh))
    p = ctx.tool(fresh, "--json", "fetch")
    if sum(r["result"] == "new" for r in json.loads(p.stdout)["runs"]) != n_writers:
        raise SystemExit(f"{label}: fresh fetch: {p.stdout[-2000:]}")
    total = 0
    for w, c in enumerate(clones):
        run_id = f"w{w:02d}"
        mine = chain(ctx, c, run_id)
        if len(mine) != n + 1:
            raise SystemExit(f"{label}: {run_id} has {len(mine)} checkpoints, expected {n + 1}")
        for where in (bare, fresh):
            if chain(ctx, where, run_id) != mine:
                raise SystemExit(f"{label}: {run_id} differs in {where}")
            noted = set(ctx.git(where, "notes", f"--ref=agent-runs/{run_id}", "list").split()[1::2])
            if not set(mine) <= noted:
                raise SystemExit(f"{label}: {run_id}: {len(set(mine) - noted)} checkpoints without a note in {where}")
        total += len(mine)
    for where in (bare, fresh):
        ctx.git(where, "fsck", "--strict", "--no-progress")
    log_lines = (bare / "updates.log").read_text().splitlines()
    if any(line.startswith("nonff") for line in log_lines):
        raise SystemExit(f"{label}: a non-fast-forward update was attempted")
    attempts = [x for s in stats for x in s["attempts"]]
    refetches = [x for s in stats for x in s["refetches"]]
    return {
        "fetches_refetching": sum(x > 0 for x in refetches),
        "max_refetches": max(refetches, default=0),
        "left_for_next_fetch": sum(s["left"] for s in stats),
        "checkpoints": total,
        "recorded": sum(s["checkpoints"] for s in stats),
        "pushes": sum(s["pushes"] for s in stats),
        "fetches": sum(s["fetches"] for s in stats),
        "retried": sum(x > 1 for x in attempts),
        "max_attempts": max(attempts),
        "updates": len(log_lines),
        "wall": wall,
    }


@section("writers", "twenty writers, one remote: concurrent checkpoints, pushes and fetches")
def bench_writers(ctx: Context) -> SectionResult:
    """One bare remote (`receive.denyNonFastForwards` and an `update` hook refusing and
    logging any non-fast-forward), served as `file://` and as smart HTTP (lighttpd in front of
    `git http-backend`, 127.0.0.1). `--writers` clones (20), each in its own thread running
    its processes one after the other: `start` a run of its own, then `--writer-checkpoints`
    (500) checkpoints, `push RUN` every `--writer-push-every` (10) and `fetch` (all runs)
    every `--writer-fetch-every` (50), a last push at the end. Then every checkpoint and note
    must be on the remote and in a fresh clone after one `fetch`, `git fsck --strict` clean,
    no non-fast-forward update asked for."""
    a = ctx.args
    seed = build_repo(ctx, "writers-seed", 100)
    rows, raw = [], {}
    served = ctx.root / "served"
    served.mkdir()
    make_remote(ctx, served / "file.git", seed)
    make_remote(ctx, served / "http.git", seed)
    server, port = start_http(ctx, served)
    try:
        for label, url, bare in (
            ("file", f"file://{served / 'file.git'}", served / "file.git"),
            ("http", f"http://127.0.0.1:{port}/git/http.git", served / "http.git"),
        ):
            if label not in a.writer_remotes.split(","):
                continue
            r = scenario(ctx, label, url, bare, seed)
            raw[label] = r
            log(f"{label}: {r}")
            rows.append([
                {"file": "bare repository, `file://`", "http": "smart HTTP (lighttpd + `git http-backend`)"}[label],
                f"{r['checkpoints']:,}", f"{r['pushes']:,}", f"{r['retried']}", f"{r['max_attempts']}",
                f"{r['fetches']:,}", f"{r['fetches_refetching']}", f"{r['max_refetches']}",
                f"{r['left_for_next_fetch']}", f"{r['wall']:.0f} s",
            ])
    finally:
        server.kill()
        server.wait()
    return SectionResult(
        headers=["remote", "checkpoints on the remote", "pushes", "pushes retried (busy remote)",
                 "most `git push` of one run (bound 9)", "fetches", "fetches that caught a push half-way",
                 "most refetches (bound 3)", "runs left for the next fetch", "wall time"],
        rows=rows,
        notes=[
            f"{a.writers} writers × {a.writer_checkpoints} checkpoints (+ each run's `start` checkpoint), "
            f"`push RUN` every {a.writer_push_every}, `fetch` every {a.writer_fetch_every}; all at once.",
            "Checked after each: every checkpoint commit and its note on the remote and in a fresh clone after "
            "one `fetch`, `git fsck --strict` clean on both, no non-fast-forward update asked of the remote, "
            "no push rejected.",
        ],
        raw=raw,
    )
