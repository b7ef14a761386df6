// git-agent-rewind OpenCode plugin (written by `git agent-rewind hooks install --agent opencode`;
// `git agent-rewind hooks uninstall --agent opencode` deletes it; edits are overwritten).
//
// Hands OpenCode bus events to `git agent-rewind hook opencode` as
// {"event": <the event>, "directory": <the session's directory>, "worktree": <its worktree>}
// on standard input: session.created (start or join the worktree's active run),
// session.idle (the agent finished a turn: record a `turn` checkpoint, with "messageID", the
// id of the session's newest assistant message, seen on message.updated, and "usage", the
// tokens of each assistant message since the previous turn: [{model, input, output,
// cache_read, cache_write}], numbers only) and file.edited
// (note the path for the next turn). Before OpenCode compacts a session it sends a
// session.compacting event of its own and adds what the command prints (the run's manifest)
// to the compaction's context. Whatever happens, the agent is never blocked: the command's
// exit status is ignored, and a missing `git` is ignored too.
//
// OpenCode calls an event handler without waiting for it, and `opencode run` exits right
// after the session's last session.idle (checked with 1.18.33 and 1.19.5): a turn's command
// can still be running then. What it does wait for, before it exits, is each plugin's
// `dispose`; ours waits there until every command it started has exited (for 30 s at
// most), so no turn is left half-recorded and a command that reads the repository after
// `opencode run` returns sees the turn. Each command also runs in a session of its own (a
// ^C meant for OpenCode does not stop it half-way), and only the compaction's command has
// its output read (no other one can fail on a closed pipe once OpenCode is gone).
import { spawn } from "node:child_process"

const EVENTS = new Set(["session.created", "session.idle", "file.edited"])
// Session id → the id of its newest assistant message.
const newest = new Map()
// Session id → (assistant message id → its tokens, as last updated) since the last turn.
const spent = new Map()

function tokensOf(info) {
  const t = info.tokens || {}
  const cache = t.cache || {}
  return {
    model: info.modelID,
    input: t.input || 0,
    output: (t.output || 0) + (t.reasoning || 0),
    cache_read: cache.read || 0,
    cache_write: cache.write || 0,
  }
}

// The commands started and not yet exited.
const running = new Set()

// Run the command with `payload` on its standard input; resolves to what it printed when
// `wantOutput`, once it has exited (or could not start).
function send(payload, wantOutput = false) {
  const done = new Promise((resolve) => {
    let out = ""
    try {
      const child = spawn("git", ["agent-rewind", "hook", "opencode"], {
        cwd: payload.directory || undefined,
        stdio: ["pipe", wantOutput ? "pipe" : "ignore", "ignore"],
        detached: true,
      })
      if (wantOutput) {
        child.stdout.on("data", (d) => {
          if (out.length < 8192) out += d
        })
      }
      child.on("error", () => resolve(""))
      child.on("close", () => resolve(out))
      child.stdin.on("error", () => {})
      child.stdin.end(JSON.stringify(payload))
    } catch {
      resolve("")
    }
  })
  running.add(done)
  done.then(() => running.delete(done))
  return done
}

// How long OpenCode's exit waits for our commands at most: a command that takes longer
// (a stuck filesystem) goes on by itself, in its session of its own, its payload long
// handed over; OpenCode is never held by it for good.
const EXIT_WAIT_MS = 30000

// Until no command of ours is running (one may start while others finish), or
// EXIT_WAIT_MS passed.
async function settled() {
  let timer
  const late = new Promise((resolve) => {
    timer = setTimeout(resolve, EXIT_WAIT_MS)
  })
  let waited = false
  late.then(() => (waited = true))
  while (running.size > 0 && !waited) await Promise.race([Promise.all([...running]), late])
  clearTimeout(timer)
}

export const GitAgentRewind = async ({ directory, worktree }) => ({
  event: async ({ event }) => {
    if (!event) return
    const props = event.properties || {}
    if (event.type === "message.updated") {
      const info = props.info || {}
      if (info.role === "assistant" && info.sessionID && info.id) {
        newest.set(info.sessionID, info.id)
        if (info.tokens) {
          if (!spent.has(info.sessionID)) spent.set(info.sessionID, new Map())
          spent.get(info.sessionID).set(info.id, tokensOf(info))
        }
      }
      return
    }
    if (EVENTS.has(event.type)) {
      const payload = { event, directory, worktree }
      if (event.type === "session.idle" && newest.has(props.sessionID)) {
        payload.messageID = newest.get(props.sessionID)
      }
      if (event.type === "session.idle" && spent.has(props.sessionID)) {
        payload.usage = [...spent.get(props.sessionID).values()]
        spent.delete(props.sessionID)
      }
      await send(payload)
    }
  },
  "experimental.session.compacting": async (input, output) => {
    const event = { type: "session.compacting", properties: { sessionID: input && input.sessionID } }
    const text = (await send({ event, directory, worktree }, true)).trim()
    if (text && output && Array.isArray(output.context)) output.context.push(text)
  },
  dispose: settled,
})
