#!/usr/bin/env node
// The `git-agent-rewind` command of the npm package: it finds the native binary in the
// platform package npm installed beside this one (an optional dependency chosen by `os` and
// `cpu`) and runs it with the same arguments, standard streams and exit status. It never
// downloads anything and never writes a file: a missing platform package is an error that
// says how to get one.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

// `process.platform process.arch` to the package holding that platform's binary; kept in
// step with the optionalDependencies of package.json (scripts/npm-pack writes both).
const PLATFORM_PACKAGES = {
  "linux x64": "git-agent-rewind-linux-x64",
  "linux arm64": "git-agent-rewind-linux-arm64",
  "darwin x64": "git-agent-rewind-darwin-x64",
  "darwin arm64": "git-agent-rewind-darwin-arm64",
  "win32 x64": "git-agent-rewind-win32-x64",
};

function fail(message) {
  process.stderr.write(`git-agent-rewind: ${message}\n`);
  process.exit(1);
}

const platform = `${process.platform} ${process.arch}`;
const pkg = PLATFORM_PACKAGES[platform];
if (!pkg) {
  fail(
    `no prebuilt binary for ${platform}; ` +
      "build it from source: cargo install git-agent-rewind --locked",
  );
}

const exe = process.platform === "win32" ? "git-agent-rewind.exe" : "git-agent-rewind";
let binary;
try {
  // Where npm put the platform package: beside this one, or in its own node_modules.
  binary = path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", exe);
} catch {
  fail(
    `the package ${pkg} (this platform's binary) is not installed: npm leaves optional ` +
      "dependencies out with --omit=optional or --no-optional; reinstall without it: " +
      "npm install -g git-agent-rewind",
  );
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });

// A signal sent to this process alone (a `kill` of its pid) reaches the binary too; one from
// the terminal reaches both already, and the binary decides what it means.
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
for (const signal of forwarded) {
  process.on(signal, () => {
    if (!child.killed) child.kill(signal);
  });
}

child.on("error", (err) => fail(`cannot run ${binary}: ${err.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so that the caller sees what the binary saw.
    for (const s of forwarded) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
