#!/bin/sh
# A stand-in PFI_AGENT_BIN for the demos' tests: appends "MODE PATH" (stat -c '%a %n') of each
# agents file beside the agent's directory (the demos' $WORK/agents and $WORK/STRATEGY/agents,
# which hold the agents' tokens) to $PFI_MODES_LOG, then runs the real pfid ($REAL_PFID) with
# the same arguments. Each agent starts after the earlier ones appended their lines, so the log
# holds the files' modes while they fill.
conf="" prev=""
for a in "$@"; do
    [ "$prev" = --config ] && conf=$a
    prev=$a
done
d=$(dirname "$conf")
for f in "$(dirname "$d")/agents" "$(dirname "$(dirname "$d")")/agents"; do
    [ -f "$f" ] && stat -c '%a %n' "$f" >>"$PFI_MODES_LOG"
done
exec "$REAL_PFID" "$@"
