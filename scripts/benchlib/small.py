"""Sections `small` (the read-only commands against their nearest git command) and `storage`
(the bytes a checkpoint adds after `git gc` against a plain commit, and what 100,000 runs'
refs and notes cost on disk)."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)


# --------------------------------------------------------------------------------------
# small: diff, show, status, list <run>
# --------------------------------------------------------------------------------------

SMALL_CHECKPOINTS = 20  # checkpoints in the measured run (list <run> shows them all)
# A realistic attributes file: text/eol rules, `binary`, a `diff=` driver
# without textconv (the generated files are `.txt`), `export-ignore`.
ATTRIBUTES = ("* text=auto eol=lf\n*.sh text eol=crlf\n*.png binary\n*.jar -diff\n"
              "*.txt diff=plaintext\n/docs/** export-ignore\n")


def edit_files(repo: Path, nfiles: int, count: int, gen: int) -> None:
    """New content in `count` tracked files spread over the repository."""
    step = max(1, nfiles // count)
    for k in range(count):
        i = min(nfiles - 1, k * step + 7)
        (repo / file_path(i)).write_text(file_content(i, gen) + f"edit {gen}\n")


def interleaved(ctx: Context, repo: Path, ours: list[str], theirs: list[str], n: int) -> tuple[list[float], list[float]]:
    """`n` timings of each command, alternating which runs first; both must succeed."""
    env = dict(ctx.env, GIT_PAGER="cat", PAGER="cat")

    def one(cmd: list[str]) -> float:
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        t = time.perf_counter() - t0
        if p.returncode != 0:
            raise SystemExit(f"failed ({p.returncode}): {shlex.join(cmd)}: {p.stderr.decode(errors='replace')[-500:]}")
        return t

    one(ours), one(theirs)  # warm-up
    a, b = [], []
    for i in range(n):
        if i % 2 == 0:
            a.append(one(ours))
            b.append(one(theirs))
        else:
            b.append(one(theirs))
            a.append(one(ours))
    return a, b


@section("small", "small commands: diff, show, status, list <run>, log <run> vs git")
def bench_small(ctx: Context) -> SectionResult:
    a = ctx.args
    n = a.small_iterations
    rows, raw = [], {}
    for nfiles, attributes in ((1000, False), (30000, False), (30000, True)):
        label = size_label(nfiles) + (" + .gitattributes" if attributes else "")
        repo = build_repo(ctx, f"small-{size_label(nfiles)}{'-attrs' if attributes else ''}", nfiles)
        if attributes and not (repo / ".gitattributes").exists():
            (repo / ".gitattributes").write_text(ATTRIBUTES)
            ctx.git(repo, "add", ".gitattributes")
            ctx.git(repo, "commit", "-q", "-m", "attributes")
        log(f"{label}: a run of {SMALL_CHECKPOINTS} checkpoints")
        run = "smallrun"
        ctx.tool(repo, "start", "--run", run)
        for gen in range(1, SMALL_CHECKPOINTS):
            # The last checkpoint changes 150 files, every other one 5.
            edit_files(repo, nfiles, 150 if gen == SMALL_CHECKPOINTS - 1 else 5, gen)
            ctx.tool(repo, "checkpoint", f"s{gen}", "-m", f"gen {gen}")
        sha = lambda rev: ctx.git(repo, "rev-parse", rev).strip()  # noqa: E731
        last = SMALL_CHECKPOINTS - 1
        c5a, c5b = sha(f"refs/agent-runs/{run}/s{last - 2}"), sha(f"refs/agent-runs/{run}/s{last - 1}")
        c150 = sha(f"refs/agent-runs/{run}/s{last}")
        # Each timed diff must print what git diff prints (after its `metadata` lines), and
        # take the in-process path (the trace says which one printed the files).
        checks = [
            ([f"{run}/s{last - 2}", f"{run}/s{last - 1}"], [c5a, c5b]),
            ([f"{run}/s{last - 1}", f"{run}/s{last}"], [c5b, c150]),
            (["--stat", f"{run}/s{last - 2}", f"{run}/s{last - 1}"], ["--stat", c5a, c5b]),
        ]
        for ours_args, git_args in checks:
            p = subprocess.run([*ctx.tool_cmd, "diff", *ours_args], cwd=repo, capture_output=True, text=True,
                               env=dict(ctx.env, AGENT_REWIND_TRACE="1"), check=True)
            ours_text = p.stdout
            git_text = ctx.git(repo, "diff", *git_args)
            files_part = ours_text.split("\n\n", 1)[1] if ours_text.startswith("metadata ") else ours_text
            if files_part.strip() != git_text.strip():
                raise SystemExit(f"{label}: `diff {' '.join(ours_args)}` printed something else than `git diff`")
            if "diff: files rendered in-process" not in p.stderr:
                raise SystemExit(f"{label}: `diff {' '.join(ours_args)}` did not render in-process")
        # `list <run>` and `log <run>` print the run's checkpoints, newest first (`log` as
        # the lineage); git's nearest is its log of the run's first parents with their notes.
        git_log = ["log", "--first-parent", f"--notes=agent-runs/{run}", "-n", str(SMALL_CHECKPOINTS),
                   f"refs/agent-runs/{run}/HEAD"]
        # The bound of each row: 2× where both sides do little beyond starting (5 files, 20
        # checkpoints: git takes a few milliseconds), 1.5× where the work dominates.
        cases = [
            ("diff, 5 files", ["diff", f"{run}/s{last - 2}", f"{run}/s{last - 1}"], ["diff", c5a, c5b], 2.0),
            ("diff, 150 files", ["diff", f"{run}/s{last - 1}", f"{run}/s{last}"], ["diff", c5b, c150], 1.5),
            ("diff --stat, 5 files", ["diff", "--stat", f"{run}/s{last - 2}", f"{run}/s{last - 1}"],
             ["diff", "--stat", c5a, c5b], 2.0),
            ("show (5 files)", ["show", f"{run}/s{last - 1}"], ["show", "--stat", c5b], 2.0),
            ("status", ["status"], ["status"], 1.5),
            (f"list <run> ({SMALL_CHECKPOINTS} checkpoints)", ["list", run], git_log, 2.0),
            (f"log <run> ({SMALL_CHECKPOINTS} checkpoints)", ["log", run], git_log, 2.0),
        ]
        for name, ours, theirs, bound in cases:
            t_ours, t_git = interleaved(ctx, repo, [*ctx.tool_cmd, *ours], ["git", *theirs], n)
            mo, mg = statistics.median(t_ours), statistics.median(t_git)
            shown = " ".join(theirs).replace(c5a, "A").replace(c5b, "B").replace(c150, "C")
            rows.append([label, name, f"`git {shown}`",
                         ms(mo), ms(mg), f"**{ratio(mo, mg)}**", f"{bound}×",
                         "yes" if mo <= bound * mg else "**no**"])
            raw[f"{label} {name}"] = {"tool": t_ours, "git": t_git}
            log(f"{label} {name}: tool {ms(mo)}, git {ms(mg)}, {ratio(mo, mg)}")
    return SectionResult(
        headers=["files", "command", "git counterpart", "tool median", "git median", "ratio", "bound", "met?"],
        rows=rows,
        notes=[
            f"{n} runs of each command, alternating with its git counterpart (the order flips every round); "
            "medians. The run holds "
            f"{SMALL_CHECKPOINTS} checkpoints; A, B, C are the commits of its last three (B changes 5 "
            "files against A, C 150 against B), which the tool's side names as `<run>/<step>`. "
            "The `+ .gitattributes` repository also carries `" + ATTRIBUTES.replace("\n", "; ").strip("; ")
            + "` (committed). "
            "Before timing, the script checks that `diff` printed exactly what `git diff` prints.",
            "Both sides are a process each, so start-up is in every figure. The script also checks "
            "that each `diff` row renders its files in-process (no child `git diff`), see below.",
        ],
        raw=raw,
    )


# --------------------------------------------------------------------------------------
# storage: bytes per checkpoint after gc; 100,000 runs' refs and notes
# --------------------------------------------------------------------------------------


def repo_bytes(git_dir: Path) -> dict[str, int]:
    """What git keeps for objects and refs: packs + their indexes + loose objects (what
    `git count-objects -v` adds up as size-pack + size, in bytes), packed-refs, loose refs
    (file sizes), and reflogs (not counted in the comparison: git keeps them for its own
    commits too)."""
    def tree_size(d: Path, pred=lambda p: True) -> int:
        return sum(p.stat().st_size for p in d.rglob("*") if p.is_file() and pred(p)) if d.exists() else 0

    objects = git_dir / "objects"
    return {
        "pack": tree_size(objects / "pack", lambda p: p.suffix in (".pack", ".idx")),
        "loose": sum(tree_size(d) for d in objects.iterdir() if len(d.name) == 2),
        "packed_refs": (git_dir / "packed-refs").stat().st_size if (git_dir / "packed-refs").exists() else 0,
        "refs": tree_size(git_dir / "refs"),
        "reflogs": tree_size(git_dir / "logs"),
    }


def counted(b: dict[str, int]) -> int:
    return b["pack"] + b["loose"] + b["packed_refs"] + b["refs"]


def objects_by_type(ctx: Context, repo: Path) -> dict[str, tuple[str, int]]:
    out = ctx.git(repo, "cat-file", "--batch-all-objects",
                  "--batch-check=%(objectname) %(objecttype) %(objectsize:disk)")
    return {oid: (kind, int(size)) for oid, kind, size in (line.split() for line in out.splitlines())}


def storage_per_checkpoint(ctx: Context, rounds: int) -> tuple[list[list[str]], list[str], dict]:
    nfiles = 1000
    base = build_repo(ctx, "storage-git", nfiles)
    other = ctx.root / "storage-tool"
    shutil.copytree(base, other, symlinks=True)
    run = "storagerun"
    ctx.tool(other, "start", "--run", run)
    for gen in range(1, 4):  # a run already under way
        edit_files(other, nfiles, 5, 1000 + gen)
        ctx.tool(other, "checkpoint", "warm", "-m", f"warm {gen}")
    # The git side gets the same three earlier commits, so both histories have the same shape.
    for gen in range(1, 4):
        edit_files(base, nfiles, 5, 1000 + gen)
        ctx.git(base, "commit", "-qam", f"warm {gen}")
    for repo in (base, other):
        ctx.git(repo, "gc", "-q")
    deltas: dict[str, list[int]] = {"git": [], "tool": []}
    added_kinds: dict[str, list[dict[str, int]]] = {"git": [], "tool": []}
    for r in range(rounds):
        for who, repo in (("git", base), ("tool", other)):
            before = repo_bytes(repo / ".git")
            objs_before = objects_by_type(ctx, repo)
            edit_files(repo, nfiles, 5, r + 1)
            if who == "git":
                ctx.git(repo, "commit", "-qam", f"change {r}")
            else:
                ctx.tool(repo, "checkpoint", "work", "-m", f"change {r}")
            ctx.git(repo, "gc", "-q")
            after = repo_bytes(repo / ".git")
            deltas[who].append(counted(after) - counted(before))
            new = {oid: v for oid, v in objects_by_type(ctx, repo).items() if oid not in objs_before}
            kinds: dict[str, int] = {}
            for kind, _ in new.values():
                kinds[kind] = kinds.get(kind, 0) + 1
            added_kinds[who].append(kinds)
    g, t = statistics.median(deltas["git"]), statistics.median(deltas["tool"])
    kinds = lambda who: ", ".join(f"{v} {k}s" for k, v in sorted(added_kinds[who][-1].items()))  # noqa: E731
    rows = [
        ["one change of 5 files, 1k-file repository, after `git gc`",
         f"{g:.0f} B", f"{t:.0f} B", f"**{ratio(t, g)}**", "yes" if t <= 1.2 * g else "**no**"],
    ]
    notes = [
        f"Median over {rounds} changes; each: 5 tracked files edited, then `git commit -a` in one "
        "copy and `checkpoint` in the other, then `git gc` in both; bytes = packs + pack indexes + "
        "loose objects + packed-refs + loose refs (`git count-objects -v` size-pack + size, in "
        "bytes, plus the refs). Reflogs are left out: both write them.",
        f"Objects the last change added: git {kinds('git')}; tool {kinds('tool')}.",
        f"Every change, bytes: git {deltas['git']}; tool {deltas['tool']}.",
    ]
    return rows, notes, {"deltas": deltas, "added": added_kinds}


def synth_one_checkpoint_runs(ctx: Context, repo: Path, nruns: int, shared_notes: bool) -> None:
    """`nruns` runs of one start checkpoint each (tree = HEAD's, as after `start`), in the
    format of docs/FORMAT.md: a notes ref per run, or with `shared_notes` every note in one
    notes ref (the alternative layout, for comparison). Objects by `git fast-import` (on two
    scratch branches, `reset` before each root commit), refs written straight into
    packed-refs as `git gc` leaves them: 200,000 loose ref files would take minutes to write
    and to pack."""
    base = ctx.git(repo, "rev-parse", "HEAD").strip()
    tree = ctx.git(repo, "rev-parse", "HEAD^{tree}").strip()
    t_base = 1767225600
    notes_ts = datetime.datetime.fromtimestamp(t_base, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    run_id = lambda r: f"01kc{r:022d}"  # noqa: E731  (the length of a ULID)

    def body(r: int) -> bytes:
        line = {"type": "checkpoint", "schema": "agent-rewind/checkpoint/v1", "run": run_id(r), "step": None,
                "attempt": 1, "seq": 0, "event": "start", "step_kind": None, "status": None,
                "sdk_session_id": None, "git_commit_sha": base, "head_ref": "refs/heads/main",
                "artifacts": [], "inputs_hash": None, "idempotency_key": None, "excluded": [],
                "started_at": None, "finished_at": None, "ts": notes_ts, "writer": "Bench <bench@example.invalid>",
                "next_action": None, "meta": {}, "label": f"run {r}"}
        return (json.dumps(line, separators=(",", ":")) + "\n").encode()

    out = []
    for r in range(nruns):
        msg = (f"agent-rewind: {run_id(r)} start\n\nAgent-Run: {run_id(r)}\nAgent-Attempt: 1\n"
               "Agent-Event: start\nAgent-Schema: 1\n")
        out.append(f"commit refs/bench/runs\nmark :{r + 1}\n"
                   f"committer Bench <bench@example.invalid> {t_base + r} +0000\ndata {len(msg)}\n{msg}\n"
                   f"from {base}\nM 040000 {tree} \n\n".encode())
    if shared_notes:
        out.append(f"commit refs/bench/notes\nmark :{nruns + 1}\ncommitter Bench <bench@example.invalid> "
                   f"{t_base} +0000\ndata 0\n".encode())
        for r in range(nruns):
            b = body(r)
            out.append(f"N inline :{r + 1}\ndata {len(b)}\n".encode() + b + b"\n")
    else:
        for r in range(nruns):
            b = body(r)
            out.append(f"reset refs/bench/notes\n\ncommit refs/bench/notes\nmark :{nruns + r + 1}\n"
                       f"committer Bench <bench@example.invalid> {t_base} +0000\ndata 0\n"
                       f"N inline :{r + 1}\ndata {len(b)}\n".encode() + b + b"\n")
    marks = repo / ".git" / "bench-storage-marks"
    p = subprocess.run(["git", "fast-import", "--quiet", f"--export-marks={marks}"], cwd=repo, env=ctx.env,
                       input=b"".join(out), capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"fast-import failed: {p.stderr.decode(errors='replace')[-2000:]}")
    sha = {}
    for line in marks.read_text().splitlines():
        m, h = line.split()
        sha[int(m[1:])] = h
    marks.unlink()
    refs = [(f"refs/agent-runs/{run_id(r)}/HEAD", sha[r + 1]) for r in range(nruns)]
    if shared_notes:
        refs.append(("refs/notes/agent-runs-shared", sha[nruns + 1]))
    else:
        refs += [(f"refs/notes/agent-runs/{run_id(r)}", sha[nruns + r + 1]) for r in range(nruns)]
    for name in ("refs/bench/runs", "refs/bench/notes"):
        ctx.git(repo, "update-ref", "-d", name)
    existing = ctx.git(repo, "for-each-ref", "--format=%(objectname) %(refname)").splitlines()
    for line in existing:
        oid, name = line.split(" ", 1)
        refs.append((name, oid))
        ctx.git(repo, "update-ref", "-d", name, oid)
    refs.sort(key=lambda x: x[0].encode())
    (repo / ".git" / "packed-refs").write_text(
        "# pack-refs with: peeled fully-peeled sorted \n" + "".join(f"{oid} {name}\n" for name, oid in refs))
    ctx.git(repo, "repack", "-adq")


def du_bytes(path: Path) -> int:
    return int(run(["du", "-s", "--block-size=1", str(path)]).stdout.split()[0])


def storage_many_runs(ctx: Context, nruns: int) -> tuple[list[list[str]], list[str], dict]:
    rows, raw = [], {}
    base = build_repo(ctx, "storage-runs-base", 100)
    layouts = {}
    for shared in (False, True):
        name = "shared" if shared else "per-run"
        repo = ctx.root / f"storage-runs-{name}"
        shutil.copytree(base, repo, symlinks=True)
        before = repo_bytes(repo / ".git")
        log(f"storage: {nruns} one-checkpoint runs, notes {name}, with git fast-import")
        synth_one_checkpoint_runs(ctx, repo, nruns, shared)
        after = repo_bytes(repo / ".git")
        # Bytes of the notes objects alone (commits and trees of the notes refs; note blobs
        # are the same in both layouts).
        notes_refs = ctx.git(repo, "for-each-ref", "--format=%(objectname) %(tree)", "refs/notes/").split()
        sizes = ctx.git(repo, "cat-file", "--batch-check=%(objectsize:disk)", input="\n".join(notes_refs) + "\n")
        notes_objects = sum(int(s) for s in sizes.split())
        # Trees below the top level of a shared notes tree (git's fan-out) count too.
        if shared:
            listing = ctx.git(repo, "ls-tree", "-r", "-t", notes_refs[1]).splitlines()
            ids = [line.split()[2] for line in listing if line.split()[1] == "tree"]
            if ids:
                s = ctx.git(repo, "cat-file", "--batch-check=%(objectsize:disk)", input="\n".join(ids) + "\n")
                notes_objects += sum(int(x) for x in s.split())
        packed_notes = sum(len(line) + 1 for line in (repo / ".git" / "packed-refs").read_text().splitlines()
                           if " refs/notes/" in line)
        layouts[name] = {
            "total": counted(after) - counted(before),
            "notes_objects": notes_objects,
            "packed_notes_refs": packed_notes,
        }
        if not shared:
            # The same refs in git's reftable format.
            rt = ctx.root / "storage-runs-reftable"
            shutil.copytree(repo, rt, symlinks=True)
            # git 2.46–2.47 migrate only a repository without reflogs (a scratch copy here).
            shutil.rmtree(rt / ".git" / "logs", ignore_errors=True)
            p = run(["git", "refs", "migrate", "--ref-format=reftable"], cwd=rt, env=ctx.env, check=False)
            if p.returncode == 0:
                ctx.git(rt, "pack-refs", "--all")
                layouts[name]["reftable"] = sum(f.stat().st_size for f in (rt / ".git" / "reftable").iterdir())
                layouts[name]["packed_refs_total"] = (repo / ".git" / "packed-refs").stat().st_size
            shutil.rmtree(rt, ignore_errors=True)
        shutil.rmtree(repo, ignore_errors=True)
    per, sh = layouts["per-run"], layouts["shared"]
    sample = base / ".git" / "refs" / "heads" / "main"
    block = sample.stat().st_blocks * 512 if sample.exists() else 4096
    rows.append([f"{nruns:,} one-checkpoint runs, all after `git gc`", f"{per['total'] / nruns:.0f} B",
                 f"{sh['total'] / nruns:.0f} B", f"{(per['total'] - sh['total']) / nruns:.0f} B"])
    rows.append(["… of which notes commits and trees", f"{per['notes_objects'] / nruns:.0f} B",
                 f"{sh['notes_objects'] / nruns:.0f} B", f"{(per['notes_objects'] - sh['notes_objects']) / nruns:.0f} B"])
    rows.append(["… of which the notes refs in packed-refs", f"{per['packed_notes_refs'] / nruns:.0f} B",
                 f"{sh['packed_notes_refs'] / nruns:.0f} B",
                 f"{(per['packed_notes_refs'] - sh['packed_notes_refs']) / nruns:.0f} B"])
    notes = [
        f"Per-run notes (the format) vs every note in one notes ref (an alternative layout, written "
        f"the same way for comparison); {nruns:,} runs, each a `start` checkpoint with its note, "
        "written with `git fast-import`, then `git gc`. Bytes counted as in the row above.",
        f"Until `git gc` (or `git pack-refs --all`) packs them, each ref is a loose file taking a whole "
        f"filesystem block: {block} bytes here, so {nruns:,} runs (2 refs each) hold "
        f"{2 * nruns * block / 2**20:.0f} MiB in `.git/refs` (the tool writes refs loose, as git does).",
    ]
    if "reftable" in per:
        notes.append(
            f"The same refs in git's reftable format (`git refs migrate --ref-format=reftable`, then "
            f"`git pack-refs --all`): {per['reftable'] / 2**20:.1f} MiB against "
            f"{per['packed_refs_total'] / 2**20:.1f} MiB of packed-refs. Reftable repositories work "
            "through git's ref commands; their time is in the `reftable` section."
        )
    raw.update(layouts)
    return rows, notes, raw


@section("storage", "storage: bytes per checkpoint after gc, and 100,000 runs")
def bench_storage(ctx: Context) -> SectionResult:
    a = ctx.args
    rows1, notes1, raw1 = storage_per_checkpoint(ctx, a.storage_rounds)
    rows2, notes2, raw2 = storage_many_runs(ctx, a.storage_runs)
    table2 = md_table(["runs", "notes ref per run (the format)", "one shared notes ref", "difference per run"], rows2)
    return SectionResult(
        headers=["change", "`git commit` adds", "`checkpoint` adds", "ratio", "≤ 1.2×"],
        rows=rows1,
        notes=notes1 + ["Refs and notes of many runs:\n\n  " + table2.replace("\n", "\n  ")] + notes2,
        raw={"per_checkpoint": raw1, "many_runs": raw2},
    )
