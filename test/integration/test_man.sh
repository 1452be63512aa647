#!/usr/bin/env bash
# The manual pages render with man -l and without a groff or man warning,
# each with its NAME section, and the generated msgxd.conf(5) holds every
# key of the configuration table.
#
#   test_man.sh SOURCE_DIR MSGXD_BINARY
set -euo pipefail
src=${1:?source dir}
msgxd=${2:?msgxd binary}
failures=0
m_fail () { printf 'FAIL: %s\n' "$*" >&2; failures=$((failures + 1)); }

command -v man > /dev/null || { m_fail "man not installed (package man-db)"; exit 1; }
for page in msgxd.8 msgxctl.1 msgxd.conf.5 msgx-gen.1 msgx-diff.1; do
    [[ -r $src/docs/man/$page ]] || m_fail "no docs/man/$page"
done
for file in "$src"/docs/man/*.[0-9]; do
    page=${file##*/}
    warnings=$(MANWIDTH=80 man --warnings -l "$file" 2>&1 > /dev/null) || m_fail "man -l $page failed"
    [[ -z "$warnings" ]] || m_fail "man -l $page warns: $warnings"
    text=$(MANWIDTH=80 man -l "$file" 2> /dev/null)
    name=${page%.*}
    grep -q "^NAME" <<< "$text" || m_fail "$page has no NAME section"
    grep -q "^       $name - " <<< "$text" || m_fail "$page does not name $name"
done

# Every key of the table, as msgxd --config-reference lists them.
keys=$("$msgxd" --config-reference | sed -n 's/^| `\([a-z][^`]*\)` .*/\1/p')
[[ $(wc -l <<< "$keys") -gt 50 ]] || m_fail "msgxd --config-reference lists too few keys"
conf=$(MANWIDTH=200 man -l "$src/docs/man/msgxd.conf.5" 2> /dev/null)
while read -r key; do
    grep -qx "       $key" <<< "$conf" || m_fail "msgxd.conf(5) lacks $key"
done <<< "$keys"

if [[ $failures -gt 0 ]]; then
    printf '%d problem(s) in the manual pages\n' "$failures" >&2
    exit 1
fi
echo "manual pages: ok"
