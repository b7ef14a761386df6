"""Fixtures that grow run histories: runs made by the tool itself, timing helpers over them."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)


def tool_checkpoint(ctx: Context, repo: Path, n: int) -> dict:
    p = ctx.tool(repo, "checkpoint", "bench", "--run", "benchrun", "--meta", f"i={n}", "--json")
    return json.loads(p.stdout)


def create_runs(ctx: Context, repo: Path, count: int, jobs: int) -> float:
    """Create `count` runs with `start --run r<i>` through a pool of `jobs` workers."""
    done = 0
    t0 = time.perf_counter()

    def one(i: int) -> None:
        ctx.tool(repo, "start", "--run", f"r{i:05d}")

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for fut in concurrent.futures.as_completed(pool.submit(one, i) for i in range(count)):
            fut.result()
            done += 1
            if done % 1000 == 0:
                log(f"created {done}/{count} runs ({time.perf_counter() - t0:.1f} s)")
    return time.perf_counter() - t0


def median_of(n: int, fn: Callable[[], object]) -> tuple[float, list[float]]:
    fn()  # warm-up
    xs = [timed(fn)[0] for _ in range(n)]
    return statistics.median(xs), xs


def grow_runs(ctx: Context, repo: Path, have: int, want: int, jobs: int) -> float:
    """Add runs `r<have>` … `r<want - 1>` (each `start` makes its run active). Returns seconds."""
    t0 = time.perf_counter()

    def one(i: int) -> None:
        ctx.tool(repo, "start", "--run", f"r{i:05d}")

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        done = 0
        for fut in concurrent.futures.as_completed(pool.submit(one, i) for i in range(have, want)):
            fut.result()
            done += 1
            if done % 1000 == 0:
                log(f"created {have + done}/{want} runs ({time.perf_counter() - t0:.1f} s)")
    return time.perf_counter() - t0


def packed_copy(ctx: Context, repo: Path, copy: Path) -> None:
    """What `git gc` makes of `repo` (refs in packed-refs, objects in one pack), built into
    `copy` without deleting anything: `pack-refs --prune` and `repack -d` would delete tens
    of thousands of files, after which ext4 is slow to allocate inodes near them for minutes
    (`recently_deleted`), which skewed whichever repository was measured next."""
    pack_dir = repo / ".git" / "objects" / "pack"
    before = set(pack_dir.iterdir())
    ctx.git(repo, "repack", "-a", "-q")  # a new pack of everything; nothing deleted
    added = [p for p in pack_dir.iterdir() if p not in before]
    refs = ctx.git(repo, "for-each-ref", "--format=%(objectname) %(refname)")

    def skip(dir_name: str, names: list[str]) -> list[str]:
        d = Path(dir_name)
        if d == repo / ".git" / "objects":
            return [n for n in names if len(n) == 2]  # loose objects
        if d == pack_dir:
            return [n for n in names if pack_dir / n not in added and n.startswith("pack-")]
        if d == repo / ".git" / "refs":
            return [n for n in names if n not in ("heads", "tags")]
        if d.parent == repo / ".git" / "refs" and d.name in ("heads", "tags"):
            return names
        return []

    shutil.copytree(repo, copy, symlinks=True, ignore=skip)
    for p in added:  # the source stays as `start` leaves it
        p.unlink()
    lines = sorted(
        (line.split(" ", 1) for line in refs.splitlines() if line.startswith(tuple("0123456789abcdef"))),
        key=lambda x: x[1].encode(),
    )
    (copy / ".git" / "packed-refs").write_text(
        "# pack-refs with: peeled fully-peeled sorted \n" + "".join(f"{oid} {name}\n" for oid, name in lines)
    )
    ctx.git(copy, "fsck", "--connectivity-only", "--no-dangling", "--no-progress")
