"""Shared by every bench section: process helpers, statistics, the Context with the
binary and environment, the standard repository and workload, the section registry, and
the output (machine description, markdown) and release build."""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import datetime
import json
import math
import os
import platform
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

PROJECT = Path(__file__).resolve().parent.parent.parent

# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd, cwd=None, env=None, input=None, check=True) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, cwd=cwd, env=env, input=input, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise SystemExit(
            f"command failed ({p.returncode}): {shlex.join(map(str, cmd))}\n"
            f"stdout: {p.stdout[-2000:]}\nstderr: {p.stderr[-2000:]}"
        )
    return p


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def timed_cpu(fn: Callable[[], object]) -> tuple[float, float, object]:
    """Wall time, and CPU time (user + system) of the child processes `fn` waited for."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), out


def p90(xs: list[float]) -> float:
    """Nearest-rank 90th percentile."""
    s = sorted(xs)
    return s[max(0, math.ceil(0.9 * len(s)) - 1)]


def ms(x: float) -> str:
    if x >= 100e-3:
        return f"{x * 1e3:.0f} ms"
    if x >= 10e-3:
        return f"{x * 1e3:.1f} ms"
    return f"{x * 1e3:.2f} ms"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b > 0 else "n/a"


def parse_size(s: str) -> int:
    s = s.strip().lower()
    if s.endswith("k"):
        return int(float(s[:-1]) * 1000)
    return int(s)


def size_label(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 and n >= 1000 else str(n)


def md_table(headers: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


# --------------------------------------------------------------------------------------
# Context: binary, environment, repositories
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Context:
    args: argparse.Namespace
    bin: Path
    root: Path  # temp dir holding the repositories
    env: dict[str, str]
    tool_cmd: list[str]  # how to invoke the tool ([bin] or ["git", "agent-rewind"])

    def git(self, repo: Path, *args, env=None, input=None, check=True) -> str:
        return run(["git", *args], cwd=repo, env=env or self.env, input=input, check=check).stdout

    def tool(self, repo: Path, *args, check=True) -> subprocess.CompletedProcess:
        return run([*self.tool_cmd, *args], cwd=repo, env=self.env, check=check)


def make_env(root: Path, bin_dir: Path) -> dict[str, str]:
    """A reproducible environment: no system/global git config, fixed identity, C locale."""
    gitconfig = root / "gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GIT_") and k not in ("AGENT_RUN", "AGENT_STEP")
    }
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(gitconfig),
        LC_ALL="C",
        NO_COLOR="1",
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
    )
    return env


def file_path(i: int) -> str:
    """Nested layout: 20 files per leaf directory, 3 levels of directories."""
    leaf = i // 20
    return f"src/m{leaf // 100:02d}/p{(leaf // 10) % 10}/l{leaf % 10}/file{i:05d}.txt"


def file_content(i: int, gen: int = 0) -> str:
    return "".join(f"file {i} line {k} generation {gen}\n" for k in range(8))


def build_repo(ctx: Context, name: str, nfiles: int, packed: bool = True, ref_format: str = "files") -> Path:
    """A committed repository of `nfiles` small text files, a .gitignore and some ignored
    files, with a fresh (not racily clean) index. `packed`: its objects in one pack, as in a
    clone; otherwise loose, as right after `git add -A && git commit` in a new project.
    `ref_format`: git's ref storage, `files` or `reftable`."""
    repo = ctx.root / name
    log(f"building {name}: {nfiles} files")
    ctx.git(ctx.root, "init", "-q", f"--ref-format={ref_format}", str(repo))
    for i in range(nfiles):
        p = repo / file_path(i)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(file_content(i))
    (repo / ".gitignore").write_text("*.log\n/build/\n")
    (repo / "build").mkdir()
    for i in range(100):
        (repo / "build" / f"out{i}.o").write_text(f"ignored {i}\n")
        (repo / f"src/m00/p0/l0/debug{i}.log").write_text(f"ignored {i}\n")
    if not packed:
        ctx.git(repo, "add", "-A")
        ctx.git(repo, "commit", "-q", "-m", f"{nfiles} files")
        # Keep `git gc --auto` (which the tool starts after about 1 write in 64) from
        # packing this layout away in the middle of the measurements, without turning
        # automatic gc off (with gc off the tool writes loose objects instead of packs).
        ctx.git(repo, "config", "gc.auto", "1000000")
    else:
        # Committed straight into one pack with `git fast-import`, as a clone holds its objects:
        # `git add -A && git commit` would leave tens of thousands of loose objects (which the
        # tool's occasional `git gc --auto` would then repack mid-run), and repacking them here
        # would delete as many files, after which ext4 is slow to allocate inodes near them for
        # minutes (`recently_deleted`), slowing whoever writes into `.git` next.
        stream = []
        tracked = [file_path(i) for i in range(nfiles)] + [".gitignore"]
        for mark, rel in enumerate(tracked, start=1):
            data = (repo / rel).read_bytes()
            stream.append(f"blob\nmark :{mark}\ndata {len(data)}\n".encode() + data + b"\n")
        msg = f"{nfiles} files"
        stream.append(
            f"commit refs/heads/main\ncommitter Bench <bench@example.invalid> 1767225600 +0000\n"
            f"data {len(msg)}\n{msg}\n".encode()
        )
        stream.extend(f"M 100644 :{mark} {rel}\n".encode() for mark, rel in enumerate(tracked, start=1))
        p = subprocess.run(
            ["git", "fast-import", "--quiet"], cwd=repo, env=ctx.env, input=b"".join(stream), capture_output=True
        )
        if p.returncode != 0:
            raise SystemExit(f"fast-import failed: {p.stderr.decode(errors='replace')[-2000:]}")
        ctx.git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
        ctx.git(repo, "read-tree", "HEAD")
    # Flush the tens of thousands of files just written (otherwise the kernel writes them
    # back during the measurements, slowing every file creation of both contenders), leave
    # the racy windows (git's stat cache: 1 s; the tool's untracked-walk cache: 2 s), as in
    # a working copy that was not all written a moment ago, then let `git status` refresh
    # and rewrite the index so the stat cache is clean for both contenders.
    os.sync()
    time.sleep(2.1)
    ctx.git(repo, "status", "--porcelain")
    ctx.git(repo, "update-index", "--refresh", check=False)
    return repo


class Workload:
    """Before each measured command: new content in the same 5 tracked files, and 3 new
    untracked files (the previous ones are removed), all with content never seen before, so
    every contender has to hash and write its blobs and trees itself."""

    MODIFIED = 5
    UNTRACKED = 3

    def __init__(self, repo: Path, nfiles: int):
        self.repo = repo
        step = max(1, nfiles // self.MODIFIED)
        self.tracked = [file_path(min(nfiles - 1, k * step + 7)) for k in range(self.MODIFIED)]
        self.untracked: list[Path] = []

    def mutate(self, gen: int) -> None:
        for k, rel in enumerate(self.tracked):
            (self.repo / rel).write_text(file_content(k, gen) + f"edit {gen}\n")
        for p in self.untracked:
            p.unlink()
        self.untracked = []
        for j in range(self.UNTRACKED):
            p = self.repo / ("scratch" if j else "src/m00/p0/l1") / f"new-{gen}-{j}.txt"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"untracked {gen} {j}\n" * (j + 1))
            self.untracked.append(p)


# --------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class SectionResult:
    headers: list[str]
    rows: list[list[str]]
    notes: list[str] = dataclasses.field(default_factory=list)
    raw: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Section:
    name: str
    title: str
    fn: Callable[[Context], SectionResult]


SECTIONS: dict[str, Section] = {}


def section(name: str, title: str):
    def deco(fn):
        SECTIONS[name] = Section(name, title, fn)
        return fn

    return deco


def machine(tool: str) -> dict[str, str]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    git_version = run(["git", "--version"]).stdout.strip().removeprefix("git version ")
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu or platform.processor() or "unknown",
        "os": f"{platform.system()} {platform.release()}",
        "git": git_version,
        "python": platform.python_version(),
        "tool": tool,
        "load": "{:.1f} {:.1f} {:.1f}".format(*os.getloadavg()),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def render(sec: Section, res: SectionResult, info: dict[str, str], command: str) -> str:
    lines = [
        f"Measured {info['date']} on {info['nproc']} CPUs ({info['cpu']}), {info['os']}, "
        f"git {info['git']}, tool {info['tool']}; load average at the start {info['load']}.",
        "",
        f"Reproduce: `{command}`",
        "",
        md_table(res.headers, res.rows),
    ]
    if res.notes:
        lines += [""] + [f"- {n}" for n in res.notes]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


def build_binary(rev: str | None, root: Path) -> tuple[Path, str]:
    """Build the release binary (of the working tree, or of commit `rev` exported to a temp
    dir with its own target dir under target/bench-rev) and copy it into `root`, so that
    later builds cannot change it mid-run. Returns the binary and a description."""
    if rev is None:
        src, target_args = PROJECT, []
        rev_desc = run(["git", "-C", str(PROJECT), "rev-parse", "--short=12", "HEAD"], check=False).stdout.strip()
        dirty = run(["git", "-C", str(PROJECT), "status", "--porcelain", "--", "src", "Cargo.toml", "Cargo.lock"], check=False).stdout.strip()
        desc = f"working tree at {rev_desc or 'unknown'}" + (" + uncommitted changes" if dirty else "")
        target = PROJECT / "target"
    else:
        sha = run(["git", "-C", str(PROJECT), "rev-parse", "--verify", f"{rev}^{{commit}}"]).stdout.strip()
        src = root / "src-export"
        src.mkdir()
        archive = subprocess.run(["git", "-C", str(PROJECT), "archive", sha], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        target = PROJECT / "target" / "bench-rev"
        target_args = ["--target-dir", str(target)]
        desc = f"commit {sha[:12]}"
    log(f"cargo build --release ({desc})")
    p = subprocess.run(["cargo", "build", "--release", "--quiet", *target_args], cwd=src)
    if p.returncode != 0:
        raise SystemExit("cargo build --release failed")
    out = root / "git-agent-rewind.bin"
    shutil.copy2(target / "release" / "git-agent-rewind", out)
    return out, desc


OLD_TS = "2026-01-01T00:00:00.000Z"


def seed_runs(ctx: Context, repo: Path, count: int, base: str, old_share: float = 0.9, prefix: str = "s") -> float:
    """`count` one-checkpoint runs `<prefix><i>` straight into `repo` with `git fast-import`
    (trailers, a valid checkpoint note, parent `base`; one pack, packed refs, as a hosted
    remote that gc'd would hold them), the first `old_share` of them with their checkpoint in
    2026-01, the others now. Returns seconds."""
    t0 = time.perf_counter()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    n_old = int(count * old_share)
    out = []
    for i in range(count):
        run_id = f"{prefix}{i:06d}"
        ts = OLD_TS if i < n_old else now
        msg = (f"agent-rewind: {run_id} start\n\nAgent-Run: {run_id}\nAgent-Attempt: 1\n"
               "Agent-Event: start\nAgent-Schema: 1\n")
        note = json.dumps({"type": "checkpoint", "schema": "agent-rewind/checkpoint/v1", "run": run_id,
                           "step": None, "attempt": 1, "seq": 0, "event": "start", "git_commit_sha": base,
                           "ts": ts, "writer": "bench@seed"}) + "\n"
        out.append(
            f"commit refs/agent-runs/{run_id}/HEAD\nmark :{i + 1}\n"
            f"committer Bench <bench@example.invalid> 1767225600 +0000\n"
            f"data {len(msg)}\n{msg}from {base}\n\n"
            f"commit refs/notes/agent-runs/{run_id}\n"
            f"committer Bench <bench@example.invalid> 1767225600 +0000\n"
            f"data 5\nnotes\nN inline :{i + 1}\ndata {len(note)}\n{note}\n"
        )
    ctx.git(repo, "fast-import", "--quiet", input="".join(out))
    ctx.git(repo, "pack-refs", "--all")
    return time.perf_counter() - t0
