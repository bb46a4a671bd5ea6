#!/usr/bin/env bash
# A9: `snap install` replaces a settings file the user made read-only (0444),
# even as a non-root user (temp file + rename into the writable directory),
# and keeps the 0444 mode; and through a symlinked settings file (dotfiles
# repository) it writes FILE.snap-backup beside the symlink's target, i.e. into
# the dotfiles repository, outside the project and outside ~/.claude.
set -u
SNAP=${SNAP:-snap}
SNAPABS=$(command -v "$SNAP")
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; chmod 755 "$T"; cd "$T"
mkdir -p proj/.claude dotfiles
cd proj && git init -q && $SNAPABS init >/dev/null
echo '{"readonly": "on purpose"}' > .claude/settings.local.json; chmod 444 .claude/settings.local.json
chown -R nobody "$T/proj" 2>/dev/null
echo "== read-only settings file, as user nobody (if we can switch user), else as $(id -un)"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME="$T" "$SNAPABS" install claude-code; echo "exit $?"
else
  $SNAPABS install claude-code; echo "exit $?"
fi
ls -l .claude; echo "  (expected: refused, like any editor refuses a read-only file without force)"
echo "== symlinked settings file"
rm -f .claude/*; echo '{"mine": true}' > ../dotfiles/claude-local.json
ln -s ../../dotfiles/claude-local.json .claude/settings.local.json
$SNAPABS install claude-code; echo "exit $?"
echo "files in the dotfiles repository:"; ls -la ../dotfiles | sed 's/^/  /'
