//! `completions bash|zsh|fish|…`: print a shell's completion script; and the hidden
//! `__complete` those scripts call (the candidates themselves come from `cli::complete`).
//!
//! bash and zsh scripts work for `git-agent-rewind <TAB>` and, through git's own
//! completion, for `git agent-rewind <TAB>` (git's bash completion calls
//! `_git_agent_rewind`, zsh's `_git-agent-rewind`). elvish and powershell get clap's static
//! scripts.

use crate::cli::args::command;
use crate::cli::complete;
use crate::cli::{Ctx, Output};
use agent_rewind_core::error::Result;
use clap::Args;
use clap_complete::Shell;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  source <(git agent-rewind completions bash)
      Complete `git agent-rewind <TAB>` in this bash session (add the line to ~/.bashrc to keep it).
  mkdir -p ~/.zfunc && git agent-rewind completions zsh > ~/.zfunc/_git-agent-rewind
      Install zsh completion (with ~/.zfunc on fpath before compinit).
  mkdir -p ~/.config/fish/completions && git agent-rewind completions fish > ~/.config/fish/completions/git-agent-rewind.fish
      Install fish completion.";

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// The index, in WORDS, of the word being completed.
    pub index: usize,
    /// The words of the command line after the program name (`git-agent-rewind`, or `git
    /// [options] agent-rewind`).
    #[arg(last = true, allow_hyphen_values = true)]
    pub words: Vec<String>,
}

pub fn run(a: CompletionsArgs, _ctx: &Ctx) -> Result<Output> {
    let text = match a.shell {
        Shell::Bash => BASH.to_string(),
        Shell::Zsh => ZSH.to_string(),
        Shell::Fish => FISH.to_string(),
        shell => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut command(), "git-agent-rewind", &mut buf);
            String::from_utf8_lossy(&buf).trim_end().to_string()
        }
    };
    Ok(Output::new(
        serde_json::json!({ "shell": a.shell.to_string(), "script": text }),
        text,
    ))
}

/// `__complete INDEX -- WORDS…`: the candidates, one a line (or `__files__`/`__dirs__`).
pub fn complete(a: CompleteArgs, ctx: &Ctx) -> Output {
    let mut cmd = command();
    cmd.build();
    let names = complete::candidates(&cmd, a.index, &a.words, ctx);
    let text = names.join("\n");
    Output::new(serde_json::json!(names), text)
}

const BASH: &str = r#"# bash completion for git-agent-rewind
#   source <(git agent-rewind completions bash)        (e.g. in ~/.bashrc)
# Completes `git-agent-rewind <TAB>` and, through git's completion, `git agent-rewind <TAB>`.

# Candidates for the words of COMP_WORDS from index $1 on (the words after the program).
__git_agent_rewind_reply() {
    local first=$1 cur=${COMP_WORDS[COMP_CWORD]} line
    local -a out=()
    while IFS= read -r line; do
        out+=("$line")
    done < <(git-agent-rewind __complete "$((COMP_CWORD - first))" -- "${COMP_WORDS[@]:first}" 2>/dev/null)
    case "${out[0]}" in
        __FILES__) COMPREPLY=($(compgen -f -- "$cur")) ;;
        __DIRS__) COMPREPLY=($(compgen -d -- "$cur")) ;;
        *) COMPREPLY=("${out[@]}") ;;
    esac
}

# Called by git's bash completion for `git agent-rewind …`.
_git_agent_rewind() {
    local i
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ ${COMP_WORDS[i]} == agent-rewind ]] && break
    done
    __git_agent_rewind_reply "$((i + 1))"
}

# `git-agent-rewind …`.
_git_agent_rewind_bin() {
    __git_agent_rewind_reply 1
}

complete -o default -F _git_agent_rewind_bin git-agent-rewind"#;

const ZSH: &str = r#"#compdef git-agent-rewind
# zsh completion for git-agent-rewind
#   mkdir -p ~/.zfunc && git agent-rewind completions zsh > ~/.zfunc/_git-agent-rewind   (~/.zfunc in fpath)
# Completes `git-agent-rewind <TAB>` and, through git's completion, `git agent-rewind <TAB>`.

_git-agent-rewind() {
    local -a out
    out=("${(@f)$(git-agent-rewind __complete $((CURRENT - 2)) -- "${(@)words[2,-1]}" 2>/dev/null)}")
    case "$out[1]" in
        __FILES__) _files ;;
        __DIRS__) _files -/ ;;
        *) (( $#out )) && [[ -n $out[1] ]] && compadd -a out ;;
    esac
}

if [ "$funcstack[1]" = "_git-agent-rewind" ]; then
    _git-agent-rewind "$@"
else
    compdef _git-agent-rewind git-agent-rewind
fi"#;

const FISH: &str = r#"# fish completion for git-agent-rewind
#   mkdir -p ~/.config/fish/completions && git agent-rewind completions fish > ~/.config/fish/completions/git-agent-rewind.fish
# fish's git completion hands `git agent-rewind <TAB>` to this one.

function __git_agent_rewind_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    set -e words[1]
    set -l out (git-agent-rewind __complete (count $words) -- $words $cur 2>/dev/null)
    switch "$out[1]"
        case __FILES__
            __fish_complete_path $cur
        case __DIRS__
            __fish_complete_directories $cur
        case '*'
            printf '%s\n' $out
    end
end

complete -c git-agent-rewind -f -a '(__git_agent_rewind_complete)'"#;
