// git-agent-rewind Pi extension (written by `git agent-rewind hooks install --agent pi`;
// `git agent-rewind hooks uninstall --agent pi` deletes it; edits are overwritten).
//
// Hands Pi's events to `git-agent-rewind hook pi` (or `git agent-rewind hook pi` where only
// git finds it) as one JSON object on standard input:
// {"type": <the Pi event>, "cwd", "sessionId", "sessionFile", "leafId", "parentSession",
//  "model": {"provider", "id"}, "reason"?, "toolName"?, "path"?}
// - session_start: start or join the worktree's active run;
// - tool_result of the write and edit tools that did not fail: note the file's path for the
//   next turn;
// - agent_end (the end of a user's prompt; turn_end fires for every model call): record a
//   `turn` checkpoint, with the session's current entry (leafId) and its file;
// - session_compact: after Pi compacted the conversation.
// What the command prints after session_start or session_compact (the run's manifest, when
// the session resumed or was compacted) is given to the model with the next prompt, as a
// message of ours that is not displayed (before_agent_start).
// Whatever happens, the agent is never blocked: the command's exit status is ignored, and
// a missing command is ignored too.
import { spawn } from "node:child_process"

const EDIT_TOOLS = new Set(["write", "edit"])
// The manifest the command printed, until the next prompt takes it.
let pending: Promise<string> | undefined

function call(
  program: string,
  args: string[],
  payload: object,
  cwd: string,
): Promise<string | null> {
  return new Promise((resolve) => {
    let out = ""
    try {
      const child = spawn(program, args, { cwd, stdio: ["pipe", "pipe", "ignore"] })
      child.stdout.on("data", (d) => {
        if (out.length < 8192) out += d
      })
      // null: the program is not there.
      child.on("error", () => resolve(null))
      child.on("close", () => resolve(out))
      child.stdin.on("error", () => {})
      child.stdin.end(JSON.stringify(payload))
    } catch {
      resolve(null)
    }
  })
}

async function send(payload: { cwd?: string }): Promise<string> {
  const cwd = payload.cwd || process.cwd()
  const direct = await call("git-agent-rewind", ["hook", "pi"], payload, cwd)
  if (direct !== null) return direct
  return (await call("git", ["agent-rewind", "hook", "pi"], payload, cwd)) || ""
}

function facts(ctx: any): Record<string, unknown> {
  try {
    const sm = ctx.sessionManager
    const header = (sm.getHeader && sm.getHeader()) || {}
    return {
      cwd: ctx.cwd,
      sessionId: sm.getSessionId(),
      sessionFile: sm.getSessionFile() || undefined,
      leafId: sm.getLeafId() || undefined,
      parentSession: header.parentSession || undefined,
      model: ctx.model ? { provider: ctx.model.provider, id: ctx.model.id } : undefined,
    }
  } catch {
    return { cwd: ctx && ctx.cwd }
  }
}

export default function (pi: any) {
  pi.on("session_start", async (event: any, ctx: any) => {
    pending = send({ type: "session_start", reason: event && event.reason, ...facts(ctx) })
    await pending
  })
  pi.on("session_compact", async (_event: any, ctx: any) => {
    pending = send({ type: "session_compact", ...facts(ctx) })
    await pending
  })
  pi.on("before_agent_start", async () => {
    const text = pending ? (await pending).trim() : ""
    pending = undefined
    if (text) return { message: { customType: "git-agent-rewind", content: text, display: false } }
  })
  pi.on("tool_result", async (event: any, ctx: any) => {
    const path = event && event.input && event.input.path
    if (!EDIT_TOOLS.has(event.toolName) || event.isError || typeof path !== "string") return
    await send({ type: "tool_result", toolName: event.toolName, path, ...facts(ctx) })
  })
  pi.on("agent_end", async (_event: any, ctx: any) => {
    await send({ type: "agent_end", ...facts(ctx) })
  })
}
