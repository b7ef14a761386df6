"""Section `month`: a month of agent turns on disk. Turn checkpoints of
5-file edits on a large repository, with default maintenance, the post-commit hook
installed, a real commit every 20 turns and runs rewound or forked along the way, against
a plain clone that commits every turn's edits. Reports `.git` growth against the plain
clone (at its worst moment and after each side's own maintenance settled), the most packs
and loose objects seen, temp files left after random kills, total time and the slowest
checkpoint."""

import random
import signal

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)


def du(path: Path) -> int:
    """Bytes of the files under `path` (apparent sizes, as `du -b` adds them)."""
    total = 0
    for dirpath, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(dirpath, n)).st_size
            except FileNotFoundError:
                pass  # a temp file that went away meanwhile
    return total


def objects_seen(git_dir: Path) -> tuple[int, int]:
    """Packs and loose objects in the object database now."""
    objects = git_dir / "objects"
    packs = len(list((objects / "pack").glob("*.pack")))
    loose = sum(len(os.listdir(d)) for d in objects.iterdir() if len(d.name) == 2 and d.is_dir())
    return packs, loose


def leftovers(git_dir: Path) -> list[str]:
    """Temp files git or the tool would leave: `tmp_pack_*`/`tmp_idx_*`, `*.lock` files,
    and anything in the tool's own temp folder."""
    found = [str(p) for p in (git_dir / "objects" / "pack").glob("tmp_*")]
    found += [str(p) for p in git_dir.rglob("*.lock")
              if "agent-rewind" not in p.parts]  # our flocks are kept empty files by design
    tmp = git_dir / "agent-rewind" / "tmp"
    if tmp.exists():
        found += [str(p) for p in tmp.rglob("*") if p.is_file()]
    return found


def settle(git_dir: Path, timeout: float = 600) -> None:
    """Wait until no background maintenance holds the tool's maintenance lock."""
    lock = git_dir / "agent-rewind" / "maintenance.lock"
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not lock.exists():
            return
        p = subprocess.run(["flock", "-n", str(lock), "true"], capture_output=True)
        if p.returncode == 0:
            return
        time.sleep(0.5)


@section("month", "a month of turns: .git growth vs plain commits, packs, kills, slowest checkpoint")
def bench_month(ctx: Context) -> SectionResult:
    a = ctx.args
    turns, nfiles, kills = a.month_turns, a.month_files, a.month_kills
    rng = random.Random(20261203)
    repo = build_repo(ctx, f"month-{size_label(nfiles)}", nfiles)
    plain = ctx.root / f"month-{size_label(nfiles)}-plain"
    ctx.git(ctx.root, "clone", "-q", "--no-local", str(repo), str(plain))
    ours_git, plain_git = repo / ".git", plain / ".git"
    ctx.tool(repo, "hooks", "install")
    ctx.tool(repo, "start", "--run", "month0")
    start = {"ours": du(ours_git), "plain": du(plain_git)}
    kill_at = set(rng.sample(range(10, turns), min(kills, max(0, turns - 10))))
    every = max(1, turns // 21)
    branch_at = {every * k: ("fork" if k % 2 else "rewind") for k in range(1, 21)}
    run_id, runs_made, killed = "month0", 0, 0
    worst, max_packs, max_loose, slowest, samples = 0.0, 0, 0, 0.0, []
    t_start = time.perf_counter()
    for t in range(1, turns + 1):
        for _ in range(5):
            i = rng.randrange(nfiles)
            text = file_content(i, t) + f"turn {t}\n"
            (repo / file_path(i)).write_text(text)
            (plain / file_path(i)).write_text(text)
        if t in kill_at:
            # A checkpoint killed at a random moment; the turn is then recorded again.
            p = subprocess.Popen([*ctx.tool_cmd, "checkpoint", "turn"], cwd=repo, env=ctx.env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0, 0.06))
            p.send_signal(signal.SIGKILL)
            p.wait()
            killed += 1
        dt, _ = timed(lambda: ctx.tool(repo, "checkpoint", "turn"))
        slowest = max(slowest, dt)
        ctx.git(plain, "add", "-A")
        ctx.git(plain, "commit", "-q", "-m", f"turn {t}")
        if t % 20 == 0:
            ctx.git(repo, "add", "-A")
            ctx.git(repo, "commit", "-q", "-m", f"commit at turn {t}")
        if t in branch_at:
            runs_made += 1
            new = f"month{runs_made}"
            if branch_at[t] == "fork":
                ctx.tool(repo, "fork", run_id, "--to", f"{run_id}@-1", "--run", new, "--no-checkout")
            else:
                # Back to the newest checkpoint: a new active run, the worktree as it is.
                ctx.tool(repo, "rewind", run_id, "--to", f"{run_id}@-1", "--run", new)
                run_id = new
        if t % 100 == 0 or t == turns:
            ours, base = du(ours_git), du(plain_git)
            growth = (ours - start["ours"]) / max(1, base - start["plain"])
            worst = max(worst, growth)
            packs, loose = objects_seen(ours_git)
            max_packs, max_loose = max(max_packs, packs), max(max_loose, loose)
            samples.append({"turn": t, "ours": ours, "plain": base, "packs": packs, "loose": loose})
            log(f"month: turn {t}/{turns}: .git {ours >> 20} MiB vs plain {base >> 20} MiB, "
                f"{packs} packs, {loose} loose")
    total = time.perf_counter() - t_start
    settle(ours_git)
    # The plain clone's own automatic maintenance, run to completion the same way.
    ctx.git(plain, "-c", "gc.autoDetach=false", "gc", "--auto", "--quiet")
    ours, base = du(ours_git), du(plain_git)
    settled = (ours - start["ours"]) / max(1, base - start["plain"])
    left = leftovers(ours_git)
    fsck = run(["git", "fsck", "--strict", "--no-progress"], cwd=repo, env=ctx.env, check=False)
    listed = json.loads(ctx.tool(repo, "--json", "list", "--all").stdout)
    rows = [
        ["turn checkpoints (5-file edits)", f"{turns:,}", ""],
        ["real commits (post-commit hook recording)", f"{turns // 20:,}", ""],
        ["runs rewound or forked", f"{runs_made}", f"{len(listed)} runs in the end"],
        ["`.git` growth vs the plain clone, after each side's maintenance",
         f"**{settled:.2f}×**", "target ≤ 1.2×: " + ("yes" if settled <= 1.2 else "**no**")],
        ["`.git` growth vs the plain clone, worst moment (every 100 turns)",
         f"**{worst:.2f}×**", "target ≤ 2×: " + ("yes" if worst <= 2 else "**no**")],
        ["`.git` in the end", f"{ours / 2**20:.1f} MiB", f"plain clone {base / 2**20:.1f} MiB"],
        ["most packs / loose objects seen", f"{max_packs} / {max_loose:,}", "sampled every 100 turns"],
        [f"temp files left after {killed} random kills", f"**{len(left)}**", ", ".join(left[:5])],
        ["`git fsck --strict`", "clean" if fsck.returncode == 0 else "**errors**", fsck.stderr[-200:]],
        ["total time", f"{total / 60:.1f} min", f"{ms(total / turns)} per turn, both sides"],
        ["slowest single checkpoint", ms(slowest), ""],
    ]
    return SectionResult(
        headers=["what", "figure", "note"],
        rows=rows,
        notes=[
            f"A {size_label(nfiles)}-file repository ({nfiles:,} files) with the post-commit hook installed and "
            "default maintenance; each turn writes 5 random tracked files and records `checkpoint turn`; every "
            "20th turn is also a `git commit` (its checkpoint recorded by the hook); 20 times along the way a "
            "run is forked or rewound (to its newest checkpoint). The plain clone makes the same edits and "
            "commits each turn (`git add -A && git commit`). Growth is `.git` bytes added since the start, ours "
            "over the plain clone's; 'after maintenance' waits for the tool's background maintenance and runs "
            "the clone's `git gc --auto` to completion. Kills are SIGKILL of a `checkpoint` at a random moment "
            "in its first 60 ms; temp files are `objects/pack/tmp_*`, git `*.lock` files and the tool's temp "
            "folder.",
        ],
        raw={"samples": samples, "start": start, "left": left, "killed": killed},
    )
