#!/bin/bash
# U3: --url-file FILE is documented "mode 0600", but an existing FILE keeps
# its mode (os.WriteFile only sets it on create) and a symlink is followed: a
# world-readable or someone else's file gets the token.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/p"; (cd "$T/p" && "$SNAP" init >/dev/null)
echo old > "$T/ui-url"; chmod 644 "$T/ui-url"        # e.g. left by an earlier run with another umask, or pre-created by another user (0666 in /tmp)
( cd "$T/p" && exec "$SNAP" ui --url-file "$T/ui-url" >/dev/null 2>&1 ) & PIDS="$PIDS $!"
for _ in $(seq 50); do grep -q token "$T/ui-url" 2>/dev/null && break; sleep 0.1; done
ls -l "$T/ui-url"; cat "$T/ui-url"
mode=$(stat -c %a "$T/ui-url")
if [ "$mode" != 600 ] && grep -q token= "$T/ui-url"; then echo "BUG: the token was written to a file of mode $mode (help: 'mode 0600')"; else echo "OK: mode $mode"; fi
