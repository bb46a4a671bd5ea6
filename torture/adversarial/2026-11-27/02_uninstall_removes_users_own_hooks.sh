#!/usr/bin/env bash
# A2: `snap install claude-code --uninstall` removes hook entries the user
# wrote before snap ever touched the file (a snap hook with its own timeout,
# its own matcher, an absolute path to snap): the README promises it "removes
# exactly the hooks it added" and "gives the original text back". Also
# install does not recognise "/usr/local/bin/snap hook claude-code" as
# installed (adds a second Stop hook: two checkpoints per event) while
# uninstall does recognise it (and removes it).
set -u
SNAP=${SNAP:-snap}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; cd "$T"
git init -q; $SNAP init >/dev/null; mkdir .claude
try() {
  rm -f .claude/*
  printf '%s' "$2" > .claude/settings.local.json
  cp .claude/settings.local.json before.json
  echo "== $1"
  echo "  before:    $(cat before.json)"
  $SNAP install claude-code 2>&1 | sed 's/^/  install:   /'
  echo "  Stop hooks after install: $(python3 -c 'import json;print(json.load(open(".claude/settings.local.json"))["hooks"]["Stop"])')"
  $SNAP install claude-code --uninstall 2>&1 | sed 's/^/  uninstall: /'
  echo "  after:     $(cat .claude/settings.local.json)"
  if cmp -s before.json .claude/settings.local.json; then echo "  OK: original bytes back"; else echo "  BUG: the user's own bytes are gone"; fi
  echo "  backup left: $(ls .claude/ | grep snap-backup || echo none)"
}
try "user's snap hook with a timeout"  '{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"snap hook claude-code","timeout":99}]}]}}'
try "user's snap hook for Bash only"   '{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"snap hook claude-code"}]}]}}'
try "absolute path to snap"            '{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"/usr/local/bin/snap hook claude-code"}]}]}}'
try "snap hook shares a group with fmt" '{"hooks":{"PostToolUse":[{"matcher":"Edit","hooks":[{"type":"command","command":"snap hook claude-code"},{"type":"command","command":"fmt"}]}]}}'
try '"hooks": null'                    '{"a":1,  "hooks" : null}'
try "empty file"                       ''
