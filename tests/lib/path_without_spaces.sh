# path_without_spaces DIR: prints a path without whitespace to the folder
# DIR (GNU make cannot name a file whose path has a space): DIR itself
# where it has none, else a link to it in a folder of the caller's own,
# ${XDG_CACHE_HOME:-~/.cache}/nccl-symmetric-suite/links (made with mode
# 0700, and used only if the caller owns it and no one else may write to
# it), named after DIR; where that path has a space too, a link in a
# fresh folder from mktemp. Returns 1, saying why, if no such path can be
# made. Sourced by tests/lib/environment.sh and tools/simulate.sh.
path_without_spaces() {
  local dir=$1 base link mode
  case $dir in *[[:space:]]*) ;; *) echo "$dir"; return 0 ;; esac
  base=${XDG_CACHE_HOME:-$HOME/.cache}/nccl-symmetric-suite/links
  case $base in
    *[[:space:]]*) base=$(mktemp -d "${TMPDIR:-/tmp}/nccl-suite-XXXXXXXX") || return 1 ;;
    *) mkdir -p -m 0700 "$base" 2>/dev/null ;;
  esac
  mode=$(stat -c '%u %a' "$base" 2>/dev/null)
  if [ "${mode%% *}" != "$(id -u)" ] || [[ ${mode##* } =~ [2367].$|[2367]$ ]]; then
    echo "path_without_spaces: $base is not a folder of yours that only you may write to ($(stat -c '%U, mode %a' "$base" 2>/dev/null || echo missing)): the link to '$dir' is not made there" >&2
    return 1
  fi
  link=$base/$(printf %s "$dir" | cksum | cut -d' ' -f1)
  ln -sfn "$dir" "$link" && [ "$link" -ef "$dir" ] || return 1
  echo "$link"
}
