"""Section `view`: the HTML lineage page of many synthetic runs, and its render time in Chromium."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)


VIEW_STEPS = [("plan", "agent"), ("implement", "agent"), ("test", "deterministic"), ("review", "gate"), ("open-pr", "effect")]


def synth_runs(ctx: Context, repo: Path, nruns: int, per_run: int) -> tuple[int, float]:
    """Write `nruns` runs of `per_run` checkpoints each straight into the store with two
    `git fast-import` passes (commits and refs, then one notes commit per run), in the format
    of docs/FORMAT.md: every 10th run is rewound, every 25th forked, from a checkpoint of the
    run before it; every 7th ends in a failed step; `review` is a gate, approved on its
    checkpoint. Returns the checkpoint count and the seconds it took."""
    t0 = time.perf_counter()
    base = ctx.git(repo, "rev-parse", "HEAD").strip()
    t_base = 1767225600_000  # 2026-01-01, in ms
    def iso(ms_: int) -> str:
        return datetime.datetime.fromtimestamp(ms_ / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms_ % 1000:03d}Z"
    plan = []  # per run: list of (mark, line dict without ids)
    stream = []
    mark = 0
    marks_of: list[list[int]] = []
    origins: dict[int, tuple[str, int, int, str]] = {}
    for r in range(nruns):
        run = f"v{r:05d}"
        t = t_base + r * 600_000
        origin = None
        if r and r % 10 == 0:
            origin = ("rewound_from", r - 1, per_run // 2)
        elif r and r % 25 == 0:
            origin = ("forked_from", r - 1, per_run // 3)
        parent = f":{marks_of[origin[1]][origin[2]]}" if origin else base
        run_marks, lines = [], []
        steps_last: dict[str, int] = {}
        for seq in range(per_run):
            mark += 1
            t += 1500
            if seq == 0:
                step, kind, event, status, attempt = None, None, ("root" if origin else "start"), None, 1
            else:
                k = (seq - 1) // 2
                step, kind = VIEW_STEPS[k % len(VIEW_STEPS)]
                attempt = 1 + k // len(VIEW_STEPS)
                event = "begin" if seq % 2 else "finish"
                status = "running" if event == "begin" else ("awaiting_approval" if kind == "gate" else "completed")
                if event == "finish" and seq >= per_run - 2 and r % 7 == 3:
                    status = "failed"
            line = {"type": "checkpoint", "schema": "agent-rewind/checkpoint/v1", "run": run, "step": step,
                    "attempt": attempt, "seq": seq, "event": event, "step_kind": kind, "status": status,
                    "sdk_session_id": f"sess-{r:05d}" if seq else None, "git_commit_sha": base,
                    "head_ref": "refs/heads/main", "artifacts": [], "inputs_hash": None, "idempotency_key": None,
                    "excluded": [], "started_at": iso(t - 1500) if step else None,
                    "finished_at": iso(t) if event == "finish" else None, "ts": iso(t),
                    "writer": "bench@host", "next_action": None, "meta": {"agent": "bench"} if seq == 0 else {}}
            if seq == 0:
                line["label"] = f"synthetic run {r}"
            content = f"run {run} checkpoint {seq}\n" + "".join(f"line {i} of {run}/{seq}\n" for i in range(5))
            msg = (f"agent-rewind: {run} {event} {step or ''}\n\nAgent-Run: {run}\n"
                   + (f"Agent-Step: {step}\n" if step else "")
                   + f"Agent-Attempt: {attempt}\nAgent-Event: {event}\nAgent-Schema: 1\n")
            stream.append(
                f"commit refs/agent-runs/{run}/HEAD\nmark :{mark}\n"
                f"committer Bench <bench@example.invalid> {t // 1000} +0000\n".encode()
                + f"data {len(msg.encode())}\n{msg}\n".encode()
                + (f"from {parent}\n".encode() if seq == 0 else b"")
                + f"M 100644 inline work/{run}.txt\ndata {len(content)}\n{content}\n".encode())
            if step:
                steps_last[step] = mark
            run_marks.append(mark)
            lines.append((mark, line))
        for step, m in steps_last.items():
            stream.append(f"reset refs/agent-runs/{run}/{step}\nfrom :{m}\n\n".encode())
        marks_of.append(run_marks)
        plan.append((run, origin, lines))
    marks_file = repo / ".git" / "bench-view-marks"
    p = subprocess.run(["git", "fast-import", "--quiet", f"--export-marks={marks_file}"], cwd=repo, env=ctx.env,
                       input=b"".join(stream), capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"fast-import failed: {p.stderr.decode(errors='replace')[-2000:]}")
    sha = {}
    for l in marks_file.read_text().splitlines():
        m, h = l.split()
        sha[int(m[1:])] = h
    # A rewind archives its source run (a run-status line on the source's root note).
    archived = {f"v{o[1]:05d}" for _, o, _ in plan if o and o[0] == "rewound_from"}
    notes = []
    for run, origin, lines in plan:
        root = sha[lines[0][0]]
        body_parts = []
        for m, line in lines:
            if line["seq"] == 0 and origin:
                src_run, src_seq = f"v{origin[1]:05d}", origin[2]
                src_line = plan[origin[1]][2][src_seq][1]
                line[origin[0]] = {"run": src_run, "step": src_line["step"], "checkpoint": sha[marks_of[origin[1]][src_seq]]}
            if line["seq"]:
                line["run_root"] = root
            text = json.dumps(line) + "\n"
            if line["status"] == "awaiting_approval":
                text += json.dumps({"type": "approval", "decision": "approved", "by": "Bench", "ts": line["ts"]}) + "\n"
            if line["seq"] == 0 and run in archived:
                text += json.dumps({"type": "run-status", "status": "archived", "ts": line["ts"],
                                    "reason": "rewound"}) + "\n"
            body_parts.append((m, text))
        buf = [f"commit refs/notes/agent-runs/{run}\ncommitter Bench <bench@example.invalid> 1767225600 +0000\ndata 5\nnotes\n".encode()]
        for m, text in body_parts:
            b = text.encode()
            buf.append(f"N inline :{m}\ndata {len(b)}\n".encode() + b + b"\n")
        notes.append(b"".join(buf))
    p = subprocess.run(["git", "fast-import", "--quiet", f"--import-marks={marks_file}"], cwd=repo, env=ctx.env,
                       input=b"".join(notes), capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"fast-import (notes) failed: {p.stderr.decode(errors='replace')[-2000:]}")
    marks_file.unlink()
    return mark, time.perf_counter() - t0


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@section("view", "view: the HTML page of 1,000 runs / 50,000 checkpoints")
def bench_view(ctx: Context) -> SectionResult:
    a = ctx.args
    repo = build_repo(ctx, "view-1k", 1000)
    log(f"writing {a.view_runs} runs of {a.view_checkpoints} checkpoints with git fast-import")
    total, gen_s = synth_runs(ctx, repo, a.view_runs, a.view_checkpoints)
    listed = json.loads(ctx.tool(repo, "list", "--all", "--json").stdout)
    if len(listed) != a.view_runs:
        raise SystemExit(f"list saw {len(listed)} runs, expected {a.view_runs}")
    browser = chromium_binary()
    rows, raw = [], {"generate_s": gen_s, "checkpoints": total}
    for diffs in ("100", "1000", "none"):
        page = repo / f"view-{diffs}.html"
        t, out = timed(lambda: ctx.tool(repo, "view", "-o", str(page), "--diffs", diffs, "--json").stdout)
        info = json.loads(out)
        size = page.stat().st_size
        in_page, wall = None, None
        if browser:
            prof = ctx.root / f"chromium-profile-{diffs}"
            def dump():
                return run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                            "--disable-component-update", "--disable-sync", "--no-first-run",
                            f"--user-data-dir={prof}", "--dump-dom", f"file://{page}"], env=dict(ctx.env, HOME=str(prof))).stdout
            dump()  # warm-up: the browser's first start creates its profile
            walls, pages = [], []
            for _ in range(3):
                w, dom = timed(dump)
                m = re.search(r'data-ms="(\d+)"', dom)
                if not m:
                    raise SystemExit("the page's script did not finish in Chromium")
                walls.append(w)
                pages.append(int(m.group(1)) / 1000)
            wall, in_page = statistics.median(walls), statistics.median(pages)
        rows.append([f"{info['runs']:,} runs, {info['checkpoints']:,} checkpoints, --diffs {diffs}",
                     ms(t), f"{size / 1e6:.1f} MB",
                     ms(in_page) if in_page is not None else "(no chromium)",
                     ms(wall) if wall is not None else "-",
                     "yes" if in_page is not None and in_page < 2 and size < 10e6 else "**no**"])
        raw[f"diffs={diffs}"] = {"view_s": t, "bytes": size, "in_page_s": in_page, "chromium_wall_s": wall}
        log(f"--diffs {diffs}: view {ms(t)}, {size / 1e6:.1f} MB, in page {in_page}, chromium {wall}")
    notes = [
        f"The {a.view_runs:,} runs × {a.view_checkpoints} checkpoints are written straight into the store with "
        f"`git fast-import` (commits, refs, notes in the documented format; every 10th run rewound and every 25th "
        f"forked from the run before it, gates approved, some failed steps) in {gen_s:.0f} s.",
        "“in page” is the time from navigation start to the end of the page's script (JSON parsed, lanes in view "
        "drawn, the newest checkpoint selected with its metadata, diff and timeline), read from the page "
        "(`data-ms`) in headless Chromium (`--dump-dom`, median of 3 after a warm-up); “Chromium wall” is the "
        "whole `chromium --headless --dump-dom` process, browser start-up included.",
    ]
    return SectionResult(
        headers=["page", "`view` (write the page)", "file size", "in page", "Chromium wall", "< 2 s and < 10 MB"],
        rows=rows, notes=notes, raw=raw)
