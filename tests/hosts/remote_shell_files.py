"""Dotfiles and the console gateway script that make the test users look like real hosts.

Non-interactive `ssh host CMD` must find the fake nvidia-smi, and the console gateway's
interactive shell must be as noisy as a real pod's (title escapes, colours, bracketed paste),
so the product's console transport is tested against the worst it will meet.
"""

# Folder in each test user's home holding what the suite installs (root-owned).
MANAGED_DIR = ".test-hosts"

# The gateway's refusal, word for word what RunPod's proxy prints.
PTY_REFUSAL = "Error: Your SSH client doesn't support PTY"

BASHRC = r"""# Written by the rtrain test suite (tests/hosts); rewritten at every test session.
# PATH comes before the interactive guard: bash reads this file for non-interactive ssh
# commands too, and they must find the fake nvidia-smi.
PATH="$HOME/__MANAGED__/bin:$PATH"
export PATH

case $- in
    *i*) ;;
    *) return ;;
esac

HISTCONTROL=ignoreboth
# A real pod's prompt: a window title (OSC 0) plus colours around user@host:dir.
PS1='\[\e]0;\u@\h: \w\a\]\[\e[01;32m\]\u@\h\[\e[00m\]:\[\e[01;34m\]\w\[\e[00m\]\$ '
alias ls='ls --color=auto'
""".replace("__MANAGED__", MANAGED_DIR)

PROFILE = """# Written by the rtrain test suite (tests/hosts).
# Login shells read .bashrc, as on Debian.
if [ -n "$BASH_VERSION" ] && [ -f "$HOME/.bashrc" ]; then
    . "$HOME/.bashrc"
fi
"""

# Bracketed paste on, as on the pods: pasted input comes back wrapped in ESC[200~ ... ESC[201~.
INPUTRC = """$include /etc/inputrc
set enable-bracketed-paste on
"""

CONSOLE_GATEWAY = f"""#!/bin/bash
# Console-only gateway written by the rtrain test suite (tests/hosts), the sshd ForceCommand.
# Like RunPod's SSH proxy it serves one interactive PTY shell and nothing else: no exec, and
# (no Subsystem line in its sshd) no sftp or scp.
if [ -n "${{SSH_ORIGINAL_COMMAND+set}}" ] || [ ! -t 0 ]; then
    echo "{PTY_REFUSAL}" >&2
    exit 1
fi
printf '\\033[1;36m== rtrain test pod ==\\033[0m  (console gateway)\\n'
exec bash -l
"""


# A lab server's far user: its rc files greet on stdout and stderr for every ssh command,
# interactive or not, one line even without a newline. Nothing rtrain reads may be spoiled.
NOISY_BASHRC = r"""# Written by the rtrain test suite (tests/hosts): a chatty lab server.
PATH="$HOME/__MANAGED__/bin:$PATH"
export PATH
echo "Welcome to the lab server"
echo "quota: 93% of your home is used" >&2
printf 'Last backup: today'
""".replace("__MANAGED__", MANAGED_DIR)

NOISY_PROFILE = """# Written by the rtrain test suite (tests/hosts): a chatty lab server.
echo "profile: loading modules"
echo "profile: module cuda/12 loaded" >&2
if [ -n "$BASH_VERSION" ] && [ -f "$HOME/.bashrc" ]; then
    . "$HOME/.bashrc"
fi
"""
