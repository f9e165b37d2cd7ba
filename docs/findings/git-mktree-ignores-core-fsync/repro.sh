#!/bin/sh
# git mktree ignores core.fsync: the tree object it writes is never fsynced, where hash-object
# and commit-tree fsync theirs. Then which files git add, commit and update-ref fsync under
# core.fsync=all: objects, the index and ref locks, never a directory.
#
# Needs git and strace. GIT=/path/to/git sh repro.sh runs another git.
set -e
GIT=${GIT:-git}
dir=$(mktemp -d)
"$GIT" init -q "$dir/repo" && cd "$dir/repo"
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
"$GIT" config core.fsync all            # fsync every component, loose objects included
"$GIT" config core.fsyncMethod fsync
blob=$(echo hello | "$GIT" hash-object -w --stdin)
count() { # count NAME ARGS...: the fsync(2)/fdatasync(2) calls of git NAME ARGS...
  strace -f -qq -e trace=fsync,fdatasync -o "$dir/trace" "$GIT" "$@" > "$dir/out" < "$dir/in"
  printf 'git %-58s %s fsync(s)\n' "$*" "$(grep -c 'sync(' "$dir/trace")"
}
printf '100644 blob %s\thello.txt\n' "$blob" > "$dir/in"
echo world > "$dir/in.blob"  # a blob not yet in the repository
count mktree                                    # writes a tree object
tree=$(cat "$dir/out")
cp "$dir/in.blob" "$dir/in"; count hash-object -w --stdin   # writes a blob object
printf 'x\n' > "$dir/in"; count commit-tree "$tree" -m x   # writes a commit object
"$GIT" --version

# What git add, commit and update-ref fsync under core.fsync=all, by the name of the file.
echo x > f
: > "$dir/in"
for cmd in "add f" "commit -q -m one" "update-ref refs/x/y HEAD"; do
  # shellcheck disable=SC2086 # the command's words
  strace -f -qq -y -e trace=fsync,fdatasync -o "$dir/trace" "$GIT" $cmd < "$dir/in"
  printf 'git %s:' "$cmd"
  sed -n 's/.*sync([0-9]*<\([^>]*\)>.*/\1/p' "$dir/trace" | sed "s|^$PWD/||; s|objects/../.*|objects/<loose object>|" | sort | uniq -c | tr -s ' \n' ' '
  echo
done
