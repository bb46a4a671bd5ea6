#!/bin/bash
# U2: the rewind dialog's dry run is not what "Rewind" then does. The tree
# changes while the dialog is open (an agent, an editor, you): the preview is
# not refreshed, the real rewind deletes and overwrites files it never
# listed, and the notice only gives counts. (The page even keeps the dry
# run's lists in #rewind-preview's data-expect, and never compares.)
. "$(dirname "$0")/common.sh"
P=$T/p; mkdir -p "$P"; cd "$P"
"$SNAP" init >/dev/null
echo v1 > a.txt; echo keep > k.txt; "$SNAP" checkpoint --summary one >/dev/null
echo v2 > a.txt; echo b > b.txt; "$SNAP" checkpoint --summary two >/dev/null
start_ui "$P"
drive <<CMDS
tab a
nav $URL
wait document.querySelector('#main table')
eval location.hash = '#/s/default'
wait document.querySelectorAll('#timeline tbody tr').length == 2
# "Rewind…" on #1
eval (document.querySelectorAll('#timeline tbody tr')[1].querySelector('button').click(), 1)
wait !document.getElementById('rewind-go').disabled
eval 'PREVIEW: ' + document.getElementById('rewind-preview').innerText
# While the dialog is open: notes you never checkpointed, an edit, a new file.
sh cd $P && echo "my notes, never checkpointed" > notes.txt && echo "precious edit" > k.txt && mkdir -p src && echo code > src/new.go
sleep 2000
eval 'PREVIEW 2 s LATER: ' + document.getElementById('rewind-preview').innerText
click #rewind-go
wait document.getElementById('notice').innerText !== ''
eval 'NOTICE: ' + document.getElementById('notice').innerText
CMDS
echo "--- on disk after the rewind:"; (cd "$P" && find . -path ./.snap -prune -o -type f -print | sort; echo "k.txt: $(cat k.txt)")
lost=""
[ -e notes.txt ] || lost="$lost notes.txt(deleted)"
[ -e src/new.go ] || lost="$lost src/new.go(deleted)"
[ "$(cat k.txt)" = "precious edit" ] || lost="$lost k.txt(overwritten)"
if [ -n "$lost" ]; then echo "BUG: the dialog listed only 'restored a.txt, deleted b.txt'; the rewind also did:$lost (Undo brings them back)"; else echo "OK: the rewind did what its preview listed"; fi
