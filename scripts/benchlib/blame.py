"""Section `blame`: `git agent-rewind blame` vs `git blame -M -C` of the same file."""

import random

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)


def claude_event(repo: Path, transcript: Path, event: dict) -> str:
    """A Claude Code hook payload of the bench session."""
    base = {"session_id": "bench-blame", "cwd": str(repo), "transcript_path": str(transcript)}
    return json.dumps({**base, **event})


@section("blame", "blame: a 2,000-line file with 500 agent turns vs git blame -M -C")
def bench_blame(ctx: Context) -> SectionResult:
    """A 2,000-line file, then 500 agent turns recorded through the Claude Code hooks (each
    rewrites 3 lines and adds one, then the person commits it: 500 commits, 500 turns, 500
    post-commit checkpoints); then `blame <file> HEAD` and `blame <file>` (the worktree)
    against `git blame -M -C` of the same, interleaved."""
    a = ctx.args
    turns, nlines = a.blame_turns, 2000
    repo = ctx.root / "blame"
    ctx.git(ctx.root, "init", "-q", str(repo))
    ctx.git(repo, "config", "gc.auto", "1000000")
    lines = [f"fn item_{i}() {{ compute({i}); }}\n" for i in range(nlines)]
    f = repo / "src" / "big.rs"
    f.parent.mkdir(parents=True)
    f.write_text("".join(lines))
    ctx.git(repo, "add", "-A")
    ctx.git(repo, "commit", "-q", "-m", "base")
    ctx.tool(repo, "hooks", "install")
    transcript = ctx.root / "blame-transcript.jsonl"
    transcript.write_text(json.dumps({"type": "assistant", "uuid": "u",
                                      "message": {"role": "assistant", "model": "bench-model"}}) + "\n")
    hook = [*ctx.tool_cmd, "hook", "claude"]
    run(hook, cwd=repo, env=ctx.env, input=claude_event(repo, transcript, {"hook_event_name": "SessionStart", "source": "startup"}))
    log(f"recording {turns} turns and commits")
    rng = random.Random(32)
    for t in range(turns):
        for _ in range(3):
            k = rng.randrange(len(lines))
            lines[k] = f"    let v{t}_{k} = agent_turn({t}, {k});\n"
        lines.insert(rng.randrange(len(lines)), f"// turn {t} adds a line\n")
        f.write_text("".join(lines))
        run(hook, cwd=repo, env=ctx.env, input=claude_event(repo, transcript, {
            "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {"file_path": str(f)}}))
        run(hook, cwd=repo, env=ctx.env, input=claude_event(repo, transcript, {"hook_event_name": "Stop"}))
        ctx.git(repo, "commit", "-q", "-a", "-m", f"turn {t}")
    ctx.git(repo, "gc", "-q")
    # The worktree case: one more turn, not committed.
    lines[0] = "// not committed yet\n"
    f.write_text("".join(lines))
    rel = "src/big.rs"
    cases = [
        ("at HEAD", [*ctx.tool_cmd, "blame", rel, "HEAD"], ["git", "blame", "-M", "-C", "HEAD", "--", rel]),
        ("worktree", [*ctx.tool_cmd, "blame", rel], ["git", "blame", "-M", "-C", "--", rel]),
    ]
    # A check before timing: the tool attributes agent lines.
    doc = json.loads(run([*ctx.tool_cmd, "--json", "blame", rel, "HEAD"], cwd=repo, env=ctx.env).stdout)
    agent = sum(1 for l in doc["lines"] if l["origin"] == "agent")
    log(f"{agent} of {len(doc['lines'])} lines are the agent's")
    rows, raw = [], {}
    for name, ours, theirs in cases:
        ts, tg = [], []
        for it in range(a.warmup + a.blame_iterations):
            order = [(ours, ts), (theirs, tg)] if it % 2 == 0 else [(theirs, tg), (ours, ts)]
            for cmd, out in order:
                t, _ = timed(lambda: run(cmd, cwd=repo, env=ctx.env))
                if it >= a.warmup:
                    out.append(t)
        m_s, m_g = statistics.median(ts), statistics.median(tg)
        rows.append([name, ms(m_s), ms(m_g), ratio(m_s, m_g)])
        raw[name] = {"ours": ts, "git": tg}
    return SectionResult(
        headers=["blame of src/big.rs", "git agent-rewind blame (median)", "git blame -M -C (median)", "ratio"],
        rows=rows,
        notes=[f"{nlines:,} lines at the start, {turns} agent turns each committed; "
               f"{agent:,} of {len(doc['lines']):,} lines at HEAD are the agent's."],
        raw=raw,
    )
