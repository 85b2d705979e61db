# The files of this tree without its build outputs, for copies of it (the
# docs' blocks of make test-gpu, the suite's copies): from git where the
# tree is a git checkout, else from the tree's .gitignore, so that an
# exported tree or a release tarball needs no git. Sourced by
# tests/lib/programs.sh and tools/check_gpu_machine.sh.

# tree_files [PATH...]: the files under these paths (default: all) of the
# tree in the current folder, one per line, relative to it. In a git
# checkout whose top is this folder, what git tracks or would track.
# Elsewhere every file but those the tree's .gitignore names, read as git
# reads its plain patterns (NAME anywhere, /NAME at the top, NAME/ only a
# folder; a line with a wildcard or a '!' is not read), or without a
# .gitignore every file outside folders named build.
tree_files() {
  if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
    git ls-files -co --exclude-standard -- "$@"
    return
  fi
  local prune=() pattern test
  if [ -f .gitignore ]; then
    while IFS= read -r pattern; do
      pattern=${pattern%%[[:space:]]}
      case $pattern in "" | "#"* | *[*?[!\\]*) continue ;; esac
      test=()
      [[ $pattern == */ ]] && test=(-type d) pattern=${pattern%/}
      if [[ $pattern == */* ]]; then test+=(-path "./${pattern#/}")
      else test+=(-name "$pattern"); fi
      prune+=(${prune[0]+-o} \( "${test[@]}" \))
    done <.gitignore
  fi
  [ ${#prune[@]} -gt 0 ] || prune=(-type d -name build)
  find . \( "${prune[@]}" \) -prune -o -type f -print | sed 's|^\./||' |
    awk -v paths="$*" 'BEGIN { n = split(paths, p, " ") }
      n == 0 { print; next }
      { for (i = 1; i <= n; i++) if (p[i] == "." || $0 == p[i] || index($0, p[i] "/") == 1) { print; next } }'
}

# copy_tree DEST [LEAVE]: copies tree_files of the current folder into
# DEST (made if missing), keeping their paths; LEAVE, a folder (a log
# folder inside the tree), is left out. Returns non-zero if a copy failed.
copy_tree() {
  local leave=""
  [ -n "${2:-}" ] && leave=$(cd "$2" 2>/dev/null && pwd -P)
  case $leave in "$(pwd -P)"/*) leave=${leave#"$(pwd -P)"/}/ ;; *) leave="" ;; esac
  mkdir -p "$1" || return 1
  tree_files | awk -v leave="$leave" 'leave == "" || index($0, leave) != 1' |
    while IFS= read -r file; do [ -e "$file" ] && printf '%s\0' "$file"; done |
    xargs -0 -r cp --parents -t "$1"
}
