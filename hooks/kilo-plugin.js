// git-agent-rewind Kilo plugin (written by `git agent-rewind hooks install --agent kilo`;
// `git agent-rewind hooks uninstall --agent kilo` deletes it; edits are overwritten).
//
// Kilo is an OpenCode fork and kept its plugin events. This hands them to
// `git agent-rewind hook kilo` as
// {"event": <the event>, "directory": <the session's directory>, "worktree": <its worktree>}
// on standard input: session.created (start or join the worktree's active run),
// session.idle (the agent finished a turn: record a `turn` checkpoint, with "messageID", the
// id of the session's newest assistant message, seen on message.updated) and file.edited
// (note the path for the next turn). Before Kilo compacts a session it sends a
// session.compacting event of its own and adds what the command prints (the run's manifest)
// to the compaction's context. Whatever happens, the agent is never blocked: the command's
// exit status is ignored, and a missing `git` is ignored too.
import { spawn } from "node:child_process"

const EVENTS = new Set(["session.created", "session.idle", "file.edited"])
// Session id → the id of its newest assistant message.
const newest = new Map()

function send(payload) {
  return new Promise((resolve) => {
    let out = ""
    try {
      const child = spawn("git", ["agent-rewind", "hook", "kilo"], {
        cwd: payload.directory || undefined,
        stdio: ["pipe", "pipe", "ignore"],
      })
      child.stdout.on("data", (d) => {
        if (out.length < 8192) out += d
      })
      child.on("error", () => resolve(""))
      child.on("close", () => resolve(out))
      child.stdin.on("error", () => {})
      child.stdin.end(JSON.stringify(payload))
    } catch {
      resolve("")
    }
  })
}

export const GitAgentRewind = async ({ directory, worktree }) => ({
  event: async ({ event }) => {
    if (!event) return
    const props = event.properties || {}
    if (event.type === "message.updated") {
      const info = props.info || {}
      if (info.role === "assistant" && info.sessionID && info.id) newest.set(info.sessionID, info.id)
      return
    }
    if (EVENTS.has(event.type)) {
      const payload = { event, directory, worktree }
      if (event.type === "session.idle" && newest.has(props.sessionID)) {
        payload.messageID = newest.get(props.sessionID)
      }
      await send(payload)
    }
  },
  "experimental.session.compacting": async (input, output) => {
    const event = { type: "session.compacting", properties: { sessionID: input && input.sessionID } }
    const text = (await send({ event, directory, worktree })).trim()
    if (text && output && Array.isArray(output.context)) output.context.push(text)
  },
})
