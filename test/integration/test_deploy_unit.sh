#!/usr/bin/env bash
# The systemd files in deploy/systemd/: hardening and restart policy as the
# operations runbook promises, and valid for systemd's own tools
# (systemd-analyze verify, systemd-sysusers and systemd-tmpfiles on a
# throwaway root). Needs no servers.
#
#   test_deploy_unit.sh SOURCE_DIR MSGXD_BINARY
set -euo pipefail
src=${1:?source dir}
msgxd=${2:?msgxd binary}
unit=$src/deploy/systemd/msgxd.service
failures=0

s_fail () { printf 'FAIL: %s\n' "$*" >&2; failures=$((failures + 1)); }

#  The unit's value of key (the last assignment wins, as in systemd).
s_value () { sed -n "s/^$1=//p" "$unit" | tail -n 1; }

s_expect () {
    local key=$1 want=$2 got
    got=$(s_value "$key")
    [[ "$got" == "$want" ]] || s_fail "$key is '$got', expected '$want'"
}

[[ -r $unit ]] || { s_fail "no $unit"; exit 1; }

s_expect Type simple
s_expect User msgx
s_expect ExecStart "/usr/sbin/msgxd --config /etc/msgxd/msgxd.zpl"
s_expect ExecReload '/bin/kill -HUP $MAINPID'
s_expect SupplementaryGroups msgx-admin
s_expect RuntimeDirectoryMode 0755
s_expect RuntimeDirectory msgxd
s_expect Restart on-failure
s_expect RestartPreventExitStatus 78
s_expect NoNewPrivileges yes
s_expect ProtectSystem strict
s_expect ProtectHome yes
s_expect PrivateTmp yes
s_expect PrivateDevices yes
s_expect ProtectKernelTunables yes
s_expect ProtectKernelModules yes
s_expect ProtectKernelLogs yes
s_expect ProtectControlGroups yes
s_expect RestrictAddressFamilies "AF_UNIX AF_INET AF_INET6"
s_expect MemoryDenyWriteExecute yes
s_expect CapabilityBoundingSet ""
s_expect LimitCORE 0
s_expect ProcSubset pid
s_expect PrivateIPC yes
s_expect SocketBindDeny any
[[ -n $(s_value MemoryMax) ]] || s_fail "MemoryMax missing"
#  The sample's HTTP port must be one the unit lets msgxd bind.
http_port=$(sed -n 's/^        bind = .*:\([0-9]*\)$/\1/p' "$src/deploy/config/msgxd-prod.zpl" | head -n 1)
[[ -n "$http_port" ]] || s_fail "no http bind port found in msgxd-prod.zpl"
grep -qx "SocketBindAllow=tcp:$http_port" "$unit" || s_fail "SocketBindAllow=tcp:$http_port (the sample's http bind) missing"
compat_port=$(sed -n 's/^            bind = .*:\([0-9]*\)$/\1/p' "$src/deploy/config/msgxd-prod.zpl" | head -n 1)
[[ -n "$compat_port" ]] || s_fail "no compat bind port found in msgxd-prod.zpl"
grep -qx "SocketBindAllow=tcp:$compat_port" "$unit" || s_fail "SocketBindAllow=tcp:$compat_port (the sample's compat bind) missing"
grep -qx 'SystemCallFilter=@system-service' "$unit" || s_fail "SystemCallFilter=@system-service missing"
grep -qx 'CapabilityBoundingSet=' "$unit" || s_fail "CapabilityBoundingSet= (empty) missing"

#  75 (fenced) must restart: it may not be listed as a status that prevents it.
[[ " $(s_value RestartPreventExitStatus) " != *" 75 "* ]] || s_fail "exit status 75 must restart"
[[ -n $(s_value RestartSec) ]] || s_fail "RestartSec missing"
grep -q '^StartLimitIntervalSec=' "$unit" || s_fail "StartLimitIntervalSec missing"
grep -q '^StartLimitBurst=' "$unit" || s_fail "StartLimitBurst missing"
nofile=$(s_value LimitNOFILE)
[[ "$nofile" =~ ^[0-9]+$ && "$nofile" -ge 4096 ]] || s_fail "LimitNOFILE '$nofile' below 4096"

#  TimeoutStopSec must leave msgxd's own shutdown watchdog room to act.
watchdog=$(sed -n 's/^#define SHUTDOWN_LIMIT_S \([0-9]*\)$/\1/p' "$src/cmd/msgxd.c")
[[ -n "$watchdog" ]] || s_fail "SHUTDOWN_LIMIT_S not found in cmd/msgxd.c"
stop=$(s_value TimeoutStopSec)
stop=${stop%s}
[[ "$stop" =~ ^[0-9]+$ ]] || s_fail "TimeoutStopSec '$stop' is not whole seconds"
[[ -z "$watchdog" || ! "$stop" =~ ^[0-9]+$ || "$stop" -gt "$watchdog" ]] \
    || s_fail "TimeoutStopSec ${stop}s is not above the ${watchdog}s shutdown watchdog"

#  The sample's admin endpoint lives in the unit's RuntimeDirectory.
grep -q 'endpoint = ipc:///run/msgxd/admin.sock' "$src/deploy/config/msgxd-prod.zpl" \
    || s_fail "msgxd-prod.zpl does not put the admin socket in /run/msgxd"
grep -q '^        group = msgx-admin$' "$src/deploy/config/msgxd-prod.zpl" \
    || s_fail "msgxd-prod.zpl does not open the admin socket to msgx-admin"

#  systemd's own checks. ExecStart must name an existing binary for verify.
command -v systemd-analyze > /dev/null || { s_fail "systemd-analyze not installed (package systemd)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed "s|^ExecStart=/usr/sbin/msgxd |ExecStart=$msgxd |" "$unit" > "$work/msgxd.service"
#  verify runs man for each Documentation= page: show it the pages of the tree.
mkdir -p "$work/man/man5" "$work/man/man8"
cp "$src/docs/man/msgxd.8" "$work/man/man8/"
cp "$src/docs/man/msgxd.conf.5" "$work/man/man5/"
if ! out=$(MANPATH=$work/man systemd-analyze verify "$work/msgxd.service" 2>&1) || [[ -n "$out" ]]; then
    s_fail "systemd-analyze verify: $out"
fi
mkdir -p "$work/root/etc"
touch "$work/root/etc/passwd" "$work/root/etc/group"
systemd-sysusers --root="$work/root" "$src/deploy/systemd/msgxd.sysusers" > /dev/null 2>&1 \
    || s_fail "systemd-sysusers refuses msgxd.sysusers"
grep -q '^msgx:' "$work/root/etc/passwd" || s_fail "msgxd.sysusers does not create user msgx"
grep -q '^msgx-admin:x:[0-9]*:msgx$' "$work/root/etc/group" \
    || s_fail "msgxd.sysusers does not create group msgx-admin with member msgx"
systemd-tmpfiles --root="$work/root" --create "$src/deploy/systemd/msgxd.tmpfiles" > /dev/null 2>&1 \
    || s_fail "systemd-tmpfiles refuses msgxd.tmpfiles"
[[ -d "$work/root/etc/msgxd" ]] || s_fail "msgxd.tmpfiles does not create /etc/msgxd"
[[ -d "$work/root/run/msgxd" ]] || s_fail "msgxd.tmpfiles does not create /run/msgxd"

if [[ $failures -gt 0 ]]; then
    printf '%d problem(s) in deploy/systemd\n' "$failures" >&2
    exit 1
fi
echo "deploy/systemd: ok"
