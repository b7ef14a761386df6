"""Section `mcp`: the MCP server's start (spawned, `initialize` answered) and its read tools
answered over an open connection, against the same command run as its own process."""

from benchlib.common import *  # noqa: F401,F403  (the shared helpers, Context, section, ...)

MCP_CHECKPOINTS = 20


class McpClient:
    """`git-agent-rewind mcp` in `repo`, spoken to over its pipes."""

    def __init__(self, ctx: Context, repo: Path):
        self.p = subprocess.Popen([str(ctx.bin), "mcp"], cwd=repo, env=ctx.env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next = 1

    def request(self, method: str, params: dict) -> dict:
        i = self.next
        self.next += 1
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit(f"the MCP server closed its output before answering {method}")
            msg = json.loads(line)
            if msg.get("id") == i:
                return msg

    def initialize(self) -> None:
        r = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "bench", "version": "1"}})
        if "result" not in r:
            raise SystemExit(f"initialize failed: {r}")
        self.p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}\n')
        self.p.stdin.flush()

    def call(self, tool: str, args: dict) -> dict:
        r = self.request("tools/call", {"name": tool, "arguments": args})
        if r.get("result", {}).get("isError") is not False:
            raise SystemExit(f"{tool} failed: {r}")
        return r["result"]["structuredContent"]

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait(timeout=10)


@section("mcp", "MCP server: start-up and read tools vs the command line")
def bench_mcp(ctx: Context) -> SectionResult:
    n = ctx.args.small_iterations
    repo = build_repo(ctx, "mcp-1k", 1000)
    run_id = "mcprun"
    ctx.tool(repo, "start", "--run", run_id)
    for gen in range(1, MCP_CHECKPOINTS):
        (repo / file_path(gen * 7)).write_text(file_content(gen * 7, gen) + f"edit {gen}\n")
        ctx.tool(repo, "checkpoint", f"s{gen}")
    starts = []
    for _ in range(n):
        t, c = timed(lambda: _started(ctx, repo))
        starts.append(t)
        c.close()
    client = McpClient(ctx, repo)
    client.initialize()
    pairs = [
        ("list_runs", {}, ["list", "--json"]),
        ("show_checkpoint", {"checkpoint": f"{run_id}@-1"}, ["show", "--json", f"{run_id}@-1"]),
        ("log", {"run": run_id}, ["list", "--json", run_id]),
        ("diff", {"from": f"{run_id}@1", "to": f"{run_id}@-1"}, ["diff", f"{run_id}@1", f"{run_id}@-1"]),
        ("blame", {"file": file_path(7)}, ["blame", "--json", file_path(7)]),
    ]
    rows, raw = [], {}
    rows.append(["server start (spawn → `initialize` answered)", f"**{ms(statistics.median(starts))}**", "—", "—",
                 "yes" if statistics.median(starts) <= 50e-3 else "**no**"])
    raw["start"] = starts
    env = dict(ctx.env, GIT_PAGER="cat", PAGER="cat")
    for tool, args, cli in pairs:
        ours, theirs = [], []
        for i in range(n + 1):
            def via_mcp() -> float:
                return timed(lambda: client.call(tool, args))[0]

            def via_cli() -> float:
                return timed(lambda: run([str(ctx.bin), *cli], cwd=repo, env=env))[0]
            a, b = (via_mcp(), via_cli()) if i % 2 == 0 else tuple(reversed((via_cli(), via_mcp())))
            if i > 0:  # the first round warms up
                ours.append(a)
                theirs.append(b)
        mo, mt = statistics.median(ours), statistics.median(theirs)
        rows.append([f"`{tool}` vs `git-agent-rewind {' '.join(cli)}`", ms(mo), ms(mt), f"**{ratio(mo, mt)}**",
                     "yes" if mo <= 2 * mt else "**no**"])
        raw[tool] = {"mcp": ours, "cli": theirs}
        log(f"{tool}: {ms(mo)} over MCP, {ms(mt)} as a command")
    client.close()
    return SectionResult(
        headers=["what", "over MCP", "command", "ratio", "target met"],
        rows=rows,
        notes=[
            f"Median of {n} rounds in a 1k-file repository with a run of {MCP_CHECKPOINTS} checkpoints. Targets: the "
            "server starts in under 50 ms; a read tool answers in under 2× the command's own time (a process "
            "start included, as an agent would run it).",
        ],
        raw=raw,
    )


def _started(ctx: Context, repo: Path) -> McpClient:
    c = McpClient(ctx, repo)
    c.initialize()
    return c
