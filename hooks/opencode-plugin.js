// git-agent-rewind OpenCode plugin (written by `git agent-rewind hooks install --agent opencode`;
// `git agent-rewind hooks uninstall --agent opencode` deletes it; edits are overwritten).
//
// Hands three OpenCode bus events to `git agent-rewind hook opencode` as
// {"event": <the event>, "directory": <the session's directory>, "worktree": <its worktree>}
// on standard input: session.created (start or join the worktree's active run),
// session.idle (the agent finished a turn: record a `turn` checkpoint) and file.edited
// (note the path for the next turn). Whatever happens, the agent is never blocked: the
// command's exit status and output are ignored, and a missing `git` is ignored too.
import { spawn } from "node:child_process"

const EVENTS = new Set(["session.created", "session.idle", "file.edited"])

function send(payload) {
  return new Promise((resolve) => {
    try {
      const child = spawn("git", ["agent-rewind", "hook", "opencode"], {
        cwd: payload.directory || undefined,
        stdio: ["pipe", "ignore", "ignore"],
      })
      child.on("error", () => resolve())
      child.on("close", () => resolve())
      child.stdin.on("error", () => {})
      child.stdin.end(JSON.stringify(payload))
    } catch {
      resolve()
    }
  })
}

export const GitAgentRewind = async ({ directory, worktree }) => ({
  event: async ({ event }) => {
    if (event && EVENTS.has(event.type)) {
      await send({ event, directory, worktree })
    }
  },
})
