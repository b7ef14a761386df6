"""Section `pickaxe`: `log -S`/`log -G` over one run vs `git log -S`/`-G` over the same commits."""

import random

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)

TURNS = 500
FILES = 2000
ITERATIONS = 9


def claude_event(repo: Path, transcript: Path, event: dict) -> str:
    """A Claude Code hook payload of the bench session."""
    base = {"session_id": "bench-pickaxe", "cwd": str(repo), "transcript_path": str(transcript)}
    return json.dumps({**base, **event})


@section("pickaxe", "log -S / -G: one run of 500 turns vs git log -S / -G over the same commits")
def bench_pickaxe(ctx: Context) -> SectionResult:
    """2,000 files of 40 lines, then 500 agent turns recorded through the Claude Code hooks
    (each rewrites 3 lines in 3 files; every 25th adds the needle, every 40th removes one);
    then `log -S` and `log -G` of the run against `git log -S`/`-G --no-renames
    --first-parent --format=%H <base>..refs/agent-runs/<run>/HEAD`, interleaved, after
    checking that both name the same commits."""
    a = ctx.args
    repo = ctx.root / "pickaxe"
    ctx.git(ctx.root, "init", "-q", str(repo))
    # No `git gc --auto` / maintenance in the middle of the recording: the one `git gc`
    # below packs everything before the timing.
    ctx.git(repo, "config", "gc.auto", "0")
    ctx.git(repo, "config", "maintenance.auto", "false")
    rng = random.Random(48)
    files = {}
    for i in range(FILES):
        files[f"src/m{i // 100}/f{i}.rs"] = [f"fn f{i}_{k}() {{ work({k}); }}\n" for k in range(40)]
    for rel, lines in files.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(lines))
    ctx.git(repo, "add", "-A")
    ctx.git(repo, "commit", "-q", "-m", "base")
    transcript = ctx.root / "pickaxe-transcript.jsonl"
    transcript.write_text(json.dumps({"type": "assistant", "uuid": "u",
                                      "message": {"role": "assistant", "model": "bench-model"}}) + "\n")
    hook = [*ctx.tool_cmd, "--json", "hook", "claude"]
    started = run(hook, cwd=repo, env=ctx.env,
                  input=claude_event(repo, transcript, {"hook_event_name": "SessionStart", "source": "startup"}))
    run_id = json.loads(started.stdout)["run"]
    log(f"recording {TURNS} turns")
    names = sorted(files)
    with_needle = []
    for t in range(TURNS):
        for rel in rng.sample(names, 3):
            lines = files[rel]
            lines[rng.randrange(len(lines))] = f"    let v{t} = turn({t});\n"
            (repo / rel).write_text("".join(lines))
        if t % 25 == 0:
            rel = rng.choice(names)
            files[rel].append(f"// pickaxe_needle {t}\n")
            (repo / rel).write_text("".join(files[rel]))
            with_needle.append(rel)
        if t % 40 == 39 and with_needle:
            rel = with_needle.pop(0)
            files[rel] = [l for l in files[rel] if "pickaxe_needle" not in l]
            (repo / rel).write_text("".join(files[rel]))
        run(hook, cwd=repo, env=ctx.env, input=claude_event(repo, transcript, {"hook_event_name": "Stop"}))
    ctx.git(repo, "gc", "-q")
    first = json.loads(ctx.tool(repo, "--json", "list", run_id).stdout)[0]
    span = f"{first['parents'][0]}..refs/agent-runs/{run_id}/HEAD"
    git_base = ["git", "log", "--no-renames", "--first-parent", "--format=%H"]
    cases = [
        ("-S pickaxe_needle", ["-S", "pickaxe_needle"]),
        ("-G 'needle [0-9]+0$'", ["-G", "needle [0-9]+0$"]),
    ]
    rows, raw = [], {}
    for name, flags in cases:
        ours = [*ctx.tool_cmd, "--json", "log", *flags, run_id]
        theirs = [*git_base, *flags, span]
        # A check before timing: the same commits.
        got = {h["checkpoint"] for h in json.loads(run(ours, cwd=repo, env=ctx.env).stdout)}
        want = set(run(theirs, cwd=repo, env=ctx.env).stdout.split())
        if got != want:
            raise SystemExit(f"pickaxe {name}: log names {len(got)} checkpoints, git {len(want)}")
        ts, tg = [], []
        for it in range(a.warmup + ITERATIONS):
            order = [(ours, ts), (theirs, tg)] if it % 2 == 0 else [(theirs, tg), (ours, ts)]
            for cmd, out in order:
                t, _ = timed(lambda: run(cmd, cwd=repo, env=ctx.env))
                if it >= a.warmup:
                    out.append(t)
        m_s, m_g = statistics.median(ts), statistics.median(tg)
        rows.append([name, str(len(got)), ms(m_s), ms(m_g), ratio(m_s, m_g)])
        raw[name] = {"ours": ts, "git": tg}
    return SectionResult(
        headers=["pickaxe", "hits", "git agent-rewind log (median)", "git log (median)", "ratio"],
        rows=rows,
        notes=[f"{FILES:,} files, one run of {TURNS} turns (3 files each); git log over the same "
               f"{TURNS + 1} commits with --no-renames --first-parent."],
        raw=raw,
    )
