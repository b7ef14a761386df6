# Homebrew formula: the prebuilt release archive of this platform (scripts/release-archive:
# the binary, its manual pages and completions, the demo's fixtures). On a tag,
# .github/workflows/release.yml fills in the repository's address (OWNER/REPO) and each
# archive's sha256 (the comment after it names the archive) and attaches the result to the
# release; `brew install --formula ./git-agent-rewind.rb` installs from it. docs/INSTALL.md.
class GitAgentRewind < Formula
  desc "Every step of an AI agent's workflow as a durable git checkpoint"
  homepage "https://github.com/OWNER/REPO"
  version "0.1.0"
  license any_of: ["MIT", "Apache-2.0"]

  on_macos do
    on_arm do
      url "https://github.com/OWNER/REPO/releases/download/v#{version}/git-agent-rewind-#{version}-aarch64-apple-darwin.tar.gz"
      sha256 "0000000000000000000000000000000000000000000000000000000000000000" # aarch64-apple-darwin
    end
    on_intel do
      url "https://github.com/OWNER/REPO/releases/download/v#{version}/git-agent-rewind-#{version}-x86_64-apple-darwin.tar.gz"
      sha256 "0000000000000000000000000000000000000000000000000000000000000000" # x86_64-apple-darwin
    end
  end
  on_linux do
    on_arm do
      url "https://github.com/OWNER/REPO/releases/download/v#{version}/git-agent-rewind-#{version}-aarch64-unknown-linux-musl.tar.gz"
      sha256 "0000000000000000000000000000000000000000000000000000000000000000" # aarch64-unknown-linux-musl
    end
    on_intel do
      url "https://github.com/OWNER/REPO/releases/download/v#{version}/git-agent-rewind-#{version}-x86_64-unknown-linux-musl.tar.gz"
      sha256 "0000000000000000000000000000000000000000000000000000000000000000" # x86_64-unknown-linux-musl
    end
  end

  depends_on "git"

  def install
    bin.install "git-agent-rewind"
    man1.install Dir["man/man1/*.1"]
    bash_completion.install "completions/git-agent-rewind.bash" => "git-agent-rewind"
    zsh_completion.install "completions/_git-agent-rewind"
    fish_completion.install "completions/git-agent-rewind.fish"
    pkgshare.install "demo"
  end

  test do
    assert_match version.to_s, shell_output("#{bin}/git-agent-rewind --version")
    # The demo's first steps: a repository, `init`, the four-step workflow of the scripted
    # agent as run demo-1, and its checkpoints listed.
    system "git", "init", "-q", "-b", "main", "repo"
    cd "repo" do
      system "git", "config", "user.name", "Demo User"
      system "git", "config", "user.email", "demo@example.com"
      cp_r pkgshare/"demo/fixtures", "."
      cp "fixtures/workflows/feature.toml", "workflow.toml"
      File.write "TASK.md", "Add a greeting to the README.\n"
      File.write "README.md", "# demo\n"
      system "git", "add", "-A"
      system "git", "commit", "-q", "-m", "initial commit"
      system bin/"git-agent-rewind", "init"
      system bin/"git-agent-rewind", "run", "workflow.toml", "--run", "demo-1"
      listing = shell_output("#{bin}/git-agent-rewind list demo-1")
      %w[plan implement test open-pr].each { |step| assert_match step, listing }
    end
  end
end
