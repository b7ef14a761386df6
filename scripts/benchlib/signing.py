"""Section `signing`: what signing adds to a checkpoint and to a post-commit hook call."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)
from benchlib.runs import tool_checkpoint


def signing_home(ctx: Context) -> dict[str, str]:
    """A HOME and GNUPGHOME of the bench's own: an ssh key and a passphrase-less gpg key."""
    home = ctx.root / "signing-home"
    gnupg = home / "gnupg"
    gnupg.mkdir(parents=True, exist_ok=True)
    gnupg.chmod(0o700)
    env = dict(ctx.env, HOME=str(home), GNUPGHOME=str(gnupg))
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bench", "-f", str(home / "ssh_key")], env=env)
    run(["gpg", "--batch", "--passphrase", "", "--quick-gen-key", "Bench <bench@example.invalid>",
         "ed25519", "sign", "never"], env=env)
    return env


MODES = {
    "unsigned": [("agentRewind.sign", "false")],
    "ssh (ssh-keygen)": [("agentRewind.sign", "true"), ("gpg.format", "ssh")],
    "openpgp (gpg)": [("agentRewind.sign", "true"), ("gpg.format", "openpgp")],
}


@section("signing", "signed checkpoints: checkpoint and post-commit hook, signed vs unsigned")
def bench_signing(ctx: Context) -> SectionResult:
    """In a 1k-file repository: `checkpoint` (5 modified tracked, 3 untracked files) and
    `git commit` with our post-commit hook recording into an active run, unsigned and
    signed with an ssh key and with a gpg key, the modes interleaved round-robin. A
    checkpoint signs two commits (the checkpoint and its notes commit)."""
    a = ctx.args
    env = signing_home(ctx)
    repo = build_repo(ctx, "signing-1k", 1000)
    ctx.git(repo, "config", "gc.auto", "0")
    ctx.git(repo, "config", "maintenance.auto", "false")
    home = Path(env["HOME"])
    ctx.tool(repo, "start", "--run", "benchrun")
    ctx.tool(repo, "hooks", "install")
    work = Workload(repo, 1000)
    orig_env = ctx.env
    ctx.env = env

    def configure(mode: str) -> None:
        ctx.git(repo, "config", "--unset", "gpg.format", check=False)
        ctx.git(repo, "config", "user.signingKey",
                str(home / "ssh_key") if "ssh" in mode else "bench@example.invalid")
        for k, v in MODES[mode]:
            ctx.git(repo, "config", k, v)

    times = {m: {"checkpoint": [], "commit": []} for m in MODES}
    gen = 0
    total = a.warmup + a.iterations
    log(f"signing: {total} rounds of each mode")
    try:
        for it in range(total):
            modes = list(MODES)
            k = it % len(modes)
            for mode in modes[k:] + modes[:k]:
                configure(mode)
                gen += 1
                work.mutate(gen)
                t, out = timed(lambda: tool_checkpoint(ctx, repo, gen))
                if out.get("unchanged"):
                    raise SystemExit("a checkpoint was not written")
                gen += 1
                work.mutate(gen)
                ctx.git(repo, "add", "--", *work.tracked)
                tc, _ = timed(lambda: run(["git", "commit", "-q", "-m", f"bench {gen}"], cwd=repo, env=env))
                if it >= a.warmup:
                    times[mode]["checkpoint"].append(t)
                    times[mode]["commit"].append(tc)
        verdict = json.loads(ctx.tool(repo, "verify", "benchrun", "--json", check=False).stdout)
    finally:
        ctx.env = orig_env
    signed = sum(1 for c in verdict["runs"][0]["checkpoints"] if c["verdict"] != "unsigned")
    base_cp = statistics.median(times["unsigned"]["checkpoint"])
    base_commit = statistics.median(times["unsigned"]["commit"])
    rows = []
    for mode in MODES:
        cp, cm = statistics.median(times[mode]["checkpoint"]), statistics.median(times[mode]["commit"])
        rows.append([mode, ms(cp), f"+{ms(cp - base_cp)}" if mode != "unsigned" else "-",
                     ms(cm), f"+{ms(cm - base_commit)}" if mode != "unsigned" else "-"])
    return SectionResult(
        headers=["signing", "checkpoint median", "added per checkpoint", "`git commit` + hook median",
                 "added per hook call"],
        rows=rows,
        notes=[f"`verify` found {signed} signed checkpoints in the run afterwards (unsigned ones "
               "are the rounds of the unsigned mode and the hook's background checkpoints "
               "recorded while that mode was on).",
               "A checkpoint signs two commits (the checkpoint and its notes commit): the "
               "signing program starts twice."],
        raw=times,
    )
