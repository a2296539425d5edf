"""Start-up files: the paths whose write makes a program run code when it next starts (issue 25, sessions 10-21).

:data:`CONFIG_FILES` is the one list the shell guard's writes and a file tool's writes are both judged against
(:func:`~.model.configures`); :data:`REMOTE_PATHS` the paths git reads as the remote ``origin``. Guarantee: a write
(a redirection, ``cp``/``mv``/``ln``/``tee``..., a file tool's ``write_file``) of a path one of these fnmatch globs
may match (``*`` crosses ``/``; a relative path is read below any directory; case folded) is refused as
"configures what a program runs". Files of the project itself (a ``Makefile``, ``conftest.py``, ``go.work``,
``rust-toolchain.toml``, ``.flake8``'s local plugins) are not listed: the example's allow list already runs project
code (``pytest``, ``make``, ``cargo build``), so writing them gives no more than writing ``conftest.py`` does.
"""

from __future__ import annotations

__all__ = ["CONFIG_FILES", "REMOTE_PATHS"]

#: files that make a program run commands when it next starts (git's core.fsmonitor/core.pager/hooks, npm's
#: script-shell, cargo's rustc-wrapper, shells' startup files, lesskey, directories on PATH): writing one is
#: running code later, through a program the allow list names. fnmatch globs (``*`` crosses ``/``).
CONFIG_FILES: tuple[str, ...] = (
    "*.gitconfig", "*/.config/git/*", "*.git/config", "*.git/hooks/*", "*.git/info/*", "*.npmrc", "*.yarnrc*",
    "*/.config/npm/*", "*.cargo/config*", "*/.pip/*", "*pip.conf", "*/.config/pip/*", "*.pydistutils.cfg",
    "*.bashrc", "*.bash_profile", "*.bash_login", "*.bash_logout", "*.profile", "*.zshrc", "*.zshenv",
    "*.zprofile", "*.zlogin", "*.inputrc", "*.curlrc", "*.wgetrc", "*.lesskey", "*/.config/lesskey",
    # their system-wide counterparts (login shells source /etc/profile.d/*.sh; pam_env reads /etc/environment, whose
    # LD_PRELOAD loads code; git reads /etc/gitconfig) and what runs code at boot, login or on a timer (session 17)
    "/etc/profile", "/etc/profile.d/*", "/etc/bash.bashrc", "/etc/bashrc", "/etc/zsh*", "/etc/fish/*",
    "/etc/environment", "/etc/gitconfig", "/etc/ld.so.preload", "/etc/xdg/autostart/*", "/etc/cron*",
    "/var/spool/cron/*", "/etc/systemd/*", "/etc/rc.local", "*/start menu/programs/startup/*",
    "*.lessfilter", "*.vimrc", "*.exrc", "*.pam_environment", "*/.config/autostart/*", "*/.config/systemd/*",
    "*/.local/bin/*", "/usr/local/bin/*", "/usr/local/sbin/*", "/usr/bin/*", "/bin/*", "/usr/sbin/*", "/sbin/*",
    "*/.ssh/*", "*.envrc", "*/.config/fish/*", "*.pythonrc*", "*/sitecustomize.py", "*/usercustomize.py",
    "*.pth", "*/.jq", "*/.jq/*",  # jq loads ~/.jq (definitions, imports) at start, or searches it for modules
    # more start-up files that run code (session 17): the shells' others (Debian's bashrc sources .bash_aliases;
    # bash-completion loads completions on <TAB>), the X session's, PowerShell's profiles, and tools that run
    # commands from their start-up file (gdb, pdb, IPython, tmux, vim/neovim, Emacs, Mercurial hooks, Gradle init
    # scripts, Docker credential helpers, systemd's user environment: LD_PRELOAD)
    "*.bash_aliases", "*.bash_completion", "*/bash_completion.d/*", "*/bash-completion/completions/*", "*.cshrc",
    "*.tcshrc", "*.kshrc", "*.mkshrc", "*.zlogout", "*.xinitrc", "*.xprofile", "*.xsession", "*.xsessionrc",
    "*powershell/*profile.ps1", "*.gdbinit", "*.pdbrc", "*/.ipython/*/startup/*", "*.tmux.conf", "*/.config/tmux/*",
    "*/.config/nvim/*", "*/.vim/plugin/*", "*.emacs", "*/.emacs.d/*", "*.hgrc", "*/.gradle/init.d/*",
    "*/.gradle/init.gradle*", "*/.docker/config.json", "*/.config/environment.d/*",
    # a git directory is any directory with HEAD, objects and refs (``git init --bare g`` makes one): git reads
    # its ``config`` (core.fsmonitor runs a command on ``cd g; git status``), a ``.git`` file or ``commondir``
    # points git at another one, ``config.worktree`` is read with extensions.worktreeConfig (session 11)
    "*/config", "*/config.worktree", "*/commondir", "*/.git",
    # the directories themselves (a tree copied or moved into place: "cp -r d/.ssh ~", "mv h .git/hooks")
    "*/.ssh", "*.git/hooks", "*.git/info", "*/.config/git", "*/.local/bin", "*/.config/autostart",
    "*/.config/systemd", "*/.config/fish", "*/.config/pip", "*/.config/npm", "*/.pip", "*.cargo",
    "*/.config/nvim", "*/.emacs.d", "*/.gradle/init.d", "*/.config/environment.d", "*/.config/tmux", "*/.vim/plugin",
    # user-level start-up files of programs the example allows (session 20, each run): mypy loads the plugins of
    # ~/.mypy.ini (mypy 1.x ran one in a project without its own config); rustup's proxy runs the toolchain
    # ~/.rustup/settings.toml names ("cargo build" ran toolchains/evil/bin/cargo); less 590 reads the compiled lesskey
    # file ~/.less, whose #env section sets LESSOPEN (a command run on every "less FILE")
    "*/.mypy.ini", "*/.rustup/*", "*/.rustup", "*/.less",
    # directories on PATH ahead of /usr/bin where rustup and pyenv install (this machine's PATH starts with
    # ~/.cargo/bin and ~/.pyenv/shims): a file written there replaces "make" or "cargo"; pyenv's shims run
    # ~/.pyenv/versions/NAME/bin/python for the NAME in ~/.pyenv/version or .python-version (pyenv 2.6 ran one)
    "*/.cargo/bin/*", "*/.cargo/bin", "*/.pyenv/*", "*/.pyenv",
    # session 21. Python's import directories: a module written to the user site (~/.local/lib/python3.X/
    # site-packages, searched before the system's) replaces the package of that name ("pip list" ran a pip/__init__.py
    # written there, Python 3.11), and so does one in a virtual environment's or the system's; the stdlib and the
    # programs' helpers live under the system's library directories (git runs /usr/lib/git-core/git-remote-https on
    # "git fetch"; npm reads its builtin npmrc from /usr/lib/node_modules/npm/npmrc); a venv's pyvenv.cfg says
    # which interpreter and library it runs (not /lib/*: a relative path is read below any directory, / too, so it
    # would refuse every "echo x > lib/util.py")
    "*/site-packages/*", "*/site-packages", "*/dist-packages/*", "*/dist-packages", "*/pyvenv.cfg",
    "/usr/lib/*", "/usr/lib64/*", "/usr/libexec/*", "/usr/local/lib/*", "/usr/local/libexec/*",
    "/usr/share/git-core/*",
    # the global files of the allowed tools under another installation prefix: npm's $PREFIX/etc/npmrc (npm 9 on
    # this machine: /usr/etc/npmrc; its script-shell runs on "npm test"), git's $(prefix)/etc/gitconfig (Homebrew's
    # /opt/homebrew/etc/gitconfig); Go's environment file (os.UserConfigDir()/go/env, written by "go env -w": its
    # GOFLAGS=-toolexec=CMD runs CMD on every "go build"/"go test"/"go vet"; from Go's documentation, no Go toolchain
    # here); ripgrep's conventional configuration file (read where RIPGREP_CONFIG_PATH names it: --pre=CMD)
    "*/etc/npmrc", "*/etc/gitconfig", "*/go/env", "*.ripgreprc", "*/.config/ripgrep/*",
    # version managers: a project's .tool-versions / mise.toml picks the binary asdf's or mise's shims run for
    # "go", "python", "npm" (a "path:DIR" version runs DIR/bin/go; mise.toml's [env] and hooks run commands on cd),
    # and their own directories hold the shims and installs on PATH (pyenv's above; pyenv 2.6 refuses a
    # .python-version naming a path, checked here, so .python-version is not listed)
    "*.tool-versions", "*mise.toml", "*mise.local.toml", "*/.mise/*", "*/.config/mise/*", "*/.local/share/mise/*",
    "*/.asdf/*", "*/.asdf", "*.asdfrc", "*/.nvm/*", "*/.nvm", "*/.nodenv/*", "*/.rbenv/*", "*/.goenv/*",
    "*/.volta/*", "*/.sdkman/*", "*/.rvm/*", "*/.config/direnv/*", "*.direnvrc",
    # other directories conventionally on PATH (GOPATH's bin, yarn's, deno's, bun's, npm's user prefix, Homebrew's,
    # snap's, a virtual environment's): a file written there replaces a program the allow list names
    "/root/bin/*", "/home/*/bin/*", "/Users/*/bin/*",  # ~/bin by its absolute spellings (~/bin/x: /bin/* below a home)
    "*/go/bin/*", "*/go/bin", "*/.yarn/bin/*", "*/.deno/bin/*", "*/.bun/bin/*", "*/.npm-global/bin/*",
    "*/.local/share/pnpm/*", "/opt/homebrew/bin/*", "/opt/homebrew/sbin/*", "*/.linuxbrew/bin/*", "/snap/bin/*",
    "/usr/games/*", "/usr/local/games/*", "*/.dotnet/tools/*", "*/.venv/bin/*", "*/venv/bin/*", "*/.virtualenvs/*",
    # start-up files of other programs a user runs that execute commands from them (REPLs, debuggers, clients with a
    # shell escape, vim's whole runtime directory, the desktop's openers), and cmake's user package registry (a
    # project's find_package runs the registered directory's FooConfig.cmake)
    "*.irbrc", "*.pryrc", "*.rprofile", "*.octaverc", "*.sqliterc", "*.psqlrc", "*.my.cnf", "*.screenrc",
    "*.lldbinit", "*/.config/gdb/*", "*.gvimrc", "*/.vim/*", "*.mailcap", "*/.local/share/applications/*",
    "*/.config/mimeapps.list", "*/.cmake/packages/*",
    # what the start-up files source by convention: Fedora's /etc/skel/.bashrc (bash 5.1+ packages) runs every file
    # in ~/.bashrc.d; dotfile setups source ~/.bashrc.local, ~/.zshrc.local, ~/.gitconfig.local (an [include]);
    # oh-my-zsh loads custom/*.zsh; starship runs its custom modules' commands at every prompt
    # (named one by one: a trailing "*" would meet a text argument read as a directory, "see ~/.zshrc" + "/notes.txt")
    "*/.bashrc.d/*", "*/.bashrc.d", "*/.bashrc.local", "*/.zshrc.d/*", "*/.zshrc.d", "*/.zshrc.local",
    "*/.profile.d/*", "*/.profile.d", "*/.profile.local", "*/.bash_profile.local", "*/.zshenv.local",
    "*/.gitconfig.local", "*/.gitconfig-*", "*/.oh-my-zsh/*", "*/.bash_completion.d/*", "*/.config/starship.toml",
    # session 23. Editors' workspace files that run commands when the folder is opened: VS Code's tasks.json with
    # "runOptions": {"runOn": "folderOpen"} runs its command on opening (once automatic tasks are allowed), its
    # settings.json and a .code-workspace name the programs it starts (git.path, terminal profiles' path and
    # env, python.defaultInterpreterPath); JetBrains' run configurations (.idea/workspace.xml, .run/*.run.xml) may
    # run "before launch" commands
    "*/.vscode/tasks.json", "*/.vscode/settings.json", "*/.vscode/launch.json", "*/.vscode", "*.code-workspace",
    "*/.idea/workspace.xml", "*/.run/*.run.xml",
    # session 25. The system's configuration and programs as a whole instead of file by file: the files above under
    # /etc were a list, and /etc/init.d/*, apt.conf.d (APT::Update::Pre-Invoke runs commands), udev rules (RUN+=),
    # update-motd.d, logrotate.d (postrotate scripts), ld.so.conf.d, vimrc, gdbinit, mailcap, /var/spool/at, /etc/hosts,
    # resolv.conf and the CA certificates (where clients connect, and whom they trust) were writable. Every file under
    # /etc configures what some program runs or reaches, and /usr holds the programs, their libraries and runtime files
    # (/usr/share/vim, bash completions, /usr/local/share/ca-certificates); the package manager's maintainer scripts
    # and the spools of at and cron run as root. (A relative "etc/x" or "usr/x/y" is also read as "/etc/x": a
    # project's own etc/ or usr/ folder is refused too, the price of a working directory that may be "/". Not "/usr/*":
    # an install prefix "/usr/local" (make PREFIX=/usr/local install) is a word, not a file written; not "/lib/*":
    # "ln -s src/lib lib" would be a link above it; /lib is /usr/lib on a merged-/usr system.)
    "/etc", "/etc/*", "/usr/*/*", "/var/spool/*", "/var/lib/dpkg/*",
)
#: where git reads ``git pull origin NAME`` (which :mod:`.vcs` trusts) in a repository without a remote named origin:
#: the path ``./origin`` (also ``origin.git``, ``origin/.git``; git 2.39 pulled a branch of a repository linked there,
#: session 20). Writing one is refused as a start-up file's write is (:func:`~.model.configures`), whichever tool
#: writes it; git's own words naming the remote or its refs (``git fetch origin``, ``git log origin/main``) are names,
#: not paths it writes (:func:`~.vcs.remote_words`).
REMOTE_PATHS: tuple[str, ...] = ("*/origin", "*/origin/*", "*/origin.git", "*/origin.git/*")
