#!/bin/bash
# U10: "r rewinds the selected checkpoint": the page looks the selection up
# among the newest 200 checkpoints only; select an older one (after "Show 50
# more" a few times) and r opens the dialog for the checkpoint before the
# head instead, silently.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/p"; cd "$T/p"; "$SNAP" init >/dev/null; echo x > f
for i in $(seq 230); do echo $i > f; "$SNAP" checkpoint --summary "step $i" >/dev/null; done
start_ui "$T/p"
out=$(drive <<CMDS
tab a
nav $URL
wait document.querySelector('#main table')
eval location.hash = '#/s/default'
wait document.querySelector('#timeline')
eval (document.querySelector('.pager button').click(), 1)
wait document.querySelectorAll('#timeline tbody tr').length == 100
eval (document.querySelector('.pager button').click(), 1)
wait document.querySelectorAll('#timeline tbody tr').length == 150
eval (document.querySelector('.pager button').click(), 1)
wait document.querySelectorAll('#timeline tbody tr').length == 200
eval (document.querySelector('.pager button').click(), 1)
wait document.querySelectorAll('#timeline tbody tr').length == 230
# select #3 (a click on its row), then press r
eval ([...document.querySelectorAll('#timeline tbody tr')].find((tr) => tr.firstChild.textContent === '#3').firstChild.click(), document.querySelector('#timeline tr.sel').firstChild.textContent)
key r
wait document.getElementById('rewind').open
eval document.getElementById('rewind-target').innerText
CMDS
)
echo "$out"
if echo "$out" | grep -q '"To checkpoint.* #229 '; then echo "BUG: #3 was selected, r opened the rewind of #229 (the head's parent)"; elif echo "$out" | grep -q '#3 '; then echo OK; else echo "?"; fi
