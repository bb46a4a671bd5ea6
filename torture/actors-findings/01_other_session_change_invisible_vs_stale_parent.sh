#!/usr/bin/env bash
# A1: another session's change is silently undone by a scoped rewind when
# that session's checkpoint has no parent (its first) or a stale one: the
# change is read as diff(parent, checkpoint), so a deletion (case 1) or a
# change back to what the parent held (case 2) is invisible, and session A's
# rewind reverts it without listing it as kept.
SNAP=${SNAP:-/tmp/snapbin/snap}; export SNAP_NO_AUTO_GC=1
T=$(mktemp -d); cd "$T" || exit 1
"$SNAP" init >/dev/null
echo "=== case 1: B deletes files; B's first checkpoint"
echo a > a.txt; mkdir d; echo d1 > d/f; echo x > x
"$SNAP" -s A checkpoint -m base >/dev/null
echo A1 > a.txt; "$SNAP" -s A checkpoint --actor agent >/dev/null
rm -r d x                          # session B's agent deletes d/f and x
"$SNAP" -s B checkpoint --actor agent >/dev/null
"$SNAP" -s A rewind '#1'
for p in x d/f; do [ -e $p ] && echo "BUG: $p (deleted by session B) is back, not listed as kept"; done

echo; echo "=== case 2: B's head is stale; B reverts A's edit of c.txt"
T=$(mktemp -d); cd "$T" || exit 1
"$SNAP" init >/dev/null
echo v0 > c.txt; echo a > a.txt
"$SNAP" -s B checkpoint -m b-start >/dev/null     # B's head: c.txt=v0
"$SNAP" -s A checkpoint -m base >/dev/null         # A #1
echo v1 > c.txt; "$SNAP" -s A checkpoint --actor agent >/dev/null   # A #2: c.txt=v1
echo A3 > a.txt; "$SNAP" -s A checkpoint --actor agent >/dev/null   # A #3
echo v0 > c.txt                                    # B's agent puts c.txt back
"$SNAP" -s B checkpoint --actor agent | tail -1    # recorded: B's parent has v0 too
"$SNAP" -s A rewind '#2'
[ "$(cat c.txt)" = v1 ] && echo "BUG: c.txt is v1 again: B's change (v0, checkpointed by B after #2) was reverted, not kept"
echo "EXPECTED: x, d/f and c.txt kept as session B left them, and listed (kept ... by session B)"
