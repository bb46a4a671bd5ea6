#!/bin/bash
# Finding 01: the pack and index an export writes are left mode 0600 (go-git's
# TempFile mode), not 0444 "as git leaves them" (pack.go chmods through
# billy.Chmod, which the repository's file system does not take, silently).
# In a shared repository (git init --shared=group) another member of the
# group then cannot read refs/snap/ at all. (The loose objects of the
# previous implementation, and of exports under 100 objects now, are 0600
# too: the shared-repository part is not new with the pack.)
# Exit 1 when the bug is present.
SNAP=${SNAP:-/tmp/pf/snap}
W=$(mktemp -d /tmp/pf01.XXXXXX); trap 'rm -rf "$W"' EXIT
umask 022
mkdir "$W/p" && cd "$W/p" && git init -q . && "$SNAP" init >/dev/null || exit 2
for i in $(seq 1 40); do for j in 1 2 3; do echo "$i $j" > f$j.txt; done; "$SNAP" checkpoint >/dev/null || exit 2; done
git init -q --bare --shared=group "$W/shared.git"
"$SNAP" git export --repo "$W/shared.git" || exit 2
ls -l "$W/shared.git/objects/pack/"
bad=0
for f in "$W"/shared.git/objects/pack/pack-*; do
  m=$(stat -c %a "$f")
  if [ "$m" != 444 ]; then echo "BUG: $(basename "$f") has mode $m, expected 444 (git's own packs, e.g. after 'git repack', are 444)"; bad=1; fi
done
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  chmod 755 "$W"; chgrp -R 0 "$W/shared.git"
  echo "reading refs/snap as another member of the repository's group (uid 65534, gid 0):"
  setpriv --reuid=65534 --regid=0 --clear-groups env HOME=/tmp git -c safe.directory='*' -C "$W/shared.git" log --oneline -1 refs/snap/sessions/default 2>&1 | sed 's/^/  /'
fi
exit $bad
