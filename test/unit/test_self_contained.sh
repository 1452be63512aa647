#!/bin/sh
# The repository stands alone: no tracked file (nor a new one not ignored)
# refers to a folder beside the checkout or to a path of one machine.
# Usage: test_self_contained.sh SOURCE_DIR
set -u
src=${1:?usage: test_self_contained.sh SOURCE_DIR}
command -v git >/dev/null 2>&1 || { echo "test_self_contained: git is not installed" >&2; exit 1; }
git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 \
  || { echo "test_self_contained: $src is not a git checkout" >&2; exit 1; }

# Written in two halves, so that this file does not match itself.
up=..
home=work
status=0
for pattern in "$up/shared" "/$home/"; do
  hits=$(git -C "$src" grep --untracked -I -n -F -e "$pattern")
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "test_self_contained: files mention $pattern:" >&2
    echo "$hits" >&2
    status=1
  elif [ $rc -ne 1 ]; then
    echo "test_self_contained: git grep failed ($rc)" >&2
    exit 1
  fi
done
[ $status -eq 0 ] && echo "test_self_contained: no file refers outside the checkout"
exit $status
