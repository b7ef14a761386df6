"""Section `agent-hooks`: each agent's end-of-turn hook vs a plain checkpoint, and its
session-start hook creating a run vs `git agent-rewind start`."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)


# The agents whose hooks `agent-hooks` times: (agent, turn payload, edit payload, session
# start payload).
AGENT_HOOKS = [
    ("claude", "stop.json", "post-tool-use-edit.json", "session-start.json"),
    ("codex", "stop.json", "post-tool-use-apply-patch.json", "session-start.json"),
    ("gemini", "after-agent.json", "after-tool-replace.json", "session-start.json"),
    ("cursor", "stop.json", "after-file-edit.json", "session-start.json"),
    ("opencode", "session-idle.json", "file-edited.json", "session-created.json"),
    ("qwen", "stop.json", "post-tool-use-write-file.json", "session-start.json"),
    ("copilot", "stop.json", "post-tool-use-edit.json", "session-start.json"),
    ("pi", "agent-end.json", "tool-result.json", "session-start.json"),
    ("auggie", "stop.json", "post-tool-use-save-file.json", "session-start.json"),
    ("kilo", "session-idle.json", "file-edited.json", "session-created.json"),
    ("droid", "stop.json", "post-tool-use-create.json", "session-start.json"),
]
FIXTURE_ROOT = "/home/dev/src/shop-api"
# The size of each agent's session transcript: a long session of many turns.
TRANSCRIPT_BYTES = 3_000_000
# The payload fields that name the session's transcript.
TRANSCRIPT_FIELDS = ("transcript_path", "sessionFile")


def session_transcript(root: Path, agent: str) -> Path:
    """The agent's session transcript: for an agent whose turn usage is read from its
    transcript, its real two-turn transcript (`fixtures/usage/<agent>.jsonl`) repeated to
    `TRANSCRIPT_BYTES`, so that the turn's usage is read backward from the end of a long
    session; for the others, 1 KB lines of assistant text of that size."""
    path = root / f"transcript-{agent}.jsonl"
    usage = PROJECT / "fixtures" / "usage" / f"{agent}.jsonl"
    if usage.is_file():
        session = usage.read_text()
        if not session.endswith("\n"):
            session += "\n"
    else:
        session = json.dumps({"type": "assistant", "message": {"content": "x" * 900}}) + "\n"
    path.write_text(session * max(1, TRANSCRIPT_BYTES // len(session)))
    return path


def reads_usage(agent: str) -> bool:
    """Whether the agent's turn usage is read from its transcript (docs/HOOKS.md)."""
    return (PROJECT / "fixtures" / "usage" / f"{agent}.jsonl").is_file()


def codex_turn() -> str | None:
    """The `turn_id` of the newest `token_usage_record` of Codex's rollout: the turn that
    its `Stop` payload names."""
    turn = None
    for line in (PROJECT / "fixtures" / "usage" / "codex.jsonl").read_text().splitlines():
        if '"token_usage_record"' in line:
            turn = json.loads(line)["payload"].get("turn_id", turn)
    return turn


def agent_payload(agent: str, name: str, repo: Path, transcript: Path) -> bytes:
    """A fixture of `fixtures/<agent>/` pointed at `repo` and at `transcript`."""
    v = json.loads((PROJECT / "fixtures" / agent / name).read_text())
    for field in TRANSCRIPT_FIELDS:
        if isinstance(v.get(field), str):
            v[field] = str(transcript)
    if agent == "codex" and "turn_id" in v and reads_usage(agent):
        v["turn_id"] = codex_turn() or v["turn_id"]
    return json.dumps(v).replace(FIXTURE_ROOT, str(repo)).encode()


@section("agent-hooks", "agent hooks: a turn checkpoint vs a plain checkpoint")
def bench_agent_hooks(ctx: Context) -> SectionResult:
    """Each round, for every agent: the workload changes (5 tracked files, 3 untracked), then
    a plain `git agent-rewind checkpoint` and — after the same kind of change and one file
    edit noted by the agent's edit hook — `git agent-rewind hook <agent>` with its turn
    payload, in alternating order; both invoked through `git` as the agents invoke it."""
    a = ctx.args
    nfiles = 1000
    repo = build_repo(ctx, "agent-hooks-1k", nfiles)
    ctx.git(repo, "config", "gc.auto", "0")
    ctx.git(repo, "config", "maintenance.auto", "false")
    for rel in ("src/cart.rs", "src/discount.rs"):
        (repo / rel).write_text("fn main() {}\n")
    transcripts = {agent: session_transcript(ctx.root, agent) for agent, *_ in AGENT_HOOKS}
    work = Workload(repo, nfiles)
    gitcmd = ["git", "agent-rewind"]
    # Every command but a session start records into this run, whatever a session start
    # made active.
    env = {**ctx.env, "AGENT_RUN": "bench-agents"}
    run([*gitcmd, "start", "--run", "bench-agents"], cwd=repo, env=env)
    payloads = {
        agent: (
            agent_payload(agent, turn, repo, transcripts[agent]),
            agent_payload(agent, edit, repo, transcripts[agent]),
        )
        for agent, turn, edit, _ in AGENT_HOOKS
    }
    starts = {agent: agent_payload(agent, start, repo, transcripts[agent]) for agent, _, _, start in AGENT_HOOKS}
    gen = [0]

    def plain() -> float:
        gen[0] += 1
        work.mutate(gen[0])
        t, _ = timed(lambda: run([*gitcmd, "checkpoint", "turn", "--event", "turn"], cwd=repo, env=env))
        return t

    def hooked(agent: str) -> tuple[float, float]:
        gen[0] += 1
        work.mutate(gen[0])
        turn, edit = payloads[agent]
        te, pe = timed(lambda: subprocess.run([*gitcmd, "--json", "hook", agent], cwd=repo, env=env, input=edit, capture_output=True))
        tt, pt = timed(lambda: subprocess.run([*gitcmd, "--json", "hook", agent], cwd=repo, env=env, input=turn, capture_output=True))
        for p, want in ((pe, "noted"), (pt, "recorded")):
            out = json.loads(p.stdout or b"{}")
            if p.returncode != 0 or out.get("action") != want:
                raise SystemExit(f"hook {agent}: expected {want}, got {p.stdout!r} {p.stderr!r}")
        return tt, te

    def session_start(agent: str, n: int) -> tuple[float, float]:
        """A plain `start` of a new run, then the agent's session start creating one (a run
        `AGENT_RUN` names that does not exist yet, as a fresh session with no active run
        would), in alternating order."""
        def plain_start() -> float:
            t, _ = timed(lambda: run([*gitcmd, "start", "--run", f"bench-start-{agent}-{n}"], cwd=repo, env=ctx.env))
            return t

        def hook_start() -> float:
            new = {**ctx.env, "AGENT_RUN": f"bench-session-{agent}-{n}"}
            t, p = timed(lambda: subprocess.run([*gitcmd, "--json", "hook", agent], cwd=repo, env=new, input=starts[agent], capture_output=True))
            out = json.loads(p.stdout or b"{}")
            if p.returncode != 0 or out.get("action") != "started":
                raise SystemExit(f"hook {agent}: expected started, got {p.stdout!r} {p.stderr!r}")
            return t

        if n % 2 == 0:
            tp, th = plain_start(), hook_start()
        else:
            th, tp = hook_start(), plain_start()
        return th, tp

    total = a.warmup + a.agent_hook_iterations
    agents = [x[0] for x in AGENT_HOOKS]
    times = {ag: {"plain": [], "hook": [], "edit": [], "start": [], "plain_start": []} for ag in agents}
    log(f"{total} rounds of one plain checkpoint and one turn hook per agent")
    for it in range(total):
        k = it % len(agents)
        for agent in agents[k:] + agents[:k]:
            if it % 2 == 0:
                tp = plain()
                th, te = hooked(agent)
            else:
                th, te = hooked(agent)
                tp = plain()
            ts, tps = session_start(agent, it)
            if it >= a.warmup:
                st = times[agent]
                st["plain"].append(tp)
                st["hook"].append(th)
                st["edit"].append(te)
                st["start"].append(ts)
                st["plain_start"].append(tps)

    cps = json.loads(run([*gitcmd, "list", "bench-agents", "--json"], cwd=repo, env=env).stdout)
    for agent in agents:
        turns = [c for c in cps if c.get("agent") == agent and c["event"] == "turn"]
        if len(turns) != total or not all(c.get("touched") for c in turns):
            raise SystemExit(f"{agent}: not one turn checkpoint with touched paths per turn hook")
        if reads_usage(agent) and not all(c.get("usage") for c in turns):
            raise SystemExit(f"{agent}: a turn checkpoint without the usage of its transcript's last turn")
    rows, raw = [], {}
    for agent in agents:
        st = times[agent]
        overhead = statistics.median(h - p for h, p in zip(st["hook"], st["plain"]))
        rows.append(
            [
                agent,
                ms(statistics.median(st["plain"])),
                ms(statistics.median(st["hook"])),
                ms(p90(st["hook"])),
                f"**{ms(overhead)}**",
                "yes" if overhead <= 15e-3 else "**no**",
                ms(statistics.median(st["edit"])),
                ms(statistics.median(st["plain_start"])),
                f"**{ms(statistics.median(st['start']))}**",
                "yes" if statistics.median(st["start"]) <= 30e-3 else "**no**",
            ]
        )
        raw[agent] = {**st, "overhead": overhead}
        log(f"{agent}: checkpoint {ms(statistics.median(st['plain']))}, turn hook {ms(statistics.median(st['hook']))} (+{ms(overhead)})")
    notes = [
        f"Overhead = median over {a.agent_hook_iterations} rounds (after {a.warmup} warm-up) of (turn hook − plain "
        "checkpoint), timed back to back in each round, the order alternating; both through `git agent-rewind` "
        "as the agents call it, in the 1k-file repository (packed) with an active run. Each turn hook recorded a "
        "checkpoint carrying `touched`, and `usage` for the agents whose usage is read from their transcript "
        "(checked).",
        f"What the turn hook does beyond the checkpoint: read and parse the payload, hash the session's "
        f"{TRANSCRIPT_BYTES / 1e6:g} MB transcript (`git-blob` digest), take the pending edit list; for the agents "
        "whose usage is read from their transcript (claude, codex, gemini, qwen, copilot, pi), read the last turn's "
        "usage backward from its end: their transcript is their real two-turn one (`fixtures/usage/`) repeated to "
        "that size, a session of hundreds of turns. The edit hook appends one line and records nothing.",
        "Session start = the agent's session-start hook creating a run (median; `AGENT_RUN` names a new run), "
        "timed back to back with a plain `git agent-rewind start` of a new run; target ≤ 30 ms.",
    ]
    return SectionResult(
        headers=[
            "agent", "plain checkpoint", "turn hook", "turn hook p90", "overhead", "≤ 15 ms", "edit hook",
            "plain start", "session start", "≤ 30 ms",
        ],
        rows=rows,
        notes=notes,
        raw=raw,
    )
